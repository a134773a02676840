"""A retrace as it happens: the log line, its data, the runaway warning, the profiler mark.

The summary at exit says everything, but a ten-hour job should show its
first retrace in minute one, where its user already looks:

* **the log** (logger ``jitlens``): each function's first
  :data:`LIVE_FULL` retraces explained in full at INFO, then one line at
  retrace 4, 8, 16, … (powers of two), the rest at DEBUG, so that a runaway
  function cannot flood the log. Every record carries ``record.jitlens``, a
  plain dict (:func:`event_data`), so a ``logging.Handler`` can forward the
  event to any dashboard without parsing text.
* **one warning per function** (:class:`jitlens.RunawayRecompileWarning`)
  when its recompiles reach ``JITLENS_WARN_RECOMPILES`` (default 8, ``0``
  or ``off``: never), with the folded reason and its fix. Under ``-W error``
  it is logged instead: it is raised from inside JAX's compile, where an
  exception would only be jitlens failing.
* **the user's own profile**: a ``jax.profiler.TraceAnnotation`` named
  ``jitlens: retrace f (model.avg_pool identity_static)`` spans each
  retrace, from its trace start to its compile end, so XProf and Perfetto
  show it on the profile's own clock. Outside a profiling session the
  annotation is a no-op of JAX's.

Compare ``jax_log_compiles`` (every compile, no reason) and
``jax_explain_cache_misses`` (a key dump per miss, unfolded): this module
logs the reason with the user's path, folded.
"""

from __future__ import annotations

import collections
import logging
import os
import shutil
import sys
import threading
from typing import Any

import jax

from .. import _compat, _config
from .._core.kinds import EventKind, ReasonKind
from .._core.report import Reason
from .._errors import RunawayRecompileWarning
from . import sink
from .records import EventBuilder, Record
from .registry import REGISTRY
from .state import internal_failure, log

#: Retraces of one function explained in full as they happen; later ones are folded.
LIVE_FULL = 3

FULL_LINE = "jitlens: {text}"
FOLDED_LINE = "jitlens: `{name}` {label} at {site}: {reason}"
#: How a folded line names its event: a retrace, or a compile from the cached trace.
FOLDED_LABELS = {
    "retrace": "retrace #{number}",
    "compile": "recompile without a retrace (#{number})",
}
FOLDED_NOTE = (
    " (further retraces of `{name}` are folded: one line at retrace 8, 16, 32, …; "
    "all of them are in the summary at exit)"
)
NO_REASON = "no difference found"
FOLDED_REASON = "{path} {kind}: {before} -> {after}"
MORE_REASONS = " (+{n} more)"
RUNAWAY = (
    "jitlens: `{name}` ({kind}, {defined_at}) recompiled {n} times "
    "(JITLENS_WARN_RECOMPILES={limit}): {path} {reason_kind} in {count} of them, {values}"
)
RUNAWAY_FIX = "\n  fix: {fix}"
RUNAWAY_OFF = "\n  (JITLENS_WARN_RECOMPILES=off silences this warning)"
PROFILER_NAME = "jitlens: retrace {name} ({reasons})"
CHANGE = "{before} -> {after}"

_LOCK = threading.Lock()
#: Held from a retrace's number to its line made and queued (re-entrant, to be safe), never
#: while the program's handlers run: a handler may wait for a thread that retraces.
_LOG_LOCK = threading.RLock()
#: Records made, in the order of their numbers, waiting for the thread that writes them.
_PENDING: collections.deque[logging.LogRecord] = collections.deque()
#: Held by the one thread handing the queued records to the handlers (never waited for).
_WRITING = threading.Lock()
#: a function (:func:`_function_key`) -> retraces logged so far.
_LOGGED: dict[Any, int] = {}
#: functions (:func:`_function_key`) already warned about (one runaway warning per function).
_WARNED: set[Any] = set()
#: a function -> its wrappers' records by id (a jit rebuilt per epoch: one function).
_WRAPPERS: dict[Any, dict[int, Record]] = {}


class _Open(threading.local):
    """The profiler annotation of the retrace in progress in this thread."""

    def __init__(self) -> None:
        self.builder: EventBuilder | None = None
        self.annotation: Any = None


_open = _Open()


# ------------------------------------------------------------------ data


