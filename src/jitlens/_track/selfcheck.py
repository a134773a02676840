"""The self-check: can jitlens count and explain on the installed JAX/Flax?

Run once per process, at the first activation: :func:`~jitlens._compat.probe.probe`
looks up each private piece, then a canary (a ``jax.jit`` function called with
two shapes, an ``nnx.jit`` on a tiny module called with two shapes, and an
``eqx.filter_jit`` function if the program imported equinox, also when it did
so later) checks against counters inside the bodies that calls, traces and the
shape reason come out right, and that an ``eqx.filter_jit`` function finds the
row its traces went to (what its budgets count). The canary's records are removed afterwards; it costs a few
tens of milliseconds (four tiny compiles).

On failure one :class:`~jitlens.JitlensCompatWarning` names the versions and
what is unavailable; figures jitlens cannot measure become unknown (``null``
in JSON, ``?`` in text) and compile budgets raise instead of passing.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings
from typing import Any

import numpy as np

try:
    from flax import nnx
except Exception:  # pragma: no cover - flax missing: the jax.jit canary only
    nnx = None  # type: ignore[assignment]

from .. import _compat
from .._compat.probe import COMPILE_COUNTS, TRACE_COUNTS, Capabilities, probe, tested_range
from .._errors import JitlensCompatWarning, JitlensError
from .registry import REGISTRY
from .state import CANARY_PENDING, log, tls, update_threshold

COMPAT_WARNING = (
    "jitlens: on jax {jax} / flax {flax}, {what}{untested}. What jitlens cannot measure is "
    "shown as '?' (null in JSON), and compile budgets raise instead of passing. For every "
    "figure, use a tested pair: {tested}."
)
UNTESTED_WARNING = (
    "jitlens: {why}; jitlens' self-check passed, but figures on untested versions deserve "
    "a second look (see the README's version table)."
)

CANNOT_COUNT = (
    "{source}: cannot count traces on jax {jax} / flax {flax}: {why}. A compile budget "
    "that cannot count would pass silently, so it refuses to run. Use a tested pair "
    "({tested}), or drop the budget on this environment."
)
#: Seconds the canary may take (it usually takes 0.1-0.3 s).
CANARY_TIMEOUT = 60.0
#: Compile budgets (guards, scopes, the pytest marker) open now.
BUDGETS_OPEN = [0]

#: Environment switch: ``JITLENS_SELF_CHECK=0`` skips the canary (the probe still runs).
ENV = "JITLENS_SELF_CHECK"


@dataclasses.dataclass(frozen=True)
class SelfCheck:
    """What the self-check found: the probe, and what the canary saw go wrong."""

    capabilities: Capabilities
    #: Human-readable problems found by the canary (empty: it passed or did not run).
    canary_problems: tuple[str, ...] = ()
    canary_ran: bool = False

    @property
    def traces_known(self) -> bool:
        return self.capabilities.can_count_traces and not self.canary_problems

    @property
    def compiles_known(self) -> bool:
        return not any(loss == COMPILE_COUNTS for _p, loss in self.capabilities.missing)

    def problems(self) -> list[str]:
        out = [
            f"{piece} is missing ({loss} unavailable)" for piece, loss in self.capabilities.missing
        ]
        return out + list(self.canary_problems)


_RESULT: list[SelfCheck | None] = [None]
_LOCK = threading.RLock()


def _canary() -> list[str]:
    """Run the canary with the hooks installed; the problems it found."""
    import jax

    problems: list[str] = []
    counter = [0]

    def jitlens_canary(x: Any) -> Any:
        counter[0] += 1
        return x + 1

    f = jax.jit(jitlens_canary)
    rec = getattr(f, "_record", None)
    f(np.zeros((1,), np.float32))
    f(np.zeros((2,), np.float32))
    f(np.zeros((2,), np.float32))
    if rec is None:
        problems.append("jax.jit could not be wrapped (calls and cache hits unknown)")
        recs = [r for r in REGISTRY.records if r.name == "jitlens_canary"]
        rec = recs[-1] if recs else None
    problems += _compare(
        "jax.jit", rec, counter[0], calls=3 if getattr(f, "_record", None) else None
    )
    if _compat.NNX_WRAPPERS and nnx is not None:
        problems += _nnx_canary()
    if _compat.EQUINOX.loaded():
        problems += _eqx_canary()
    return problems


_EQX_COUNTER = [0]
#: Has the equinox canary run (at the self-check, or later when equinox came after it)?
_EQX_CHECKED = [False]


def jitlens_eqx_canary(x: Any) -> Any:
    _EQX_COUNTER[0] += 1
    return x + 1


def _eqx_canary() -> list[str]:
    """``eqx.filter_jit`` called with two shapes: rows, calls and traces as equinox ran them."""
    import sys

    _EQX_CHECKED[0] = True
    eqx = sys.modules.get("equinox")
    if eqx is None:
        return []
    # equinox imported after tracking started is patched at its first trace, as for the user
    _EQX_COUNTER[0] = 0
    f = eqx.filter_jit(jitlens_eqx_canary)
    for n in (1, 2, 2):
        f(np.zeros((n,), np.float32))
    recs = [r for r in REGISTRY.records if r.name == "jitlens_eqx_canary"]
    rec = recs[-1] if recs else None
    problems = _compare("eqx.filter_jit", rec, _EQX_COUNTER[0], calls=3)
    if rec is not None and (rec.frontend is None or REGISTRY.frontend_record_of(f) is not rec):
        # JAX's trace seen, but not as the user's filter_jit function: no row, no budget
        problems.append(
            "eqx.filter_jit traces are not matched to their functions (rows, calls and "
            "compile budgets of eqx.filter_jit functions unknown)"
        )
    return problems


class JitlensCanary(nnx.Module if nnx is not None else object):  # type: ignore[misc]
    """The canary's model: one parameter, no randomness."""

    def __init__(self) -> None:
        self.w = nnx.Param(np.ones((1,), np.float32))


