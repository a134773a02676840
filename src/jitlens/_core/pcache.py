"""When the persistent compilation cache cannot help, and which setting or condition is why.

JAX's persistent cache fails quietly: a folder that is set but never
written, entries below a threshold skipped at DEBUG log level, a cache
enabled after the process's first compile (JAX decides once per process, and
on jax 0.10 only the folder may come later),
a backend that cannot serialise executables, entries it cannot read back
(jax#38445: every CPU entry rejected on reload). :func:`diagnose` reads a run's
:class:`~._core.runinfo.RunInfo` (JAX's own monitoring counts, its settings,
the folder's contents) and returns one :class:`CacheNote` per cause, with
the fix; none when the cache worked or was never turned on (the advisor's
``compile_cache`` advice covers "turn it on").

The evidence is JAX's: ``requests`` (compiles that consulted the cache),
``hits``, ``writes`` (JAX's ``cache_misses`` event, sent only when an entry
is written) and the ``*-cache`` files in the folder.
"""

from __future__ import annotations

from .kinds import NoteKind
from .runinfo import CacheNote, RunInfo

MESSAGES: dict[str, str] = {
    "disabled": "the persistent cache folder is set ({dir}) but jax_enable_compilation_cache "
    "is False: nothing is read or written",
    "backend": "the persistent cache is on ({dir}) but the {platform} backend cannot serialize "
    "executables: JAX never consults it",
    "too_late": "the persistent cache is on ({dir}) but JAX decided at this process's first "
    "compile, while jax_enable_compilation_cache was False, not to use it (once per process): "
    "{compiles} compiles, none consulted it",
    "read_only": "the persistent cache folder {dir} is not writable by this process: "
    "{requests} compiles consulted it, nothing was written",
    "not_process_0": "only process 0 writes persistent cache entries, and this process's "
    "folder ({dir}) stayed empty: process {index} compiles everything on every run",
    "min_compile_time": "nothing was written to the persistent cache ({dir}): every compile "
    "took less than jax_persistent_cache_min_compile_time_secs={threshold:g} s (longest "
    "{longest:.3f} s)",
    "min_entry_size": "nothing was written to the persistent cache ({dir}): every entry was "
    "smaller than jax_persistent_cache_min_entry_size_bytes={threshold}",
    "not_written": "nothing was written to the persistent cache ({dir}): {requests} compiles "
    "consulted it and JAX stored none",
    "rejected": "JAX wrote {writes} persistent cache entries but none is in {dir}: the cache "
    "dropped them",
    "unreadable": "{n} persistent cache entries in {dir} had this run's key but JAX could not "
    "read them: it compiled again and kept the old file, so every run compiles (e.g. "
    "{example}; on CPU see jax#38445)",
    "no_hits": "the persistent cache ({dir}) held {held} entries from earlier runs and none "
    "matched this run's {requests} compiles: their keys differ",
}
FIXES: dict[str, str] = {
    "disabled": 'jax.config.update("jax_enable_compilation_cache", True)',
    "backend": "run on a backend that supports the persistent cache (TPU, GPU, or a CPU "
    "jaxlib that serializes executables); or leave the cache off",
    "too_late": "enable the cache before the first jitted call: "
    'jax.config.update("jax_enable_compilation_cache", True) at start-up, or '
    "JAX_ENABLE_COMPILATION_CACHE=1 in the environment",
    "read_only": "point jax_compilation_cache_dir at a folder this process can write (or let "
    "one writer fill it first)",
    "not_process_0": "point every host's jax_compilation_cache_dir at one shared folder (a "
    "network filesystem or a gs:// path) so process 0's entries are read here",
    "min_compile_time": 'jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)',
    "min_entry_size": 'jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)',
    "not_written": 'rerun with jax.config.update("jax_explain_cache_misses", True): JAX logs '
    "why each entry was skipped (host callbacks such as jax.debug.print are never cached)",
    "rejected": 'rerun with jax.config.update("jax_raise_persistent_cache_errors", True) to see '
    "the write error; check jax_compilation_cache_max_size",
    "unreadable": 'rerun with jax.config.update("jax_raise_persistent_cache_errors", True) to '
    "see the read error; delete the folder if entries are corrupt",
    "no_hits": "compare with the earlier run's report: `jitlens diff BEFORE.json AFTER.json` "
    "names what changed (XLA flags, versions, config, devices, shapes)",
}
SETTINGS: dict[str, str] = {
    "disabled": "jax_enable_compilation_cache",
    "backend": "backend",
    "too_late": "jax_enable_compilation_cache",
    "read_only": "jax_compilation_cache_dir",
    "not_process_0": "process_index",
    "min_compile_time": "jax_persistent_cache_min_compile_time_secs",
    "min_entry_size": "jax_persistent_cache_min_entry_size_bytes",
    "not_written": "",
    "rejected": "jax_compilation_cache_max_size",
    "unreadable": "jax_raise_persistent_cache_errors",
    "no_hits": "cache key",
}