def _reasons(reasons: tuple[Reason, ...]) -> list[dict[str, str]]:
    return [
        {
            "kind": r.kind,
            "argument": r.argument,
            "path": r.path,
            "before": r.before,
            "after": r.after,
        }
        for r in reasons
    ]


def event_data(rec: Record, b: EventBuilder, event: str, number: int | None) -> dict[str, Any]:
    """What ``record.jitlens`` holds: plain JSON-able data of one event.

    Example of a retrace's dict::

        {"event": "retrace", "function": "train_step", "name": "train_step",
         "jit_kind": "nnx.jit", "defined_at": "train.py:12", "call_site": "train.py:40",
         "call_index": 5, "retrace": 1, "compiles": 2,
         "reasons": [{"kind": "shape", "argument": "x", "path": "x",
                      "before": "f32[8,3]", "after": "f32[5,3]"}],
         "trace_seconds": 0.01, "lower_seconds": 0.002, "compile_seconds": 0.03,
         "seconds": 0.042}
    """
    seconds = b.trace_seconds + b.lower_seconds + b.compile_seconds
    return {
        "event": event,
        "function": rec.qualname,
        "name": rec.name,
        "jit_kind": rec.kind,
        "defined_at": rec.defined_at,
        "call_site": b.call_site,
        "call_index": b.call_index,
        "retrace": number,
        "compiles": rec.compiles,
        "reasons": _reasons(b.reasons),
        "trace_seconds": round(b.trace_seconds, 6),
        "lower_seconds": round(b.lower_seconds, 6),
        "compile_seconds": round(b.compile_seconds, 6),
        "seconds": round(seconds, 6),
    }


def _plain_data(record: logging.LogRecord) -> bool:
    """Logger filter: every jitlens record carries ``record.jitlens`` (a message's is minimal)."""
    if not hasattr(record, "jitlens"):
        record.jitlens = {"event": "message", "function": None, "level": record.levelname}
    return True


if _plain_data not in log.filters:
    log.addFilter(_plain_data)


def _first_reason(reasons: tuple[Reason, ...]) -> str:
    if not reasons:
        return NO_REASON
    from .._core.retrace_text import shorten  # text, at a retrace

    r = reasons[0]
    text = FOLDED_REASON.format(
        path=r.path or r.argument,
        kind=r.kind,
        before=shorten(r.before, 40),
        after=shorten(r.after, 40),
    )
    return text + (MORE_REASONS.format(n=len(reasons) - 1) if len(reasons) > 1 else "")


# ------------------------------------------------------------------ the log


def _level(number: int) -> int:
    if number <= LIVE_FULL or number & (number - 1) == 0:
        return logging.INFO
    return logging.DEBUG


#: The width a logged retrace is wrapped at where stderr is no terminal (a log file, a pipe, a
#: notebook): the report's, so that no line runs to hundreds of characters. A line of code a
#: fix ends with stays whole, to copy; ``record.jitlens`` holds the data, for machines.
LOG_WIDTH = 100


def _log_width() -> int:
    """The width to wrap a logged retrace at: the terminal's when stderr is one (or COLUMNS
    asks for one), else :data:`LOG_WIDTH`, less the ``jitlens: `` prefix."""
    try:
        tty = sys.stderr is not None and sys.stderr.isatty()
    except Exception:  # a program's own stream object
        tty = False
    columns = LOG_WIDTH
    if tty or os.environ.get("COLUMNS", "").isdigit():
        columns = shutil.get_terminal_size((LOG_WIDTH, 24)).columns
    return max(40, columns - len(FULL_LINE.format(text="")))


def log_retrace(rec: Record, b: EventBuilder) -> None:
    """A retrace compiled (its seconds are known), or a compile from a cached trace with a
    cause (a parameter placed otherwise under ``nnx.jit``: no retrace, one compile more): log
    it, maybe warn, close its profiler mark."""
    try:
        _close_annotation(b)
    except Exception as exc:
        internal_failure("closing a profiler annotation", exc)
    key = _function_key(rec)
    # one decision per retrace, in the order its line comes out: threads retracing at once
    # each take the next number, and the line (full or folded) says that number
    with _LOG_LOCK:
        number = _LOGGED.get(key, 0) + 1
        _LOGGED[key] = number
        level = _level(number)
        if log.isEnabledFor(level):
            if number <= LIVE_FULL:
                width = _log_width()
                text = FULL_LINE.format(text=_explained(rec, b, width, number))
            else:
                label = FOLDED_LABELS.get(b.kind, FOLDED_LABELS["retrace"])
                text = FOLDED_LINE.format(
                    name=rec.qualname,
                    label=label.format(number=number),
                    site=b.call_site,
                    reason=_first_reason(b.reasons),
                )
                if number == LIVE_FULL + 1:
                    text += FOLDED_NOTE.format(name=rec.qualname)
            kind = "recompile" if b.kind == EventKind.COMPILE else "retrace"
            _queue(level, text, event_data(rec, b, kind, number))
    _write()
    check_runaway(rec, b)


