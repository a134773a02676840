"""The ``weak_type`` reason: a Python scalar (weakly typed) against a typed array."""

from __future__ import annotations

from typing import Any

from ..kinds import ReasonKind, SubjectKind
from ..paths import library_node
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _jnp_dtype,
    _reason,
    _wider,
)
from .spec import KindSpec

WEAK_MSG = Template(
    M.WEAK,
    "{path} changed weak type {before} -> {after}: a Python scalar is weakly typed, a jax.Array "
    "(e.g. the jitted output fed back) is not, and the two are different keys.",
)


WEAK_FIX = Template(
    K.WEAK,
    "Give `{arg}` one type on every call: where the Python number is made (a loop carry's "
    "initial value, a hyper-parameter), type it: `{arg} = jnp.asarray({arg}, jnp.{dtype})`.",
)


#: ``WEAK_FIX`` where ``{arg} = ...`` cannot be written (an item of a tuple): the value, not
#: the assignment.
WEAK_VALUE_FIX = Template(
    K.WEAK_VALUE,
    "Give `{arg}` one type on every call: where the Python number is made (a loop carry's "
    "initial value, a hyper-parameter), type it: `jnp.asarray(value, jnp.{dtype})`.",
)


#: A weak leaf inside a state a library built (optax's linesearch state, optax#1171): the
#: Python number is made in the library's code, out of the user's reach; the user types the
#: whole tree once, where it is created (numpyro#959's fix of its own SVI state).
WEAK_LIBRARY_FIX = Template(
    K.WEAK_LIBRARY,
    "{library} made it from a Python number (in a `{cls}`): type `{arg}` once after creating "
    "it: `{arg} = jax.tree.map(lambda x: jnp.asarray(x, x.dtype) if getattr(x, 'weak_type', "
    "False) else x, {arg})`.",
)


VAR_WEAK_FIX = Template(
    K.VAR_WEAK,
    "Create `{attr}` typed where `__init__` makes it, `self.{attr} = {var}(jnp.asarray(value, "
    "jnp.{dtype}))`, not from a Python number (weakly typed until its first update); it stays "
    "a Variable.",
)


VAR_ASSIGN_FIX = Template(
    K.VAR_ASSIGN,
    "Where a Python number is written into it after the compile, write a typed value: "
    "`{code}[...] = jnp.asarray(value, jnp.{dtype})`.",
)


def weak_type(
    arg: str,
    path: str,
    before: str,
    after: str,
    dtype: str,
    now_weak: bool,
    variable: str = "",
    code: str | None = None,
    new_dtype: str = "",
    nodes: tuple[Any, Any] | None = None,
) -> Reason:
    """``variable``: the Variable's class (``nnx.Variable``) when the value is one's: the fix
    keeps it a Variable instead of replacing it with an array. ``now_weak``: the direction;
    a typed Variable that became weak had a Python number assigned after its compile, and the
    fix goes to that assignment (``code``: the path as the user writes it, "" when it cannot
    be assigned, e.g. an item of a tuple), not to its creation. ``new_dtype``: the new
    call's dtype; ``nodes``: the value's path and the key's entries, which tell whether a
    library's class made the tree holding it (optax's state). When the dtype changed too (a carry started from the Python ``0`` and fed a
    float output back), the value is typed with the wider one, as the dtype reason's fix
    does: typed ``int32`` it would still miss the float output's key.
    """
    if new_dtype and new_dtype != dtype:
        dtype = _wider(dtype, new_dtype)
    library = library_node(*nodes) if nodes is not None and not variable else None
    if variable and now_weak:
        fk, fix = K.VAR_ASSIGN, VAR_ASSIGN_FIX.words(code=code or path, dtype=_jnp_dtype(dtype))
    elif variable and "." in path:
        fk, fix = (
            K.VAR_WEAK,
            VAR_WEAK_FIX.words(attr=path.rsplit(".", 1)[-1], var=variable, dtype=_jnp_dtype(dtype)),
        )
    elif library is not None and arg.isidentifier():
        fk, fix = (
            K.WEAK_LIBRARY,
            WEAK_LIBRARY_FIX.words(arg=arg, library=library[0], cls=library[1]),
        )
    elif code is None or code:
        fk, fix = K.WEAK, WEAK_FIX.words(arg=path, dtype=_jnp_dtype(dtype))
    else:  # ``path = ...`` cannot be written (inside a tuple): type the value where it is made
        fk, fix = K.WEAK_VALUE, WEAK_VALUE_FIX.words(arg=path, dtype=_jnp_dtype(dtype))
    return _reason(
        ReasonKind.WEAK_TYPE, arg, path, before, after,
        WEAK_MSG.words(path=f"`{path}`", before=before, after=after), fix, fix_kind=fk,
        subject=SubjectKind.ARRAY,
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.WEAK_TYPE,
    what="Python scalar vs typed array",
    example="f32[]{weak} -> f32[]",
    fixes={
        K.WEAK: WEAK_FIX,
        K.WEAK_VALUE: WEAK_VALUE_FIX,
        K.WEAK_LIBRARY: WEAK_LIBRARY_FIX,
        K.VAR_WEAK: VAR_WEAK_FIX,
        K.VAR_ASSIGN: VAR_ASSIGN_FIX,
    },
    messages=(WEAK_MSG,),
)
