"""The ``static_type`` reason: equal static values of different types (``1``, ``True``, ``1.0``).

``jax.jit``'s key includes a static argument's type (jax-ml/jax#9273); the fix converts at the
call site to the compiled value's type.
"""

from __future__ import annotations

import numbers

from ..key import StaticVal, short_repr
from ..kinds import ReasonKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _reason,
)
from .spec import KindSpec

STATIC_TYPE_MSG = Template(
    M.STATIC_TYPE,
    "`{path}`: equal values of different types: {before} -> {after}; JAX's cache key includes "
    "the type of a static argument, so each type compiles again.",
)


STATIC_TYPE_FIX = Template(
    K.STATIC_TYPE,
    "Pass `{arg}` as one type on every call: convert it at the call site, e.g. `{conv}({arg})`.",
)


_NUMPY_PREFIX = {"numpy.": "np.", "jax.numpy.": "jnp."}


def static_type(arg: str, path: str, old: StaticVal, new: StaticVal) -> Reason:
    """``1`` then ``True`` (or ``np.int64(3)`` then ``3``): equal, hashed alike, typed apart."""
    before, after = _typed(old), _typed(new)
    msg = STATIC_TYPE_MSG.words(path=path, before=before, after=after)
    fix = STATIC_TYPE_FIX.words(arg=arg, conv=_conversion(old, new))
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


SPEC = KindSpec(
    ReasonKind.STATIC_TYPE,
    what="equal values of different types (`1`, `True`, `1.0`; `np.int64(3)` and `3`): "
    "`jax.jit`'s key includes a static argument's type (jax-ml/jax#9273); nnx attributes "
    "and `eqx.filter_jit` statics compare by `==` and don't retrace",
    example="int 1 -> bool True",
    fixes={K.STATIC_TYPE: STATIC_TYPE_FIX},
    messages=(STATIC_TYPE_MSG,),
)
