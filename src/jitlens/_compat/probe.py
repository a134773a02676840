"""What of JAX's and Flax's private surface is here: probed once, each piece on its own.

:func:`probe` answers "what can jitlens measure on these versions?" without
running anything: each private piece jitlens reads is looked up, and each
missing one is listed with what it costs (a figure that becomes unknown, an
explanation that gets vaguer). The canary in ``jitlens._track.selfcheck``
then checks that the pieces that are here still mean what they meant.
"""

from __future__ import annotations

import functools
from typing import Any

from .._record import record
from . import dispatch, flax_api, jax_api, jaxpr_api, libraries
from .libraries import installed_versions as installed_versions

#: The newest jax / flax releases jitlens was tested against (a warning above them).
TESTED_JAX = ((0, 9, 2), (0, 12, 0, 1))
TESTED_FLAX = ((0, 12, 5), (0, 12, 12))

#: piece -> what jitlens loses without it.
TRACE_COUNTS = "trace counts and compile budgets"
COMPILE_COUNTS = "compile counts and times"
CALL_ATTRIBUTION = "attributing traces to calls, and their explanations"
#: Without JAX's trace frame a trace cannot be filed under its function, so
#: per-function trace counts (and budgets) go with it (jax 0.8.0 counted 0 of 2).
TRACE_ATTRIBUTION = f"{CALL_ATTRIBUTION}; {TRACE_COUNTS}"
NNX_CALLS = "calls and cache hits of nnx.jit functions"
NNX_GRAPHS = "explanations inside nnx graphs (model attributes)"
CONFIG_NAMES = "the names of config options in config reasons"
NESTED_TRACES = "traces that run inside another trace (jit in jit, grad of a jit)"
COMPILE_COST = "what long compiles are made of (Event.cost) and the compile-cost advice"
FAST_PATH = "counting cache hits that miss JAX's C++ dispatch fast path (python_dispatch_calls)"


@record
class Capabilities:
    """The installed versions and the private pieces missing from them."""

    jax_version: str
    flax_version: str
    #: ``(piece, what jitlens loses)`` for every piece not found.
    missing: tuple[tuple[str, str], ...]

    @property
    def can_count_traces(self) -> bool:
        return not any(TRACE_COUNTS in loss for _piece, loss in self.missing)

    @property
    def untested(self) -> str | None:
        """Why these versions are outside the tested range, or None."""
        return _outside(self.jax_version, TESTED_JAX, "jax") or _outside(
            self.flax_version, TESTED_FLAX, "flax"
        )


def tested_range() -> str:
    """The tested pairs as text: ``jax 0.9.2-0.10.2 with flax 0.12.5-0.12.8``."""

    def dotted(v: tuple[int, ...]) -> str:
        return ".".join(map(str, v))

    (jl, jh), (fl, fh) = TESTED_JAX, TESTED_FLAX
    return f"jax {dotted(jl)}-{dotted(jh)} with flax {dotted(fl)}-{dotted(fh)}"


def _version_tuple(v: str) -> tuple[int, ...] | None:
    parts = []
    for p in v.split(".")[:3]:
        digits = "".join(ch for ch in p if ch.isdigit())
        if not digits:
            return None
        parts.append(int(digits))
    return tuple(parts)


def _outside(v: str, tested: tuple[tuple[int, ...], tuple[int, ...]], name: str) -> str | None:
    t = _version_tuple(v)
    if t is None:
        return None
    low, high = tested
    if t < low:
        return f"{name} {v} is older than the oldest tested ({'.'.join(map(str, low))})"
    if t > high:
        return f"{name} {v} is newer than the newest tested ({'.'.join(map(str, high))})"
    return None


def has_trace_frame() -> bool:
    """Does this JAX have the trace frame jitlens reads, with the locals it reads?"""
    return _has_trace_frame()


def _has_trace_frame() -> bool:
    try:
        from jax._src import pjit
    except Exception:
        return False
    fn = getattr(pjit, jax_api.TRACE_FRAME_NAME, None)
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    return all(n in code.co_varnames for n in jax_api.TRACE_FRAME_LOCALS)


def probe() -> Capabilities:
    """The private pieces jitlens needs that the installed JAX/Flax lack.

    Flax's pieces, and those of every library a ``_compat/*_api`` module declares
    (``libraries.Library.missing``: Equinox's), are looked up only once the program
    imported the library (jitlens imports none), so the answer is kept per set of
    loaded libraries.
    """
    flax_api.load_if_imported()
    loaded = tuple(lib.distribution for lib in libraries.declared() if lib.loaded())
    return _probe(flax_api.loaded(), loaded)


@functools.cache
def _probe(flax_loaded: bool, loaded: tuple[str, ...]) -> Capabilities:
    from jax import monitoring

    missing: list[tuple[str, str]] = []

    def need(ok: Any, piece: str, loss: str) -> None:
        try:
            good = bool(ok() if callable(ok) else ok)
        except Exception:
            good = False
        if not good:
            missing.append((piece, loss))

    need(
        hasattr(monitoring, "register_scalar_listener"),
        "jax.monitoring.register_scalar_listener",
        TRACE_COUNTS,
    )
    need(
        hasattr(monitoring, "register_event_duration_secs_listener"),
        "jax.monitoring.register_event_duration_secs_listener",
        COMPILE_COUNTS,
    )
    need(_has_trace_frame, f"jax._src.pjit.{jax_api.TRACE_FRAME_NAME}", TRACE_ATTRIBUTION)
    if flax_loaded:
        need(flax_api.NNX_WRAPPERS, "flax.nnx.transforms.compilation.JitWrapped", NNX_CALLS)
        need(
            flax_api.graphlib is not None and hasattr(flax_api.graphlib, "flatten"),
            "flax.nnx.graphlib.flatten",
            NNX_GRAPHS,
        )
    need(
        lambda: jax_api.trace_context_names() is not None,
        "jax._src.config trace-context names",
        CONFIG_NAMES,
    )
    need(
        jax_api.trace_to_jaxpr_patchable,
        "jax._src.interpreters.partial_eval.trace_to_jaxpr",
        NESTED_TRACES,
    )
    need(
        lambda: dispatch.python_dispatch_owner() is not None,
        "jax._src.pjit._run_python_pjit(p, args_flat, fun, args, kwargs)",
        FAST_PATH,
    )
    need(
        jaxpr_api.available,
        "jax._src.pjit._trace_for_jit's `jaxpr` and Traceback.raw_frames",
        COMPILE_COST,
    )
    for lib in libraries.declared():  # only those the program imported
        if lib.distribution in loaded:
            missing += lib.missing()
    return Capabilities(jax_api.jax_version(), flax_api.flax_version(), tuple(missing))
