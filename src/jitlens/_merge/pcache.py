"""Processes of one run whose persistent compilation cache behaved differently.

Not a hang (every process still runs the same programs), but a cost: a host
whose cache folder is not shared, or set up differently, compiles what the
others read from disk, and the whole step waits for the slowest host. Three
comparisons, from each report's ``run`` section and its functions:

* the cache's settings and what enters its key (folder, enabled, thresholds,
  XLA flags, jaxlib), grouped by value;
* per function: read from the persistent cache on some processes (or more often),
  compiled on others; compile counts alone are a divergence, not a cache difference;
* why the cache could not help (``_core.pcache`` notes) on some processes only.

Writes are not compared: JAX writes entries from process 0 only, by design.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._core.kinds import NoteKind
from .._core.report import FunctionReport, Report
from .model import CacheDifference, CacheDifferenceKind, MergedFunction, process_runs

SETTING_MSG = "{what} differs between processes: {groups}"
SETTING_FIX = "give every process the same persistent-cache settings, XLA flags and jax/jaxlib"
FUNCTION_MSG = "`{name}` {groups}"
FUNCTION_FIX = (
    "share one cache folder between the hosts (a network filesystem or a gs:// path): only "
    "process 0 writes entries, the others read them"
)
NOTE_MSG = "the persistent cache could not help on {procs} only: {message}"

#: ``RunInfo`` read per process: label -> getter.
SETTINGS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("jax_compilation_cache_dir", lambda r: r.persistent_cache.dir),
    ("jax_enable_compilation_cache", lambda r: r.persistent_cache.enabled),
    (
        "jax_persistent_cache_min_compile_time_secs",
        lambda r: r.persistent_cache.min_compile_time_secs,
    ),
    (
        "jax_persistent_cache_min_entry_size_bytes",
        lambda r: r.persistent_cache.min_entry_size_bytes,
    ),
    ("XLA flags", lambda r: " ".join(r.key_flags) or "(none)"),
    ("jaxlib version", lambda r: r.jaxlib_version),
)
#: A function's behaviour on one process.
BEHAVIOUR = "compiled {compiled}x, read {read}x from the persistent cache"
#: Process-dependent by design: only process 0 writes.
IGNORED_NOTES = (NoteKind.NOT_PROCESS_0,)


def _procs(ps: Sequence[int]) -> str:
    return ("process " if len(ps) == 1 else "processes ") + process_runs(ps)


def _group(values: dict[int, Any]) -> list[tuple[tuple[int, ...], Any]]:
    out: dict[str, tuple[list[int], Any]] = {}
    for p in sorted(values):
        out.setdefault(repr(values[p]), ([], values[p]))[0].append(p)
    return [(tuple(ps), v) for ps, v in out.values()]


def _groups_text(groups: list[tuple[tuple[int, ...], Any]]) -> str:
    return "; ".join(f"{v} on {_procs(ps)}" for ps, v in groups)


def _behaviour(fn: FunctionReport) -> tuple[int, int] | None:
    """(compiled, read from the persistent cache), or None when it never compiled."""
    compiled = [e for e in fn.events if e.compiled]
    if not compiled:
        return None
    read = sum(1 for e in compiled if e.persistent_cache_hit)
    return len(compiled) - read, read


def cache_differences(
    reports: Sequence[Report], functions: Sequence[MergedFunction]
) -> tuple[CacheDifference, ...]:
    """Every way the processes' persistent caches differed (``()`` when alike or unknown)."""
    runs = {r.process_index: r.run for r in reports if r.run is not None}
    out: list[CacheDifference] = []
    if len(runs) >= 2:
        for what, get in SETTINGS:
            groups = _group({p: get(run) for p, run in runs.items()})
            if len(groups) > 1:
                msg = SETTING_MSG.format(what=what, groups=_groups_text(groups))
                out.append(
                    CacheDifference(
                        CacheDifferenceKind.SETTING, what, _procs_of(groups), msg, SETTING_FIX
                    )
                )
    indices = [r.process_index for r in reports]
    for fn in functions:
        seen = {
            p: b
            for p, rec in zip(indices, fn.reports, strict=True)
            if rec is not None and (b := _behaviour(rec)) is not None
        }
        # Only reads tell the caches apart: equal reads with other compile counts
        # is a compile-count divergence, reported as such, not a cache difference.
        if len({read for _, read in seen.values()}) < 2:
            continue
        groups = _group(seen)
        if len(groups) > 1:
            text = "; ".join(
                f"{BEHAVIOUR.format(compiled=c, read=r)} on {_procs(ps)}" for ps, (c, r) in groups
            )
            msg = FUNCTION_MSG.format(name=fn.qualname, groups=text)
            out.append(
                CacheDifference(
                    CacheDifferenceKind.FUNCTION, fn.qualname, _procs_of(groups), msg, FUNCTION_FIX
                )
            )
    if len(runs) >= 2:
        kinds = {
            p: tuple(n.kind for n in run.notes if n.kind not in IGNORED_NOTES)
            for p, run in runs.items()
        }
        for ps, ks in _group(kinds):
            if ks and len(_group(kinds)) > 1:
                note = next(n for n in runs[ps[0]].notes if n.kind == ks[0])
                msg = NOTE_MSG.format(procs=_procs(ps), message=note.message)
                out.append(
                    CacheDifference(CacheDifferenceKind.NOTE, note.setting, (ps,), msg, note.fix)
                )
    return tuple(out)


def _procs_of(groups: list[tuple[tuple[int, ...], Any]]) -> tuple[tuple[int, ...], ...]:
    return tuple(ps for ps, _ in groups)
