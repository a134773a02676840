"""The terminal text rich would lay out, written without rich where no layout is needed.

A tracked program pays ~20 ms at exit to import rich and lay its summary out;
most summaries need none of it: no colour, no line to wrap, a table at its
natural width. For those, :func:`layout` writes the text rich writes (its
``box.SIMPLE_HEAD`` table with padding collapsed and no edge, each line under
its indent) and rich is never imported. Anything else, it declines (``None``)
and ``text`` asks rich. ``tests/test_render_text.py`` checks both give the
same text, character for character.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Characters rich gives one cell, besides printable ASCII (what the text itself uses).
ONE_CELL = frozenset("\u00d7\u2192\u2026")


def fits(text: str, room: int) -> bool:
    """``text`` prints on one line of ``room`` cells as written (rich would not touch it)."""
    return len(text) <= room and all((" " <= ch <= "~") or ch in ONE_CELL for ch in text)


def layout(pieces: Sequence[tuple[Any, ...]], width: int) -> str | None:
    """The text rich lays out without colour for ``pieces`` (``text.Piece``), when no line
    needs wrapping and the table fits at its natural width; None otherwise."""
    lines: list[str] = []
    for piece in pieces:
        if piece[0] == "text":
            if not fits(piece[1], width):
                return None
            lines.append(piece[1])
        elif piece[0] == "line":
            line = piece[1]
            # a line of code is never wrapped (``Role.CODE``): as written, at any width
            if not fits(line.text, width - line.indent if line.role != "code" else len(line.text)):
                return None
            lines.append(" " * line.indent + line.text)
        elif piece[0] == "table":
            drawn = table(piece[3], piece[4], width)
            if drawn is None:
                return None
            lines += drawn
        else:
            lines.append("")
    return "\n".join(lines)


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
