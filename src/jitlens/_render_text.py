"""Terminal text of a report: a table of the jitted functions, then every retrace explained."""

from __future__ import annotations

import io
import logging
import math
import os
import shutil
import sys
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ._report import REASON_KINDS, Event, FunctionReport, Reason, Report, StaleHit, fold_reasons

LOG = logging.getLogger("jitlens")

#: Width of the text when it does not go to a terminal (logs, files, CI).
DEFAULT_WIDTH = 100
#: Lines one retrace may take (header included), however many reasons it has.
MAX_LINES_PER_RETRACE = 8
#: Longest ``before``/``after`` repr shown in full; longer ones are cut in the middle.
MAX_VALUE_CHARS = 70

COLUMNS: tuple[tuple[str, str], ...] = (
    ("function", "left"),
    ("kind", "left"),
    ("calls", "right"),
    ("traces", "right"),
    ("compiles", "right"),
    ("hits", "right"),
    ("hit %", "right"),
    ("trace s", "right"),
    ("compile s", "right"),
    ("lost s", "right"),
)
#: Columns given up, in this order, when the width cannot hold them all.
DROPPABLE = ("compiles", "compile s", "trace s", "kind", "hit %")
#: The function column gets at least this many characters before others are dropped.
MIN_NAME_WIDTH = 24
UNKNOWN = "?"
TITLE = (
    "jitlens: {functions} jitted functions, {traces} traces, {lost:.2f} s lost to retraces{hidden}"
)
HIDDEN = " ({n} internal hidden)"
CAPTION = (
    "{backend} on {host}, process {index}/{count}, {duration:.1f} s; "
    "hits = cache hits, lost s = seconds spent on retraces"
)
NO_FUNCTIONS = "jitlens: no jitted function was called ({backend} on {host}, {duration:.1f} s)."
FUNCTION_HEADER = "{qualname}  {summary}   (defined at {defined_at})"
RETRACED = "retraced {n}x, {lost:.2f} s lost"
STALE_COUNT = "{n} stale cache hit(s)"
RETRACE_HEADER = "{call_site}  {label}{seconds}{call}{also}"
RETRACE_LABELS = {"trace": "first trace", "retrace": "retrace #{number}", "compile": "recompile"}
CALL_SUFFIX = " (call #{index})"
ALSO_SUFFIX = ", +{n} difference(s) shown above"
REASON_HEAD = "{path}  {kind}{count}"
REASON_LINE = "{path}  {kind}{count}: {values}"
REASON_COUNT = "  (in {n} retraces)"
OTHER_VALUES = "  (+{n} other values)"
NO_REASON = "no difference found between the new cache key and the compiled ones ({n} retrace(s))"
FIX_LINE = "fix: {fix}"
MORE_LINE = "… and {n} more differences ({paths})"
STALE_HEADER = "warning: stale cache hit at {call_site} (call #{index})"
RETRACE_TITLE = "{qualname} ({kind}) {header}"
FALLBACK = "jitlens could not render this report; raw data follows.\n{raw}"

#: (indent, text, rich style) of one logical line of the explanations.
Line = tuple[int, str, str]
#: A reason, how many retraces had it, and the values it took.
Folded = tuple[Reason, int, str]


def _shorten(value: str, limit: int = MAX_VALUE_CHARS) -> str:
    value = " ".join(value.split())
    if len(value) <= limit:
        return value
    half = (limit - 1) // 2
    return value[:half] + "…" + value[len(value) - half :]


def _seconds(value: float) -> str:
    return f"{value:.2f}" if math.isfinite(value) else UNKNOWN


def _reason_order(reason: Reason) -> int:
    kinds = REASON_KINDS
    return kinds.index(reason.kind) if reason.kind in kinds else len(kinds)


