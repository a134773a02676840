"""One view of the per-process reports of a multi-host job, and where the processes diverged."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .._core.report import FunctionReport, Report
from .._errors import ReportError
from .model import BRANCH_KINDS as BRANCH_KINDS
from .model import DIVERGENCE_KINDS as DIVERGENCE_KINDS
from .model import MERGE_SCHEMA as MERGE_SCHEMA
from .model import MERGE_SCHEMA_VERSION as MERGE_SCHEMA_VERSION
from .model import Branch as Branch
from .model import BranchKind as BranchKind
from .model import Divergence as Divergence
from .model import DivergenceKind as DivergenceKind
from .model import MergedFunction as MergedFunction
from .model import MergedReport as MergedReport
from .model import event_key, process_runs
from .pcache import cache_differences  # issue 23

NO_REPORTS = "jitlens merge needs at least one report"
DUPLICATE_INDEX = (
    "process_index {index} appears in {n} reports ({sources}); each process must write its own "
    "file: put {{process_index}} in the path, e.g. --json 'report-{{process_index}}.json'"
)
COUNT_MISMATCH = (
    "the reports come from different jobs: process_count is {counts}; merge only the reports "
    "of one run"
)
INDEX_OUT_OF_RANGE = "{source}: process_index {index} is not below its process_count {count}"

MESSAGES: dict[DivergenceKind, str] = {
    DivergenceKind.MISSING: "`{name}` exists in {present} but not in {absent}",
    DivergenceKind.TRACES: "`{name}` compiled differently across processes; they parted at {where}",
    DivergenceKind.DISPATCH: "`{name}` ran different compiled programs at call {call}",
    DivergenceKind.CALLS: "`{name}` was called a different number of times: {counts}",
}
FIXES: dict[DivergenceKind, str] = {
    DivergenceKind.MISSING: (
        "create and call `{name}` on every process, or keep it free of cross-process "
        "collectives (harmless if it only logs on one process)"
    ),
    DivergenceKind.TRACES: (
        "make the inputs of `{name}` identical on every process: same shapes, dtypes, shardings "
        "and static values (e.g. pad or drop the last partial batch on all hosts alike)"
    ),
    DivergenceKind.DISPATCH: (
        "feed `{name}` the same sequence of input shapes/static values on every process "
        "(e.g. shard the dataset so all hosts see equal batch sizes in the same order)"
    ),
    DivergenceKind.CALLS: (
        "call `{name}` the same number of times on every process (check early exits, uneven "
        "data shards and `if jax.process_index() == 0:` blocks)"
    ),
}


def _validate(reports: Sequence[Report], sources: Sequence[str]) -> tuple[Report, ...]:
    if not reports:
        raise ReportError(NO_REPORTS)
    names = list(sources) if len(sources) == len(reports) else []
    label = [names[i] if names else f"report #{i}" for i in range(len(reports))]
    counts = sorted({r.process_count for r in reports})
    if len(counts) > 1:
        detail = ", ".join(
            f"{c} in {', '.join(label[i] for i, r in enumerate(reports) if r.process_count == c)}"
            for c in counts
        )
        raise ReportError(COUNT_MISMATCH.format(counts=detail))
    for i, r in enumerate(reports):
        if not 0 <= r.process_index < r.process_count:
            raise ReportError(
                INDEX_OUT_OF_RANGE.format(
                    source=label[i], index=r.process_index, count=r.process_count
                )
            )
    seen: dict[int, list[str]] = {}
    for i, r in enumerate(reports):
        seen.setdefault(r.process_index, []).append(label[i])
    for index, where in sorted(seen.items()):
        if len(where) > 1:
            raise ReportError(
                DUPLICATE_INDEX.format(index=index, n=len(where), sources=", ".join(where))
            )
    return tuple(sorted(reports, key=lambda r: r.process_index))


def _match(reports: Sequence[Report], include_internal: bool) -> list[MergedFunction]:
    """Pair records by (qualname, defined_at), then by order of creation among equals."""
    table: dict[tuple[str, str, int], list[FunctionReport | None]] = {}
    for p, report in enumerate(reports):
        occurrences: dict[tuple[str, str], int] = {}
        for fn in report.functions:
            if fn.internal and not include_internal:
                continue
            base = (fn.qualname, fn.defined_at)
            occ = occurrences.get(base, 0)
            occurrences[base] = occ + 1
            key = (*base, occ)
            if key not in table:  # a new list per process was the merge's whole cost at 10^4
                table[key] = [None] * len(reports)
            table[key][p] = fn
    merged = []
    for (qualname, defined_at, occ), recs in table.items():
        first = next(r for r in recs if r is not None)
        merged.append(
            MergedFunction(
                name=first.name,
                qualname=qualname,
                defined_at=defined_at,
                kind=first.kind,
                occurrence=occ,
                internal=first.internal,
                reports=tuple(recs),
            )
        )
    return merged


def _groups(values: dict[int, Any]) -> list[tuple[tuple[int, ...], Any]]:
    """Processes grouped by equal value, groups in order of their lowest process."""
    out: dict[Any, list[int]] = {}
    for p in sorted(values):
        out.setdefault(values[p], []).append(p)
    return [(tuple(ps), v) for v, ps in out.items()]


def _uniform(values: Sequence[int | None]) -> int | None:
    return values[0] if len(set(values)) == 1 else None


def _signature_of_entry(fn: FunctionReport, entry: int) -> str:
    return next((e.signature for e in fn.events if e.entry == entry), "")


def _ran_at(call: int | None, records: Sequence[FunctionReport]) -> str:
    """The signature all ``records`` ran at ``call`` (from their call entries), or ``""``."""
    if call is None or any(call >= len(r.call_entries) for r in records):
        return ""
    entries = {r.call_entries[call] for r in records}
    if len(entries) != 1 or min(entries) < 0:
        return ""
    return _signature_of_entry(records[0], entries.pop())


def _make(
    fn: MergedFunction, kind: DivergenceKind, branches: list[Branch], **fields: Any
) -> Divergence:
    fmt = {"name": fn.qualname, **fields.pop("fmt", {})}
    return Divergence(
        kind=kind,
        name=fn.name,
        qualname=fn.qualname,
        defined_at=fn.defined_at,
        occurrence=fn.occurrence,
        branches=tuple(branches),
        message=MESSAGES[kind].format(**fmt),
        fix=FIXES[kind].format(**fmt),
        **fields,
    )


def _plist(ps: Sequence[int]) -> str:
    return ("process " if len(ps) == 1 else "processes ") + process_runs(ps)


def _missing(
    fn: MergedFunction,
    present: dict[int, FunctionReport],
    absent: list[int],
    start: dict[int, float],
) -> Divergence:
    have = sorted(present)
    times = [start[p] + present[p].events[0].time for p in have if present[p].events]
    branches = [
        Branch(tuple(have), BranchKind.PRESENT, calls=_uniform([present[p].calls for p in have])),
        Branch(tuple(absent), BranchKind.ABSENT),
    ]
    return _make(
        fn,
        DivergenceKind.MISSING,
        branches,
        time=min(times) if times else None,
        fmt={"present": _plist(have), "absent": _plist(absent)},
    )


def _trace_parting(
    fn: MergedFunction, present: dict[int, FunctionReport], start: dict[int, float]
) -> Divergence | None:
    """First position where the trace/compile sequences of the processes differ."""
    keys = {p: [event_key(e) for e in rec.events] for p, rec in present.items()}
    for i in range(max(len(k) for k in keys.values())):
        at = {p: (k[i] if i < len(k) else None) for p, k in keys.items()}
        if len(set(at.values())) == 1:
            continue
        groups = _groups(at)
        calls_at = [k[1] for _, k in groups if k is not None and k[1] is not None]
        call = min(calls_at) if calls_at else None
        branches: list[Branch] = []
        times: list[float] = []
        for ps, key in groups:
            calls = _uniform([present[p].calls for p in ps])
            if key is None:
                ran = _ran_at(call, [present[p] for p in ps])
                branches.append(
                    Branch(ps, BranchKind.NONE, call if ran else None, ran, calls=calls)
                )
                continue
            e = present[ps[0]].events[i]
            branches.append(
                Branch(ps, BranchKind(e.kind), e.call_index, e.signature, e.reasons, calls)
            )
            times.extend(start[p] + present[p].events[i].time for p in ps)
        return _make(
            fn,
            DivergenceKind.TRACES,
            branches,
            event_index=i,
            call_index=call,
            time=min(times) if times else None,
            fmt={"where": f"call {call}" if call is not None else f"trace #{i + 1}"},
        )
    return None


def _call_time(
    present: dict[int, FunctionReport], start: dict[int, float], call: int
) -> float | None:
    times = [start[p] + r.call_times[call] for p, r in present.items() if call < len(r.call_times)]
    return min(times) if times else None


def _dispatch_parting(
    fn: MergedFunction, present: dict[int, FunctionReport], start: dict[int, float]
) -> Divergence | None:
    """Same compiled programs, but a call that ran a different one on some process."""
    entries = {p: rec.call_entries for p, rec in present.items() if rec.call_entries}
    if len(entries) < 2:
        return None
    for c in range(min(len(v) for v in entries.values())):
        at = {p: v[c] for p, v in entries.items()}
        # A negative entry is a call the tracker could not attribute: no evidence either way.
        if len(set(at.values())) == 1 or min(at.values()) < 0:
            continue
        branches = [
            Branch(ps, BranchKind.HIT, c, _signature_of_entry(present[ps[0]], entry))
            for ps, entry in _groups(at)
        ]
        time = _call_time(present, start, c)
        return _make(
            fn, DivergenceKind.DISPATCH, branches, call_index=c, time=time, fmt={"call": c}
        )
    return None


def _calls_parting(
    fn: MergedFunction, present: dict[int, FunctionReport], start: dict[int, float]
) -> Divergence | None:
    calls = {p: rec.calls for p, rec in present.items() if rec.calls is not None}
    if len(set(calls.values())) < 2:
        return None
    fewest = min(calls.values())
    groups = _groups(calls)
    return _make(
        fn,
        DivergenceKind.CALLS,
        [Branch(ps, BranchKind.CALLS, calls=n) for ps, n in groups],
        call_index=fewest,
        time=_call_time(present, start, fewest),
        fmt={"counts": "; ".join(f"{n} on {_plist(ps)}" for ps, n in groups)},
    )


def _diverge_function(fn: MergedFunction, reports: Sequence[Report]) -> list[Divergence]:
    indices = [r.process_index for r in reports]
    start = {r.process_index: r.started_at for r in reports}
    present = {p: rec for p, rec in zip(indices, fn.reports, strict=True) if rec is not None}
    absent = [p for p in indices if p not in present]
    found = [_missing(fn, present, absent, start)] if absent else []
    if len(present) >= 2:
        # Only the first kind of parting is reported: later ones follow from it.
        for check in (_trace_parting, _dispatch_parting, _calls_parting):
            parting = check(fn, present, start)
            if parting is not None:
                found.append(parting)
                break
    return found


def _order(divergences: list[Divergence]) -> tuple[Divergence, ...]:
    """Earliest parting first: in a hang, that is the step every process waits at."""
    ranked = sorted(
        enumerate(divergences),
        key=lambda item: (item[1].time is None, item[1].time or 0.0, item[0]),
    )
    return tuple(d for _, d in ranked)


def find_divergence(
    reports: Sequence[Report], *, include_internal: bool = False
) -> tuple[Divergence, ...]:
    """Every function the processes of one run did not trace, compile or call alike.

    The first element is the earliest parting in wall-clock time, the likely
    cause when a multi-host job hangs: processes that compile different
    programs for the same step enter different collectives and wait for each
    other. An empty tuple means every process ran the same programs.

    Raises:
        ReportError: duplicate ``process_index`` or mismatched ``process_count``.

    Example:
        >>> from jitlens._core.report import Report
        >>> r0 = Report(1, "0", "0", "0", "cpu", 0, 2, "a", 0.0, 1.0, ())
        >>> r1 = Report(1, "0", "0", "0", "cpu", 1, 2, "b", 0.0, 1.0, ())
        >>> find_divergence([r0, r1])
        ()
    """
    return merge_reports(reports, include_internal=include_internal).divergences


def merge_reports(
    reports: Sequence[Report],
    *,
    sources: Sequence[str] = (),
    include_internal: bool = False,
) -> MergedReport:
    """Combine the reports of the processes of one run and find where they diverged.

    Functions are matched by ``qualname`` and ``defined_at``, and by order of
    creation when several records share those. Missing processes (fewer
    reports than ``process_count``) are allowed and listed in the view.

    Args:
        reports: One report per process, in any order.
        sources: Where each report came from (file names), for messages.
        include_internal: Also compare functions jitlens marked internal.

    Raises:
        ReportError: no report, duplicate ``process_index``, mismatched
            ``process_count``, or an index outside ``[0, process_count)``.

    Example:
        >>> from jitlens._core.report import Report
        >>> reports = [Report(1, "0", "0", "0", "cpu", i, 2, "h", 0.0, 1.0, ()) for i in (1, 0)]
        >>> merged = merge_reports(reports)
        >>> merged.process_indices, merged.consistent
        ((0, 1), True)

    See also:
        :func:`find_divergence` for the divergences alone; ``jitlens merge`` on the command line.
    """
    from . import page as _page  # registers merged.to_html()
    from . import render as _render  # registers merged.to_text()

    del _page, _render
    ordered = _validate(reports, sources)
    if len(sources) == len(reports):
        by_report = {id(r): s for r, s in zip(reports, sources, strict=True)}
        sources = tuple(by_report[id(r)] for r in ordered)
    functions = _match(ordered, include_internal)
    divergences: list[Divergence] = []
    marked = []
    for fn in functions:
        found = _diverge_function(fn, ordered)
        divergences.extend(found)
        marked.append(dataclasses.replace(fn, diverged=bool(found)))
    return MergedReport(
        process_count=ordered[0].process_count,
        reports=ordered,
        functions=tuple(marked),
        divergences=_order(divergences),
        sources=tuple(sources),
        cache_differences=cache_differences(ordered, marked),  # issue 23
    )
