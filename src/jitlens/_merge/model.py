"""The merged multi-process view as plain data: matched functions, divergences, their JSON."""

from __future__ import annotations

import dataclasses
import enum
import html
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from .._core.report import Event, FunctionReport, Reason, Report, _to_jsonable

#: The text and HTML renderers, registered by ``jitlens._merge.render`` (``str(merged)``,
#: ``merged.to_text()``, ``merged.to_html()``), which ``merge_reports`` imports.
TEXT: list[Callable[..., str] | None] = [None]
HTML: list[Callable[..., str] | None] = [None]

#: What a process list says of the processes it leaves out (``process_runs(..., limit)``).
MORE_PROCESSES = " and {n:,} more"
#: An object address: ``0x7f..`` in a repr, ``@…3a60`` in a signature (``_core.key``).
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+|(?<=@…)[0-9a-f]{4}")

MERGE_SCHEMA = "jitlens.merge"
MERGE_SCHEMA_VERSION = 1


class _Kind(enum.StrEnum):
    """A merge kind equals its string: the JSON holds the same words as before, and its repr
    is the string's (as ``jitlens._core.kinds``' kinds)."""

    __repr__ = str.__repr__


class DivergenceKind(_Kind):
    """``Divergence.kind``: how the processes parted, in the order they are looked for."""

    #: The function exists in some processes only.
    MISSING = "missing"
    #: The processes traced/compiled it differently (count, signatures, reasons, call indices).
    TRACES = "traces"
    #: Same compiled programs, but different ones ran at the same call.
    DISPATCH = "dispatch"
    #: The same programs in the same order, but a different number of calls.
    CALLS = "calls"


class BranchKind(_Kind):
    """``Branch.kind``: what one group of processes did where the processes parted.

    The event kinds (``jitlens._core.kinds.EventKind``: the group's event at the parting),
    then the merge's own."""

    TRACE = "trace"
    RETRACE = "retrace"
    COMPILE = "compile"
    STOPPED = "stopped"
    #: No further trace or compile.
    NONE = "none"
    #: The call ran an already compiled program.
    HIT = "hit"
    #: A different number of calls.
    CALLS = "calls"
    #: The function exists in these processes ...
    PRESENT = "present"
    #: ... and not in these.
    ABSENT = "absent"


#: The kinds as strings (``DivergenceKind`` / ``BranchKind`` members equal them).
DIVERGENCE_KINDS: tuple[str, ...] = tuple(DivergenceKind)
BRANCH_KINDS: tuple[str, ...] = tuple(BranchKind)


@dataclasses.dataclass(frozen=True)
class Branch:
    """What one group of processes did at the point where the processes parted."""

    processes: tuple[int, ...]
    kind: BranchKind
    call_index: int | None = None
    signature: str = ""
    reasons: tuple[Reason, ...] = ()
    calls: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", BranchKind(self.kind))


@dataclasses.dataclass(frozen=True)
class Divergence:
    """One function that did not run the same compiled programs on every process."""

    kind: DivergenceKind
    name: str
    qualname: str
    defined_at: str
    occurrence: int
    branches: tuple[Branch, ...]
    message: str
    fix: str
    #: Position in the trace/compile sequence where the processes parted.
    event_index: int | None = None
    #: First call (0-based) at which the processes ran different programs, when known.
    call_index: int | None = None
    #: Wall-clock time (seconds since the epoch) of the parting, when known.
    time: float | None = None

    @property
    def processes(self) -> tuple[int, ...]:
        return tuple(sorted(p for b in self.branches for p in b.processes))

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", DivergenceKind(self.kind))


class CacheDifferenceKind(_Kind):
    """``CacheDifference.kind`` (``_merge/pcache.py``, issue 23): what differs."""

    #: A persistent-cache setting or what enters its key.
    SETTING = "setting"
    #: One function read from the cache on some processes, compiled on others.
    FUNCTION = "function"
    #: Why the cache could not help, on some processes only.
    NOTE = "note"


CACHE_DIFFERENCE_KINDS: tuple[str, ...] = tuple(CacheDifferenceKind)


@dataclasses.dataclass(frozen=True)
class CacheDifference:
    """Processes whose persistent compilation cache behaved differently (not a hang: a cost)."""

    kind: CacheDifferenceKind
    what: str
    #: The processes, grouped by what they did or had.
    groups: tuple[tuple[int, ...], ...]
    message: str
    fix: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CacheDifferenceKind(self.kind))


@dataclasses.dataclass(frozen=True)
class MergedFunction:
    """One jitted function matched across processes (``None`` where a process lacks it)."""

    name: str
    qualname: str
    defined_at: str
    kind: str
    occurrence: int
    internal: bool
    #: Aligned with ``MergedReport.process_indices``.
    reports: tuple[FunctionReport | None, ...]
    diverged: bool = False