def _queue(level: int, text: str, data: dict[str, Any]) -> None:
    """Make the record in this thread (its thread and time are this one's) and queue it."""
    record = log.makeRecord(
        log.name, level, __file__, 0, "%s", (text,), None, "log_retrace", {"jitlens": data}
    )
    _PENDING.append(record)


def _write() -> None:
    """Hand the queued records to the handlers, in order, unless another thread is doing so
    (it writes this thread's too, after its own: never waited for, so a handler that waits
    for a thread retracing at the same time cannot deadlock it; the lines keep their order)."""
    while _PENDING:
        if not _WRITING.acquire(blocking=False):
            return  # the thread writing takes ours before it lets go
        try:
            while _PENDING:
                log.handle(_PENDING.popleft())
        finally:
            _WRITING.release()


def _function_key(rec: Record) -> Any:
    """The function ``rec`` is one wrapper of, as the summary folds wrappers of one code
    (:func:`jitlens._core.fold.fold_wrappers`): a jit built again per epoch is one function
    whose retraces are numbered, and folded here, across its wrappers."""
    return (rec.qualname, rec.kind, rec.defined_at) if rec.defined_at else rec.id


def _explained(rec: Record, b: EventBuilder, width: int | None, number: int) -> str:
    """The retrace as :meth:`Record.explain_retrace` words it, its call and retrace numbered
    as the summary will number them: across the wrappers of the same code.

    A jit built per compile or per epoch (keras' train step after each ``model.compile``,
    ``jax.jit(lambda ...)`` in a loop) is a new wrapper whose first call is call #1 of its
    own; the summary folds the wrappers into one function and says call #5.
    """
    key = _function_key(rec)
    with REGISTRY.lock:
        group = [
            r
            for r in REGISTRY.records
            if r is rec or (not r.internal and r.id != rec.id and _function_key(r) == key)
        ]
    if len(group) < 2:
        return rec.explain_retrace(b, REGISTRY.t0, width, number)
    import dataclasses  # the first retrace of a rebuilt jit: not at jitlens' start-up

    from .._core.fold import fold_event
    from .._core.retrace_text import render_retrace
    from .records import Counts

    fn, event, listed = rec.retrace_report(b, REGISTRY.t0)
    members = []
    for r in group:
        if r is rec:
            members.append(fn if listed else dataclasses.replace(fn, events=(*fn.events, event)))
            continue
        with r.lock:
            top = r.snapshot()
        if top.calls or top.traces or top.events or top.stale:  # a row the summary shows
            members.append(r.freeze(Counts(), top, REGISTRY.t0))
    folded, event = fold_event(members, event)
    return render_retrace(
        dataclasses.replace(folded, qualname=fn.qualname), event, width=width, number=number
    )


# ------------------------------------------------------------------ the runaway warning


def _folded(group: list[Record]) -> tuple[Reason, int, str] | None:
    """The most frequent reason of the function's retraces and recompiles (across its
    wrappers), with its values."""
    events = []
    for rec in group:
        with rec.lock:
            events += [
                e
                for e in rec.events
                if e.kind in (EventKind.RETRACE, EventKind.COMPILE) and e.reasons
            ]
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    seen: dict[tuple[str, str], list[Reason]] = {}
    for e in events:
        for r in e.reasons:
            key = (r.kind, r.path or r.argument)
            counts[key] += 1
            seen.setdefault(key, []).append(r)
    if not counts:
        return None
    from .._core.retrace_text import values_text  # text, at a retrace

    key, count = counts.most_common(1)[0]
    rs = seen[key]
    return rs[-1], count, values_text(rs[-1], rs[:-1])


