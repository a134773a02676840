"""Collecting a report's ``run`` section: versions, flags, devices, the persistent cache.

Read once, when a report is built, from public ``jax.config`` values, the
environment and ``_compat.pcache_api``; the devices only if JAX already
created its backends (a report written at exit must not start JAX). The cache
folder is listed (``*-cache`` files; those modified since the tracker opened
were written by this run), then ``_core.pcache.diagnose`` says whether the
cache could help.
"""

from __future__ import annotations

import dataclasses
import os
import platform
from collections.abc import Sequence
from typing import Any

from .. import _compat
from .._compat import pcache_api
from .._core.pcache import diagnose
from .._core.report import FunctionReport
from .._core.runinfo import MAX_LISTED_ENTRIES, PersistentCache, RunInfo
from . import pcache
from .state import internal_failure

#: A file modified this long before the tracker opened still counts as this run's (clock skew).
MTIME_SLACK_SECONDS = 1.0


def _folder(path: str | None, since: float, functions: Sequence[FunctionReport]) -> dict[str, Any]:
    if not path or pcache.REMOTE in path:
        return {}  # gs://, s3://...: JAX's own file system layer, not listed here (unknown)
    out: dict[str, Any] = {"dir_exists": os.path.isdir(path)}
    if not out["dir_exists"]:
        parent = os.path.dirname(os.path.abspath(path))
        out["dir_writable"] = os.access(parent, os.W_OK) if os.path.isdir(parent) else False
        out["entries"] = 0
        return out
    out["dir_writable"] = os.access(path, os.W_OK)
    entries = pcache.list_entries(path)
    if entries is None:
        return out
    out["entries"] = len(entries)
    before = pcache.FOLDERS.get(path, frozenset())
    new = sorted((t, n) for t, n in entries if n not in before and t >= since - MTIME_SLACK_SECONDS)
    written = tuple(n for _, n in reversed(new))
    out["entries_written"] = written[:MAX_LISTED_ENTRIES]
    if path in pcache.FOLDERS:
        out["entries_before"] = len(before)
        out["entries_unreadable"] = _unreadable(before, written, functions)[:MAX_LISTED_ENTRIES]
    return out


def _unreadable(
    before: frozenset[str], written: tuple[str, ...], functions: Sequence[FunctionReport]
) -> tuple[str, ...]:
    """Entries the folder held for a function JAX says it wrote, though no new file appeared.

    JAX writes only after a read found nothing usable, and its cache keeps the old file
    when the key exists (``LRUCache.put``): such an entry is there and cannot be read.
    """
    out: list[str] = []
    for fn in functions:
        if not any(e.persistent_cache == "written" for e in fn.events):
            continue
        prefix = f"jit_{fn.name}-"
        if any(n.startswith(prefix) for n in written):
            continue
        out += sorted(n for n in before if n.startswith(prefix))
    return tuple(dict.fromkeys(out))


def _compiles(functions: Sequence[FunctionReport]) -> tuple[int, float | None]:
    seconds = [
        e.compile_seconds
        for f in functions
        for e in f.events
        if e.compiled and not e.persistent_cache_hit
    ]
    return len(seconds), (max(seconds) if seconds else None)


def collect(
    base: dict[str, int] | None,
    started_wall: float,
    functions: Sequence[FunctionReport],
    process_index: int = 0,
) -> RunInfo:
    """The ``run`` section of a report whose tracker opened at ``started_wall``."""
    settings = pcache_api.cache_settings()
    state = pcache_api.cache_state() or {}
    counts = pcache.since(base)
    devices = pcache_api.devices_info() or {}
    cache_dir = settings.get("jax_compilation_cache_dir")
    n, longest = _compiles(functions)
    cache = PersistentCache(
        dir=cache_dir,
        enabled=settings.get("jax_enable_compilation_cache"),
        min_compile_time_secs=settings.get("jax_persistent_cache_min_compile_time_secs"),
        min_entry_size_bytes=settings.get("jax_persistent_cache_min_entry_size_bytes"),
        max_size=settings.get("jax_compilation_cache_max_size"),
        checked=state.get("checked"),
        used=state.get("used"),
        requests=counts["requests"],
        hits=counts["hits"],
        writes=counts["writes"],
        compiles=n,
        longest_compile_seconds=longest,
        **_folder(cache_dir, started_wall, functions),
    )
    flags = pcache_api.flag_variables()
    info = RunInfo(
        jax_version=_compat.jax_version(),
        jaxlib_version=pcache_api.jaxlib_version(),
        python_version=platform.python_version(),
        platform=devices.get("platform"),
        platform_version=devices.get("platform_version"),
        device_kind=devices.get("device_kind"),
        device_count=devices.get("device_count"),
        local_device_count=devices.get("local_device_count"),
        supports_serialization=devices.get("supports_serialization"),
        xla_flags=flags.get("XLA_FLAGS"),
        libtpu_init_args=flags.get("LIBTPU_INIT_ARGS"),
        argv_xla_flags=pcache_api.argv_xla_flags(),
        key_flags=pcache_api.key_flags(),
        config=pcache_api.key_config(),
        persistent_cache=cache,
        **_versions(),
    )
    return dataclasses.replace(info, notes=diagnose(info, process_index))


def _versions() -> dict[str, Any]:
    """Whether jitlens vouches for its figures here: the self-check's notice, kept as data."""
    from . import selfcheck

    check = selfcheck.result(wait=True)
    if check is None:
        return {}  # no self-check in this process: not known
    untested = check.capabilities.untested
    return {"untested_versions": untested or "", "self_checked": check.canary_ran}


def run_section(
    base: dict[str, int] | None,
    started_wall: float,
    functions: Sequence[FunctionReport],
    process_index: int = 0,
) -> RunInfo | None:
    """:func:`collect`, or None (and one warning) if reading fails: a report never breaks."""
    try:
        return collect(base, started_wall, functions, process_index)
    except Exception as exc:
        internal_failure("reading the run's versions, flags and persistent cache", exc)
        return None