def jitlens_nnx_canary(m: Any, x: Any) -> Any:
    _NNX_COUNTER[0] += 1
    return m.w * x


_NNX_COUNTER = [0]


def _nnx_canary() -> list[str]:
    _NNX_COUNTER[0] = 0
    g = nnx.jit(jitlens_nnx_canary)
    m = JitlensCanary()
    g(m, np.zeros((1,), np.float32))
    g(m, np.zeros((2,), np.float32))
    g(m, np.zeros((2,), np.float32))
    recs = [r for r in REGISTRY.records if r.name == "jitlens_nnx_canary"]
    return _compare("nnx.jit", recs[-1] if recs else None, _NNX_COUNTER[0], calls=3)


def _compare(what: str, rec: Any, truth: int, calls: int | None) -> list[str]:
    if rec is None:
        return [f"{what} traces are not seen ({truth} traces ran, jitlens saw none)"]
    out = []
    if rec.traces != truth:
        out.append(f"{what} traces miscounted ({truth} ran, jitlens counted {rec.traces})")
    if calls is not None and rec.counts_calls and rec.calls != calls:
        out.append(f"{what} calls miscounted ({calls} made, jitlens counted {rec.calls})")
    kinds = [r.kind for e in rec.events for r in e.reasons]
    if truth == 2 and rec.traces == 2 and "shape" not in kinds:
        out.append(f"{what} retrace not explained (expected a shape change, got {kinds or 'none'})")
    return out


def _forget_canary_records(before: int) -> None:
    with REGISTRY.lock:
        mine = REGISTRY.records[before:]
        keep = [r for r in mine if not r.name.startswith("jitlens_") and "canary" not in r.name]
        gone = {id(r) for r in mine} - {id(r) for r in keep}
        del REGISTRY.records[before:]
        REGISTRY.records.extend(keep)
        for table in (REGISTRY.by_wrapper, REGISTRY.by_fun):
            for k in [k for k, (_ref, r) in table.items() if id(r) in gone]:
                del table[k]
        for k in [k for k, r in REGISTRY.by_frontend.items() if id(r) in gone]:
            del REGISTRY.by_frontend[k]
        for k, sibs in list(REGISTRY.by_code.items()):
            sibs[:] = [r for r in sibs if id(r) not in gone]
            if not sibs:
                del REGISTRY.by_code[k]


def run() -> SelfCheck:
    """The self-check, once per process (call with the hooks installed).

    The canary runs JAX, so it waits until the program's own first JAX
    operation has created the backends (config like ``jax_num_cpu_devices``
    must still be settable until then): meanwhile the result is pending and
    the next tracked call runs it (:func:`run_pending`).
    """
    with _LOCK:
        done = _RESULT[0]
        if done is not None and not CANARY_PENDING[0]:
            return done
        caps = probe()
        skip = os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off")
        if skip or not caps.can_count_traces or _disable_jit():
            return _finish(SelfCheck(caps))
        if not _compat.backends_initialized() or tls.depth > 0:
            CANARY_PENDING[0] = True
            update_threshold()
            pending = SelfCheck(caps)
            _RESULT[0] = pending
            return pending
        CANARY_PENDING[0] = False  # the canary's own calls must not run it again
        update_threshold()
        return _finish(SelfCheck(caps, tuple(_run_canary()), True))


