"""Per-function records: the mutable counters and keys behind a FunctionReport.

One record per jitted callable object (an ``nnx.jit`` wrapper, a
``jax.jit`` wrapper, a ``cached_partial``), process-wide. Trackers are views
over windows of these records. Records hold weak references to the user's
functions and wrappers, and keys that hold no arrays.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .._compat import cache_keys
from .._core.key import Key, flat_key
from .._core.kinds import EventKind
from .._core.report import (
    KEY_ENTRIES_MAX,
    KEYED_SIGNATURES_MAX,
    Event,
    FunctionReport,
    Reason,
    StaleHit,
)
from .._record import record
from . import journal
from .state import weak

if TYPE_CHECKING:
    from .._core.cost import CompileCost
    from .._core.report import Unchecked

#: Keys remembered per record (oldest dropped first): bounds memory and the
#: cost of finding the closest key on a miss.
MAX_KEYS = 64
#: Calls per record whose start time and compiled entry are remembered for
#: the timeline; later calls are only counted (the cheapest hit path).
MAX_CALL_TIMES = 2_000
#: Once every hit of a record goes to one executable (the window's lean path,
#: ``calls._file_timed``), this many more of its calls are timed and then its window
#: closes: the hits of a settled function show nothing new on the timeline, and
#: timing each one costs a tight loop several percent (``benchmarks/overhead.py``).
SETTLED_CALLS = 256
#: Events remembered per record.
MAX_EVENTS = 10_000
#: Earlier wrappers of the same code a new wrapper is compared with.
MAX_SIBLINGS = 16

_ids = itertools.count(1)


class EventBuilder:
    """A trace in progress: durations arrive from monitoring after it starts."""

    __slots__ = (
        "call_index",
        "call_site",
        "compile_seconds",
        "compiled",
        "cost",  # issue 34: what the compiled program is made of (_track/cost.py)
        "detached",
        "entry",
        "explain_seconds",
        "frontend_key",
        "jax_name",
        "key",
        "kind",
        "lower_seconds",
        "nondiff",  # static numbers passed to a custom_vjp's nondiff_argnums in this trace
        "persistent_cache",  # jitlens diff (issue 23): the persistent cache's outcome
        "persistent_cache_hit",
        "reasons",
        "record",
        "signature",
        "thread",
        "time",
        "trace_seconds",
        "traced",  # issue 34: the traced jaxpr, kept until the compile ends
    )

    def __init__(
        self, record: Record, kind: str, call_index: int | None, call_site: str, t: float
    ) -> None:
        self.record = record
        #: Compare with ``==``: a plain string set later stays one until ``freeze``.
        self.kind: str = EventKind(kind)
        self.call_index = call_index
        self.call_site = call_site
        #: A front-end's key of the traced callable (``eqx.filter_jit``): which wrapper of a
        #: row traced, when one row holds several (a Module class jitted per instance).
        self.frontend_key: Any = None
        self.time = t
        self.signature = ""
        self.reasons: tuple[Reason, ...] = ()
        self.trace_seconds = 0.0
        self.lower_seconds = 0.0
        self.compile_seconds = 0.0
        self.explain_seconds = 0.0
        self.compiled = False
        self.persistent_cache_hit = False
        self.persistent_cache = ""  # set by _track/pcache.py (issue 23)
        self.entry = 0
        self.key: Key | None = None
        self.jax_name = ""
        self.thread = threading.current_thread().name
        #: Announced as a trace but served from JAX's trace cache: True, or the frame of
        #: the call whose miss was taken back with it (counted again if it compiles).
        self.detached: object = False
        self.nondiff: tuple[Any, ...] = ()
        self.traced: Any = None
        self.cost: CompileCost | None = None

    def freeze(self, t0: float, with_key: bool = True) -> Event:
        return Event(
            call_index=self.call_index,
            kind=self.kind,
            call_site=self.call_site,
            signature=self.signature,
            reasons=self.reasons,
            time=max(0.0, self.time - t0),
            trace_seconds=self.trace_seconds,
            lower_seconds=self.lower_seconds,
            compile_seconds=self.compile_seconds,
            explain_seconds=self.explain_seconds,
            compiled=self.compiled,
            persistent_cache_hit=self.persistent_cache_hit,
            entry=self.entry,
            thread=self.thread,
            persistent_cache=self.persistent_cache,  # issue 23: jitlens diff
            key=flat_key(self.key, KEY_ENTRIES_MAX) if with_key else (),  # issue 23
            cost=self.cost,  # issue 34
        )


@record(frozen=False)
class Counts:
    """A record's counters at one moment."""

    calls: int = 0
    miss_calls: int = 0
    inlined: int = 0
    failed: int = 0
    failed_misses: int = 0
    traces: int = 0
    compiles: int = 0
    phits: int = 0
    events: int = 0
    call_times: int = 0
    stale: int = 0
    unchecked: int = 0
    eager: int = 0
    stopped: int = 0


