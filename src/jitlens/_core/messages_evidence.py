"""The words of causes that rest on evidence beyond "this value changed".

Two keys can look equal and still be two cache entries. jitlens names a
cause for that only when it has the evidence: statics equal in value but of
different types (JAX's key includes a static argument's type), a static
changed in place since its compile, a NaN compared as a dataclass field, a
clear jitlens saw, a full JAX cache. Without any of these the reason is
``unknown``, listing what was compared; it never guesses a clear. Which of
these facts hold on the installed versions is ``jitlens._compat.cache_keys``.
"""

from __future__ import annotations

import numbers

from .key import StaticVal, short_repr
from .kinds import Fact, ReasonKind, SubjectKind
from .kinds import FixKind as K
from .messages import _reason
from .messages_static import MUTATED_FIX
from .report import Reason

STATIC_TYPE_MSG = (
    "`{path}`: equal values of different types: {before} -> {after}; JAX's cache key includes "
    "the type of a static argument, so each type compiles again."
)
STATIC_TYPE_FIX = (
    "Pass `{arg}` as one type on every call: convert it at the call site, e.g. `{conv}({arg})`."
)

MUTATED_MISS_MSG = (
    "static `{path}` was changed in place after its compile ({then} then, {now} now): JAX's "
    "cache holds that very object, so the entry compiled for {then} matches nothing any more: "
    "each changed value compiles again, and an equal new value misses too."
)

NAN_FIELD_MSG = (
    "`{path}` is NaN on both calls, and NaN never equals itself (`nan != nan`). It is compared "
    "as a dataclass field (flax keeps nnx attributes in dataclass records), and Python 3.13's "
    "dataclasses compare fields with `==` alone: even one shared NaN object misses every call."
)
NAN_FIELD_FIX = (
    "Keep NaN out of statics: store None in `{attr}` and use `jnp.nan` where it is read "
    "(`jnp.nan if self.{attr} is None else self.{attr}`), or store a flag."
)

EVICTED_MSG = (
    "An equal key was compiled before, and JAX's trace cache is full ({size} of {capacity} "
    "entries): the least recently used entries are evicted, this one among them."
)
EVICTED_FIX = (
    "If the evictions repeat, compile fewer distinct keys (fixed shapes, fewer static values, "
    "jitted functions created once) so that the ones in use stay cached."
)

NO_DIFFERENCE_MSG = (
    "An equal key was compiled before: jitlens compared {compared} and found no difference, saw "
    "no clear_cache() / jax.clear_caches(), and JAX's trace cache is not full; the cause is unknown."
)
NO_DIFFERENCE_FIX = (
    "If it repeats, run once with `jax.config.update('jax_explain_cache_misses', True)` (JAX "
    "prints its own key diff) and report both outputs to jitlens."
)

_NUMPY_PREFIX = {"numpy.": "np.", "jax.numpy.": "jnp."}


def static_type(arg: str, path: str, old: StaticVal, new: StaticVal) -> Reason:
    """``1`` then ``True`` (or ``np.int64(3)`` then ``3``): equal, hashed alike, typed apart."""
    before, after = _typed(old), _typed(new)
    msg = STATIC_TYPE_MSG.format(path=path, before=before, after=after)
    fix = STATIC_TYPE_FIX.format(arg=arg, conv=_conversion(old, new))
    return _reason(
        ReasonKind.STATIC_TYPE, arg, path, before, after, msg, fix, fix_kind=K.STATIC_TYPE
    )


def _typed(v: StaticVal) -> str:
    value = v.value()
    module = type(value).__module__
    if module == "builtins" and isinstance(value, (bool, int, float, complex, str)):
        shown = short_repr(value, 40)
    elif module == "numpy" and value is not None:
        shown = str(value)[:40]  # np.int64(3) as 3: the type is named before it
    else:
        shown = v.text
    return f"{_type_text(v.type_name)} {shown}"


def _type_text(type_name: str) -> str:
    for prefix, alias in _NUMPY_PREFIX.items():
        if type_name.startswith(prefix):
            return alias + type_name[len(prefix) :]
    return type_name


def _conversion(old: StaticVal, new: StaticVal) -> str:
    """The type to convert to: bool if either is one (a flag), else the builtin number type of
    the compiled value (``int`` for ``np.int64``), else the compiled value's type."""
    kinds = [_builtin(v.value()) for v in (old, new)]
    if "bool" in kinds:
        return "bool"
    return kinds[0] or _type_text(old.type_name)


def _builtin(value: object) -> str | None:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "bool"
    for name, abc in (
        ("int", numbers.Integral),
        ("float", numbers.Real),
        ("complex", numbers.Complex),
    ):
        if isinstance(value, abc):
            return name
    return type(value).__name__ if type(value).__module__ == "builtins" else None


def mutated_static_miss(arg: str, path: str, then: str, now: str, after: str) -> Reason:
    """A static mutated after its compile, on a JAX whose cache then misses (jax >= 0.11)."""
    msg = MUTATED_MISS_MSG.format(path=path, then=then, now=now)
    return _reason(
        ReasonKind.MUTATED_STATIC, arg, path, f"{then} (now {now})", after, msg, MUTATED_FIX,
        fix_kind=K.MUTATED,
    )  # fmt: skip


def nan_field(arg: str, path: str, attr: str, old: StaticVal, new: StaticVal) -> Reason:
    """A NaN compared as a dataclass field on Python >= 3.13: no object of it ever hits."""
    msg = NAN_FIELD_MSG.format(path=path)
    fix = NAN_FIELD_FIX.format(attr=attr)
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, old.display(), new.display(), msg, fix,
        fix_kind=K.NAN_FIELD, subject=SubjectKind.NAN, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


def cache_evicted(size: int, capacity: int) -> Reason:
    """An equal key retraced while JAX's trace cache is full: evidence of an eviction."""
    msg = EVICTED_MSG.format(size=size, capacity=capacity)
    return _reason(
        ReasonKind.CACHE_CLEARED, "", "", "compiled", "evicted", msg, EVICTED_FIX,
        fix_kind=K.EVICTED, facts=(Fact.EQUAL_KEY,),
    )  # fmt: skip


def no_difference(compared: str) -> Reason:
    """An equal key retraced with no evidence of a cause: say what was compared, guess nothing."""
    msg = NO_DIFFERENCE_MSG.format(compared=compared)
    return _reason(
        ReasonKind.UNKNOWN, "", "", "equal key", "retraced", msg, NO_DIFFERENCE_FIX,
        fix_kind=K.NO_DIFFERENCE, facts=(Fact.EQUAL_KEY,),
    )  # fmt: skip
