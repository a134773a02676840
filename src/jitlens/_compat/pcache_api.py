"""JAX's persistent compilation cache: its monitoring events, its state, what enters its key.

Why a module of its own: the persistent cache is the one JAX cache that lives
across processes, and "why did this run compile again when the last one did
not?" is answered by what its key hashes (``jax/_src/cache_key.py``: the
computation, jaxlib's version, the platform and its version, ``XLA_FLAGS`` /
``LIBTPU_INIT_ARGS`` / ``--xla*`` argv, the compile options, the devices) and
by whether JAX used the cache at all (``jax/_src/compilation_cache.py``).
Everything here reads; nothing initialises a backend or the cache.

Tested against jax 0.9.x-0.10.2; every accessor degrades to ``None``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import jax

# jax.monitoring events (jax/_src/compiler.py, compilation_cache.py).
#: A compile consulted the persistent cache (its key could be computed; the cache is used).
PCACHE_REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
#: The executable was read from the cache (no backend compile).
PCACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
#: Despite its name: an entry was *written* (large and slow enough to keep).
PCACHE_WRITE_EVENT = "/jax/compilation_cache/cache_misses"
#: Once per process, at the first compile: the cache is used / is disabled.
PCACHE_USED_EVENT = "/jax/compilation_cache/tasks_using_cache"
PCACHE_DISABLED_EVENT = "/jax/compilation_cache/task_disabled_cache"
PCACHE_EVENTS = (
    PCACHE_REQUEST_EVENT,
    PCACHE_HIT_EVENT,
    PCACHE_WRITE_EVENT,
    PCACHE_USED_EVENT,
    PCACHE_DISABLED_EVENT,
)

#: The persistent cache's own settings (``jax.config`` names).
CACHE_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_enable_compilation_cache",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
    "jax_compilation_cache_max_size",
    "jax_raise_persistent_cache_errors",
)

#: JAX config options that change the persistent-cache key: read into the
#: compile options (``compiler.get_compile_options``) or into the key itself
#: (``cache_key.get``), or that change the lowered computation.
KEY_CONFIG = (
    "jax_enable_x64",
    "jax_default_matmul_precision",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_use_shardy_partitioner",
    "jax_exec_time_optimization_effort",
    "jax_memory_fitting_effort",
    "jax_optimization_level",
    "jax_memory_fitting_level",
    "jax_enable_remat_opt_pass",
    "jax_xla_profile_version",
    "jax_persistent_cache_enable_xla_caches",
    "jax_compilation_cache_include_metadata_in_key",
    "jax_remove_custom_partitioning_ptr_from_cache_key",
    "jax_enable_pgle",
    "jax_pgle_profiling_runs",
    "jax_compilation_cache_expect_pgle",
)

#: Environment variables whose flags JAX hashes into the key.
FLAG_VARIABLES = ("XLA_FLAGS", "LIBTPU_INIT_ARGS")


def config_value(name: str) -> Any:
    """A ``jax.config`` value as plain JSON data (``repr`` for anything else), or None."""
    try:
        value = getattr(jax.config, name)
    except Exception:
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def key_config() -> dict[str, Any]:
    """The values of :data:`KEY_CONFIG` that this JAX has."""
    out = {}
    for name in KEY_CONFIG:
        if hasattr(jax.config, name):
            out[name] = config_value(name)
    return out


def cache_settings() -> dict[str, Any]:
    return {name: config_value(name) for name in CACHE_SETTINGS if hasattr(jax.config, name)}


def excluded_flags() -> frozenset[str]:
    """XLA flags JAX leaves out of the key (dump options, device count), without dashes."""
    try:
        from jax._src import cache_key

        return frozenset(f.strip("-") for f in cache_key.xla_flags_to_exclude_from_cache_key)
    except Exception:
        return frozenset()


def argv_xla_flags() -> tuple[str, ...]:
    """``--xla*`` words of ``sys.argv``: JAX hashes those into the key too."""
    return tuple(a for a in sys.argv if a.startswith("--xla"))


def flag_variables() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in FLAG_VARIABLES}


def key_flags() -> tuple[str, ...]:
    """The XLA flags JAX hashes into the key, sorted as ``cache_key._hash_xla_flags`` does."""
    words = [*(os.environ.get("XLA_FLAGS") or "").split()]
    words += (os.environ.get("LIBTPU_INIT_ARGS") or "").split()
    words += argv_xla_flags()
    excluded = excluded_flags()
    return tuple(sorted(w for w in words if w.split("=")[0].strip("-") not in excluded))


def jaxlib_version() -> str | None:
    try:
        from jax._src.lib import version_str

        return str(version_str)
    except Exception:
        return None


def cache_state() -> dict[str, bool] | None:
    """JAX's own record of the cache in this process: ``checked`` (the first compile
    decided whether to use it, once per process), ``used``, ``initialized``; or None."""
    try:
        from jax._src import compilation_cache as cc

        return {
            "checked": bool(cc._cache_checked),
            "used": bool(cc._cache_used),
            "initialized": bool(cc._cache_initialized),
        }
    except Exception:
        return None


def devices_info() -> dict[str, Any] | None:
    """Platform, its version, device kind and counts, once JAX created its backends."""
    try:
        from jax._src import xla_bridge

        if not xla_bridge.backends_are_initialized():
            return None
        devices = jax.devices()
        first = devices[0]
        return {
            "platform": first.platform,
            "platform_version": str(getattr(first.client, "platform_version", "?")),
            "device_kind": str(first.device_kind),
            "device_count": len(devices),
            "local_device_count": jax.local_device_count(),
            "supports_serialization": getattr(
                first.client, "supports_executable_serialization", None
            ),
        }
    except Exception:
        return None
