"""``jitlens.track()``: count calls, traces, compiles and cache hits, and build the report.

A :class:`Tracker` is a window over jitlens' process-wide records (see
``_hooks``): entering it installs the hooks (once, however many trackers are
open), leaving it freezes its figures. Several trackers may be open at once,
nested or not; each sees only what happened while it was open.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from . import _compat
from ._hooks import REGISTRY, TrackedJit
from ._records import Record
from ._report import SCHEMA_VERSION, FunctionReport, Report
from ._version import __version__


@dataclasses.dataclass
class _Base:
    calls: int = 0
    miss_calls: int = 0
    inlined: int = 0
    failed: int = 0
    traces: int = 0
    compiles: int = 0
    phits: int = 0
    events: int = 0
    call_times: int = 0
    stale: int = 0


def _snapshot(r: Record) -> _Base:
    return _Base(
        calls=r.calls,
        miss_calls=r.miss_calls,
        inlined=r.inlined_calls,
        failed=r.failed_calls,
        traces=r.traces,
        compiles=r.compiles,
        phits=r.persistent_hits,
        events=len(r.events),
        call_times=len(r.call_times),
        stale=len(r.stale_hits),
    )


class Tracker:
    """What ``jitlens.track()`` returns: a window of tracking, and its report.

    What it sees:
      * ``nnx.jit`` (all modes) and ``nnx.cached_partial`` functions, whenever
        they were created: calls, cache hits, traces, compiles, reasons.
      * ``jax.jit`` functions created while tracking is on (``jax.jit`` is
        replaced by a counting wrapper while any tracker is open): the same.
      * ``jax.jit`` functions created *before* tracking started (e.g. decorated
        at import time in a module imported before ``track()``): their traces,
        compiles and reasons (through ``jax.monitoring`` and the trace-time
        key), but not their calls or cache hits (``calls`` is ``None``). Run
        the program under ``jitlens run`` to see those too.
    """

    def __init__(self, *, include_internal: bool = False, timeline: bool = False) -> None:
        self.include_internal = include_internal
        self.timeline = timeline
        self._base: dict[int, _Base] = {}
        self._start_t = 0.0
        self._start_wall = 0.0
        self._end_t: float | None = None
        self._final: dict[int, _Base] | None = None
        self._open = False

    def __enter__(self) -> Tracker:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        if self._open:
            return
        REGISTRY.activate(self.timeline)
        with REGISTRY.lock:
            self._base = {r.id: _snapshot(r) for r in REGISTRY.records}
        self._start_t = time.perf_counter()
        self._start_wall = time.time()
        self._open = True

    def stop(self) -> None:
        if not self._open:
            return
        self._check_stale()
        with REGISTRY.lock:
            self._final = {r.id: _snapshot(r) for r in REGISTRY.records}
        self._end_t = time.perf_counter()
        self._open = False
        REGISTRY.deactivate(self.timeline)

    @staticmethod
    def _check_stale() -> None:
        try:
            from ._stale import check_all

            check_all()
        except Exception as exc:
            REGISTRY.warn_internal("checking cached_partial staleness", exc)

    # ------------------------------------------------------------ report

    def report(self) -> Report:
        """The figures of every function seen in this window (a frozen Report)."""
        if self._open:
            self._check_stale()
        from ._process import process_info

        index, count, host = process_info()
        end = self._end_t if self._end_t is not None else time.perf_counter()
        with REGISTRY.lock:
            records = list(REGISTRY.records)
        functions = []
        for r in records:
            fr = self._function(r)
            if fr is not None and (self.include_internal or not fr.internal):
                functions.append(fr)
        return Report(
            schema_version=SCHEMA_VERSION,
            jitlens_version=__version__,
            jax_version=_compat.jax_version(),
            flax_version=_compat.flax_version(),
            backend=_backend(),
            process_index=index,
            process_count=count,
            host=host,
            started_at=self._start_wall,
            duration_seconds=max(0.0, end - self._start_t),
            functions=tuple(functions),
            argv=(os.path.basename(sys.argv[0]), *sys.argv[1:]) if sys.argv else (),
        )

    def _function(self, r: Record) -> FunctionReport | None:
        base = self._base.get(r.id, _Base())
        top = self._final.get(r.id) if self._final is not None else None
        if top is None:
            if self._final is not None:
                return None  # created after this tracker closed
            top = _snapshot(r)
        calls = top.calls - base.calls
        traces = top.traces - base.traces
        if calls == 0 and traces == 0 and top.events == base.events and top.stale == base.stale:
            return None
        events = r.events[base.events : top.events]
        t0 = self._start_t
        counted = r.counts_calls
        misses = top.miss_calls - base.miss_calls
        inlined = top.inlined - base.inlined + top.failed - base.failed
        times = r.call_times[base.call_times : top.call_times]
        entries = r.call_entries[base.call_times : top.call_times]
        frozen = tuple(e.freeze(t0) for e in events)
        return FunctionReport(
            name=r.name,
            qualname=r.qualname,
            kind=r.kind,
            defined_at=r.defined_at,
            first_call_site=r.first_call_site or (frozen[0].call_site if frozen else ""),
            calls=calls if counted else None,
            traces=traces,
            compiles=top.compiles - base.compiles,
            cache_hits=max(0, calls - misses - inlined) if counted else None,
            persistent_cache_hits=top.phits - base.phits,
            trace_seconds=sum(e.trace_seconds for e in frozen),
            lower_seconds=sum(e.lower_seconds for e in frozen),
            compile_seconds=sum(e.compile_seconds for e in frozen),
            events=frozen,
            stale_hits=tuple(r.stale_hits[base.stale : top.stale]),
            internal=r.internal,
            id=r.id,
            call_times=tuple(round(max(0.0, t - t0), 6) for t in times),
            call_entries=tuple(entries),
            first_call_index=base.calls,
        )

    def stats(self, fn: Callable[..., Any] | str) -> FunctionReport:
        """One function's figures, by the jitted object (or the function it wraps) or by name."""
        rep = self.report()
        if isinstance(fn, str):
            return rep.function(fn)
        ids = _record_ids_for(fn)
        found = [f for f in rep.functions if f.id in ids]
        if not found:
            name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
            raise KeyError(f"{name} was not called while this tracker was open")
        return max(found, key=lambda f: (f.kind != "nnx.cached_partial", f.id))

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"<jitlens.Tracker {state}>"


