"""Counting what JAX's persistent compilation cache does, from its own monitoring events.

JAX announces each compile that consults the persistent cache, each hit and
each entry written (``_compat.pcache_api``), always before the compile's
``backend_compile_duration``, in the compiling thread. This module counts
them process-wide (a tracker takes a :func:`snapshot` at start and reports the
difference), marks the event being built with the outcome
(``Event.persistent_cache``), and lists the folder once, at the first compile
that consults it (an entry written again later was there and unreadable). Why not read the folder only: an entry JAX
skipped (below a threshold) leaves no file, and a hit touches none.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .._compat import pcache_api

#: Event name -> counter name.
COUNTERS = {
    pcache_api.PCACHE_REQUEST_EVENT: "requests",
    pcache_api.PCACHE_HIT_EVENT: "hits",
    pcache_api.PCACHE_WRITE_EVENT: "writes",
    pcache_api.PCACHE_USED_EVENT: "used",
    pcache_api.PCACHE_DISABLED_EVENT: "disabled",
}
#: Event name -> ``Event.persistent_cache`` of the compile in progress.
OUTCOMES = {
    pcache_api.PCACHE_REQUEST_EVENT: "not_written",
    pcache_api.PCACHE_HIT_EVENT: "hit",
    pcache_api.PCACHE_WRITE_EVENT: "written",
}

#: JAX's cache files end so (``<module>-<sha256>-cache``; ``-atime`` files track use).
ENTRY_SUFFIX = "-cache"
#: A cache folder JAX reaches through a file-system URL (``gs://bucket/cache``): not listed.
REMOTE = "://"

_LOCK = threading.Lock()
_COUNTS: dict[str, int] = dict.fromkeys(COUNTERS.values(), 0)
#: Folder -> the entries it held when this process first consulted it: an entry JAX
#: writes again was in the folder under the same key and could not be read back.
FOLDERS: dict[str, frozenset[str]] = {}


def list_entries(path: str) -> list[tuple[float, str]] | None:
    """``(mtime, name)`` of each cache entry in a local folder; None if it cannot be listed."""
    if REMOTE in path:
        return None
    out = []
    try:
        with os.scandir(path) as it:
            for e in it:
                if e.name.endswith(ENTRY_SUFFIX):
                    try:
                        out.append((e.stat().st_mtime, e.name))
                    except OSError:
                        continue
    except OSError:
        return None
    return out


def _remember_folder() -> None:
    path = pcache_api.config_value("jax_compilation_cache_dir")
    if not isinstance(path, str) or not path or path in FOLDERS:
        return
    listed = list_entries(path)
    FOLDERS[path] = frozenset(n for _, n in listed or ())


def note_event(event: str, building: Any) -> None:
    """One ``jax.monitoring`` event: count it, and mark the compile being built."""
    name = COUNTERS.get(event)
    if name is None:
        return
    with _LOCK:
        _COUNTS[name] += 1
    if name == "requests":  # once per folder: one listing, before JAX reads or writes it
        _remember_folder()
    outcome = OUTCOMES.get(event)
    if outcome is not None and building is not None:
        building.persistent_cache = outcome


def snapshot() -> dict[str, int]:
    with _LOCK:
        return dict(_COUNTS)


def since(base: dict[str, int] | None) -> dict[str, int]:
    """Counts since ``base`` (a :func:`snapshot`)."""
    now = snapshot()
    if base is None:
        return now
    return {k: v - base.get(k, 0) for k, v in now.items()}
