"""The merged multi-process view as one HTML page, of a size bounded whatever the job's size.

A process's own report is ~25 KB of HTML; one per process made 27 MB for 1,000
processes, and a page no browser opens for 100,000. The page shows what the merged
view is for, whole: the verdict, the processes that gave no report, every divergence
and which processes took each branch, and the functions table. The processes are
then grouped by what they ran (``model.alike``): a table with one row per group
(its processes as runs, its hosts), and the full report of the first process of each
group and of every process a divergence singles out, up to ``DETAILED`` of them.
A process list names at most ``RUNS`` runs of processes, then says how many more, and a
divergence shows its first ``BRANCHES`` groups of processes.
A job of at most ``DETAILED`` processes shows every process's report, as before.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from .._core.lines import Role
from . import model as _model
from .model import Divergence, MergedReport, alike, process_runs
from .render import (
    COLUMNS,
    CONSISTENT_NOTE,
    DIVERGENCE_HEADER,
    FIX_LINE,
    HANG_NOTE,
    LOG,
    MISSING_PROCESSES,
    branch_lines,
    procs,
    render_merged_text,
    row,
    title,
)

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
#: Processes whose own report the page holds, at most (every one in a job this small).
DETAILED = 16
#: Runs of processes a process list names (``3, 5-90, 92``), then "and N more".
RUNS = 32
#: Groups of processes that ran alike listed in the processes table, at most.
GROUPS = 64
#: Branches of one divergence shown (each a group of processes that did one thing), at most.
BRANCHES = 16
#: Hosts named in a group's row, then "and N more".
HOSTS = 4
#: Why missing processes are missing, lines at most.
WHY_LINES = 16
GROUPS_NOTE = (
    "{n:,} processes ran in {g:,} way(s): one row per group of processes that ran alike (the "
    "same functions, calls, traces, compiles and programs). Below, the report of the first "
    "process of each group and of each process a divergence singles out ({shown:,} of "
    "{n:,}); every process's figures are in `jitlens merge --json`."
)
MORE_GROUPS = "... {n:,} more group(s): see `jitlens merge --json`."
MORE_HOSTS = " and {n:,} more"
MORE_WHY = "... and {n:,} more."
MORE_BRANCHES = (
    "... {n:,} more group(s) of processes that did otherwise: see `jitlens merge --json`."
)
GROUP_HEAD = ("group", "processes", "how many", "hosts", "ran like")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _html_divergence(div: Divergence, number: int, total: int) -> str:
    header = DIVERGENCE_HEADER.format(
        number=number, total=total, qualname=div.qualname, defined_at=div.defined_at
    )
    parts = [f"<div class='div'><b>{_e(header)}</b>", f"<p>{_e(div.message)}</p><ul>"]
    for branch in div.branches[:BRANCHES]:
        head, *reasons = branch_lines(branch, RUNS)
        items = "".join(
            f"<li class='fix'>{_e(line.text)}</li>"
            if line.role is Role.FIX
            else f"<li><code>{_e(line.text)}</code></li>"
            for line in reasons
        )
        parts.append(f"<li>{_e(head.text)}{'<ul>' + items + '</ul>' if items else ''}</li>")
    if len(div.branches) > BRANCHES:
        more = MORE_BRANCHES.format(n=len(div.branches) - BRANCHES)
        parts.append(f"<li class='dim'>{_e(more)}</li>")
    parts.append(f"</ul><p class='fix'>{_e(FIX_LINE.format(fix=div.fix))}</p></div>")
    return "".join(parts)


def _html_table(merged: MergedReport) -> str:
    head = "".join(f"<th>{_e(name)}</th>" for name, _ in COLUMNS)
    rows = []
    for fn in merged.functions:
        cells = row(fn, merged.process_indices, RUNS)
        tds = "".join(f"<td class='m'>{_e(c)}</td>" for c in cells)
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


def detailed(merged: MergedReport, groups: Sequence[Sequence[int]]) -> list[int]:
    """The processes whose own report the page holds, in process order: every one in a small
    job; else the first of each group and each process of a divergence's smaller branches,
    at most ``DETAILED``."""
    indices = merged.process_indices
    if len(indices) <= DETAILED:
        return list(indices)
    chosen: dict[int, None] = {}
    singled = [
        p
        for div in merged.divergences
        for branch in sorted(div.branches, key=lambda b: len(b.processes))[:-1]
        for p in branch.processes
    ]
    for p in [*(g[0] for g in groups), *singled]:
        if len(chosen) >= DETAILED:
            break
        chosen.setdefault(p)
    return sorted(chosen)


def _hosts(merged: MergedReport, processes: Sequence[int]) -> str:
    host = {r.process_index: r.host for r in merged.reports}
    names = list(dict.fromkeys(host[p] for p in processes))
    more = MORE_HOSTS.format(n=len(names) - HOSTS) if len(names) > HOSTS else ""
    return ", ".join(names[:HOSTS]) + more


def _html_groups(merged: MergedReport, groups: Sequence[Sequence[int]], shown: int) -> str:
    n = len(merged.reports)
    note = GROUPS_NOTE.format(n=n, g=len(groups), shown=shown)
    head = "".join(f"<th>{_e(h)}</th>" for h in GROUP_HEAD)
    rows = [
        f"<tr><td>{i}</td><td class='m'>{_e(process_runs(ps, RUNS))}</td><td>{len(ps):,}</td>"
        f"<td class='m'>{_e(_hosts(merged, ps))}</td><td>process {ps[0]}</td></tr>"
        for i, ps in enumerate(groups[:GROUPS], 1)
    ]
    more = len(groups) - GROUPS
    tail = f"<p class='dim'>{_e(MORE_GROUPS.format(n=more))}</p>" if more > 0 else ""
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return f"<p class='dim'>{_e(note)}</p>{table}{tail}"


def _render_html(merged: MergedReport) -> str:
    heading = title(merged)
    parts = [f"<h1 class='{'bad' if merged.divergences else 'ok'}'>{_e(heading)}</h1>"]
    if merged.missing_processes:
        missing = MISSING_PROCESSES.format(processes=procs(merged.missing_processes, RUNS))
        parts.append(f"<p class='dim'>{_e(missing)}</p>")
        why = list(merged.missing_why)
        parts += [f"<p class='dim'>{_e(line)}</p>" for line in why[:WHY_LINES]]
        if len(why) > WHY_LINES:
            parts.append(f"<p class='dim'>{_e(MORE_WHY.format(n=len(why) - WHY_LINES))}</p>")
    note = HANG_NOTE if merged.divergences else CONSISTENT_NOTE
    parts.append(f"<p class='dim'>{_e(note)}</p>")
    total = len(merged.divergences)
    parts.extend(_html_divergence(d, n, total) for n, d in enumerate(merged.divergences, 1))
    parts.append("<h2>Functions</h2>" + _html_table(merged))
    parts.append("<h2>Processes</h2>")
    groups = alike(merged) if len(merged.reports) > DETAILED else []
    shown = detailed(merged, groups)
    if groups:
        parts.append(_html_groups(merged, groups, len(shown)))
    position = {p: i for i, p in enumerate(merged.process_indices)}
    parts.extend(_html_process(merged, position[p]) for p in shown)
    return PAGE.format(title=_e(heading), css=CSS, body="\n".join(parts))


def render_merged_html(merged: MergedReport) -> str:
    """The merged view as one self-contained, escaped HTML page (no scripts, no network).

    Process reports are embedded in collapsed sections, rendered by the single-report HTML
    renderer when available, else as a small table: every process's in a job of at most
    ``DETAILED``, else those of the processes a divergence singles out and one of each group
    of processes that ran alike, after a table of the groups.
    Never raises: on an internal failure it logs and returns the text view in a ``<pre>``.
    """
    try:
        return _render_html(merged)
    except Exception:
        LOG.exception("jitlens: rendering the merged HTML failed")
        text = render_merged_text(merged, color=False)
        return PAGE.format(title="jitlens merge", css=CSS, body=f"<pre>{_e(text)}</pre>")


_model.HTML[0] = render_merged_html
