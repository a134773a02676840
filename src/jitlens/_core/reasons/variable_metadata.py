"""The ``variable_metadata`` reason: an NNX Variable's metadata changed (part of the graph)."""

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

VAR_META_MSG = Template(
    M.VAR_META,
    "{path} ({var}) changed metadata `{key}`: {before} -> {after}; Variable metadata is part of the graph (the key).",
)


VAR_META_FIX = Template(
    K.VAR_META,
    "Don't write changing values into Variable metadata (`{key}`); keep them in an nnx.Variable of their own, e.g. `self.{key} = nnx.Variable(jnp.array(...))`.",
)


def variable_metadata(arg: str, path: str, key: str, before: str, after: str, var: str) -> Reason:
    return _reason(
        ReasonKind.VARIABLE_METADATA, arg, f"{path}.{key}" if key else path, before, after,
        VAR_META_MSG.words(path=f"`{path}`", var=var, key=key, before=before, after=after),
        VAR_META_FIX.words(key=key), fix_kind=K.VAR_META, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.VARIABLE_METADATA,
    what="Variable metadata changed (`path` ends with the key)",
    example="-1 -> 0",
    fixes={K.VAR_META: VAR_META_FIX},
    messages=(VAR_META_MSG,),
)
