"""The ``mutated_static`` reason: a static object changed in place after its compile.

Up to jax 0.10 JAX served the old code to calls passing it since (stale results,
``mutated_static``); from jax 0.11 the changed object compiles again (``mutated_static_miss``).
Which one holds on the installed version is ``jitlens._compat.cache_keys``.
"""

from __future__ import annotations

from ..kinds import ReasonKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _reason,
)
from .spec import KindSpec

MUTATED_MSG = Template(
    M.MUTATED,
    "static `{path}` was changed in place after its compile ({then} then, {now} now): JAX "
    "keys on that very object, so calls passing it since then ran the old code (stale "
    "results), and an equal new value misses.",
)


MUTATED_FIX = Template(
    K.MUTATED,
    "Treat statics as immutable: build a new object instead of changing this one (e.g. a "
    "frozen dataclass and `dataclasses.replace`), or pass what changes as a traced argument.",
)


def mutated_static(arg: str, path: str, then: str, now: str, after: str) -> Reason:
    """A static object mutated after its compile: stale hits before, a miss now."""
    msg = MUTATED_MSG.words(path=path, then=then, now=now, after=after)
    return _reason(
        ReasonKind.MUTATED_STATIC, arg, path, f"{then} (now {now})", after, msg, MUTATED_FIX,
        fix_kind=K.MUTATED,
    )  # fmt: skip


MUTATED_MISS_MSG = Template(
    M.MUTATED_MISS,
    "static `{path}` was changed in place after its compile ({then} then, {now} now): JAX's "
    "cache holds that very object, so the entry compiled for {then} matches nothing any more: "
    "each changed value compiles again, and an equal new value misses too.",
)


def mutated_static_miss(arg: str, path: str, then: str, now: str, after: str) -> Reason:
    """A static mutated after its compile, on a JAX whose cache then misses (jax >= 0.11)."""
    msg = MUTATED_MISS_MSG.words(path=path, then=then, now=now)
    return _reason(
        ReasonKind.MUTATED_STATIC, arg, path, f"{then} (now {now})", after, msg, MUTATED_FIX,
        fix_kind=K.MUTATED,
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.MUTATED_STATIC,
    what="a static changed in place after its compile (`cfg.k = 5` on a `static_argnums` "
    "object): up to jax 0.10 JAX served the old code to calls passing it since (stale "
    "results); from jax 0.11 the changed object compiles again; an equal new value misses "
    "on both",
    example="MutableCfg(k=1) (now MutableCfg(k=5)) -> MutableCfg(k=1)",
    fixes={K.MUTATED: MUTATED_FIX},
    messages=(MUTATED_MSG, MUTATED_MISS_MSG),
)