def _values(reason: Reason, others: Sequence[Reason] = ()) -> str:
    """``before -> after``, or the chain of them when a folded reason saw several values."""
    pairs = list(dict.fromkeys(f"{r.before} -> {r.after}" for r in (reason, *others)))
    if len(pairs) > 1 and sum(len(p) for p in pairs) <= MAX_VALUE_CHARS:
        return " | ".join(pairs)
    first = f"{_shorten(reason.before)} -> {_shorten(reason.after)}"
    return first + (OTHER_VALUES.format(n=len(pairs) - 1) if len(pairs) > 1 else "")


def _reason_lines(reason: Reason, count: int, values: str, detailed: bool) -> list[Line]:
    where = reason.path or reason.argument
    counted = REASON_COUNT.format(n=count) if count > 1 else ""
    if detailed or len(where) + len(values) > MAX_VALUE_CHARS:
        head = REASON_HEAD.format(path=where, kind=reason.kind, count=counted)
        lines: list[Line] = [(2, head, "bold"), (4, values, "")]
    else:
        line = REASON_LINE.format(path=where, kind=reason.kind, count=counted, values=values)
        lines = [(2, line, "bold")]
    if detailed and reason.message:
        lines.append((4, reason.message, ""))
    return lines


def _retrace_number(fn: FunctionReport, event: Event) -> int:
    """1-based among the function's retraces; the next one if ``event`` is not recorded yet."""
    retraces = [e for e in fn.events if e.kind == "retrace"]
    same = [i for i, e in enumerate(retraces, 1) if e is event]
    return same[0] if same else len(retraces) + 1


def retrace_lines(
    fn: FunctionReport, event: Event, reasons: Sequence[Folded], also: int = 0
) -> list[Line]:
    """The header and reasons of one retrace, at most ``MAX_LINES_PER_RETRACE`` lines.

    The most decisive reason comes first with its cause; later ones get one line
    each, a fix is shown once however many reasons share it, and what does not
    fit is summed up as ``… and N more differences``.
    """
    label = RETRACE_LABELS.get(event.kind, event.kind).format(number=_retrace_number(fn, event))
    header = RETRACE_HEADER.format(
        call_site=event.call_site or fn.first_call_site,
        label=label,
        # a guard reports at trace start, before anything was timed
        seconds=f", {event.seconds:.2f} s" if event.seconds else "",
        call=CALL_SUFFIX.format(index=event.call_index) if event.call_index is not None else "",
        also=ALSO_SUFFIX.format(n=also) if also else "",
    )
    lines: list[Line] = [(0, header, "cyan")]
    ordered = sorted(reasons, key=lambda item: _reason_order(item[0]))
    fixes: set[str] = set()
    for shown, (reason, count, values) in enumerate(ordered):
        block = _reason_lines(reason, count, values, detailed=shown == 0)
        if reason.fix and reason.fix not in fixes:
            block.append((4, FIX_LINE.format(fix=reason.fix), "green"))
        room = MAX_LINES_PER_RETRACE - len(lines) - (1 if shown < len(ordered) - 1 else 0)
        if len(block) > room:
            rest = [r.path or r.argument for r, _, _ in ordered[shown:]]
            paths = ", ".join(_shorten(p, 24) for p in rest[:3]) + (", …" if len(rest) > 3 else "")
            lines.append((2, MORE_LINE.format(n=len(rest), paths=paths), "dim"))
            break
        fixes.add(reason.fix)
        lines.extend(block)
    return lines


def _indented(lines: Sequence[Line], by: int) -> list[Line]:
    return [(indent + by, text, style) for indent, text, style in lines]


