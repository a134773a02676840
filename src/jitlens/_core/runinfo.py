"""What a run was compiled against: the report's ``run`` section, as plain data.

Within one process, jitlens explains a recompile by the call's key. Across
processes the question is JAX's persistent compilation cache: its key hashes
the computation, jaxlib's version, the platform version, the XLA flags
(``XLA_FLAGS``, ``LIBTPU_INIT_ARGS``, ``--xla*`` argv), compile options read
from the JAX config, and the devices. :class:`RunInfo` records each of those
inputs, the cache's settings, and what the cache did in this run (JAX's own
monitoring events and the folder's contents), so that ``jitlens diff`` can
say which of them changed, and a report can say when the cache cannot help
(:mod:`._core.pcache`).

Every figure jitlens could not read is ``None``, never 0 or ``False``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

from .._errors import ReportError
from .._record import record
from .kinds import NoteKind

#: ``Event.persistent_cache``: what the persistent cache did for one compile.
#: ``hit`` read from the folder; ``written`` compiled and stored; ``not_written``
#: compiled, consulted the cache, stored nothing (a threshold, a read-only
#: folder, process != 0, host callbacks); ``off`` compiled without consulting
#: it; ``""`` unknown (no compile, or an older report).
PCACHE_OUTCOMES: tuple[str, ...] = ("", "hit", "written", "not_written", "off")

#: Entries of the cache folder listed by name (the newest first); more are counted only.
MAX_LISTED_ENTRIES = 200


@record
class CacheNote:
    """Why the persistent cache could not help this run: the setting or condition, the fix."""

    #: The condition found (``kinds.NoteKind``; ``_core.pcache`` words them).
    kind: NoteKind | str
    #: The JAX setting or condition it comes from.
    setting: str
    #: What it means for this run, in words.
    message: str
    #: What to change so the cache helps.
    fix: str

    def __post_init__(self) -> None:
        # a condition a newer jitlens found, read from its report, stays a string
        with contextlib.suppress(ValueError):
            object.__setattr__(self, "kind", NoteKind(self.kind))


@record
class PersistentCache:
    """The persistent cache's settings and what it did while the report was open."""

    #: The cache's settings: ``jax_compilation_cache_dir``, ``jax_enable_compilation_cache``,
    #: the minimum compile time and entry size to write, the size limit.
    dir: str | None = None
    enabled: bool | None = None
    min_compile_time_secs: float | None = None
    min_entry_size_bytes: int | None = None
    max_size: int | None = None
    #: JAX decided at the process's first compile whether to use the cache (once per
    #: process): ``checked`` it did, ``used`` its answer; None when unreadable.
    checked: bool | None = None
    used: bool | None = None
    #: Counts of JAX's monitoring events while tracking was on; None when the
    #: listener was not registered.
    requests: int | None = None
    hits: int | None = None
    writes: int | None = None
    #: The folder: does it exist, can this process write it, how many entries
    #: (``*-cache`` files) at the end, and which were written while this run was
    #: open (by it, or by another process sharing the folder).
    dir_exists: bool | None = None
    dir_writable: bool | None = None
    entries: int | None = None
    #: Entries the folder held when this process first consulted it (jitlens' own
    #: self-check entries left out).
    entries_before: int | None = None
    entries_written: tuple[str, ...] = ()
    #: Entries the folder held for a function whose compile JAX then wrote to the
    #: cache, no new file appearing: the key matched and the entry could not be read.
    entries_unreadable: tuple[str, ...] = ()
    #: Backend compiles of this run (with or without the cache), and their longest time.
    compiles: int | None = None
    longest_compile_seconds: float | None = None


@record
class RunInfo:
    """Everything outside the program that the persistent-cache key depends on."""

    #: What the key hashes: versions, platform, devices, and the XLA flags from
    #: ``XLA_FLAGS``, ``LIBTPU_INIT_ARGS`` and ``--xla*`` words of argv.
    jax_version: str | None = None
    jaxlib_version: str | None = None
    python_version: str | None = None
    platform: str | None = None
    platform_version: str | None = None
    device_kind: str | None = None
    device_count: int | None = None
    local_device_count: int | None = None
    supports_serialization: bool | None = None
    xla_flags: str | None = None
    libtpu_init_args: str | None = None
    argv_xla_flags: tuple[str, ...] = ()
    #: The XLA flags JAX hashes into the key (those three sources, less the dump
    #: options JAX leaves out), sorted as JAX sorts them.
    key_flags: tuple[str, ...] = ()
    #: JAX config options that enter the key (``_compat.pcache_api.KEY_CONFIG``).
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: The cache's settings and what it did.
    persistent_cache: PersistentCache = dataclasses.field(default_factory=PersistentCache)
    #: Why the cache could not help (``_core.pcache.diagnose``); empty when it could.
    notes: tuple[CacheNote, ...] = ()
    #: Why jitlens does not vouch for its figures on these versions (outside its tested range,
    #: ``_compat.probe``); "" when they are tested; None when not known (an older report).
    untested_versions: str | None = None
    #: Its self-check has run on these versions (``jitlens selfcheck``); None when not known.
    self_checked: bool | None = None


def _fields(cls: type, data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ReportError(f"{where}: expected an object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def runinfo_from_dict(data: Any, where: str = "run") -> RunInfo:
    """Rebuild :class:`RunInfo` from its JSON form (unknown keys are ignored: newer writers)."""
    kw = _fields(RunInfo, data, where)
    pc = _fields(PersistentCache, kw.get("persistent_cache", {}), f"{where}.persistent_cache")
    for k in ("entries_written", "entries_unreadable"):
        pc[k] = tuple(str(e) for e in pc.get(k, ()))
    kw["persistent_cache"] = PersistentCache(**pc)
    notes = kw.get("notes", ())
    if not isinstance(notes, (list, tuple)):
        raise ReportError(f"{where}.notes: expected a list, got {type(notes).__name__}")
    kw["notes"] = tuple(
        CacheNote(**_fields(CacheNote, n, f"{where}.notes[{i}]")) for i, n in enumerate(notes)
    )
    for k in ("argv_xla_flags", "key_flags"):
        kw[k] = tuple(str(x) for x in kw.get(k, ()))
    config = kw.get("config", {})
    if not isinstance(config, Mapping):
        raise ReportError(f"{where}.config: expected an object, got {type(config).__name__}")
    kw["config"] = dict(config)
    try:
        return RunInfo(**kw)
    except TypeError as exc:
        raise ReportError(f"{where}: {exc}") from None
