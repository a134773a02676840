"""Render a :class:`jitlens.CheckResult`: one table per criterion, then the verdict line."""

from __future__ import annotations

import collections
import io
import logging

from .._core.lines import Role
from .._render.text import STYLES
from . import result as _result
from .criteria import CriterionResult
from .result import CheckResult

log = logging.getLogger("jitlens")

HEADER = "jitlens check {solution} (seed {seed}, {cases}, {probes}, {seconds:.1f} s, {processes})"
#: A solution that could not be loaded ran no case: the header does not count them.
HEADER_NOT_RUN = "jitlens check {solution} (seed {seed}, not run, {seconds:.1f} s, {processes})"
TITLE = "{n}. {title}: {status} ({summary}{advisory})"
ADVISORY = "; advisory, never a failure"
#: Lines of a load error's traceback shown (its end, where the solution's frames are).
LOAD_ERROR_LINES = 12
SAME_CAUSE = " (same cause and fix as above)"
REJECTED = "each raised an exception ({how}); details in the JSON"
#: A pass, in brief: each criterion's tally on one line (the tables come with --verbose).
BRIEF = "{tallies}; details: --verbose"
STATUS_WORDS = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "skip": "SKIP"}
#: What each status is; its look comes from the report's one table (``_render.text.STYLES``).
STATUS_ROLES = {"pass": Role.OK, "fail": Role.ALERT, "warn": Role.WARNING, "skip": Role.NOTE}


def _style(role: Role, color: bool) -> str:
    return STYLES[role] if color else ""


def render_check(
    result: CheckResult, *, color: bool = False, width: int = 100, verbose: bool = True
) -> str:
    """The report as text: ANSI colours and box lines when ``color``, plain ASCII otherwise.

    A passing result is three lines unless ``verbose`` (a failure always shows
    its tables). Never raises: if rich fails, the verdict and findings come
    back as plain lines.
    """
    if result.passed and not verbose:
        return _render_brief(result, color=color)
    try:
        return _render_rich(result, color=color, width=width)
    except Exception:
        log.warning("jitlens: rendering the check result failed", exc_info=True)
        return _render_plain(result)


def _header(result: CheckResult) -> str:
    return (HEADER if result.load_error is None else HEADER_NOT_RUN).format(
        solution=result.solution,
        seed=result.seed,
        cases=_count(len(result.cases), "case"),
        probes=_count(len(result.bad_inputs), "bad input"),
        seconds=result.seconds,
        processes=_count(result.processes, "process", "processes"),
    )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _render_rich(result: CheckResult, *, color: bool, width: int) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
    console.print(Text(_header(result), style=_style(Role.SUBJECT, color)), soft_wrap=True)
    traceback = (result.load_error or "").splitlines()[1:][-LOAD_ERROR_LINES:]
    if traceback:
        console.print()
        console.print(Text("\n".join("  " + line for line in traceback)), soft_wrap=True)
    for n, crit in enumerate(result.criteria, 1):
        title = TITLE.format(
            n=n,
            title=crit.title,
            status=STATUS_WORDS[crit.status],
            summary=crit.summary,
            advisory="" if crit.required else ADVISORY,
        )
        table = Table(
            title=Text(title, style=_style(STATUS_ROLES[crit.status], color)),
            title_justify="left",
            box=box.SIMPLE_HEAD if color else box.ASCII2,
            show_edge=color,
            expand=True,
            pad_edge=False,
        )
        table.add_column("case" if crit.required else "input", no_wrap=True)
        table.add_column("result", no_wrap=True)
        table.add_column("evidence", ratio=1, overflow="fold")
        for subject, status, evidence in _rows(crit):
            word = Text(STATUS_WORDS[status].lower(), style=_style(STATUS_ROLES[status], color))
            table.add_row(subject, word, evidence)
        console.print()
        console.print(table)
    console.print()
    verdict = Role.OK if result.passed else Role.ALERT
    console.print(Text(result.verdict, style=_style(verdict, color)), soft_wrap=True)
    text = buffer.getvalue()
    return text if color else "\n".join(line.rstrip() for line in text.split("\n"))


def _render_brief(result: CheckResult, *, color: bool) -> str:
    tallies = ", ".join(f"{c.title} {c.summary.split()[0]}" for c in result.criteria if c.required)
    verdict = f"\x1b[32m{result.verdict}\x1b[0m" if color else result.verdict
    return "\n".join([_header(result), BRIEF.format(tallies=tallies), verdict]) + "\n"


def _rows(crit: CriterionResult) -> list[tuple[str, str, str]]:
    """The table rows: one per finding, except that rejected bad inputs share one row."""
    if crit.required:
        rows, seen = [], set()
        for f in crit.findings:
            if f.fix and f.fix in seen:
                rows.append((f.subject, f.status, f.evidence + SAME_CAUSE))
            else:
                rows.append((f.subject, f.status, f.message))
                seen.add(f.fix)
        return rows
    rows = [(f.subject, f.status, f.evidence) for f in crit.findings if f.status != "pass"]
    rejected = [f for f in crit.findings if f.status == "pass"]
    if rejected:
        types = collections.Counter(
            f.evidence.split(":")[0].removeprefix("raised ") for f in rejected
        )
        how = ", ".join(f"{name} {count}" for name, count in types.most_common())
        label = _count(len(rejected), "other input" if rows else "input")
        rows.append((label, "pass", REJECTED.format(how=how)))
    return rows


def _render_plain(result: CheckResult) -> str:
    lines = [_header(result), *(result.load_error or "").splitlines()]
    for crit in result.criteria:
        lines.append(f"{crit.title}: {STATUS_WORDS[crit.status]} ({crit.summary})")
        lines += [f"  {f.subject}: {f.status}: {f.message}" for f in crit.findings]
    lines.append(result.verdict)
    return "\n".join(lines) + "\n"


_result.TEXT[0] = render_check
