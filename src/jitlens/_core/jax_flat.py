"""The arguments of a trace as JAX flattened them: read, never flattened again.

``_trace_for_jit`` holds the call's arguments flattened (a treedef and its leaves) and its
debug info holds each leaf's path as JAX wrote it. A node whose flatten is the user's own
code (``register_pytree_node``) is described from these, so that jitlens runs the user's
flatten no more often than JAX does (``signature.describe_value``'s ``shape``).
"""

from __future__ import annotations

from typing import Any

from .key import PathPart, _render_parts

#: ``(treedef, leaves, names)``: a value as JAX flattened it for the trace, with each leaf's
#: path as JAX's debug info wrote it (``b.inner.w``; None when unknown).
Shape = tuple[Any, tuple[Any, ...], tuple[str, ...] | None]


def children(shape: Shape) -> list[Shape]:
    tree, leaves, names = shape
    out, i = [], 0
    for child in tree.children():
        j = i + child.num_leaves
        out.append((child, leaves[i:j], names[i:j] if names is not None else None))
        i = j
    return out


def is_leaf(shape: Shape) -> bool:
    return shape[0].num_nodes == 1 and shape[0].num_leaves == 1


def split_flat(
    flat: Shape | None, nargs: int, kwargs: dict[str, Any]
) -> tuple[list[Shape | None], dict[str, Shape]]:
    """Each argument's shape from JAX's ``((args, kwargs), {})`` flattening; none if it
    does not match the call described."""
    try:
        if flat is None:
            raise ValueError
        (args_shape, kwargs_shape) = children(flat)
        per_arg = children(args_shape)
        _type, names = kwargs_shape[0].node_data() or (dict, ())
        per_kw = children(kwargs_shape)
        names = list(names or ())
        if len(per_arg) != nargs or sorted(kwargs) != names or len(per_kw) != len(names):
            raise ValueError
        return list(per_arg), dict(zip(names, per_kw, strict=True))
    except Exception:
        return [None] * nargs, {}


def head_text(path: Any) -> str:
    """``path`` as JAX's debug info writes a leaf's path (``b.inner``)."""
    return _render_parts(path)


def named_key(head: str, names: tuple[str, ...] | None) -> PathPart | None:
    """A child's key as JAX's debug info named its first leaf (``b.inner`` + ``.w``: the name
    the user's ``flatten_with_keys`` gave, read without calling it), or None."""
    if not names or not names[0].startswith(head):
        return None
    rest = names[0][len(head) :]
    if rest.startswith("."):
        import re

        name = re.match(r"\.([A-Za-z_][A-Za-z_0-9]*)", rest)
        return ("attr", name.group(1)) if name else None
    if rest.startswith("["):
        import ast

        end = rest.find("]")
        while end != -1:
            try:
                return ("item", ast.literal_eval(rest[1:end]))
            except (ValueError, SyntaxError):
                end = rest.find("]", end + 1)
    return None


def tree_keys(node_type: Any, aux: Any, n: int) -> list[PathPart]:
    """The keys of a node's children read from its treedef alone (no user code runs)."""
    if node_type is dict and isinstance(aux, (list, tuple)) and len(aux) == n:
        return [("item", k) for k in aux]
    fields = getattr(node_type, "_fields", None)
    if isinstance(fields, tuple) and len(fields) == n:  # a namedtuple
        return [("attr", f) for f in fields]
    return [("item", i) for i in range(n)]
