"""A report as Chrome trace events, for ui.perfetto.dev and chrome://tracing."""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
from typing import Any

from .._core.files import write_atomic
from .._core.kinds import EventKind
from .._core.report import Event, FunctionReport, Report
from .svg import call_events

LOG = logging.getLogger("jitlens")

#: Most cache-hit instant events in one trace file, over all functions.
MAX_INSTANTS = 10_000
#: ``ph`` of the trace-event format: complete span, metadata, instant.
COMPLETE, METADATA, INSTANT = "X", "M", "i"
PHASES = ("trace", "lower", "compile")

PROCESS_NAME = "jitlens {host} process {index}/{count}"
THREAD_NAME = "{qualname} ({kind})"
EVENT_NAME = "{label} {qualname}"
EVENT_LABELS = {"trace": "first trace", "retrace": "retrace #{number}", "compile": "recompile"}
PHASE_NAME = "{phase}"
HIT_NAME = "cache hit"
REASON = "{kind} {path}: {before} -> {after}"


def _us(seconds: float) -> float:
    """Seconds as microseconds, the unit of ``ts`` and ``dur``; junk becomes 0."""
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        return 0.0
    return round(seconds * 1e6, 3)


def _finite(value: float) -> float | None:
    """JSON has no NaN or infinity: such values become null."""
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _metadata(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": METADATA, "name": name, "pid": pid, "tid": tid, "args": args}


def _event_spans(
    fn: FunctionReport, event: Event, number: int, pid: int, tid: int, not_before: float
) -> list[dict[str, Any]]:
    """A span for the whole event with its trace, lower and compile laid out after each other.

    Spans of one thread must nest, so an event that would overlap the previous
    one (two threads tracing the same function) starts where that one ended.
    """
    start = max(_us(event.time), not_before)
    label = EVENT_LABELS.get(event.kind, event.kind).format(number=number)
    args = {
        "kind": event.kind,
        "call_index": event.call_index,
        "call_site": event.call_site,
        "signature": event.signature,
        "entry": event.entry,
        "persistent_cache_hit": event.persistent_cache_hit,
        "explain_seconds": _finite(event.explain_seconds),
        "reasons": [
            REASON.format(kind=r.kind, path=r.path or r.argument, before=r.before, after=r.after)
            for r in event.reasons
        ],
        "fixes": list(dict.fromkeys(r.fix for r in event.reasons if r.fix)),
    }
    phases: list[dict[str, Any]] = []
    at = start
    for phase in PHASES:
        dur = _us(getattr(event, f"{phase}_seconds"))
        if dur <= 0:
            continue
        phases.append(
            {"ph": COMPLETE, "name": PHASE_NAME.format(phase=phase), "cat": phase,
             "ts": at, "dur": dur, "pid": pid, "tid": tid}
        )  # fmt: skip
        at = round(at + dur, 3)
    whole = {
        "ph": COMPLETE,
        "name": EVENT_NAME.format(label=label, qualname=fn.qualname),
        "cat": event.kind,
        "ts": start,
        "dur": round(at - start, 3),
        "pid": pid,
        "tid": tid,
        "args": args,
    }
    return [whole, *phases]


def _function_events(
    fn: FunctionReport, pid: int, tid: int, instants: int
) -> tuple[list[dict[str, Any]], int]:
    out = [
        _metadata(
            "thread_name",
            pid,
            tid,
            {"name": THREAD_NAME.format(qualname=fn.qualname, kind=fn.kind)},
        ),
        _metadata("thread_sort_index", pid, tid, {"sort_index": tid}),
    ]
    counter = itertools.count(1)
    numbers = {id(e): next(counter) if e.kind is EventKind.RETRACE else 0 for e in fn.events}
    end = 0.0
    for event in sorted(fn.events, key=lambda e: _us(e.time)):
        spans = _event_spans(fn, event, numbers[id(event)], pid, tid, end)
        end = spans[0]["ts"] + spans[0]["dur"]
        out += spans
    traced = call_events(fn)
    for call, t in enumerate(fn.call_times):
        if call in traced:
            continue
        if instants >= MAX_INSTANTS:
            break
        entry = fn.call_entries[call] if call < len(fn.call_entries) else None
        out.append(
            {"ph": INSTANT, "s": "t", "name": HIT_NAME, "cat": "hit", "ts": _us(t), "pid": pid,
             "tid": tid, "args": {"recorded_call": call, "entry": entry}}
        )  # fmt: skip
        instants += 1
    return out, instants


def _trace_events(report: Report) -> dict[str, Any]:
    pid = report.process_index
    name = PROCESS_NAME.format(
        host=report.host, index=report.process_index, count=report.process_count
    )
    events: list[dict[str, Any]] = [
        _metadata("process_name", pid, 0, {"name": name}),
        _metadata("process_sort_index", pid, 0, {"sort_index": pid}),
    ]
    instants = 0
    ordered = sorted(report.functions, key=lambda f: (f.internal, -f.seconds_lost, f.qualname))
    for tid, fn in enumerate(ordered, 1):
        more, instants = _function_events(fn, pid, tid, instants)
        events += more
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "jitlens_version": report.jitlens_version,
            "jax_version": report.jax_version,
            "flax_version": report.flax_version,
            "backend": report.backend,
            "host": report.host,
            "process_index": report.process_index,
            "process_count": report.process_count,
            "started_at": _finite(report.started_at),
            "argv": list(report.argv),
        },
    }


def render_trace_events(report: Report) -> dict[str, Any]:
    """The report in the Chrome JSON trace-event format (``ts``/``dur`` in microseconds).

    One thread per function, named after it; every trace is a span holding its
    trace, lower and compile phases one after the other from ``Event.time``;
    cache hits are instant events (at most ``MAX_INSTANTS``). Open the JSON in
    ui.perfetto.dev or chrome://tracing. Never raises: on an internal failure
    it logs and returns a trace with the process name only.

    Example:
        >>> from jitlens._core.report import Report
        >>> trace = render_trace_events(Report(1, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, ()))
        >>> trace["traceEvents"][0]["args"]
        {'name': 'jitlens box process 0/1'}
    """
    try:
        return _trace_events(report)
    except Exception:
        LOG.exception("jitlens: rendering the trace events failed")
        return {
            "traceEvents": [_metadata("process_name", 0, 0, {"name": "jitlens"})],
            "displayTimeUnit": "ms",
        }


def write_trace(report: Report, path: str | os.PathLike[str]) -> None:
    """Write the trace events of ``report`` to ``path`` (atomically) as JSON."""
    text = json.dumps(render_trace_events(report), allow_nan=False, default=str)
    write_atomic(path, text)
