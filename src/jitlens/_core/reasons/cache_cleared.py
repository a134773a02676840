"""The ``cache_cleared`` reason: an equal key was compiled before, and jitlens saw why.

``clear_cache()`` / ``jax.clear_caches()`` seen (never guessed), or JAX's trace cache full (an
eviction).
"""

from __future__ import annotations

from ..kinds import Fact, ReasonKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _reason,
)
from .spec import KindSpec

CLEARED_MSG = Template(
    M.CLEARED,
    "The function's compilation cache was cleared (clear_cache() / jax.clear_caches()) since the last compile.",
)


CLEARED_FIX = Template(
    K.CLEARED, "Don't clear JAX caches between calls of a function you keep using."
)


def cache_cleared() -> Reason:
    return _reason(
        ReasonKind.CACHE_CLEARED, "", "", "compiled", "cleared", CLEARED_MSG, CLEARED_FIX,
        fix_kind=K.CLEARED,
    )  # fmt: skip


EVICTED_MSG = Template(
    M.EVICTED,
    "An equal key was compiled before, and JAX's trace cache is full ({size} of {capacity} "
    "entries): the least recently used entries are evicted, this one among them.",
)


EVICTED_FIX = Template(
    K.EVICTED,
    "If the evictions repeat, compile fewer distinct keys (fixed shapes, fewer static values, "
    "jitted functions created once) so that the ones in use stay cached.",
)


def cache_evicted(size: int, capacity: int) -> Reason:
    """An equal key retraced while JAX's trace cache is full: evidence of an eviction."""
    msg = EVICTED_MSG.words(size=size, capacity=capacity)
    return _reason(
        ReasonKind.CACHE_CLEARED, "", "", "compiled", "evicted", msg, EVICTED_FIX,
        fix_kind=K.EVICTED, facts=(Fact.EQUAL_KEY,),
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.CACHE_CLEARED,
    what="an equal key was compiled before, and jitlens saw why: `clear_cache()` / "
    "`jax.clear_caches()` (seen, not guessed), or JAX's trace cache is full (an eviction)",
    example="compiled -> cleared",
    fixes={K.CLEARED: CLEARED_FIX, K.EVICTED: EVICTED_FIX},
    messages=(CLEARED_MSG, EVICTED_MSG),
)