def _finish(result: SelfCheck) -> SelfCheck:
    CANARY_PENDING[0] = False
    update_threshold()
    _RESULT[0] = result
    _warn(result)
    return result


def _run_canary(body: Any = None) -> list[str]:
    body = body or _canary
    before = len(REGISTRY.records)
    internal_keys = REGISTRY.include_internal_keys
    REGISTRY.include_internal_keys = True  # the canary lives in jitlens' files
    found: list[list[str]] = []

    def canary() -> None:
        tls.in_canary = True  # guards and scopes must not see the canary (this thread only)
        try:
            found.append(body())
        except Exception as exc:
            found.append([f"the canary failed ({type(exc).__name__}: {exc})"])

    # A thread of its own: none of the caller's thread-local contexts (a
    # cached_partial call, a mesh, a trace in progress) leak into the canary.
    worker = threading.Thread(target=canary, name="jitlens-self-check", daemon=True)
    try:
        worker.start()
        worker.join(CANARY_TIMEOUT)
        if worker.is_alive():
            return [f"the canary did not finish within {CANARY_TIMEOUT:.0f} s"]
        return found[0] if found else ["the canary did not report"]
    finally:
        REGISTRY.include_internal_keys = internal_keys
        _forget_canary_records(before)


def check_late_frontends() -> None:
    """Equinox imported after the self-check ran: run its canary now, once (outside traces).

    Its problems join the self-check's result (and its one warning), so that
    budgets over ``eqx.filter_jit`` functions refuse to pass on wrong counts.
    """
    done = _RESULT[0]
    if (
        done is None
        or CANARY_PENDING[0]
        or not done.canary_ran
        or _EQX_CHECKED[0]
        or not _compat.EQUINOX.loaded()
        or tls.depth > 0
        or tls.busy
    ):
        return
    with _LOCK:
        if _EQX_CHECKED[0]:
            return
        _EQX_CHECKED[0] = True
        problems = tuple(_run_canary(_eqx_canary))
        if problems:
            result = dataclasses.replace(done, canary_problems=done.canary_problems + problems)
            _RESULT[0] = result
            _warn(result)


def run_pending() -> None:
    """Run a pending canary now (from a tracked call, outside any trace).

    Raises:
      JitlensError: the canary found that traces cannot be counted while a
        compile budget is open (it would otherwise pass silently).
    """
    if not CANARY_PENDING[0] or tls.depth > 0 or tls.busy:
        return
    with _LOCK:
        if not CANARY_PENDING[0]:
            return
        check = run()
    if BUDGETS_OPEN[0] > 0 and not check.traces_known:
        raise JitlensError(
            CANNOT_COUNT.format(
                source="compile budget",
                jax=check.capabilities.jax_version,
                flax=check.capabilities.flax_version,
                why="; ".join(check.problems()),
                tested=tested_range(),
            )
        )


def _disable_jit() -> bool:
    try:
        import jax

        return bool(jax.config.jax_disable_jit)
    except Exception:
        return False


def _warn(result: SelfCheck) -> None:
    caps = result.capabilities
    problems = result.problems()
    if problems:
        text = COMPAT_WARNING.format(
            jax=caps.jax_version,
            flax=caps.flax_version,
            what="; ".join(problems),
            untested=f" — {caps.untested}" if caps.untested else "",
            tested=tested_range(),
        )
    elif caps.untested:
        text = UNTESTED_WARNING.format(why=caps.untested)
    else:
        return
    try:
        warnings.warn(text, JitlensCompatWarning, stacklevel=_compat.user_stacklevel())
    except Exception:  # -W error: say it, don't raise it into the program
        log.warning(text)


def result() -> SelfCheck | None:
    """The self-check's result, if it ran in this process."""
    return _RESULT[0]


def counting_problem() -> str | None:
    """Why traces cannot be counted here, or None when they can (or the canary is pending)."""
    check = run()
    if check.traces_known:
        return None
    if not check.capabilities.can_count_traces:
        missing = [p for p, loss in check.capabilities.missing if TRACE_COUNTS in loss]
        return f"{', '.join(missing)} is missing"
    return "; ".join(check.canary_problems)
