"""The ``graph_structure`` reason: an NNX graph changed (a node added or removed, its type, a Variable's value structure).

A structure change may be made by a library rather than the user's code: state an optax
optimizer builds (``optax_state``) or what a flax/equinox layer makes from its arguments
(``library_made``); ``_core/rank.py`` finds which, and these builders say it.
"""

from __future__ import annotations

from ..kinds import Fact, ReasonKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from ..words import Words
from .base import (
    Template,
    _reason,
    with_article,
    with_fix,
)
from .spec import KindSpec

GRAPH_ADDED_MSG = Template(
    M.GRAPH_ADDED,
    "{path} ({what}) was {verb} the model's graph since the last compile; the graph structure is part of the key.",
)


SOW_FIX = Template(
    K.SOW,
    "Pop intermediates before the jitted function returns: `nnx.pop({arg}, nnx.Intermediate)` (or use `nnx.capture`).",
)


#: A Variable of the program's own class (``class Loss(nnx.Variable)``) set in ``__call__``:
#: a loss or metric kept on the model, popped by one jitted function and left on it by
#: another (flax's NNX VAE example: ``train_step`` pops, ``forward`` does not). GRAPH_FIX's
#: "create it in `__init__`" then fails at the next call: the pop removed it.
OWN_VARIABLE_FIX = Template(
    K.OWN_VARIABLE,
    "Pop `{path}` before each jitted function that calls the model returns "
    "(`nnx.pop({arg}, {var})`, also where it is only read, as in an evaluation step): the model "
    "then leaves every call with one graph. (Creating it in `__init__` and only updating its "
    "value also works, if no code pops it.)",
)


# Said without knowing why the graph changed: a layer added late by mistake, or a model grown
# on purpose (progressive growing), which compiles once per new structure and should.
GRAPH_FIX = Template(
    K.GRAPH,
    "If the model is grown or pruned on purpose (in stages), this is expected: one compile per new "
    "structure. If not, create `{path}` in `__init__` as what it will hold later{swap} and only "
    "update its values.",
)
#: Left out when the fix would be too long.
GRAPH_FIX_SWAP = " (not None: nnx rejects that swap)"


def _graph_fix(path: str) -> Words:
    return Words(GRAPH_FIX, (("path", path), ("swap", GRAPH_FIX_SWAP)), optional="swap")


GRAPH_KIND_MSG = Template(
    M.GRAPH_KIND,
    "{path} changed from {before} to {after} in the model's graph; the graph structure is part of the key.",
)


GRAPH_KIND_FIX = Template(
    K.GRAPH_KIND,
    "Keep `{path}` the same kind of thing on every call (e.g. always an nnx.Variable, or always a static), assigned in `__init__`.",
)


VAR_REPLACED_MSG = Template(
    M.VAR_REPLACED,
    "{path} was a Variable ({var}) and is now a plain {after}: an assignment replaced the "
    "Variable by an array, which changes the model's graph (part of the key).",
)


VAR_REPLACED_FIX = Template(
    K.VAR_REPLACED,
    "Write into the Variable instead of replacing it: `{path}[...] = new_value` (the same "
    "shape and dtype): it stays a Variable, seen by `nnx.state(model, {var})` and an optimizer's "
    "`wrt`, and the compile is reused.",
)


