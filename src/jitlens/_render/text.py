"""Terminal text of a report: a table of the jitted functions, then every retrace explained.

Laid out by rich, or by :mod:`.plain` (the same text, without importing rich) when
nothing needs rich's layout: most exit summaries.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._core.fold import fold_wrappers
from .._core.kinds import EventKind
from .._core.lazy import OnFirstUse
from .._core.lines import Line, Role
from .._core.report import FunctionReport, Report, fold_reasons
from .advice import advice_lines, compile_cost_lines
from .heading import heading as _heading
from .heading import plural as plural
from .plain import GLUE as GLUE
from .plain import glue_code as glue_code
from .plain import piece_lines
from .plain import unglue as unglue
from .table import COLUMNS, RowStyle, lay_out, rich_table, rows_and_columns
from .table import percent as percent
from .table import table_name as table_name

#: The retrace text and the size buckets, loaded by the first function that retraced.
RT = OnFirstUse(".._core.retrace_text", __package__)
B = OnFirstUse(".._core.buckets", __package__)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.padding import Padding

    from .._core import buckets
    from .._core.retrace_text import Folded

#: Width of the text when it does not go to a terminal (logs, files, CI).
DEFAULT_WIDTH = 100
#: What each role of a line looks like on a terminal (rich styles): the one place that
#: decides it, for the report, its table and the merged view (``_merge/render``).
STYLES: dict[Role, str] = {
    Role.HEADLINE: "bold yellow",
    Role.HEADLINE_OK: "bold green",
    Role.ALERT: "bold red",
    Role.SECTION: "bold cyan",
    Role.EVENT: "cyan",
    Role.SUBJECT: "bold",
    Role.EVIDENCE: "",
    Role.CAUSE: "",
    Role.FIX: "green",
    Role.CODE: "green",
    Role.OK: "green",
    Role.WARNING: "yellow",
    Role.NOTE: "dim",
    Role.TEXT: "",
}

#: The table's title and legend, as rich draws a table's own title and caption.
TITLE_STYLE = "italic"
CAPTION_STYLE = "dim italic"
NO_FUNCTIONS_SEEN = (
    "jitlens: saw no jitted function ({backend} on {host}, {duration:.1f} s tracked), but it cannot "
    "see everything on these versions:"
)
WARNING_LINE = "warning: {text}"
#: Versions outside jitlens' tested range (``RunInfo.untested_versions``), by whether its
#: self-check ran on them (``RunInfo.self_checked``; None: not known).
UNTESTED = {
    True: "{why}; jitlens' self-check passed, but figures on untested versions deserve a "
    "second look (docs/reference/versions.md).",
    False: "{why}, and no self-check has run on them: run `jitlens selfcheck` once to check "
    "that jitlens counts right here (docs/reference/versions.md).",
    None: "{why}; whether jitlens' self-check ran on them is not known.",
}
NO_FUNCTIONS = (
    "jitlens: no jitted function was called ({backend} on {host}, {duration:.1f} s tracked)."
)
NO_RETRACES = "no retraces: no function compiled again."
FUNCTION_HEADER = "{qualname}  {summary}   (defined at {defined_at})"
#: Folded wrappers' name already says where their code is defined (``fold.FOLDED``).
FOLDED_HEADER = "{qualname}  {summary}"
RETRACED = "retraced {n}x, {lost:.2f} s lost"
RECOMPILED = "retraced {n}x and compiled {m}x more from a cached trace, {lost:.2f} s lost"
COMPILED_AGAIN = "compiled {m}x more from a cached trace, no retrace, {lost:.2f} s lost"
#: Retraces whose every reason is expected (a train/eval mode's first compile, a static that
#: sets a shape taking a new value, another function on purpose) take no time from "lost":
#: said, so that "retraced 1x, 0.00 s lost" above "retrace #1, 0.43 s" adds up. Not "a mode's":
#: a static length's second value is no mode (jax's examples/hmm_em.py `sample`).
EXPECTED_COUNT = "{n} expected (a first compile the program needs, not counted)"
STALE_COUNT = "{n} stale cache hit(s)"
UNCHECKED_COUNT = "{n} static(s) not checked"
STOPPED_COUNT = "{n} stopped by a compile budget"
#: At most this many lines when a line budget is given (``jitlens run`` at exit).
TABLE_ROWS = 20
MORE_FUNCTIONS = "... {n:,} more function(s): see `--json` or `--html` for all."
MORE_LINES = "... {n:,} more line(s) of explanations: see `--json` or `--html` for all."
#: Why the persistent cache could not help (``Report.run.notes``, issue 23).
CACHE_NOTE = "{message}"
CACHE_FIX = "fix: {fix}"


def _indented(lines: Sequence[Line], by: int) -> list[Line]:
    return [line.indented(by) for line in lines]


def styled(line: Line, *, glue: bool = False) -> Padding:
    """``line`` as rich prints it: its role's style, wrapped under its indent (with ``glue``,
    never inside a short code span; the text must then go through ``unglue``)."""
    from rich.padding import Padding
    from rich.text import Text

    text = glue_code(line.text) if glue else line.text
    return Padding(Text(text, style=STYLES[line.role]), (0, 0, 0, line.indent))


def _explanations(fn: FunctionReport, width: int | None = None) -> list[Line]:
    """Folded retraces, traces a budget stopped and stale hits of one function, as indented lines."""
    retraces = [e for e in fn.events if e.kind is not EventKind.TRACE]
    if not retraces and not fn.stale_hits and not fn.stopped and not fn.unchecked:
        return []
    compiles = sum(1 for e in retraces if e.kind == "compile")
    template = (
        RETRACED if not compiles else RECOMPILED if fn.retraces else COMPILED_AGAIN
    )  # a compile from a cached trace is not a retrace ("retraced 0x" said nothing)
    parts = [template.format(n=fn.retraces, m=compiles, lost=fn.seconds_lost)] if retraces else []
    expected = sum(1 for e in retraces if e.expected)
    parts += [EXPECTED_COUNT.format(n=expected)] if expected and not fn.bucketed else []
    parts += [STOPPED_COUNT.format(n=len(fn.stopped))] if fn.stopped else []
    parts += [STALE_COUNT.format(n=len(fn.stale_hits))] if fn.stale_hits else []
    parts += [UNCHECKED_COUNT.format(n=len(fn.unchecked))] if fn.unchecked else []
    folded = fn.wrappers > 1 and fn.wrapped_qualname
    header = (FOLDED_HEADER if folded else FUNCTION_HEADER).format(
        qualname=fn.qualname, summary=", ".join(parts), defined_at=fn.defined_at
    )
    lines: list[Line] = [Line(0, header, Role.HEADLINE)]
    for event in fn.stopped:  # what went over budget comes first: it failed a test, say
        folded = [(r, 1, RT.values_text(r, [])) for r in event.reasons]
        lines += _indented(RT.retrace_lines(fn, event, folded, width=_less(width, 2)), 2)
    chosen = B.bucketed(fn.events)
    if chosen:  # a deliberate bounded set of shapes: said so, not explained as a problem
        lines += [Line(2, bucketed_text(s), Role.OK) for s in chosen]
        return lines
    shared = B.reused_shapes(fn)
    if shared:  # a few shapes the program needs, each reused: said so, no pad fix
        lines.append(Line(2, reused_text(shared), Role.OK))
        return lines
    every = [r for e in retraces for r in e.reasons]
    by_event: dict[int, list[Folded]] = {}
    for reason, count, first in fold_reasons(retraces):
        alike = [r for r in every if RT.fold_key(r) == RT.fold_key(reason) and r is not reason]
        by_event.setdefault(id(first), []).append((reason, count, RT.values_text(reason, alike)))
    carried: list[Folded] = []  # cut from an earlier retrace, due under a later one that has it
    for i, event in enumerate(retraces):
        keys = {RT.fold_key(r) for r in event.reasons}
        due = [item for item in carried if RT.fold_key(item[0]) in keys]
        own = [*by_event.pop(id(event), []), *due]  # an event listed twice is explained once
        if not own:
            continue
        carried = [item for item in carried if item not in due]
        also = len(event.reasons) - len(own)
        later = frozenset(RT.fold_key(r) for e in retraces[i + 1 :] for r in e.reasons)
        block, cut = RT.retrace_block(fn, event, own, also, _less(width, 2))
        lines += _indented(block, 2)
        carried += [item for item in cut if RT.fold_key(item[0]) in later]
    for kind in ("retrace", "compile"):
        unexplained = [e for e in retraces if not e.reasons and e.kind == kind]
        if unexplained:
            lines += _indented(RT.retrace_lines(fn, unexplained[0], []), 2)
            lines.append(Line(4, RT.no_reason(kind, len(unexplained)), Role.NOTE))
    for stale in fn.stale_hits:
        lines += _indented(RT.stale_lines(fn, stale), 2)
    for u in fn.unchecked or ():
        lines += _indented(RT.unchecked_lines(fn, u), 2)
    return lines


def reused_text(shared: Sequence[buckets.SharedShape]) -> str:
    """What a few shapes the program needs are, in one sentence (text and HTML: the words of
    ``_core/reasons/shape.py``'s ``REUSED_SHAPES_MSG``)."""
    from .._core.reasons import reused_shapes  # only a report with such a set needs the words

    return reused_shapes(shared).make()


def bucketed_text(b: buckets.SizeSet) -> str:
    """What a deliberate bucket set is, in one sentence (text, HTML and the live log: the
    words of ``_core/reasons/shape.py``'s ``BUCKETED_MSG``)."""
    from .._core.reasons import bucketed  # only a report with a bucket set needs the words

    return bucketed(b).make()


def _less(width: int | None, indent: int) -> int | None:
    return None if width is None else width - indent


def sorted_functions(report: Report, include_internal: bool = False) -> list[FunctionReport]:
    """Functions worth a look first: most seconds lost to recompiles, then most traces.

    Many wrappers of the same code (a jit built per call) are folded into one row.
    """
    chosen = report.functions if include_internal else report.user_functions()
    folded = fold_wrappers(chosen)
    return sorted(folded, key=lambda f: (-f.seconds_lost, -(f.traces or 0), f.qualname))


def wrap_at_joints(text: str, width: int, joint: str = "; ") -> list[str]:
    """``text``'s lines no wider than ``width``, broken after a ``joint`` before a space.

    A legend is a list of definitions (``hits = cache hits`` stays whole), a
    summary a few sentences (``joint=". "``).
    """
    out: list[str] = []
    for line in text.splitlines():
        current = ""
        for part in line.split(joint):
            joined = f"{current}{joint}{part}" if current else part
            if len(joined) <= width or not current:
                current = joined
                continue
            out += textwrap.wrap(current + joint.rstrip(), width, break_on_hyphens=False)
            current = part
        out += textwrap.wrap(current, width, break_on_hyphens=False) or [""]
    return out


def _is_tty() -> bool:
    try:  # the program may have closed or replaced sys.stdout
        return bool(sys.stdout.isatty())  # type: ignore[union-attr]
    except Exception:
        return False


def _want_color(color: bool | None) -> bool:
    return color if color is not None else _is_tty() and not os.environ.get("NO_COLOR")


def terminal_width(width: int | None = None) -> int:
    """``width`` if given, else the terminal's (or ``COLUMNS``), else ``DEFAULT_WIDTH``: the one
    rule every command's text follows (report, audit, diff), at least 40 columns."""
    if width is not None:
        return max(40, width)
    if _is_tty() or os.environ.get("COLUMNS", "").isdigit():  # COLUMNS=80 is asked for
        return max(40, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    return DEFAULT_WIDTH


def make_console(width: int, color: bool) -> Console:
    """A recording console that never reads user strings as rich markup."""
    from rich.console import Console

    return Console(
        file=io.StringIO(),
        record=True,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=not color,
        markup=False,
        highlight=False,
        emoji=False,
    )


#: What the text is made of, in order, before it is laid out: ``("text", str, style)``,
#: ``("line", Line, glue)`` (wrapped under its indent; with ``glue`` never inside a short
#: code span), ``("table", functions, include_internal, cells, right-justified)`` and
#: ``("blank",)``.
Piece = tuple[Any, ...]


def _pieces(
    report: Report, width: int, include_internal: bool, max_lines: int | None = None
) -> list[Piece]:
    out: list[Piece] = []
    functions = sorted_functions(report, include_internal)
    more = 0
    if max_lines is not None and len(functions) > TABLE_ROWS:
        functions, more = functions[:TABLE_ROWS], len(functions) - TABLE_ROWS
    if not functions:
        duration = report.duration_seconds
        template = NO_FUNCTIONS_SEEN if report.warnings else NO_FUNCTIONS
        text = template.format(backend=report.backend, host=report.host, duration=duration)
        out.append(("text", text, ""))
    else:
        title, caption = _heading(report, include_internal)
        out.append(("text", title, TITLE_STYLE))
        rows, keep = rows_and_columns(functions, include_internal, width)
        cells = [[COLUMNS[i][0] for i in keep], *([row[i] for i in keep] for row in rows)]
        right = [COLUMNS[i][1] == "right" for i in keep]
        out.append(("table", functions, include_internal, cells, right))
        out += [("text", line, CAPTION_STYLE) for line in wrap_at_joints(caption, width)]
        if more:
            out.append(("text", MORE_FUNCTIONS.format(n=more), ""))
    explained = False
    for fn in functions:
        lines = _explanations(fn, width)
        if lines:
            out.append(("blank",))
            explained = True
        out += [("line", line, True) for line in lines]
    if functions and not explained and all(f.traces is not None for f in functions):
        out += [("blank",), ("line", Line(0, NO_RETRACES, Role.OK), False)]
    costs = compile_cost_lines(functions)  # issue 34
    if costs:
        out.append(("blank",))
    out += [("line", line, True) for line in costs]
    advice = advice_lines(functions, report.run)
    if advice:
        out.append(("blank",))
    out += [("line", line, True) for line in advice]
    for note in report.run.notes if report.run is not None else ():  # issue 23
        out.append(("line", Line(0, CACHE_NOTE.format(message=note.message), Role.WARNING), False))
        out.append(("line", Line(2, CACHE_FIX.format(fix=note.fix), Role.FIX), False))
    for warning in notices(report):
        out.append(("line", Line(0, WARNING_LINE.format(text=warning), Role.WARNING), False))
    return out


def notices(report: Report) -> list[str]:
    """What jitlens could not measure or vouch for in this run, as sentences (text and HTML)."""
    run = report.run
    why = run.untested_versions if run is not None else None
    checked = run.self_checked if run is not None else None
    untested = [UNTESTED.get(checked, UNTESTED[None]).format(why=why)] if why else []
    return [*report.warnings, *untested]


def _render(
    report: Report, color: bool, width: int, include_internal: bool, max_lines: int | None = None
) -> str:
    out: list[str] = []
    console: Console | None = None
    for piece in _pieces(report, width, include_internal, max_lines):
        lines = _laid_out(piece, width, color)
        if lines is None:  # this piece needs rich's layout: it alone goes through rich
            console = console or make_console(width, color)
            _print(console, piece, width)
            lines = [console.export_text(styles=color, clear=True).removesuffix("\n")]
        out += lines
    return _cut(unglue("\n".join(out)), max_lines)


def _laid_out(piece: Piece, width: int, color: bool) -> list[str] | None:
    """``piece``'s lines written without rich (``plain``), or None: rich lays it out."""
    if piece[0] != "table":
        return piece_lines(piece, width, color, STYLES)
    return lay_out(piece[3], piece[4], width, _row_styles(piece[1]), color)


def _row_styles(functions: Sequence[FunctionReport]) -> list[RowStyle]:
    """Each row's name and seconds-lost styles (lost in red where recompiles lost time)."""
    lost = {True: STYLES[Role.ALERT], False: STYLES[Role.TEXT]}
    return [(STYLES[Role.SUBJECT], lost[bool(fn.seconds_lost)]) for fn in functions]


def _rich(pieces: Sequence[Piece], color: bool, width: int) -> Console:
    console = make_console(width, color)
    for piece in pieces:
        _print(console, piece, width)
    return console


def _print(console: Console, piece: Piece, width: int) -> None:
    from rich.text import Text

    if piece[0] == "text":
        console.print(Text(piece[1], style=piece[2]))
    elif piece[0] == "line" and piece[1].role is Role.CODE:  # whole, to copy
        line = piece[1]
        text = Text(" " * line.indent + line.text, style=STYLES[line.role])
        console.print(text, no_wrap=True, overflow="ignore", crop=False)
    elif piece[0] == "line":
        console.print(styled(piece[1], glue=piece[2]))
    elif piece[0] == "table":
        console.print(rich_table(piece[1], piece[2], width, _row_styles(piece[1])))
    else:
        console.print()


def _export(console: Console, color: bool, max_lines: int | None = None) -> str:
    return _cut(unglue(console.export_text(styles=color)), max_lines)


def _cut(text: str, max_lines: int | None) -> str:
    lines = [line.rstrip() for line in text.rstrip().splitlines()]
    if max_lines is not None and len(lines) > max_lines:
        # cut at the last blank line (between two functions' explanations) within the budget
        cut = max((i for i in range(max_lines - 1) if not lines[i].strip()), default=max_lines - 2)
        lines = [*lines[:cut], "", MORE_LINES.format(n=len(lines) - cut)]
    return "\n".join(lines) + "\n"


def render_text(
    report: Report,
    *,
    color: bool | None = None,
    width: int | None = None,
    include_internal: bool = False,
    max_lines: int | None = None,
) -> str:
    """The report as terminal text: a table sorted by seconds lost, then every retrace explained.

    Colour follows the terminal (off when not a TTY or ``NO_COLOR`` is set) unless
    ``color`` says otherwise; the width is the terminal's, or ``DEFAULT_WIDTH``.
    ``max_lines`` bounds the text (the exit summary of ``jitlens run``): the
    table keeps its first ``TABLE_ROWS`` rows and explanations stop at a
    function boundary, with a line saying what was left out.
    Never raises: on an internal failure it logs and returns the raw data.

    Example:
        >>> from jitlens._core.report import Report
        >>> r = Report(1, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, ())
        >>> print(render_text(r, color=False))
        jitlens: no jitted function was called (cpu on box, 1.0 s tracked).
        <BLANKLINE>
    """
    try:
        return _render(
            report, _want_color(color), terminal_width(width), include_internal, max_lines
        )
    except Exception:
        RT.LOG.exception("jitlens: rendering the text report failed")
        return RT.fallback(report)