def _record_ids_for(fn: Any) -> set[int]:
    if isinstance(fn, TrackedJit):
        return {fn._record.id}
    targets = {id(fn)}
    inner = fn
    for _ in range(6):
        inner = getattr(inner, "__wrapped__", None)
        if inner is None:
            break
        targets.add(id(inner))
    with REGISTRY.lock:
        records = list(REGISTRY.records)
    out = set()
    for r in records:
        for ref in (r.wrapper_ref, r.user_fn_ref, r.inner_fun_ref):
            obj = ref() if ref is not None else None
            if obj is not None and id(obj) in targets:
                out.add(r.id)
    return out


def _backend() -> str:
    try:
        import jax

        return jax.default_backend()
    except Exception:
        return "?"


def track(*, include_internal: bool = False, timeline: bool = False) -> Tracker:
    """Track every jitted function while the block runs.

    Args:
      include_internal: also report JAX's and Flax's own jitted helpers
        (``_threefry_seed``, ``convert_element_type`` ...), hidden by default.
      timeline: also record the start time and compiled entry of each of the
        first 2,000 calls of every function (the HTML timeline and
        shape-specialization view); costs ~1 us per such call. ``jitlens run``
        turns it on.

    Returns:
      A :class:`Tracker`; use it as a context manager, then ``t.report()``
      (a :class:`jitlens.Report`) or ``t.stats(fn)``.

    Example:
      >>> import jax, jax.numpy as jnp, jitlens
      >>> with jitlens.track() as t:
      ...     f = jax.jit(lambda x: x * 2)
      ...     for n in (3, 3, 4):
      ...         _ = f(jnp.ones(n))
      >>> s = t.stats(f)
      >>> (s.calls, s.traces, s.cache_hits)
      (3, 2, 1)

    See also:
      ``eqx.debug.get_num_traces`` counts traces of one ``filter_jit``
      function; ``chex.assert_max_traces`` fails past a budget. Prefer
      jitlens when you also want hits, compiles and the reason of each retrace.
    """
    return Tracker(include_internal=include_internal, timeline=timeline)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def hostname() -> str:
    return socket.gethostname()
