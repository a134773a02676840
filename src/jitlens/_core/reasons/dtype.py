"""The ``dtype`` reason: an array's dtype changed (also a typed PRNG key against a legacy one)."""

from __future__ import annotations

from ..kinds import ReasonKind, SubjectKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _reason,
    _wider,
)
from .spec import KindSpec

DTYPE_MSG = Template(
    M.DTYPE, "{path} changed dtype {before} -> {after}; each dtype is a separate compilation."
)


DTYPE_FIX = Template(
    K.DTYPE,
    "Make `{arg}` one dtype where it is created: `jnp.asarray(..., jnp.{dtype})` (the wider of "
    "the two, so no value is rounded){literal}.",
)


#: ``DTYPE_FIX``'s second way, said only when both sides are alike weak or not: a loop carry
#: started from the Python ``0`` and fed the jitted output back (``i32[]{weak} -> f32[]``) is
#: still a new key when started from ``0.0`` (``f32[]{weak}``), not from ``jnp.float32``.
DTYPE_LITERAL = Template(M.DTYPE_LITERAL, ", or write the literal in that type (`1.0`, not `1`)")


KEY_FIX = Template(
    K.KEY,
    "Use one kind of PRNG key everywhere: typed keys (`jax.random.key(0)`) or legacy uint32 ones "
    "(`jax.random.PRNGKey(0)`); convert with `jax.random.key_data` / `jax.random.wrap_key_data`.",
)


def dtype(arg: str, path: str, before: str, after: str, new_dtype: str, old_dtype: str) -> Reason:
    if "key<" in old_dtype + new_dtype:
        fk, fix = K.KEY, KEY_FIX
    else:
        weak = ("{weak}" in before) != ("{weak}" in after)  # a Python number on one side only
        literal = "" if weak else DTYPE_LITERAL
        wider = _wider(old_dtype, new_dtype)
        fk, fix = K.DTYPE, DTYPE_FIX.words(arg=path, dtype=wider, literal=literal)
    return _reason(
        ReasonKind.DTYPE, arg, path, before, after,
        DTYPE_MSG.words(path=f"`{path}`", before=before, after=after), fix,
        fix_kind=fk, subject=SubjectKind.ARRAY,
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.DTYPE,
    what="array dtype",
    example="f32[3] -> i32[3]",
    fixes={K.DTYPE: DTYPE_FIX, K.KEY: KEY_FIX},
    messages=(DTYPE_MSG, DTYPE_LITERAL),
)