def _note(kind: NoteKind, **fields: object) -> CacheNote:
    return CacheNote(kind, SETTINGS[kind], MESSAGES[kind].format(**fields), FIXES[kind])


def diagnose(run: RunInfo, process_index: int = 0) -> tuple[CacheNote, ...]:
    """Why the persistent cache could not help this run; ``()`` when it could, or was off.

    Example:
        >>> from jitlens._core.runinfo import PersistentCache, RunInfo
        >>> pc = PersistentCache(dir="cache", enabled=True, min_compile_time_secs=1.0,
        ...     min_entry_size_bytes=0, requests=3, hits=0, writes=0, compiles=3,
        ...     longest_compile_seconds=0.02, dir_exists=True, dir_writable=True, entries=0)
        >>> [n.setting for n in diagnose(RunInfo(persistent_cache=pc))]
        ['jax_persistent_cache_min_compile_time_secs']
    """
    pc = run.persistent_cache
    if not pc.dir:
        return ()
    where = {"dir": pc.dir, "requests": pc.requests, "index": process_index}
    if pc.enabled is False:
        return (_note(NoteKind.DISABLED, **where),)
    if pc.requests is None or not pc.compiles:
        return ()  # not counted, or nothing compiled: no evidence either way
    if pc.requests == 0:
        if run.supports_serialization is False:
            return (_note(NoteKind.BACKEND, platform=run.platform or "?", **where),)
        if pc.used is False:  # JAX's own record: decided at the first compile
            return (_note(NoteKind.TOO_LATE, compiles=pc.compiles, **where),)
        return ()
    if pc.entries_unreadable:
        n, example = len(pc.entries_unreadable), pc.entries_unreadable[0]
        return (_note(NoteKind.UNREADABLE, n=n, example=example, **where),)
    if pc.hits or pc.writes is None:
        return ()
    if pc.writes == 0:
        found = _not_written(run, process_index, where)
        return (found,) if found is not None else ()
    if pc.dir_exists and not pc.entries_written:
        return (_note(NoteKind.REJECTED, writes=pc.writes, **where),)
    if pc.entries_before:
        return (_note(NoteKind.NO_HITS, held=pc.entries_before, **where),)
    return ()


def _not_written(run: RunInfo, process_index: int, where: dict[str, object]) -> CacheNote | None:
    pc = run.persistent_cache
    if pc.dir_writable is False:
        return _note(NoteKind.READ_ONLY, **where)
    if process_index != 0:
        # JAX checks this before any threshold. A shared folder holds process 0's entries
        # by the end (nothing to say); an empty one is this host's own, never written.
        return _note(NoteKind.NOT_PROCESS_0, **where) if pc.entries == 0 else None
    threshold = pc.min_compile_time_secs
    longest = pc.longest_compile_seconds
    if threshold is not None and longest is not None and longest < threshold:
        return _note(NoteKind.MIN_COMPILE_TIME, threshold=threshold, longest=longest, **where)
    if pc.min_entry_size_bytes is not None and pc.min_entry_size_bytes > 0:
        return _note(NoteKind.MIN_ENTRY_SIZE, threshold=pc.min_entry_size_bytes, **where)
    return _note(NoteKind.NOT_WRITTEN, **where)