def _explanations(fn: FunctionReport) -> list[Line]:
    """Folded retraces and stale hits of one function, as indented lines."""
    retraces = [e for e in fn.events if e.kind != "trace"]
    if not retraces and not fn.stale_hits:
        return []
    parts = [RETRACED.format(n=fn.retraces, lost=fn.seconds_lost)] if retraces else []
    parts += [STALE_COUNT.format(n=len(fn.stale_hits))] if fn.stale_hits else []
    header = FUNCTION_HEADER.format(
        qualname=fn.qualname, summary=", ".join(parts), defined_at=fn.defined_at
    )
    lines: list[Line] = [(0, header, "bold yellow")]
    every = [r for e in retraces for r in e.reasons]
    by_event: dict[int, list[Folded]] = {}
    for reason, count, first in fold_reasons(retraces):
        alike = [r for r in every if fold_key(r) == fold_key(reason) and r is not reason]
        by_event.setdefault(id(first), []).append((reason, count, _values(reason, alike)))
    for event in retraces:
        if id(event) in by_event:
            own = by_event.pop(id(event))  # an event listed twice is explained once
            also = len(event.reasons) - len(own)
            lines += _indented(retrace_lines(fn, event, own, also), 2)
    unexplained = [e for e in retraces if not e.reasons]
    if unexplained:
        lines += _indented(retrace_lines(fn, unexplained[0], []), 2)
        lines.append((4, NO_REASON.format(n=len(unexplained)), "dim"))
    for stale in fn.stale_hits:
        lines += _indented(_stale_lines(fn, stale), 2)
    return lines


def fold_key(reason: Reason) -> tuple[str, str, str, str]:
    """What makes two reasons the same for ``_report.fold_reasons``."""
    return (reason.kind, reason.argument, reason.path, reason.fix)


def _stale_lines(fn: FunctionReport, stale: StaleHit) -> list[Line]:
    header = STALE_HEADER.format(
        call_site=stale.call_site or fn.first_call_site, index=stale.call_index
    )
    values = f"{_shorten(stale.before)} -> {_shorten(stale.after)}"
    lines: list[Line] = [
        (0, header, "bold red"),
        (2, f"{stale.path or stale.argument}: {values}", "bold"),
    ]
    if stale.message:
        lines.append((4, stale.message, ""))
    if stale.fix:
        lines.append((4, FIX_LINE.format(fix=stale.fix), "green"))
    return lines


def _row(fn: FunctionReport, include_internal: bool) -> list[str]:
    rate = fn.hit_rate
    name = fn.qualname + (" (internal)" if fn.internal and include_internal else "")
    return [
        name,
        fn.kind,
        UNKNOWN if fn.calls is None else str(fn.calls),
        str(fn.traces),
        str(fn.compiles),
        UNKNOWN if fn.cache_hits is None else str(fn.cache_hits),
        UNKNOWN if rate is None else f"{rate:.0%}",
        _seconds(fn.trace_seconds),
        _seconds(fn.lower_seconds + fn.compile_seconds),
        _seconds(fn.seconds_lost),
    ]


def sorted_functions(report: Report, include_internal: bool = False) -> list[FunctionReport]:
    """Functions worth a look first: most seconds lost to retraces, then most traces."""
    chosen = report.functions if include_internal else report.user_functions()
    return sorted(chosen, key=lambda f: (-f.seconds_lost, -f.traces, f.qualname))