class Record:
    """Mutable figures of one jitted callable object."""

    def __init__(
        self,
        *,
        kind: str,
        name: str,
        qualname: str,
        defined_at: str,
        internal: bool,
        code_key: Any,
        wrapper: Any = None,
        user_fn: Any = None,
        inner_fun: Any = None,
        counts_calls: bool = True,
        jax_name: str = "",
    ) -> None:
        self.id = next(_ids)
        self.kind = kind
        self.name = name
        self.qualname = qualname
        self.defined_at = defined_at
        self.internal = internal
        self.code_key = code_key
        self.counts_calls = counts_calls
        self.jax_name = jax_name or name
        self.wrapper_ref = weak(wrapper)
        self.user_fn_ref = weak(user_fn)
        self.inner_fun_ref = weak(inner_fun)
        self.created = time.perf_counter()
        self.first_call_site = ""
        self.calls_counter = itertools.count()
        #: Where each counted call stores its index (``n`` from ``calls_counter``): the
        #: record's slot of the journal's file-backed mmap (``_track/journal.py``), which a
        #: killed process leaves behind, or a slot nobody reads.
        self.cell = journal.cell_for(self.id)
        self.miss_calls = 0
        self.last_miss_frame: object = None
        self.inlined_calls = 0
        self.failed_calls = 0
        #: Failed calls that had already been counted as misses.
        self.failed_misses = 0
        self.traces = 0
        self.compiles = 0
        self.persistent_hits = 0
        self.events: list[EventBuilder] = []
        self.keys: list[Key] = []
        self.stale_hits: list[StaleHit] = []
        #: Statics a hit passed that were too big to check (``stale.check_statics``).
        self.unchecked: list[Unchecked] = []
        #: (path, address) of the statics found changed in place (``stale.check_statics``).
        self.stale_seen: set[tuple[Any, int]] = set()
        #: Traces a compile budget stopped (``listeners.abort_trace``), capped.
        self.stopped: list[EventBuilder] = []
        self.call_times: list[float] = []
        #: The entry of each call in ``call_times``; shorter while the window's lean path
        #: runs: the calls past its end went to ``window_entry`` (``fill_entries``).
        self.call_entries: list[int] = []
        #: ``state.EVENTS`` when a call found that every hit goes to ``window_entry``
        #: (one executable, one light signature): the lean path holds while it is
        #: unchanged. -1: not known.
        self.window_seq = -1
        #: The same among the advisor's first calls (``calls._file_timed``).
        self.early_seq = -1
        self.window_entry = -1
        #: Calls from this index on are not timed: the window closed once the record's
        #: hits settled (``SETTLED_CALLS``). ``sys.maxsize``: not settled yet.
        self.timed_until = sys.maxsize
        #: light signature -> (entry, weak references to the objects it names by identity)
        self.entry_by_light: dict[Any, tuple[int, tuple[Any, ...]]] = {}
        #: light signature shared by two entries -> how its hits are tied to one (``ties``)
        self.ties: dict[Any, Any] = {}
        self.n_entries = 0
        self.lock = threading.Lock()
        self.static_argnums: tuple[int, ...] = ()
        self.static_argnames: tuple[str, ...] = ()
        #: The wrapper's jit options that shape its cache (in_shardings, donation...).
        self.options: tuple[tuple[str, Any], ...] = ()
        #: The functions its closure calls (``_compat.closure_callees``), read at its
        #: first trace: a wrapper made per call is gone by the time the next one traces.
        self.callees: tuple[Any, ...] | None = None
        # The advisor's measurements (``advisor.py``): sampled hits as
        # (host, device) seconds, the timed flatten of the leading graph
        # arguments with the argument names, calls run under jax_disable_jit.
        self.sample_mode: bool | None = None
        self.dispatch_samples: list[tuple[float, float]] = []
        self.cached_graph: tuple[float | None, tuple[str, ...], tuple[str, ...]] | None = None
        self.eager_calls = 0
        #: The library front-end (``frontend.Frontend``) whose own callable JAX traces for it, if any.
        self.frontend: Any = None
        #: Are the record's statics the user's (a front-end that hands JAX its own
        #: function, e.g. a pmap), rather than the ones in JAX's trace frame?
        self.own_statics = False
        #: A jit a library made around the user's code (a keras step, numpyro's sample loop,
        #: blackjax's loop): the user's row only while what it traced is the user's own
        #: (:meth:`library_visibility`).
        self.library_made = False
        #: Its traces that ran inside another function's trace: part of that trace.
        self.nested_traces = 0
        #: The library object it serves holds code of the user's (a keras model whose class
        #: the user wrote): the row is the user's only when a trace ran some of it.
        self.user_code_only = False
        #: Did a trace of it run the user's code? None: not known (yet).
        self.ran_user_code: bool | None = None

    def note_library_trace(self, outer: EventBuilder | None) -> None:
        """A trace of this record begins (not yet counted) inside the trace ``outer`` is
        building, or at top level (None): a library's jit decides again whether it is the
        user's row. Inside the user's trace it is part of it; inside a library's own
        transformation (numpyro's pmap over chains) it is not."""
        if not self.library_made:
            return
        inside = outer is not None and outer.record is not self and not outer.record.internal
        with self.lock:
            self.nested_traces += inside
            self.traces += 1
            self.library_visibility()
            self.traces -= 1

    def note_user_code(self, ran: bool | None) -> None:
        """Whether a trace of this library step ran the user's code (None: not known)."""
        if ran is not None:
            self.ran_user_code = ran
            self.library_visibility()

    def library_visibility(self) -> None:
        """A library's jit is the user's row unless every trace of it ran inside another
        function's trace (numpyro's sample loop in the user's ``jax.jit``: one trace, the
        user's) or, serving an object that holds the user's code, none of its traces ran any
        (keras' ``evaluate`` step of a model whose own ``train_step`` is the user's): such a
        row stays visible under ``--include-internal`` and adds nothing to the user's totals."""
        if not self.library_made:
            return
        nested = self.traces > 0 and self.nested_traces >= self.traces
        self.internal = nested or (self.user_code_only and self.ran_user_code is False)

    @property
    def calls(self) -> int:
        # itertools.count is advanced atomically under the GIL by next();
        # its repr is the only public read of the current value.
        return int(repr(self.calls_counter)[6:-1])

    def matches(self, fun: Any, fun_name: str) -> bool:
        """Is ``fun`` (seen by JAX at trace time) the callable behind this record?"""
        inner = self.inner_fun_ref() if self.inner_fun_ref is not None else None
        if inner is not None and fun is not None:
            return inner is fun
        return fun_name == self.jax_name

    def user_fn(self) -> Any:
        return self.user_fn_ref() if self.user_fn_ref is not None else None

    def live_and_cleared(self) -> tuple[list[Key], list[Key]]:
        now = cache_keys.clear_count()
        gone = [k for k in self.keys if None not in (now, k.clears_seen) and k.clears_seen != now]
        for k in gone:  # jax.clear_caches() ran since they were compiled
            k.cleared, k.clears_seen = True, None
        if gone:
            self.entry_by_light.clear()
            self.ties.clear()
        live = [k for k in self.keys if not k.cleared]
        cleared = [k for k in self.keys if k.cleared]
        return live, cleared

    def uncompiled_nested_trace(self) -> EventBuilder | None:
        """The function's only trace, made inside another jit's trace (which compiles none of
        it), when nothing of it compiled yet: the compile now served from that trace is its
        first, not a compile "again" (the lock held)."""
        if self.compiles or any(e.compiled for e in self.events):
            return None
        traces = [e for e in self.events if e.kind is EventKind.TRACE]
        return traces[0] if len(traces) == 1 and len(self.events) == 1 else None

    def add_key(self, key: Key) -> int:
        """Remember ``key``; return its entry index (equal keys share an entry)."""
        from .._core.explain import diff_keys

        cache_keys.watch_clears()
        key.clears_seen = cache_keys.clear_count()
        for k in reversed(self.keys):
            if k.fingerprint == key.fingerprint and not diff_keys(k, key):
                idx = getattr(k, "entry", 0)
                key.entry = idx  # type: ignore[attr-defined]
                k.cleared = False
                k.clears_seen = key.clears_seen
                return idx
        idx = self.n_entries
        self.n_entries += 1
        key.entry = idx  # type: ignore[attr-defined]
        self.keys.append(key)
        if len(self.keys) > MAX_KEYS:
            del self.keys[0]
        return idx

    def fill_entries(self) -> None:
        """Give the calls the window's lean path timed their entry, ``window_entry``."""
        gap = len(self.call_times) - len(self.call_entries)
        if gap > 0:
            self.call_entries.extend([self.window_entry] * gap)

    def add_call_time(self, t: float, entry: int) -> None:
        """A timed call of the timeline window and the entry it went to."""
        self.fill_entries()
        self.call_times.append(t)
        self.call_entries.append(entry)

    def snapshot(self) -> Counts:
        """The record's counters now (a tracker's window is the difference of two)."""
        timed = len(self.call_times)  # before the fill: a call timed meanwhile has its entry
        self.fill_entries()
        return Counts(
            calls=self.calls,
            miss_calls=self.miss_calls,
            inlined=self.inlined_calls,
            failed=self.failed_calls,
            failed_misses=self.failed_misses,
            traces=self.traces,
            compiles=self.compiles,
            phits=self.persistent_hits,
            events=len(self.events),
            call_times=timed,
            stale=len(self.stale_hits),
            unchecked=len(self.unchecked),
            eager=self.eager_calls,
            stopped=len(self.stopped),
        )

    def freeze(self, base: Counts, top: Counts, t0: float, keys: bool = True) -> FunctionReport:
        """The figures between two snapshots as a FunctionReport (times relative to ``t0``);
        ``keys``: the events keep their keys (``jitlens diff``; not in the journal's frames)."""
        keyed: set[str] = set()  # issue 23: one key per distinct signature, a few dozen at most

        def with_key(e: EventBuilder) -> bool:
            if not keys or e.signature in keyed or len(keyed) >= KEYED_SIGNATURES_MAX:
                return False
            keyed.add(e.signature)
            return True

        events = tuple(e.freeze(t0, with_key(e)) for e in self.events[base.events : top.events])
        calls = top.calls - base.calls
        # a call that traced and then raised is one miss, not a miss and a failure
        not_hits = (
            top.miss_calls
            - base.miss_calls
            + top.inlined
            - base.inlined
            + (top.failed - base.failed)
            - (top.failed_misses - base.failed_misses)
            + (top.eager - base.eager)  # ran op by op under jax_disable_jit: no cache involved
        )
        times = self.call_times[base.call_times : top.call_times]
        return FunctionReport(
            name=self.name,
            qualname=self.qualname,
            kind=self.kind,
            defined_at=self.defined_at,
            first_call_site=self.first_call_site or (events[0].call_site if events else ""),
            calls=calls if self.counts_calls else None,
            traces=top.traces - base.traces,
            compiles=top.compiles - base.compiles,
            cache_hits=max(0, calls - not_hits) if self.counts_calls else None,
            persistent_cache_hits=top.phits - base.phits,
            trace_seconds=sum(e.trace_seconds for e in events),
            lower_seconds=sum(e.lower_seconds for e in events),
            compile_seconds=sum(e.compile_seconds for e in events),
            events=events,
            stale_hits=tuple(self.stale_hits[base.stale : top.stale]),
            unchecked=tuple(self.unchecked[base.unchecked : top.unchecked]),
            internal=self.internal,
            id=self.id,
            call_times=tuple(round(max(0.0, t - t0), 6) for t in times),
            call_entries=tuple(self.call_entries[base.call_times : top.call_times]),
            first_call_index=base.calls,
            stopped=tuple(e.freeze(t0, False) for e in self.stopped[base.stopped : top.stopped]),
        )

    def journal_state(self, t0: float, written: int | None, tail: int) -> tuple[Any, ...]:
        """For the journal's frame: ``(figures with the events from tail_from on, tail_from,
        events now, calls, calls that were not hits)``; ``written``: the events already in the
        journal (``None``: none), of which the last ``tail`` are written again."""
        with self.lock:
            top = self.snapshot()
        n = top.events
        tail_from = min(n if written is None else written, max(0, n - tail))
        fn = self.freeze(Counts(events=tail_from, call_times=top.call_times), top, t0, keys=False)
        not_hits = top.miss_calls + top.inlined + top.failed - top.failed_misses + top.eager
        return fn, tail_from, n, top.calls, not_hits

    def explain_retrace(
        self, b: EventBuilder, t0: float, width: int | None = None, number: int | None = None
    ) -> str:
        """One trace of this record as text (call site, reasons, fixes), for logs and errors,
        wrapped at ``width`` (``None``: lines whole); ``number``: the retrace's number, when
        the caller numbered it (the live log, in the order its lines come out).

        Usable while the trace is still running: only the events so far count.
        """
        from .._core.retrace_text import render_retrace  # text, at a retrace

        fn, event, _ = self.retrace_report(b, t0)
        return render_retrace(fn, event, width=width, number=number)

    def retrace_report(self, b: EventBuilder, t0: float) -> tuple[FunctionReport, Event, bool]:
        """This record's figures so far, ``b`` frozen, and whether it is among their events
        (not yet while the trace is still running)."""
        with self.lock:
            top = self.snapshot()
            index = next((i for i, e in enumerate(self.events) if e is b), None)
        fn = self.freeze(Counts(), top, t0)
        if index is not None:
            return fn, fn.events[index], True
        return fn, b.freeze(t0), False

    def forget_keys(self, keep: int, _unused: Any = None) -> None:
        """The wrapper is gone: keep only the latest keys (for new-wrapper comparisons)."""
        with self.lock:
            del self.keys[:-keep]
        self.window_seq = self.early_seq = -1
        self.entry_by_light.clear()
        self.ties.clear()

    def mark_cleared(self) -> None:
        self.window_seq = self.early_seq = -1
        for k in self.keys:
            k.cleared = True
            k.clears_seen = None  # counted as cleared: a later jax.clear_caches() adds nothing
        self.entry_by_light.clear()
        self.ties.clear()
