"""The terminal text rich would lay out, written without rich where no layout is needed.

A tracked program pays ~20 ms at exit to import rich and lay its summary out;
most summaries need none of it: no line to wrap, a table at its natural width.
For those, :func:`layout` writes the text rich writes (its ``box.SIMPLE_HEAD``
table with padding collapsed and no edge, each line under its indent, in colour
the same escape codes) and rich is never imported. A piece it cannot write,
it declines (``None``) and ``text`` asks rich for that piece alone: a report of
10,000 functions with one long line pays rich for that line, not for all of
them. ``tests/test_render_text.py`` checks both give the same text, character
for character.

A table too big for rich's layout (``BIG_TABLE`` rows: rich measures every cell
of every row again for each, 4-12 ms a row once a name is wider than its
column) is laid out by :func:`folded_table`: the column widths computed once,
a name too long for its column wrapped at its spaces and cut where a word is
longer than the column.
"""

from __future__ import annotations

import functools
import itertools
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

#: Characters rich gives one cell, besides printable ASCII (what the text itself uses).
ONE_CELL = frozenset("\u00d7\u2192\u2026")
#: Rows from which a table is laid out here at any width (fewer: rich, as always).
BIG_TABLE = 200
#: The escape codes rich writes for a style's words, in the order it writes them.
_ATTRIBUTES = {"bold": 1, "dim": 2, "italic": 3, "underline": 4}
_COLOURS = {"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35}
_COLOURS |= {"cyan": 36, "white": 37}
_RESET = "\x1b[0m"
#: A `code span` up to this long is never broken by wrapping (`self.act = act`); a longer one
#: would not fit a line anyway.
GLUED_CODE = 64
CODE_SPAN = re.compile(r"`[^`\n]+`")
#: Stands for a space inside a code span while rich wraps (a private-use character: rich
#: breaks lines at any Unicode space, U+00A0 included).
GLUE = "\ue000"
#: What rich takes for a word: its leading and trailing spaces with it (``rich._wrap``).
_WORD = re.compile(r"\s*\S+\s*")


def glue_code(text: str, room: int = GLUED_CODE) -> str:
    """``text`` with the spaces of each short `code span` made unbreakable (``GLUE``), so that
    wrapping keeps a fix's code on one line, ready to copy (``unglue`` puts the spaces back)."""
    return CODE_SPAN.sub(lambda m: m[0].replace(" ", GLUE) if len(m[0]) <= room else m[0], text)


def unglue(text: str) -> str:
    """The spaces ``glue_code`` made unbreakable, spaces again."""
    return text.replace(GLUE, " ")


def one_cell(text: str) -> bool:
    """Every character of ``text`` takes one cell, as rich counts (what :func:`wrap` needs)."""
    if text.isascii():
        return text.isprintable()
    return all((" " <= ch <= "~") or ch in ONE_CELL or ch == GLUE for ch in text)


@functools.lru_cache(maxsize=4096)  # a report's retraces share their words
def wrap(text: str, room: int) -> tuple[str, ...]:
    """``text`` (one cell a character) on lines of ``room`` cells as rich wraps it: at the
    start of a word that does not fit (a word with the spaces after it), a word longer than
    a line cut into lines; a line's spaces past the room dropped (``Text.wrap``)."""
    if len(text) <= room:
        return (text,)
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if room - offset >= length:
            offset += len(word)
        elif length > room:
            chunks = [word[i : i + room] for i in range(0, len(word), room)]
            for chunk in chunks[:-1]:
                if start:
                    breaks.append(start)
                start += len(chunk)
            if start:
                breaks.append(start)
            offset = len(chunks[-1])
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    edges = [0, *breaks, len(text)]
    lines = [text[a:b] for a, b in itertools.pairwise(edges)]
    return tuple(_cropped(line, room) for line in lines)


def _cropped(line: str, room: int) -> str:
    if len(line) <= room:
        return line
    spaces = len(line) - len(line.rstrip())
    line = line[: len(line) - min(spaces, len(line) - room)]
    return line[:room]


def fits(text: str, room: int) -> bool:
    """``text`` prints on one line of ``room`` cells as written (rich would not touch it)."""
    if len(text) > room:
        return False
    if text.isascii():
        return text.isprintable()
    return all((" " <= ch <= "~") or ch in ONE_CELL for ch in text)


def ansi(style: str) -> str | None:
    """The escape sequence rich's standard colour system starts ``style`` with ("" for no
    style); None for a style this does not know (rich then writes the piece)."""
    words = style.split()
    if any(w not in _ATTRIBUTES and w not in _COLOURS for w in words):
        return None
    colours = [w for w in words if w in _COLOURS]
    if len(colours) > 1:
        return None
    codes = sorted(_ATTRIBUTES[w] for w in set(words) if w in _ATTRIBUTES)
    codes += [_COLOURS[w] for w in colours]
    return f"\x1b[{';'.join(map(str, codes))}m" if codes else ""


def paint(text: str, style: str, color: bool) -> str | None:
    """``text`` in ``style`` as rich writes it (``color``), or as it is; None: ask rich."""
    if not color or not style or not text:
        return text
    start = ansi(style)
    if start is None:
        return None
    return f"{start}{text}{_RESET}" if start else text


def layout(
    pieces: Sequence[tuple[Any, ...]],
    width: int,
    color: bool = False,
    styles: Mapping[Any, str] | None = None,
) -> str | None:
    """The text rich lays out for ``pieces`` (``text.Piece``), when no line needs wrapping and
    the table fits at its natural width; None otherwise. ``styles``: a line's role -> its
    style (``text.STYLES``), for ``color``."""
    lines: list[str] = []
    for piece in pieces:
        drawn = piece_lines(piece, width, color, styles)
        if drawn is None:
            return None
        lines += drawn
    return "\n".join(lines)


def piece_lines(
    piece: tuple[Any, ...],
    width: int,
    color: bool = False,
    styles: Mapping[Any, str] | None = None,
) -> list[str] | None:
    """One piece's lines as rich writes them, or None when it needs rich's layout (a line to
    wrap, a character rich may not give one cell, a table narrower than its cells, a colour
    without ``styles``)."""
    kind = piece[0]
    if kind == "text":
        shown = paint(piece[1], piece[2], color) if fits(piece[1], width) else None
        return None if shown is None else [shown]
    if kind == "line":
        line, room = piece[1], width - piece[1].indent
        if not one_cell(line.text) or (color and styles is None):
            return None
        style = styles[line.role] if styles is not None else ""
        if line.role == "code":  # a line of code is never wrapped (``Role.CODE``): whole, to copy
            shown = paint(" " * line.indent + line.text, style, color)
            return None if shown is None else [shown]
        if room < 1:
            return None
        out = []
        for part in wrap(glue_code(line.text) if piece[2] else line.text, room):
            shown = paint(part, style, color)
            if shown is None:
                return None
            out.append(" " * line.indent + shown)
        return out
    if kind == "table":
        return None if color else table(piece[3], piece[4], width)
    return [""]


def table(cells: Sequence[Sequence[str]], right: Sequence[bool], width: int) -> list[str] | None:
    """A header row and its rows as rich draws ``Table(box=box.SIMPLE_HEAD,
    collapse_padding=True, show_edge=False)`` when every column has its natural width;
    None when rich would squeeze a column."""
    if not all(fits(cell, width) for row in cells for cell in row):
        return None
    sizes = [max(len(row[j]) for row in cells) for j in range(len(right))]
    # the first column is padded on both sides, the others on their right, one space between
    total = sum(sizes) + 2 + 2 * (len(sizes) - 1)
    if total > width:
        return None

    def draw(row: Sequence[str]) -> str:
        return " " + "  ".join(
            cell.rjust(size) if r else cell.ljust(size)
            for cell, size, r in zip(row, sizes, right, strict=True)
        )

    return [draw(cells[0]), "\u2500" * total, *(draw(row) for row in cells[1:])]


def folded_table(
    cells: Sequence[Sequence[str]],
    right: Sequence[bool],
    width: int,
    floor: int,
    styles: Sequence[tuple[str, str]] = (),
    color: bool = False,
) -> list[str] | None:
    """The table of :func:`table` at ``width``, its first column as wide as the others leave it
    (at least ``floor``): a cell too long for it wrapped at its spaces and cut where a word is
    longer than the column, on as many lines as it takes. ``styles``: each row's first and last
    cell's style (``color``: in escape codes). None when the other columns alone do not fit."""
    if not all(fits(cell, width) for row in cells for cell in row[1:]):
        return None
    if not all(fits(row[0], len(row[0])) for row in cells):
        return None  # a character rich may give two cells: its layout
    sizes = [max(len(row[j]) for row in cells) for j in range(len(right))]
    rest = sum(sizes[1:]) + 2 + 2 * (len(sizes) - 1)
    name = min(sizes[0], max(floor, width - rest))
    if name + rest > width or name < 1:
        return None
    sizes[0] = name
    start = {style: ansi(style) for row in styles for style in row}
    if color and any(code is None for code in start.values()):
        return None

    def shown(text: str, size: int, r: bool, style: str) -> str:
        padded = text.rjust(size) if r else text.ljust(size)
        return f"{start[style]}{padded}{_RESET}" if color and start.get(style) else padded

    def draw(row: Sequence[str], style: tuple[str, str]) -> list[str]:
        parts = textwrap.wrap(row[0], name, break_on_hyphens=False) or [""]
        head = [shown(parts[0], name, False, style[0])]
        head += [shown(c, z, r, style[1] if j == len(row) - 1 else "") for j, (c, z, r) in
                 enumerate(zip(row[1:], sizes[1:], right[1:], strict=True), 1)]  # fmt: skip
        out = [" " + "  ".join(head)]
        out += [" " + shown(part, name, False, style[0]) for part in parts[1:]]
        return out

    header = " " + "  ".join(c.ljust(z) for c, z in zip(cells[0], sizes, strict=True))
    lines = [f"\x1b[1m{header}{_RESET}" if color else header, "\u2500" * (name + rest)]
    plain_style = ("", "")
    for i, row in enumerate(cells[1:]):
        lines += draw(row, styles[i] if i < len(styles) else plain_style)
    return lines
