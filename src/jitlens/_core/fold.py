"""Wrappers of the same code folded into one function: one row, one count, one numbering.

A jit wrapper built again per epoch (``step = nnx.jit(train_step)`` in the
loop) is one function to its author, however many wrapper objects jitlens
recorded. Every view counts and shows it the same way, from two wrappers up:
one row ("3 wrappers of `train_step` at a.py:9"), one function in "N jitted
functions", its calls numbered across the wrappers in the order they were
made (a retrace of the second wrapper's first call is the call after the
first wrapper's last), and its compiled entries merged by signature, so that
the timeline and the entries table show every call.

Pure data: a folded :class:`FunctionReport` is built from its members and
rendered like any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .report import Event, FunctionReport

#: Wrappers of the same code shown as one function from this many.
FOLD_MIN = 2
FOLDED = "{n:,} wrappers of `{qualname}` at {defined_at}, {each}"
UNKNOWN = "?"


def fold_wrappers(functions: Sequence[FunctionReport]) -> list[FunctionReport]:
    """One function per code for ``FOLD_MIN`` or more wrappers of it, in first-seen order."""
    groups: dict[tuple[str, str, str], list[FunctionReport]] = {}
    for fn in functions:
        groups.setdefault((fn.qualname, fn.kind, fn.defined_at), []).append(fn)
    out: list[FunctionReport] = []
    for (_qualname, _kind, defined_at), members in groups.items():
        if len(members) < FOLD_MIN or not defined_at:
            out += members
        else:
            out.append(_fold(members)[0])
    return out


def fold_event(members: Sequence[FunctionReport], event: Event) -> tuple[FunctionReport, Event]:
    """``members`` (wrappers of one code, in the order made) as one function, and ``event``,
    one of theirs, as that function numbers it: its call and its retrace counted across the
    wrappers, as the summary at exit shows them (a live line says what the summary will).

    Fewer than ``FOLD_MIN`` members, or an event of none of them: returned as they are.
    """
    owner = next((m for m in members if any(e is event for e in m.events)), None)
    if owner is None or len(members) < FOLD_MIN:
        return owner or members[0], event
    folded, renamed = _fold(list(members))
    return folded, renamed.get(id(event), event)


def count_functions(functions: Sequence[FunctionReport]) -> int:
    """How many functions ``functions`` are, wrappers of the same code counted once."""
    return len(fold_wrappers(functions))


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def _fold(members: list[FunctionReport]) -> tuple[FunctionReport, dict[int, Event]]:
    """The folded function, and each member's event (by ``id``) as the folded one has it."""
    first = members[0]
    traces = [m.traces for m in members]
    total = _sum(traces)
    each = (
        f"{traces[0]} trace{'' if traces[0] == 1 else 's'} each"
        if len(set(traces)) == 1 and traces[0] is not None
        else f"{total if total is not None else UNKNOWN} trace{'' if total == 1 else 's'}"
    )
    events, call_times, call_entries, renamed = _merge_calls(members)
    folded = dataclasses.replace(
        first,
        qualname=FOLDED.format(
            n=len(members), qualname=first.qualname, defined_at=first.defined_at, each=each
        ),
        wrappers=len(members),
        wrapped_qualname=first.qualname,
        calls=_sum([m.calls for m in members]),
        traces=total,
        compiles=_sum([m.compiles for m in members]),
        cache_hits=_sum([m.cache_hits for m in members]),
        persistent_cache_hits=sum(m.persistent_cache_hits for m in members),
        trace_seconds=sum(m.trace_seconds for m in members),
        lower_seconds=sum(m.lower_seconds for m in members),
        compile_seconds=sum(m.compile_seconds for m in members),
        events=events,
        stale_hits=tuple(h for m in members for h in m.stale_hits),
        unchecked=None
        if any(m.unchecked is None for m in members)
        else tuple(u for m in members for u in m.unchecked or ()),
        stopped=tuple(e for m in members for e in m.stopped),
        call_times=call_times,
        call_entries=call_entries,
        first_call_index=0,
    )
    return folded, renamed


def _merge_calls(
    members: list[FunctionReport],
) -> tuple[tuple[Event, ...], tuple[float, ...], tuple[int, ...], dict[int, Event]]:
    """The members' events and calls as one function's: calls numbered across members,
    entries renumbered by signature (and each member's event, by ``id``, as merged).

    Calls are put in time order when every call of every member was timed;
    otherwise the members' calls follow one another in the order the wrappers
    were made (a jit built per epoch), and the timeline is left out.
    """
    entry_of: dict[str, int] = {}

    def merged_entry(member: FunctionReport, entry: int) -> int:
        if entry < 0:
            return entry
        signature = next((e.signature for e in member.events if e.entry == entry), None)
        if signature is None:
            return -1
        return entry_of.setdefault(signature, len(entry_of))

    timed = all(
        m.calls is not None
        and m.first_call_index == 0
        and len(m.call_times) == len(m.call_entries) == m.calls
        for m in members
    )
    index_of: dict[tuple[int, int], int] = {}  # (member, its call index) -> merged index
    times: list[float] = []
    entries: list[int] = []
    if timed:
        calls = sorted((t, k, i) for k, m in enumerate(members) for i, t in enumerate(m.call_times))
        for t, k, i in calls:
            index_of[(k, i)] = len(times)
            times.append(t)
            entries.append(merged_entry(members[k], members[k].call_entries[i]))
    offset: int | None = 0
    events: list[tuple[float, Event]] = []
    renamed: dict[int, Event] = {}
    for k, m in enumerate(members):
        for e in sorted(m.events, key=lambda e: e.time):
            index = e.call_index
            if index is not None:
                if timed:
                    index = index_of.get((k, index - m.first_call_index))
                else:
                    index = None if offset is None else offset + index
            merged = dataclasses.replace(e, call_index=index, entry=merged_entry(m, e.entry))
            renamed[id(e)] = merged
            events.append((e.time, merged))
        if offset is not None and m.calls is not None and m.first_call_index == 0:
            offset += m.calls
        else:
            offset = None  # calls before tracking, or not counted: the numbering is unknown
    ordered = tuple(e for _, e in sorted(events, key=lambda pair: pair[0]))
    return ordered, tuple(times), tuple(entries), renamed
