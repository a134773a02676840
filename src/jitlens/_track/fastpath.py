"""Cache hits that miss JAX's C++ dispatch fast path, counted per function.

A ``jax.jit`` whose executable has a host callback (``jax.debug.callback``,
``jax.debug.print``) or another effect is never served by JAX's C++ fast
path: every call runs the Python ``cache_miss`` (hundreds of us instead of
~5 us, jax#31319), and still counts as a cache hit, invisible to
``jax_log_compiles`` and ``jax_explain_cache_misses``. ``_compat.dispatch``
says where that Python dispatch runs; while jitlens tracks, a wrapper there
counts each call of it that neither traced nor compiled (a hit served by
Python) under the function's record, and names the cause once per
function. The C++ path never enters Python, so the hit path costs nothing
more; a Python dispatch pays one dict lookup.

Reports get ``python_dispatch_calls`` (``None`` when jitlens cannot tell:
the wrapper is not installed on this JAX, or the function is a library
front-end's such as ``eqx.filter_jit``, whose traced callable is not the
record's) and ``python_dispatch_cause``. ``advisor.py`` times a few of those
calls so that ``_core.advice.fast_path`` can say what fixing it would save.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from typing import Any

from .. import _compat
from .._compat import dispatch
from .._core.report import FunctionReport
from .records import Record
from .registry import REGISTRY
from .state import STATE, internal_failure, tls

_LOCK = threading.Lock()
#: record id -> calls served by JAX's Python dispatch (no trace, no compile).
COUNTS: dict[int, int] = {}
#: record id -> why the fast path refused it (``_compat.dispatch`` causes).
CAUSES: dict[int, str] = {}
#: record id -> seconds of a few sampled Python-dispatched calls (entry -> outputs
#: ready -> host callbacks done), measured by ``advisor.sampled_call``.
SAMPLES: dict[int, list[float]] = {}


class _Seen(threading.local):
    nevents = 0  # tls.nevents when this thread's last Python dispatch ended


_seen = _Seen()
#: Was the counting wrapper installed when the hooks last were (else the counts are unknown)?
INSTALLED = [False]


def make_counted_run(original: Callable[..., Any]) -> Callable[..., Any]:
    """``pjit._run_python_pjit``, counting the calls that only dispatched."""

    @functools.wraps(original)
    def _run_python_pjit(*args: Any, **kwargs: Any) -> Any:
        n0 = tls.nevents
        # an event since the last dispatch ended: this call traced first (maybe served
        # from JAX's trace cache, which compiles nothing here), a miss
        fresh = n0 == _seen.nevents
        try:
            out = original(*args, **kwargs)
        finally:
            _seen.nevents = tls.nevents
        if STATE[0] and fresh and tls.nevents == n0:  # neither traced nor compiled: a hit
            try:
                _count(args, kwargs, out)
            except Exception as exc:
                internal_failure("counting a call through JAX's Python dispatch", exc)
        return out

    _run_python_pjit.__jitlens_original__ = original  # type: ignore[attr-defined]
    return _run_python_pjit


def _count(args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
    if tls.depth > 0 or not _compat.trace_state_clean():
        return  # inside another trace: bound, not dispatched
    rec = REGISTRY.find_by_fun(dispatch.traced_function(args, kwargs))
    if rec is None:
        return
    with _LOCK:
        COUNTS[rec.id] = COUNTS.get(rec.id, 0) + 1
        known = rec.id in CAUSES
    if not known:
        CAUSES[rec.id] = dispatch.fallback_cause(out)


def install(set_attr: Callable[[Any, str, Any], None]) -> None:
    """Put the counting wrapper in place (``hooks._set`` restores it on uninstall)."""
    owner = dispatch.python_dispatch_owner()
    INSTALLED[0] = owner is not None
    if owner is not None:
        module, attr = owner
        set_attr(module, attr, make_counted_run(getattr(module, attr)))


def is_slow(rec: Record) -> bool:
    """Has any call of ``rec`` been served by JAX's Python dispatch?"""
    return rec.id in COUNTS


def add_sample(rec: Record, seconds: float) -> None:
    with _LOCK:
        SAMPLES.setdefault(rec.id, []).append(seconds)


def sample_seconds(rec: Record) -> tuple[int, float] | None:
    """``(samples, least-disturbed seconds)`` of ``rec``'s sampled Python-dispatched calls."""
    with _LOCK:
        samples = list(SAMPLES.get(rec.id, ()))
    return (len(samples), min(samples)) if samples else None


def snapshot() -> dict[int, int]:
    with _LOCK:
        return dict(COUNTS)


def with_counts(
    rec: Record, fn: FunctionReport, base: dict[int, int], top: dict[int, int] | None
) -> FunctionReport:
    """``fn`` with its Python-dispatch calls between two snapshots (None: still open)."""
    if not INSTALLED[0] or rec.frontend is not None:
        return fn  # unknown: None
    end = top if top is not None else COUNTS
    n = end.get(rec.id, 0) - base.get(rec.id, 0)
    cause = CAUSES.get(rec.id, dispatch.UNKNOWN) if n else ""
    return dataclasses.replace(fn, python_dispatch_calls=n, python_dispatch_cause=cause)