def _columns(rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Indices of the columns that fit ``width``, dropping the least useful first."""
    natural = [
        max(len(name), *(len(row[i]) for row in rows)) + 2 for i, (name, _) in enumerate(COLUMNS)
    ]
    natural[0] = min(natural[0], MIN_NAME_WIDTH + 2)
    width += 2  # no outer edge
    keep = list(range(len(COLUMNS)))
    for name in DROPPABLE:
        if sum(natural[i] for i in keep) <= width:
            break
        keep.remove([n for n, _ in COLUMNS].index(name))
    return keep


def _table(
    report: Report, functions: Sequence[FunctionReport], include_internal: bool, width: int
) -> Table:
    hidden = len(report.functions) - len(functions)
    title = TITLE.format(
        functions=len(functions),
        traces=sum(f.traces for f in functions),
        lost=sum(f.seconds_lost for f in functions),
        hidden=HIDDEN.format(n=hidden) if hidden else "",
    )
    caption = CAPTION.format(
        backend=report.backend,
        host=report.host,
        index=report.process_index,
        count=report.process_count,
        duration=report.duration_seconds,
    )
    table = Table(
        title=title,
        caption=caption,
        box=box.SIMPLE_HEAD,
        title_justify="left",
        caption_justify="left",
        collapse_padding=True,
        show_edge=False,
    )
    rows = [_row(fn, include_internal) for fn in functions]
    keep = _columns(rows, width)
    longest = max(len(row[0]) for row in rows)
    for i in keep:
        name, justify = COLUMNS[i]
        if i == 0:
            table.add_column(name, min_width=min(longest, MIN_NAME_WIDTH), overflow="fold")
        else:
            table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for fn, row in zip(functions, rows, strict=True):
        styles = {0: "bold", len(COLUMNS) - 1: "bold red" if fn.retraces else ""}
        table.add_row(*(Text(row[i], style=styles.get(i, "")) for i in keep))
    return table


def _is_tty() -> bool:
    stream = sys.stdout
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def _want_color(color: bool | None) -> bool:
    return color if color is not None else _is_tty() and not os.environ.get("NO_COLOR")


def _width(width: int | None) -> int:
    if width is not None:
        return max(40, width)
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if _is_tty() else DEFAULT_WIDTH


def make_console(width: int, color: bool) -> Console:
    """A recording console that never reads user strings as rich markup."""
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


def _render(report: Report, color: bool, width: int, include_internal: bool) -> str:
    console = make_console(width, color)
    functions = sorted_functions(report, include_internal)
    if not functions:
        duration = report.duration_seconds
        console.print(
            NO_FUNCTIONS.format(backend=report.backend, host=report.host, duration=duration)
        )
        return _export(console, color)
    console.print(_table(report, functions, include_internal, width))
    for fn in functions:
        lines = _explanations(fn)
        if lines:
            console.print()
        for indent, text, style in lines:
            console.print(Padding(Text(text, style=style), (0, 0, 0, indent)))
    return _export(console, color)


def _export(console: Console, color: bool) -> str:
    lines = console.export_text(styles=color).rstrip().splitlines()
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _fallback(report: object) -> str:
    try:
        raw = repr(report)
    except Exception:
        raw = object.__repr__(report)
    return FALLBACK.format(raw=raw)


def render_text(
    report: Report,
    *,
    color: bool | None = None,
    width: int | None = None,
    include_internal: bool = False,
) -> str:
    """The report as terminal text: a table sorted by seconds lost, then every retrace explained.

    Colour follows the terminal (off when not a TTY or ``NO_COLOR`` is set) unless
    ``color`` says otherwise; the width is the terminal's, or ``DEFAULT_WIDTH``.
    Never raises: on an internal failure it logs and returns the raw data.

    Example:
        >>> from jitlens._report import Report
        >>> r = Report(1, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, ())
        >>> print(render_text(r, color=False))
        jitlens: no jitted function was called (cpu on box, 1.0 s).
        <BLANKLINE>
    """
    try:
        return _render(report, _want_color(color), _width(width), include_internal)
    except Exception:
        LOG.exception("jitlens: rendering the text report failed")
        return _fallback(report)


def render_retrace(fn: FunctionReport, event: Event) -> str:
    """One retrace as plain text for a log record or an error message (at most 8 lines).

    Example:
        >>> from jitlens._report import Event, FunctionReport
        >>> fn = FunctionReport("f", "f", "jax.jit", "a.py:1", "a.py:2", 2, 2, 2, 0, 0, 0.0, 0.0, 0.0)
        >>> print(render_retrace(fn, Event(1, "retrace", "a.py:2", "x: f32[3]")))
        f (jax.jit) a.py:2  retrace #1, 0.00 s (call #1)
          no difference found between the new cache key and the compiled ones (1 retrace(s))
    """
    try:
        lines = retrace_lines(fn, event, [(r, 1, _values(r)) for r in event.reasons])
        head = RETRACE_TITLE.format(qualname=fn.qualname, kind=fn.kind, header=lines[0][1])
        body = [" " * indent + text for indent, text, _ in lines[1:]]
        if not event.reasons and event.kind != "trace":
            body.append("  " + NO_REASON.format(n=1))
        return "\n".join([head, *body])
    except Exception:
        LOG.exception("jitlens: rendering a retrace failed")
        return _fallback(event)
