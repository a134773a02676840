"""The parts of a pytree node a key names: its static fields, its aux data's fields, its keys.

Helpers of ``signature`` (which describes a call's arguments): what a node's own flattening
says of it, read without running the program's code (a dataclass's fields from its class, a
field's value as stored: ``_peek``).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import jax

from .. import _compat
from .._peek import dataclass_fields, static_attr
from .key import PathPart, short_repr


def state_leaves(st: Any) -> list[Any]:
    """The leaves of one of a NodeStates' states: a flat list, or a nested ``nnx.State``.

    ``nnx.pmap`` / ``nnx.vmap`` split into nested States (keys sorted, as the
    graph's attributes are), the default ``nnx.jit`` mode into flat lists.
    """
    if isinstance(st, (list, tuple)):
        return list(st)
    if isinstance(st, Mapping):
        return jax.tree_util.tree_leaves(st, is_leaf=_compat.is_graph_node)
    return [st]


def is_graphdef(x: Any) -> bool:
    t = type(x)
    return (
        t.__name__ == "GraphDef"
        and (t.__module__ or "").startswith("flax.")
        and hasattr(x, "nodes")
        and hasattr(x, "attributes")
    )


def declared_static_fields(x: Any) -> tuple[str, ...]:
    """Names of a dataclass pytree's static (aux-data) fields, if it declares them."""
    return tuple(
        f.name
        for f in dataclass_fields(x) or ()
        if f.metadata.get("pytree_node", True) is False or f.metadata.get("static") is True
    )


def meta_fields(x: Any, aux: Any) -> tuple[str, ...]:
    """A ``jax.tree_util.register_dataclass`` pytree's meta fields, in their aux-data order: the
    registry keeps their names in C++, so each aux value is matched to the one field holding
    that very object (no match, or two fields holding it: unnamed, the aux tuple is shown)."""
    fields = dataclass_fields(x)
    if type(aux) is not tuple or not aux or fields is None:
        return ()
    names = [f.name for f in fields]
    found: list[str] = []
    for value in aux:
        holders = [n for n in names if n not in found and static_attr(x, n) is value]
        if len(holders) != 1:
            return ()
        found.append(holders[0])
    return tuple(found)


def weak_ref(t: Any) -> Any:
    try:
        return weakref.ref(t)
    except TypeError:
        return None


def node_data(treedef: Any) -> tuple[Any, Any]:
    try:
        nd = treedef.node_data()
        if nd is None:
            return type(None), None
        return nd
    except Exception:
        return object, None


def key_part(k: Any) -> PathPart:
    if hasattr(k, "key"):
        return ("item", k.key)
    if hasattr(k, "idx"):
        return ("item", k.idx)
    if hasattr(k, "name"):
        return ("attr", k.name)
    return ("item", short_repr(k, 60))
