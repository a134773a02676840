"""Counting what JAX's persistent compilation cache does, from its own monitoring events.

JAX announces each compile that consults the persistent cache, each hit and
each entry written (``_compat.pcache_api``), always before the compile's
``backend_compile_duration``, in the compiling thread. This module counts
them process-wide (a tracker takes a :func:`snapshot` at start and reports the
difference) and marks the event being built with the outcome
(``Event.persistent_cache``). Why not read the folder only: an entry JAX
skipped (below a threshold) leaves no file, and a hit touches none.
"""

from __future__ import annotations

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

_LOCK = threading.Lock()
_COUNTS: dict[str, int] = dict.fromkeys(COUNTERS.values(), 0)


def note_event(event: str, building: Any) -> None:
    """One ``jax.monitoring`` event: count it, and mark the compile being built."""
    name = COUNTERS.get(event)
    if name is None:
        return
    with _LOCK:
        _COUNTS[name] += 1
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
