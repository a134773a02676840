"""The ``pytree_structure`` reason: an argument's pytree changed (keys, lengths, node type, ``None`` vs array)."""

from __future__ import annotations

from ..kinds import FixKind as K
from ..kinds import MessageKind as M
from ..kinds import ReasonKind
from ..reason import Reason
from .base import (
    Template,
    _reason,
)
from .spec import KindSpec

PYTREE_KEY_MSG = Template(
    M.PYTREE_KEY,
    "{path} ({what}) was {verb} the argument's pytree; its structure is part of the key.",
)


PYTREE_KEY_FIX = Template(
    K.PYTREE_KEY,
    "Pass the same structure on every call: always provide `{path}` (use a neutral value), or never.",
)


PYTREE_KIND_MSG = Template(
    M.PYTREE_KIND,
    "{path} changed from {before} to {after}; the pytree structure (None vs array, container type) is part of the key.",
)


NONE_FIX = Template(
    K.NONE,
    "Always pass an array for `{path}` (e.g. an all-ones mask or zeros) instead of None, so the structure never changes.",
)


PYTREE_KIND_FIX = Template(K.PYTREE_KIND, "Pass `{path}` as the same kind of value on every call.")


#: Two runs' keys compared (``jitlens diff``): an entry only one of them has.
DIFF_STRUCTURE_MSG = Template(
    M.DIFF_STRUCTURE,
    "`{path}` is {before} in BEFORE and {after} in AFTER: a new key structure.",
)


DIFF_STRUCTURE_FIX = Template(
    K.DIFF_STRUCTURE,
    "If the runs should share a compile, pass the same structure (keys, lengths, None vs "
    "array) as the baseline run.",
)


def diff_structure(arg: str, path: str, before: str, after: str) -> Reason:
    """An entry one of two runs' keys has and the other not (``absent``)."""
    return _reason(
        ReasonKind.PYTREE_STRUCTURE, arg, path, before, after,
        DIFF_STRUCTURE_MSG.words(path=path, before=before, after=after),
        DIFF_STRUCTURE_FIX.words(), fix_kind=K.DIFF_STRUCTURE,
    )  # fmt: skip


def pytree_key(arg: str, path: str, what: str, *, added: bool) -> Reason:
    verb = "added to" if added else "removed from"
    return _reason(
        ReasonKind.PYTREE_STRUCTURE, arg, path, "absent" if added else what,
        what if added else "absent",
        PYTREE_KEY_MSG.words(path=f"`{path}`", what=what, verb=verb),
        PYTREE_KEY_FIX.words(path=path), fix_kind=K.PYTREE_KEY,
    )  # fmt: skip


def pytree_kind_change(arg: str, path: str, before: str, after: str, *, none: bool) -> Reason:
    """``none``: one side is None (the fix: always pass an array)."""
    fk, fix = (K.NONE, NONE_FIX) if none else (K.PYTREE_KIND, PYTREE_KIND_FIX)
    return _reason(
        ReasonKind.PYTREE_STRUCTURE, arg, path, before, after,
        PYTREE_KIND_MSG.words(path=f"`{path}`", before=before, after=after),
        fix.words(path=path), fix_kind=fk,
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.PYTREE_STRUCTURE,
    what="container keys, lengths, node type, `None` vs array",
    example="f32[4] -> None",
    fixes={
        K.PYTREE_KEY: PYTREE_KEY_FIX,
        K.NONE: NONE_FIX,
        K.PYTREE_KIND: PYTREE_KIND_FIX,
        K.DIFF_STRUCTURE: DIFF_STRUCTURE_FIX,
    },
    messages=(PYTREE_KEY_MSG, PYTREE_KIND_MSG, DIFF_STRUCTURE_MSG),
    structure=True,
)