def variable_replaced(arg: str, path: str, var: str, before: str, after: str) -> Reason:
    """An nnx Variable (``model.head.kernel``, a Param) assigned a plain array: the user's
    assignment replaced it (a layer never builds a bare array where its Variable was)."""
    return _reason(
        ReasonKind.GRAPH_STRUCTURE, arg, path, before, after,
        VAR_REPLACED_MSG.words(path=f"`{path}`", var=var, after=after),
        VAR_REPLACED_FIX.words(path=path, var=var), fix_kind=K.VAR_REPLACED,
        facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


def graph_attribute(
    arg: str, path: str, what: str, *, added: bool, var_type: str = "", own: bool = False
) -> Reason:
    """A node added to or removed from an NNX graph; ``own``: a Variable of the program's own
    class (not flax's), set when the model is called."""
    verb = "added to" if added else "removed from"
    if var_type == "Intermediate" or "Intermediate" in what:
        fk, fix = K.SOW, SOW_FIX.words(arg=arg)
    elif own:
        fk, fix = K.OWN_VARIABLE, OWN_VARIABLE_FIX.words(path=path, arg=arg, var=var_type)
    else:
        fk, fix = K.GRAPH, _graph_fix(path)
    return _reason(
        ReasonKind.GRAPH_STRUCTURE, arg, path, "absent" if added else what,
        what if added else "absent",
        GRAPH_ADDED_MSG.words(path=f"`{path}`", what=what, verb=verb), fix, fix_kind=fk,
        facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


OPTAX_STATE_FIX = Template(
    K.OPTAX_STATE,
    "Expected once per optimizer build: optax makes `{path}` ({made}), not "
    "your code, and another optimizer makes another structure. Reuse one optimizer (the same "
    "`tx`) to share one compile.",
)


LIBRARY_MADE_FIX = Template(
    K.LIBRARY_MADE,
    "Expected once per configuration: {cls} makes `{path}` from the arguments it is built "
    "with{args}, not your code; build every {cls} with the same arguments to share one compile.",
)


def library_made(r: Reason, cls: str, args: str) -> Reason:
    """``r`` (a structure change) inside a library layer: the layer's arguments make it."""
    fix = LIBRARY_MADE_FIX.words(cls=cls, path=r.path, args=args)
    return with_fix(r, K.LIBRARY_MADE, fix, expected=False).with_facts(Fact.LIBRARY_MADE)


def optax_state(r: Reason, cls: str) -> Reason:
    """``r`` (a structure change) said of state optax makes: whose code it is, what to reuse.

    ``cls``: the optax state class seen there, or "" for state an ``nnx.Optimizer`` holds."""
    made = f"`{cls}`, from `tx.init`" if cls else "from `tx.init`, kept by nnx.Optimizer"
    fix = OPTAX_STATE_FIX.words(path=r.path, made=made)
    return with_fix(r, K.OPTAX_STATE, fix, expected=False).with_facts(Fact.OPTAX_MADE)


NODE_TYPE_MSG = Template(
    M.NODE_TYPE,
    "{path} is now {after}, before {before}: a different class is a different graph (cache key).",
)


NODE_TYPE_FIX = Template(
    K.NODE_TYPE,
    "Expected once per class passed. If a factory builds the model, define each class once at "
    "module level, so the same class comes back.",
)


VAR_VALUE_MSG = Template(
    M.VAR_VALUE,
    "{path} ({var}) holds a value whose structure changed {before} -> {after} (e.g. Module.sow appending every call); its structure is part of the key.",
)


def variable_value_structure(arg: str, path: str, var: str, before: str, after: str) -> Reason:
    if var == "Intermediate":
        fk, fix = K.SOW, SOW_FIX.words(arg=arg)
    else:
        fk, fix = K.GRAPH, _graph_fix(path)
    return _reason(
        ReasonKind.GRAPH_STRUCTURE, arg, path, before, after,
        VAR_VALUE_MSG.words(path=f"`{path}`", var=var, before=before, after=after), fix,
        fix_kind=fk, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


def node_type_change(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        ReasonKind.GRAPH_STRUCTURE,
        arg,
        path,
        before,
        after,
        NODE_TYPE_MSG.words(
            path=f"`{path}`", before=with_article(before), after=with_article(after)
        ),
        NODE_TYPE_FIX,
        fix_kind=K.NODE_TYPE,
        facts=(Fact.IN_GRAPH,),
    )


def graph_kind_change(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        ReasonKind.GRAPH_STRUCTURE, arg, path, before, after,
        GRAPH_KIND_MSG.words(path=f"`{path}`", before=before, after=after),
        GRAPH_KIND_FIX.words(path=path), fix_kind=K.GRAPH_KIND, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.GRAPH_STRUCTURE,
    what="NNX graph: attribute, sub-module, Variable or Rngs stream added/removed, node type "
    "changed, a Variable's value structure (`sow`)",
    example="absent -> Intermediate",
    fixes={
        K.SOW: SOW_FIX,
        K.OWN_VARIABLE: OWN_VARIABLE_FIX,
        K.GRAPH: GRAPH_FIX,
        K.GRAPH_KIND: GRAPH_KIND_FIX,
        K.VAR_REPLACED: VAR_REPLACED_FIX,
        K.OPTAX_STATE: OPTAX_STATE_FIX,
        K.LIBRARY_MADE: LIBRARY_MADE_FIX,
        K.NODE_TYPE: NODE_TYPE_FIX,
    },
    messages=(GRAPH_ADDED_MSG, GRAPH_KIND_MSG, VAR_REPLACED_MSG, NODE_TYPE_MSG, VAR_VALUE_MSG),
    structure=True,
)
