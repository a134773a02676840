"""One lint rule: its code, the trap it finds in a line, and the check that finds it.

Each ``rules_*.py`` module declares its rules as ``RULES`` (and, for a library of its
own, that library's names: ``VOCABULARY``, an ``index.Vocabulary``); ``rules.py`` is
the table of them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from .index import FileIndex
from .nodes import Hit


@dataclasses.dataclass(frozen=True)
class Rule:
    """One lint rule: its ``JL###`` code, what it finds, and the check that finds it."""

    code: str
    summary: str
    check: Callable[[FileIndex], Iterator[Hit]]
