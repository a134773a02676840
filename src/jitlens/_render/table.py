"""The report's table of functions: its rows, the columns that fit, and who lays it out.

One row per function (wrappers of one code folded), its figures as text; columns are
dropped, least useful first, until the rest fit the width. A row's name drops its kind's
prefix while the kind column is shown (``Sequential.evaluate test step`` beside ``keras``)
and a name up to ``WHOLE_NAME`` characters stays on one line: a column that matters less
gives way first. A table of fewer than
``plain.BIG_TABLE`` rows is laid out by rich when it does not fit at its natural width
(its layout, pinned by golden text); a bigger one by ``plain.folded_table``, whose cost
per row is the same at any width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._core.lazy import OnFirstUse
from .._core.report import FunctionReport
from .plain import BIG_TABLE, folded_table, table

#: The retrace text (its ``UNKNOWN``), loaded with the first table.
RT = OnFirstUse(".._core.retrace_text", __package__)

if TYPE_CHECKING:
    from rich.table import Table

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
DROPPABLE = ("hit %", "trace s", "kind", "hits", "compile s", "compiles")
#: The function column gets at least this many characters before others are dropped.
MIN_NAME_WIDTH = 24
#: A name up to this long stays on one line: a column that matters less gives way first.
WHOLE_NAME = 32
#: A name's longest word is never broken below this width (``build_update_fn.<locals>.update``).
MAX_WORD_WIDTH = 48
#: A folded row's name in the table: where and how often it traced are in its explanation.
TABLE_FOLDED = "{qualname} ×{n}"  # noqa: RUF001 (a count, read as "times")
#: A row's styles: its name's, and its seconds lost's.
RowStyle = tuple[str, str]


def percent(rate: float) -> str:
    """A rate as a percentage that never rounds to a bound it did not reach: 938/941 is 99.7%."""
    for digits in range(4):
        text = f"{rate:.{digits}%}"
        shown = float(text[:-1])
        if (rate < 1 and shown >= 100) or (rate > 0 and shown <= 0):
            continue
        return text
    return "<0.001%" if rate < 0.5 else ">99.999%"


def seconds_text(value: float) -> str:
    return f"{value:.2f}" if math.isfinite(value) else RT.UNKNOWN


def row_cells(fn: FunctionReport, include_internal: bool, kind_shown: bool = True) -> list[str]:
    """The cells of ``fn``'s row, every column (``kind_shown``: the name without the kind's
    prefix, which the kind column says)."""
    rate = fn.hit_rate
    name = (
        TABLE_FOLDED.format(qualname=fn.wrapped_qualname, n=fn.wrappers)
        if fn.wrappers > 1 and fn.wrapped_qualname
        else table_name(fn)
        if kind_shown
        else fn.qualname
    )
    name += " (internal)" if fn.internal and include_internal else ""
    unknown = RT.UNKNOWN
    return [
        name,
        fn.kind,
        unknown if fn.calls is None else str(fn.calls),
        unknown if fn.traces is None else str(fn.traces),
        unknown if fn.compiles is None else str(fn.compiles),
        unknown if fn.cache_hits is None else str(fn.cache_hits),
        unknown if rate is None else percent(rate),
        seconds_text(fn.trace_seconds),
        seconds_text(fn.lower_seconds + fn.compile_seconds),
        seconds_text(fn.seconds_lost),
    ]


def table_name(fn: FunctionReport) -> str:
    """A row's name in a table that has a kind column: ``Sequential.evaluate test step``, not
    ``keras: Sequential.evaluate test step`` beside the kind ``keras`` (the row wrapped)."""
    prefix = f"{fn.kind}: "
    return fn.qualname.removeprefix(prefix) if fn.qualname != prefix else fn.qualname


def rows_and_columns(
    functions: Sequence[FunctionReport], include_internal: bool, width: int
) -> tuple[list[list[str]], list[int]]:
    """The table's rows and the columns that fit ``width``: a row's name without its kind's
    prefix while the kind column is shown, with it when the kind column gave way."""
    rows = [row_cells(fn, include_internal) for fn in functions]
    keep = columns(rows, width)
    if 1 not in keep:
        rows = [row_cells(fn, include_internal, kind_shown=False) for fn in functions]
        keep = columns(rows, width)
    return rows, keep


def columns(rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Indices of the columns that fit ``width``, dropping the least useful first."""
    natural = [
        max(len(name), *(len(row[i]) for row in rows)) + 2 for i, (name, _) in enumerate(COLUMNS)
    ]
    natural[0] = min(natural[0], name_floor(rows) + 2)
    keep = list(range(len(COLUMNS)))
    for name in DROPPABLE:
        if sum(natural[i] for i in keep) <= width:
            break
        keep.remove([n for n, _ in COLUMNS].index(name))
    return keep


def name_floor(rows: Sequence[Sequence[str]]) -> int:
    """The width the function column keeps before other columns give way: a name up to
    ``WHOLE_NAME`` whole (a row of 2-3 lines at 100 columns read badly), a longer one at least
    ``MIN_NAME_WIDTH``, never breaking its longest word."""
    longest = max(len(row[0]) for row in rows)
    return max(MIN_NAME_WIDTH, longest_word(rows), min(longest, WHOLE_NAME))


def longest_word(rows: Sequence[Sequence[str]]) -> int:
    """The longest unbreakable part of a function name, capped at ``MAX_WORD_WIDTH``."""
    words = [len(w) for row in rows for w in row[0].split()]
    return min(max(words, default=0), MAX_WORD_WIDTH)


def name_width(rows: Sequence[Sequence[str]], width: int) -> int:
    """The least width of the function column: its names, up to ``WHOLE_NAME`` whole, never
    below the longest word (capped), never above half the width."""
    longest = max(len(row[0]) for row in rows)
    return min(name_floor(rows), longest, width // 2)


def lay_out(
    cells: Sequence[Sequence[str]],
    right: Sequence[bool],
    width: int,
    styles: Sequence[RowStyle],
    color: bool,
) -> list[str] | None:
    """The table's lines without rich (``cells``: its header, then its rows), or None: rich
    lays it out (a small table that does not fit at its natural width, or in colour)."""
    if not color and (drawn := table(cells, right, width)) is not None:
        return drawn
    if len(cells) - 1 < BIG_TABLE:
        return None
    floor = name_width(cells[1:], width)
    return folded_table(cells, right, width, floor, styles, color)


def rich_table(
    functions: Sequence[FunctionReport],
    include_internal: bool,
    width: int,
    styles: Sequence[RowStyle],
) -> Table:
    """The rows, one per function, as a rich table; its title and legend are printed around it
    at the full width (a table narrower than the terminal wrapped them at its own width)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out = Table(box=box.SIMPLE_HEAD, collapse_padding=True, show_edge=False)
    rows, keep = rows_and_columns(functions, include_internal, width)
    for i in keep:
        name, justify = COLUMNS[i]
        if i == 0:
            out.add_column(name, min_width=name_width(rows, width), overflow="fold")
        else:
            out.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    last = len(COLUMNS) - 1
    for cells, (name_style, lost_style) in zip(rows, styles, strict=True):
        shown = {0: name_style, last: lost_style}
        out.add_row(*(Text(cells[i], style=shown.get(i, "")) for i in keep))
    return out
