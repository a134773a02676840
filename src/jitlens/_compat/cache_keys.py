"""How the installed JAX and Python compare cache keys, and the evidence of a cleared cache.

The explainer (``jitlens._core.explain``) names a cause only with evidence.
Some of that evidence is a fact about the installed versions rather than
about the two keys, and it changed between releases:

* jax.jit wraps each top-level static in ``_HashableWithStrictTypeEquality``
  (``jax/_src/api_util.py``): the key includes the static's *type*, so ``1``,
  ``True`` and ``1.0`` (equal, same hash) are three entries (jax-ml/jax#9273).
* A static changed in place after its compile: up to jax 0.10 the call
  passing it hit the old entry (a stale result); from jax 0.11 it misses
  (verified: jax 0.10.2 hits under Python 3.11 and 3.13, jax 0.11.2 and
  0.12.0.1 miss under Python 3.13; 0.11.0 and 0.11.1 were not tried).
* Python 3.13's dataclass ``__eq__`` compares fields one by one, without the
  identity shortcut of a tuple comparison, so a NaN inside a dataclass
  (flax keeps nnx attributes in dataclass records) never equals itself, even
  the very same ``math.nan`` object.

A clear of JAX's caches is seen without patching ``jax.clear_caches``: a
witness registered with JAX's own cache registry (``jax._src.util
.register_cache``) is cleared with every other cache, and counts it. Each
piece degrades to ``None`` (unknown) when the private name is gone.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from typing import Any

from . import probe

#: jax releases from which a static changed in place misses instead of serving stale code.
MUTATION_MISSES_FROM = (0, 11)


def mutated_static_hits() -> bool:
    """Does a call passing a static changed in place since its compile hit the old entry?"""
    v = probe._version_tuple(_jax_version())
    return v is None or v < MUTATION_MISSES_FROM


def _jax_version() -> str:
    from . import jax_api

    return jax_api.jax_version()


@functools.cache
def dataclass_fields_skip_identity() -> bool:
    """Does a dataclass ``==`` compare fields without ``is`` first (Python 3.13), so that a
    NaN field never equals itself? Asked of ``dataclasses`` itself (not a record's ``==``), at
    the first NaN to explain: the class is not built at a tracked program's start."""

    @dataclasses.dataclass(frozen=True)
    class Field:
        value: Any

    nan = math.nan
    return Field(nan) != Field(nan)


class _ClearWitness:
    """Registered with JAX's caches: ``jax.clear_caches()`` clears it too, and it counts."""

    def __init__(self) -> None:
        self.clears = 0

    def cache_clear(self) -> None:
        self.clears += 1

    def cache_info(self) -> Any:
        return functools._CacheInfo(0, 0, 0, 0)

    def cache_keys(self) -> list[Any]:
        return []


_WITNESS: list[_ClearWitness | None] = []
_LOCK = threading.Lock()


def watch_clears() -> None:
    """Start counting ``jax.clear_caches()`` calls (idempotent; unknown if it cannot)."""
    if _WITNESS:
        return
    with _LOCK:
        if _WITNESS:
            return
        witness: _ClearWitness | None = _ClearWitness()
        try:
            from jax._src import util

            util.register_cache(witness, "jitlens: counts jax.clear_caches()")
        except Exception:
            witness = None
        _WITNESS.append(witness)


def clear_count() -> int | None:
    """How many times ``jax.clear_caches()`` ran since :func:`watch_clears`; None if unknown."""
    w = _WITNESS[0] if _WITNESS else None
    return w.clears if w is not None else None


def trace_cache_fill() -> tuple[int, int] | None:
    """``(entries, capacity)`` of JAX's trace cache (``pjit._infer_params_cached``), or None."""
    try:
        from jax._src import pjit

        info = pjit._infer_params_cached.cache_info()
        size, cap = int(info.currsize), int(info.maxsize)
    except Exception:
        return None
    return size, cap
