"""``jitlens.track()``: count calls, traces, compiles and cache hits, and build the report.

A :class:`Tracker` is a window over jitlens' process-wide records (see
``hooks``): entering it installs the hooks (once, however many trackers are
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

from .. import _compat
from .._core.kinds import RowKind
from .._core.report import SCHEMA_VERSION, FunctionReport, Report
from .._version import __version__
from . import advisor, fastpath, hooks, pcache, runinfo, selfcheck  # issues 23, 24
from .frontends.jax_jit import TrackedJit
from .records import Counts, Record
from .registry import REGISTRY
from .state import failure_mark, failures_since, internal_failure


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
        self._base: dict[int, Counts] = {}
        self._start_t = 0.0
        self._start_wall = 0.0
        self._end_t: float | None = None
        self._final: dict[int, Counts] | None = None
        self._open = False
        self._pcache_base: dict[str, int] | None = None
        self._dispatch: tuple[dict[int, int], dict[int, int] | None] = ({}, None)  # issue 24
        self._failures_mark = 0  # jitlens' internal failures after it are this window's

    def __enter__(self) -> Tracker:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        if self._open:
            return
        self._failures_mark = failure_mark()
        self._hooked = hooks.activate(self.timeline)
        with REGISTRY.lock:
            self._base = {r.id: r.snapshot() for r in REGISTRY.records}
        self._dispatch = (fastpath.snapshot(), None)  # issue 24
        self._start_t = time.perf_counter()
        self._start_wall = time.time()
        self._pcache_base = pcache.snapshot()  # issue 23: persistent-cache events since start
        self._open = True

    def started_at(self) -> float:
        """When the window opened (``time.perf_counter``): event times count from there."""
        return self._start_t

    def stop(self) -> None:
        if not self._open:
            return
        self._check_stale()
        with REGISTRY.lock:
            self._final = {r.id: r.snapshot() for r in REGISTRY.records}
        self._dispatch = (self._dispatch[0], fastpath.snapshot())  # issue 24
        self._end_t = time.perf_counter()
        self._open = False
        if self._hooked:
            hooks.deactivate(self.timeline)

    @staticmethod
    def _check_stale() -> None:
        try:
            from .stale import check_all

            check_all()
        except Exception as exc:
            internal_failure("checking cached_partial staleness", exc)

    # ------------------------------------------------------------ report

    def report(self) -> Report:
        """The figures of every function seen in this window (a frozen Report)."""
        if self._open:
            self._check_stale()
        from .listeners import settle_open_trace
        from .process import process_info

        settle_open_trace()  # a trace interrupted before its body, with no trace since

        index, count, host, _ = process_info()
        end = self._end_t if self._end_t is not None else time.perf_counter()
        with REGISTRY.lock:
            records = list(REGISTRY.records)
        functions = []
        env = _environment(max(0.0, end - self._start_t))
        for r in records:
            fr = self._function(r)
            if fr is not None and (self.include_internal or not fr.internal):
                fr = fastpath.with_counts(r, fr, *self._dispatch)  # issue 24
                advice = advisor.advice_for(r, fr, env) if not fr.internal else ()
                functions.append(dataclasses.replace(fr, advice=advice) if advice else fr)
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
            warnings=report_warnings(self._failures_mark),
            run=runinfo.run_section(
                self._pcache_base, self._start_wall, functions, index
            ),  # issue 23
        )

    def _function(self, r: Record) -> FunctionReport | None:
        base = self._base.get(r.id, Counts())
        top = self._final.get(r.id) if self._final is not None else None
        if top is None:
            if self._final is not None:
                return None  # created after this tracker closed
            top = r.snapshot()
        if (
            top.calls == base.calls
            and top.traces == base.traces
            and top.events == base.events
            and top.stale == base.stale
        ):
            return None
        fn = r.freeze(base, top, self._start_t)
        return _unknowns(fn)

    def stats(self, fn: Callable[..., Any] | str) -> FunctionReport:
        """One function's figures, by the jitted object (or the function it wraps) or by name."""
        rep = self.report()
        if isinstance(fn, str):
            return rep.function(fn)
        ids = _record_ids_for(fn)
        found = [f for f in rep.functions if f.id in ids]
        if not found:
            name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
            check = selfcheck.result()
            if check is not None and not check.traces_known:
                raise KeyError(
                    f"{name}: jitlens did not see it, and cannot see every jitted call on "
                    f"jax {check.capabilities.jax_version} / flax "
                    f"{check.capabilities.flax_version} ({'; '.join(check.problems())})"
                )
            raise KeyError(f"{name} was not called while this tracker was open")
        return max(found, key=lambda f: (f.kind != RowKind.NNX_CACHED_PARTIAL, f.id))

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"<jitlens.Tracker {state}>"


def _record_ids_for(fn: Any) -> set[int]:
    if isinstance(fn, TrackedJit):
        return {fn._record.id}
    rec = REGISTRY.frontend_record_of(fn)
    if rec is not None:
        return {rec.id}
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


def _environment(run_seconds: float) -> Any:
    try:
        return advisor.environment(run_seconds)
    except Exception as exc:
        internal_failure("reading JAX's cache settings for the advisor", exc)
        return None


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
        shape-specialization view), or until 256 calls after its hits settled on
        one executable; costs under 1 us per such call. ``jitlens run`` turns it on.

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


def _unknowns(fn: FunctionReport) -> FunctionReport:
    """Figures the self-check found unmeasurable on this JAX become None, never 0."""
    check = selfcheck.result(wait=True)
    if check is None:
        return fn
    if not check.traces_known:
        return dataclasses.replace(fn, traces=None, compiles=None, cache_hits=None)
    if not check.compiles_known:
        return dataclasses.replace(fn, compiles=None)
    return fn


def report_warnings(mark: int = 0) -> tuple[str, ...]:
    """The self-check's problems and jitlens' internal failures since ``mark`` (a window's
    start: :func:`~.state.failure_mark`), for ``Report.warnings``."""
    out: list[str] = []
    check = selfcheck.result(wait=True)
    if check is not None:
        out += check.problems()
    return (*out, *failures_since(mark))
