"""One run of a tiny program with JAX's persistent compilation cache, driven by test_diff.py.

Run under ``jitlens run``. Settings come from the environment: ``PCACHE_DIR``
(the cache folder), ``PCACHE_ROWS`` (the input's length, default 4),
``PCACHE_MIN_ENTRY`` (``jax_persistent_cache_min_entry_size_bytes``, unset by
default) and ``PCACHE_LATE=1`` (compile once with the cache disabled, then enable it).

What JAX itself did is the ground truth the tests compare jitlens with: a
counter inside the jitted body (traces), and JAX's own monitoring events per
compiled module (backend compiles, persistent-cache hits and writes),
printed as one JSON line ``GROUND {...}``.
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
from jax import monitoring

GROUND: dict[str, dict[str, int]] = {}
PENDING: list[str] = []
TRACES = [0]


def _event(name: str, **kw: object) -> None:
    if name.startswith("/jax/compilation_cache/"):
        PENDING.append(name.rsplit("/", 1)[-1])


def _duration(name: str, secs: float, **kw: object) -> None:
    if name != "/jax/core/compile/backend_compile_duration":
        return
    module = str(kw.get("fun_name", "?"))
    counts = GROUND.setdefault(module, {"compiles": 0, "pcache_hits": 0, "pcache_writes": 0})
    if "cache_hits" in PENDING:
        counts["pcache_hits"] += 1
    else:
        counts["compiles"] += 1
    counts["pcache_writes"] += PENDING.count("cache_misses")  # JAX's name for a write
    PENDING.clear()


monitoring.register_event_listener(_event)
monitoring.register_event_duration_secs_listener(_duration)


@jax.jit
def step(x: jax.Array, scale: float) -> jax.Array:
    TRACES[0] += 1
    return jnp.sin(x) * scale


rows = int(os.environ.get("PCACHE_ROWS", "4"))
if os.environ.get("PCACHE_LATE") == "1":  # JAX decides at the first compile, once
    jax.config.update("jax_enable_compilation_cache", False)
    jax.jit(jnp.cos)(jnp.ones(2)).block_until_ready()
    jax.config.update("jax_enable_compilation_cache", True)
jax.config.update("jax_compilation_cache_dir", os.environ["PCACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
if os.environ.get("PCACHE_MIN_ENTRY"):
    jax.config.update(
        "jax_persistent_cache_min_entry_size_bytes", int(os.environ["PCACHE_MIN_ENTRY"])
    )
step(jnp.ones(rows), 2.0).block_until_ready()
step(jnp.ones(rows), 2.0).block_until_ready()
print("GROUND " + json.dumps({"traces": TRACES[0], "modules": GROUND}), flush=True)
