"""The ``signature`` reason: an argument passed by keyword instead of position, or added / left out."""

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

ARG_MSG = Template(
    M.ARG, "argument `{arg}` was {verb} this call; the set of arguments is part of the key."
)


ARG_FIX = Template(
    K.ARG,
    "Pass the same arguments on every call (give `{arg}` a default value that you always pass).",
)


SIGNATURE_MSG = Template(
    M.SIGNATURE,
    "argument `{arg}` was passed {after}, before {before}; JAX keys positional and keyword arguments differently.",
)


SIGNATURE_FIX = Template(
    K.SIGNATURE,
    "Pass `{arg}` the same way on every call (always by keyword, or always by position).",
)


def argument_added_removed(arg: str, added: bool) -> Reason:
    return _reason(
        ReasonKind.SIGNATURE, arg, arg, "absent" if added else "passed",
        "passed" if added else "absent",
        ARG_MSG.words(arg=arg, verb="added in" if added else "left out of"),
        ARG_FIX.words(arg=arg), fix_kind=K.ARG,
    )  # fmt: skip


#: How an argument was passed, in the message's words ("was passed by keyword, before by
#: position"; it read "was passed keyword, before positional": jax-ml/jax#523's program).
_PASSED = {"positional": "by position", "keyword": "by keyword"}


def signature(arg: str, before: str, after: str) -> Reason:
    how = {k: _PASSED.get(v, v) for k, v in (("before", before), ("after", after))}
    return _reason(
        ReasonKind.SIGNATURE, arg, arg, before, after,
        SIGNATURE_MSG.words(arg=arg, **how),
        SIGNATURE_FIX.words(arg=arg), fix_kind=K.SIGNATURE,
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.SIGNATURE,
    what="an argument passed by keyword instead of position, or added/left out",
    example="positional -> keyword",
    fixes={K.ARG: ARG_FIX, K.SIGNATURE: SIGNATURE_FIX},
    messages=(ARG_MSG, SIGNATURE_MSG),
)
