"""Terminal text of a merged multi-process view: divergences first, then a table (its HTML:
``page``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from .._core.lines import Line, Role
from .._core.retrace_text import shorten
from .._render.color import want_color
from .._render.text import make_console, styled, terminal_width
from . import model as _model
from .model import Branch, BranchKind, Divergence, MergedFunction, MergedReport, process_runs

LOG = logging.getLogger("jitlens")

UNKNOWN = "?"

TITLE = "jitlens merge: {processes} of {count}, {hosts}, {functions}: {verdict}"
CONSISTENT = "consistent"
INCOMPLETE = "INCOMPLETE, no report from {processes}"
CONSISTENT_NOTE = "Every process traced, compiled and called the same programs."
DIVERGED = "{functions} DIVERGED"
MISSING_PROCESSES = "no report from {processes}: divergences involving them cannot be seen"
HANG_NOTE = (
    "Processes that compile or run different programs at the same step enter different "
    "collectives and wait for each other; the first divergence is the likely cause of a hang."
)
DIVERGENCE_HEADER = "divergence {number} of {total}: {qualname} ({defined_at})"
OCCURRENCE = " [wrapper #{n}]"
BRANCH_LINES: dict[BranchKind, str] = {
    BranchKind.TRACE: "{procs}  trace at call {call}: {signature}",
    BranchKind.RETRACE: "{procs}  retrace at call {call}: {signature}",
    BranchKind.COMPILE: "{procs}  compile at call {call}: {signature}",
    BranchKind.NONE: "{procs}  no further trace or compile{calls}",
    BranchKind.HIT: "{procs}  call {call} ran the program compiled for {signature}",
    BranchKind.CALLS: "{procs}  {n} call(s)",
    BranchKind.PRESENT: "{procs}  created it{calls}",
    BranchKind.ABSENT: "{procs}  never created it",
}
#: A ``none`` branch whose processes ran, at the parting call, a program compiled earlier.
NONE_RAN = "{procs}  no trace: call {call} ran the program compiled for {signature}{calls}"
CALLS_SUFFIX = " ({n} calls in all)"
REASON_LINE = "{path}  {kind}: {before} -> {after}"
FIX_LINE = "fix: {fix}"
CACHE_HEADER = "persistent compilation cache: the processes behaved differently"
STATUS_OK = "ok"
STATUS_DIVERGED = "DIVERGED"
STATUS_MISSING = "missing on {procs}"
COLUMNS: tuple[tuple[str, str], ...] = (
    ("function", "left"),
    ("defined at", "left"),
    ("calls", "right"),
    ("traces", "right"),
    ("compiles", "right"),
    ("status", "left"),
)
FALLBACK = "jitlens could not render the merged view ({error}); {n} divergence(s):\n{divergences}\n"

_TRAILING = re.compile(r"\s+((?:\x1b\[[0-9;]*m)*)$")


def _count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def procs(ps: Sequence[int], limit: int | None = None) -> str:
    return ("process " if len(ps) == 1 else "processes ") + process_runs(ps, limit)


def branch_lines(branch: Branch, limit: int | None = None) -> list[Line]:
    """What one group of processes did; ``limit``: runs of its processes named at most."""
    if branch.kind is BranchKind.NONE and branch.signature:
        template = NONE_RAN
    else:
        template = BRANCH_LINES.get(branch.kind, "{procs}  " + branch.kind)
    calls = CALLS_SUFFIX.format(n=branch.calls) if branch.calls is not None else ""
    head = template.format(
        procs=procs(branch.processes, limit),
        call=UNKNOWN if branch.call_index is None else branch.call_index,
        signature=shorten(branch.signature) or UNKNOWN,
        calls=calls,
        n=UNKNOWN if branch.calls is None else branch.calls,
    )
    lines: list[Line] = [Line(4, head, Role.SUBJECT)]
    for r in branch.reasons:
        text = REASON_LINE.format(
            path=r.path or r.argument,
            kind=r.kind,
            before=shorten(r.before),
            after=shorten(r.after),
        )
        lines.append(Line(6, text, Role.EVIDENCE))
        if r.fix:
            lines.append(Line(8, FIX_LINE.format(fix=r.fix), Role.FIX))
    return lines


def divergence_lines(div: Divergence, number: int, total: int) -> list[Line]:
    """One divergence: header, message, what each group of processes did, and the fix."""
    header = DIVERGENCE_HEADER.format(
        number=number, total=total, qualname=div.qualname, defined_at=div.defined_at
    )
    if div.occurrence:
        header += OCCURRENCE.format(n=div.occurrence + 1)
    lines: list[Line] = [Line(0, header, Role.ALERT), Line(2, div.message, Role.CAUSE)]
    for branch in div.branches:
        lines.extend(branch_lines(branch))
    lines.append(Line(2, FIX_LINE.format(fix=div.fix), Role.FIX))
    return lines


def _cell(values: Sequence[int | None], indices: Sequence[int], limit: int | None = None) -> str:
    """One figure per process, folded: ``3`` when all agree, else ``1 on 0, 2; 2 on 1``."""
    groups: dict[int | None, list[int]] = {}
    for index, value in zip(indices, values, strict=True):
        groups.setdefault(value, []).append(index)
    if len(groups) == 1:
        (value,) = groups
        return UNKNOWN if value is None else str(value)
    return "; ".join(
        f"{UNKNOWN if v is None else v} on {process_runs(ps, limit)}" for v, ps in groups.items()
    )


def row(fn: MergedFunction, indices: Sequence[int], limit: int | None = None) -> list[str]:
    """The cells of ``fn``'s row of the functions table; ``limit``: runs of processes named
    at most in a cell."""
    present = [(i, r) for i, r in zip(indices, fn.reports, strict=True) if r is not None]
    have = [i for i, _ in present]
    absent = sorted(set(indices) - set(have))
    status = STATUS_DIVERGED if fn.diverged else STATUS_OK
    if absent:
        status = STATUS_MISSING.format(procs=process_runs(absent, limit))
    name = fn.qualname + (OCCURRENCE.format(n=fn.occurrence + 1) if fn.occurrence else "")
    return [
        name,
        fn.defined_at,
        _cell([r.calls for _, r in present], have, limit),
        _cell([r.traces for _, r in present], have, limit),
        _cell([r.compiles for _, r in present], have, limit),
        status,
    ]


def _table(merged: MergedReport) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    for name, justify in COLUMNS:
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for fn in merged.functions:
        cells = row(fn, merged.process_indices)
        table.add_row(*(Text(c) for c in cells), style="red" if fn.diverged else "")
    return table


def title(merged: MergedReport) -> str:
    diverged = len({(d.qualname, d.defined_at, d.occurrence) for d in merged.divergences})
    return TITLE.format(
        processes=len(merged.reports),
        count=_count(merged.process_count, "process", "processes"),
        hosts=_count(len({r.host for r in merged.reports}), "host"),
        functions=_count(len(merged.functions), "function"),
        verdict=DIVERGED.format(functions=_count(diverged, "function"))
        if diverged
        else CONSISTENT
        if merged.complete
        else INCOMPLETE.format(processes=procs(merged.missing_processes)),
    )


def merged_lines(merged: MergedReport) -> list[Line]:
    """Everything above the table, as indented lines."""
    verdict = (
        Role.HEADLINE_OK
        if merged.consistent
        else Role.ALERT
        if merged.divergences
        else Role.HEADLINE
    )
    lines: list[Line] = [Line(0, title(merged), verdict)]
    if merged.missing_processes:
        text = MISSING_PROCESSES.format(processes=procs(merged.missing_processes))
        lines.append(Line(2, text, Role.WARNING))
        lines += [Line(4, why, Role.WARNING) for why in merged.missing_why]
    if merged.divergences or merged.complete:
        lines.append(Line(2, HANG_NOTE if merged.divergences else CONSISTENT_NOTE, Role.NOTE))
    total = len(merged.divergences)
    for number, div in enumerate(merged.divergences, 1):
        lines.append(Line(0, "", Role.TEXT))
        lines.extend(divergence_lines(div, number, total))
    if merged.cache_differences:  # issue 23
        lines += [Line(0, "", Role.TEXT), Line(0, CACHE_HEADER, Role.HEADLINE)]
    for diff in merged.cache_differences:
        lines += [
            Line(2, diff.message, Role.CAUSE),
            Line(4, FIX_LINE.format(fix=diff.fix), Role.FIX),
        ]
    return lines


def _render(merged: MergedReport, color: bool, width: int) -> str:
    console = make_console(width, color)
    for line in merged_lines(merged):
        console.print(styled(line))
    if merged.functions:
        console.print(_table(merged))
    text = console.export_text(styles=color).rstrip()
    return "\n".join(_TRAILING.sub(r"\1", line) for line in text.split("\n")) + "\n"


def _fallback(merged: MergedReport) -> str:
    try:
        divergences = "\n".join(f"- {d.qualname}: {d.message}" for d in merged.divergences)
        return FALLBACK.format(
            error="see the log", n=len(merged.divergences), divergences=divergences
        )
    except Exception:
        return FALLBACK.format(error="invalid merged view", n="?", divergences="")


def render_merged_text(
    merged: MergedReport, color: bool | None = False, width: int | None = None
) -> str:
    """The merged view as terminal text: verdict, each divergence with its fix, a table.

    ``color=None`` follows the terminal (off when not a TTY or ``NO_COLOR`` is
    set). Never raises: on an internal failure it logs and returns the raw data.
    """
    try:
        return _render(merged, want_color(color), terminal_width(width))
    except Exception:
        LOG.exception("jitlens: rendering the merged view failed")
        return _fallback(merged)


_model.TEXT[0] = render_merged_text
