"""Terminal text and HTML of a merged multi-process view: divergences first, then a table."""

from __future__ import annotations

import html
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


def _procs(ps: Sequence[int]) -> str:
    return ("process " if len(ps) == 1 else "processes ") + process_runs(ps)


def _branch_lines(branch: Branch) -> list[Line]:
    if branch.kind is BranchKind.NONE and branch.signature:
        template = NONE_RAN
    else:
        template = BRANCH_LINES.get(branch.kind, "{procs}  " + branch.kind)
    calls = CALLS_SUFFIX.format(n=branch.calls) if branch.calls is not None else ""
    head = template.format(
        procs=_procs(branch.processes),
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
        lines.extend(_branch_lines(branch))
    lines.append(Line(2, FIX_LINE.format(fix=div.fix), Role.FIX))
    return lines


def _cell(values: Sequence[int | None], indices: Sequence[int]) -> str:
    """One figure per process, folded: ``3`` when all agree, else ``1 on 0, 2; 2 on 1``."""
    groups: dict[int | None, list[int]] = {}
    for index, value in zip(indices, values, strict=True):
        groups.setdefault(value, []).append(index)
    if len(groups) == 1:
        (value,) = groups
        return UNKNOWN if value is None else str(value)
    return "; ".join(
        f"{UNKNOWN if v is None else v} on {', '.join(map(str, ps))}" for v, ps in groups.items()
    )


def _row(fn: MergedFunction, indices: Sequence[int]) -> list[str]:
    present = [(i, r) for i, r in zip(indices, fn.reports, strict=True) if r is not None]
    have = [i for i, _ in present]
    absent = [i for i in indices if i not in have]
    status = STATUS_DIVERGED if fn.diverged else STATUS_OK
    if absent:
        status = STATUS_MISSING.format(procs=", ".join(map(str, absent)))
    name = fn.qualname + (OCCURRENCE.format(n=fn.occurrence + 1) if fn.occurrence else "")
    return [
        name,
        fn.defined_at,
        _cell([r.calls for _, r in present], have),
        _cell([r.traces for _, r in present], have),
        _cell([r.compiles for _, r in present], have),
        status,
    ]


def _table(merged: MergedReport) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    for name, justify in COLUMNS:
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for fn in merged.functions:
        cells = _row(fn, merged.process_indices)
        table.add_row(*(Text(c) for c in cells), style="red" if fn.diverged else "")
    return table


def _title(merged: MergedReport) -> str:
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
        else INCOMPLETE.format(processes=_procs(merged.missing_processes)),
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
    lines: list[Line] = [Line(0, _title(merged), verdict)]
    if merged.missing_processes:
        text = MISSING_PROCESSES.format(processes=_procs(merged.missing_processes))
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


# --------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em}
.bad{color:#b00020}.ok{color:#1b7f3b}.dim{color:#666}
.div{border-left:4px solid #b00020;padding:.3em .8em;margin:.8em 0;background:#fff5f5}
.fix{color:#1b7f3b}code,td.m{font-family:ui-monospace,monospace}
table{border-collapse:collapse}td,th{padding:.25em .7em;border-bottom:1px solid #ddd;text-align:left}
tr.bad td{background:#fff0f0}iframe{width:100%;height:32em;border:1px solid #ccc}
"""
PAGE = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
    "<title>{title}</title><style>{css}</style></head><body>\n{body}\n</body></html>\n"
)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _html_divergence(div: Divergence, number: int, total: int) -> str:
    parts = [
        f"<div class='div'><b>{_e(DIVERGENCE_HEADER.format(number=number, total=total, qualname=div.qualname, defined_at=div.defined_at))}</b>",
        f"<p>{_e(div.message)}</p><ul>",
    ]
    for branch in div.branches:
        head, *reasons = _branch_lines(branch)
        items = "".join(
            f"<li class='fix'>{_e(line.text)}</li>"
            if line.role is Role.FIX
            else f"<li><code>{_e(line.text)}</code></li>"
            for line in reasons
        )
        parts.append(f"<li>{_e(head.text)}{'<ul>' + items + '</ul>' if items else ''}</li>")
    parts.append(f"</ul><p class='fix'>{_e(FIX_LINE.format(fix=div.fix))}</p></div>")
    return "".join(parts)


def _html_table(merged: MergedReport) -> str:
    head = "".join(f"<th>{_e(name)}</th>" for name, _ in COLUMNS)
    rows = []
    for fn in merged.functions:
        tds = "".join(f"<td class='m'>{_e(c)}</td>" for c in _row(fn, merged.process_indices))
        rows.append(f"<tr class='{'bad' if fn.diverged else ''}'>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _html_process(merged: MergedReport, position: int) -> str:
    """One process's own report: the single-report HTML renderer when present, else a table."""
    report = merged.reports[position]
    source = merged._sources()[position]
    summary = f"process {report.process_index} on {report.host}" + (
        f" ({source})" if source else ""
    )
    body = ""
    try:
        from .._render.html import render_html  # type: ignore[import-not-found,unused-ignore]

        body = f"<iframe srcdoc='{_e(render_html(report))}'></iframe>"
    except Exception:
        LOG.debug("jitlens: per-process HTML unavailable, using a plain table", exc_info=True)
    if not body:
        rows = "".join(
            f"<tr><td class='m'>{_e(f.qualname)}</td><td>{_e(f.calls)}</td><td>{'?' if f.traces is None else f.traces}</td>"
            f"<td class='m'>{_e(' | '.join(e.signature for e in f.events))}</td></tr>"
            for f in report.functions
        )
        body = (
            "<table><thead><tr><th>function</th><th>calls</th><th>traces</th>"
            f"<th>signatures</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return f"<details><summary>{_e(summary)}</summary>{body}</details>"


def _render_html(merged: MergedReport) -> str:
    title = _title(merged)
    parts = [f"<h1 class='{'bad' if merged.divergences else 'ok'}'>{_e(title)}</h1>"]
    if merged.missing_processes:
        parts.append(
            f"<p class='dim'>{_e(MISSING_PROCESSES.format(processes=_procs(merged.missing_processes)))}</p>"
        )
    note = HANG_NOTE if merged.divergences else CONSISTENT_NOTE
    parts.append(f"<p class='dim'>{_e(note)}</p>")
    total = len(merged.divergences)
    parts.extend(_html_divergence(d, n, total) for n, d in enumerate(merged.divergences, 1))
    parts.append("<h2>Functions</h2>" + _html_table(merged))
    parts.append("<h2>Processes</h2>")
    parts.extend(_html_process(merged, i) for i in range(len(merged.reports)))
    return PAGE.format(title=_e(title), css=CSS, body="\n".join(parts))


def render_merged_html(merged: MergedReport) -> str:
    """The merged view as one self-contained, escaped HTML page (no scripts, no network).

    Each process's own report is embedded in a collapsed section, rendered by
    the single-report HTML renderer when available, else as a small table.
    Never raises: on an internal failure it logs and returns the text view in a ``<pre>``.
    """
    try:
        return _render_html(merged)
    except Exception:
        LOG.exception("jitlens: rendering the merged HTML failed")
        text = render_merged_text(merged, color=False)
        return PAGE.format(title="jitlens merge", css=CSS, body=f"<pre>{_e(text)}</pre>")


_model.TEXT[0] = render_merged_text
_model.HTML[0] = render_merged_html
