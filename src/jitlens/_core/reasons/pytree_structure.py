"""The ``pytree_structure`` reason: an argument's pytree changed (keys, lengths, node type, ``None`` vs array)."""

from __future__ import annotations

from ..key import Path, render_path
from ..kinds import ReasonKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
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


#: A list or tuple whose length changed: items added at its end (a history, a list of past
#: states) or dropped, each length a new key; "always provide `h[2]`" does not say that.
LENGTH_MSG = Template(
    M.LENGTH,
    "{path} (a {kind}) has {after} item(s), before {before}; a {kind}'s length is part of the "
    "key, so each new length compiles again.",
)


LENGTH_FIX = Template(
    K.LENGTH,
    "Pass one array of a fixed length instead: preallocate `buf = jnp.zeros((max_len, ...))` "
    "once, write item `i` with `buf = buf.at[i].set(item)` and pass `i` as an array; or pad "
    "the stacked items to a few lengths.",
)


def sequence_length(arg: str, where: Path, kind: str, old: dict, new: dict) -> Reason:
    """The list or tuple at ``where`` holds another number of items in ``new`` than in ``old``
    (two keys' entries)."""
    path, before, after = render_path(where), _items(old, where), _items(new, where)
    return _reason(
        ReasonKind.PYTREE_STRUCTURE, arg, path, f"{kind} of {before}", f"{kind} of {after}",
        LENGTH_MSG.words(path=f"`{path}`", kind=kind, before=before, after=after),
        LENGTH_FIX.words(), fix_kind=K.LENGTH,
    )  # fmt: skip


#: The containers whose items are numbered: a change of their length is one reason.
SEQUENCES = ("list", "tuple")


def _items(entries: dict, parent: Path) -> int:
    """How many items the sequence at ``parent`` holds in a key's ``entries``."""
    n = len(parent)
    return sum(1 for q in entries if len(q) == n + 1 and q[:n] == parent and q[n][0] == "item")


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
        K.LENGTH: LENGTH_FIX,
        K.DIFF_STRUCTURE: DIFF_STRUCTURE_FIX,
    },
    messages=(PYTREE_KEY_MSG, PYTREE_KIND_MSG, LENGTH_MSG, DIFF_STRUCTURE_MSG),
    structure=True,
)