@dataclasses.dataclass(frozen=True)
class MergedReport:
    """The reports of every process of one run, matched up, with their divergences."""

    process_count: int
    reports: tuple[Report, ...]
    functions: tuple[MergedFunction, ...]
    #: Most likely cause of a hang first (earliest parting in wall-clock time).
    divergences: tuple[Divergence, ...]
    sources: tuple[str, ...] = ()
    #: Persistent-cache differences between processes (issue 23); they do not make the
    #: view inconsistent.
    cache_differences: tuple[CacheDifference, ...] = ()
    #: Why the missing processes' reports are missing, when the gatherer knows
    #: (``jitlens run --gather``: a dead or hung peer that did not answer in time).
    missing_why: tuple[str, ...] = ()

    @property
    def process_indices(self) -> tuple[int, ...]:
        return tuple(r.process_index for r in self.reports)

    @property
    def missing_processes(self) -> tuple[int, ...]:
        """Processes of the job whose report was not given."""
        given = set(self.process_indices)
        return tuple(i for i in range(self.process_count) if i not in given)

    @property
    def complete(self) -> bool:
        """Every process of the job gave its report."""
        return len(set(self.process_indices)) >= self.process_count

    @property
    def consistent(self) -> bool:
        """No divergence among the processes, and none missing (one not seen may differ)."""
        return not self.divergences and self.complete

    def to_dict(self) -> dict[str, Any]:
        """JSON form: per-process figures and divergences (full reports stay in their files)."""
        return {
            "schema": MERGE_SCHEMA,
            "schema_version": MERGE_SCHEMA_VERSION,
            "consistent": self.consistent,
            "process_count": self.process_count,
            "complete": self.complete,
            "missing_processes": list(self.missing_processes),
            "missing_why": list(self.missing_why),
            "processes": [
                _process_dict(r, s) for r, s in zip(self.reports, self._sources(), strict=True)
            ],
            "divergences": _to_jsonable(self.divergences),
            "cache_differences": _to_jsonable(self.cache_differences),
            "functions": [_function_dict(f, self.process_indices) for f in self.functions],
        }

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def _sources(self) -> tuple[str, ...]:
        return self.sources if len(self.sources) == len(self.reports) else ("",) * len(self.reports)

    def to_text(self, *, width: int | None = None, color: bool | None = False) -> str:
        """The merged view as ``jitlens merge`` prints it: the verdict, each divergence with
        its fix, a table of every function per process. ``str(merged)`` is ``to_text()``.

        Args:
            width: wrap at this many characters; ``None``: the terminal's (``COLUMNS`` when
                piped, 100 without either).
            color: ANSI colours; ``None`` follows the terminal (off if not a TTY or NO_COLOR).

        Never raises: if rendering fails, it logs and returns the raw data.
        """
        render = TEXT[0]
        return render(self, color=color, width=width) if render is not None else repr(self)

    def to_html(self) -> str:
        """The merged view as one self-contained HTML page, as ``jitlens merge --html`` writes
        it, each process's own report in a collapsed section. Never raises."""
        render = HTML[0]
        return render(self) if render is not None else f"<pre>{html.escape(repr(self))}</pre>"

    def __str__(self) -> str:
        return self.to_text()


def process_runs(ps: Sequence[int], limit: int | None = None) -> str:
    """``0, 2, 5-4095``: process indices in order, a run of three or more as its ends (a job
    of thousands with most reports missing is one line, not a screenful of numbers); with
    ``limit``, its first ``limit`` runs and how many processes the rest hold."""
    out: list[str] = []
    ordered = sorted(set(ps))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if limit is not None and len(out) >= limit:
            return ", ".join(out) + MORE_PROCESSES.format(n=len(ordered) - i)
        if j - i >= 2:
            out.append(f"{ordered[i]}-{ordered[j]}")
        else:
            out.extend(map(str, ordered[i : j + 1]))
        i = j + 1
    return ", ".join(out)


def normalise(text: str) -> str:
    """Object addresses differ between processes without meaning anything."""
    return _ADDRESS.sub("0x…", text)


def event_key(e: Event) -> tuple[Any, ...]:
    """What two processes' events must share to be the same trace (addresses aside)."""
    reasons = tuple(
        (r.kind, r.argument, r.path, normalise(r.before), normalise(r.after)) for r in e.reasons
    )
    return (e.kind, e.call_index, normalise(e.signature), reasons)


def alike(merged: MergedReport) -> list[tuple[int, ...]]:
    """The processes grouped by what they ran: the same functions, each with the same calls,
    traces, compiles, events and programs per call; the biggest group first, then by their
    lowest process."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for position, index in enumerate(merged.process_indices):
        ran = tuple(
            None
            if (r := fn.reports[position]) is None
            else (r.calls, r.traces, r.compiles, r.call_entries, tuple(map(event_key, r.events)))
            for fn in merged.functions
        )
        groups.setdefault(ran, []).append(index)
    return sorted((tuple(ps) for ps in groups.values()), key=lambda ps: (-len(ps), ps[0]))


def _process_dict(report: Report, source: str) -> dict[str, Any]:
    return {
        "process_index": report.process_index,
        "host": report.host,
        "backend": report.backend,
        "jax_version": report.jax_version,
        "jitlens_version": report.jitlens_version,
        "started_at": report.started_at,
        "duration_seconds": report.duration_seconds,
        "source": source,
    }


def _function_dict(fn: MergedFunction, indices: Sequence[int]) -> dict[str, Any]:
    per_process = []
    for index, rec in zip(indices, fn.reports, strict=True):
        if rec is None:
            per_process.append({"process_index": index, "present": False})
            continue
        per_process.append(
            {
                "process_index": index,
                "present": True,
                "calls": rec.calls,
                "traces": rec.traces,
                "compiles": rec.compiles,
                "cache_hits": rec.cache_hits,
                "signatures": [e.signature for e in rec.events],
            }
        )
    return {
        "name": fn.name,
        "qualname": fn.qualname,
        "defined_at": fn.defined_at,
        "kind": fn.kind,
        "occurrence": fn.occurrence,
        "internal": fn.internal,
        "diverged": fn.diverged,
        "per_process": per_process,
    }