def runaway_text(
    rec: Record, recompiles: int, limit: int, group: list[Record] | None = None
) -> str:
    """The warning's words; ``group``: the function's wrappers (default: ``rec`` alone)."""
    folded = _folded(group or [rec])
    if folded is None:
        reason, count, values = None, recompiles, NO_REASON
    else:
        reason, count, values = folded
    text = RUNAWAY.format(
        name=rec.qualname,
        kind=rec.kind,
        defined_at=rec.defined_at,
        n=recompiles,
        limit=limit,
        path=(reason.path or reason.argument) if reason is not None else "",
        reason_kind=reason.kind if reason is not None else ReasonKind.UNKNOWN,
        count=count,
        values=values,
    )
    if reason is not None and reason.fix:
        text += RUNAWAY_FIX.format(fix=reason.fix)
    return text + RUNAWAY_OFF


def check_runaway(rec: Record, b: EventBuilder) -> None:
    """Warn once when a function's recompiles reach ``JITLENS_WARN_RECOMPILES``, counted
    across its wrappers as the summary folds them: a ``jax.jit(lambda ...)`` rebuilt every
    epoch compiles the same code each time, though each wrapper compiles once."""
    if rec.internal:
        return
    key = _function_key(rec)
    if key in _WARNED:
        return
    limit = _config.get("warn_recompiles")
    if not limit:
        return
    with _LOCK:
        wrappers = _WRAPPERS.get(key)
        if wrappers is None:  # its first retrace: the wrappers so far (a first trace is none)
            with REGISTRY.lock:
                siblings = list(REGISTRY.by_code.get(rec.code_key, ()))
            wrappers = _WRAPPERS[key] = {
                r.id: r for r in siblings if not r.internal and _function_key(r) == key
            }
        wrappers[rec.id] = rec
        group = list(wrappers.values())
    recompiles = sum(r.compiles for r in group) - 1
    if recompiles < limit:
        return
    with _LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    text = runaway_text(rec, recompiles, limit, group)
    data = event_data(rec, b, "runaway", _LOGGED.get(key))
    if log.isEnabledFor(logging.DEBUG):
        with _LOG_LOCK:  # after the retrace lines queued before it
            _queue(logging.DEBUG, text, data)
        _write()
    # from outside the program: on the terminal, never in its warning records or handlers
    sink.warn(text, RunawayRecompileWarning, stacklevel=_compat.user_stacklevel())


# ------------------------------------------------------------------ the profiler mark


def annotation_name(rec: Record, b: EventBuilder) -> str:
    reasons = ", ".join(f"{r.path or r.argument} {r.kind}" for r in b.reasons[:3]) or NO_REASON
    return PROFILER_NAME.format(name=rec.qualname, reasons=reasons)


def _on_trace(rec: Record, b: EventBuilder) -> None:
    """``REGISTRY.on_trace``: open the retrace's profiler annotation (its reasons are known)."""
    if b.kind != EventKind.RETRACE or rec.internal:
        return
    _close_annotation(None)  # a retrace of this thread that never compiled
    reason = b.reasons[0] if b.reasons else None
    args: dict[str, Any] = {"call_site": b.call_site}
    if b.call_index is not None:  # unknown: left out, never a made-up number
        args["call_index"] = b.call_index
    args["change"] = (
        CHANGE.format(before=reason.before, after=reason.after) if reason else NO_REASON
    )
    args["fix"] = reason.fix if reason is not None else ""
    annotation = jax.profiler.TraceAnnotation(
        annotation_name(rec, b).replace("#", ""),  # a "#" would start the metadata
        **{k: _traceme_text(v) if isinstance(v, str) else v for k, v in args.items()},
    )
    annotation.__enter__()
    _open.builder, _open.annotation = b, annotation


def _traceme_text(text: str) -> str:
    """``text`` safe inside a TraceMe name, encoded ``name#key=value,key=value#``:
    a comma would end the value there, a ``#`` the metadata."""
    return text.replace("#", "").replace(",", ";")


def _close_annotation(b: EventBuilder | None) -> None:
    """End the open annotation (of ``b``, or whichever is open when ``b`` is None)."""
    annotation = _open.annotation
    if annotation is None or (b is not None and _open.builder is not b):
        return
    _open.builder = _open.annotation = None
    annotation.__exit__(None, None, None)


if _on_trace not in REGISTRY.on_trace:
    REGISTRY.on_trace.append(_on_trace)
