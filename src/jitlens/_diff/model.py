"""Two runs compared, as plain data: what changed per function, and in what the cache key hashes.

``jitlens merge`` compares the processes of one run; ``jitlens diff`` compares
two runs of one program (yesterday's baseline and today's change, a cold and a
warm start, before and after an upgrade). The model says, per function, the
counts on each side, the compiled entries (signatures) that are new or gone,
and why a compile came back: the argument paths whose shapes, dtypes,
shardings or statics differ (``Reason``, the vocabulary of one run's
explanations), or what changed outside the program that enters the
persistent-cache key (:class:`RunChange`).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable
from typing import Any

from .._core.report import Reason, _to_jsonable
from .._core.runinfo import CacheNote

#: The text renderer, registered by ``jitlens._diff.render`` (``str(diff)``).
TEXT: list[Callable[..., str] | None] = [None]

DIFF_SCHEMA = "jitlens.diff"
DIFF_SCHEMA_VERSION = 1

#: ``FunctionDiff.status``: ``worse`` gained traces or compiles; ``better``
#: lost some (e.g. now loaded from the persistent cache); ``changed`` same
#: counts, different entries; ``same``; ``new`` / ``gone`` only in one run.
STATUSES: tuple[str, ...] = ("worse", "better", "changed", "same", "new", "gone")


class ChangeKind(enum.StrEnum):
    """``EntryChange.kind``: a compiled entry (signature) only AFTER has; one only BEFORE had;
    one both have that BEFORE read from the persistent cache and AFTER compiled
    (``cache_miss``) or the other way round (``cache_hit``)."""

    NEW = "new"
    VANISHED = "vanished"
    CACHE_MISS = "cache_miss"
    CACHE_HIT = "cache_hit"


@dataclasses.dataclass(frozen=True)
class RunChange:
    """One difference between the runs outside the program.

    ``in_key``: JAX hashes it into the persistent-cache key, so every entry
    compiled under the old value misses under the new one.
    """

    what: str
    before: str
    after: str
    in_key: bool = True


@dataclasses.dataclass(frozen=True)
class EntryChange:
    """A compiled entry of one function that differs between the runs."""

    kind: ChangeKind
    signature: str
    #: For a new entry: the closest entry of BEFORE, and the key paths that differ.
    closest: str = ""
    reasons: tuple[Reason, ...] = ()


@dataclasses.dataclass(frozen=True)
class Counts:
    """One side's figures (``None`` where that run could not count)."""

    calls: int | None
    traces: int | None
    compiles: int | None
    persistent_cache_hits: int


@dataclasses.dataclass(frozen=True)
class FunctionDiff:
    """One function of the program, matched across the two runs."""

    name: str
    qualname: str
    defined_at: str
    status: str
    before: Counts | None
    after: Counts | None
    entries: tuple[EntryChange, ...] = ()
    #: What made it worse (or better), most decisive first; empty when unchanged.
    message: str = ""
    fix: str = ""
    #: Where BEFORE defined it, when a line shift moved it.
    defined_at_before: str = ""


@dataclasses.dataclass(frozen=True)
class ReportDiff:
    """Everything that changed from BEFORE to AFTER."""

    before_source: str
    after_source: str
    functions: tuple[FunctionDiff, ...]
    run_changes: tuple[RunChange, ...] = ()
    #: Why the persistent cache could not help, in each run (``_core.pcache``).
    notes_before: tuple[CacheNote, ...] = ()
    notes_after: tuple[CacheNote, ...] = ()
    #: What could not be compared (a report without a ``run`` section).
    unknowns: tuple[str, ...] = ()

    @property
    def worse(self) -> tuple[FunctionDiff, ...]:
        """Functions that gained traces or compiles: what ``jitlens diff`` exits 1 for."""
        return tuple(f for f in self.functions if f.status == "worse")

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": DIFF_SCHEMA,
            "schema_version": DIFF_SCHEMA_VERSION,
            "worse": len(self.worse),
            **{f.name: _to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)},
        }

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def __str__(self) -> str:
        render = TEXT[0]
        return render(self, color=False) if render is not None else repr(self)
