"""Small helpers over ``ast`` nodes shared by the lint rules, and the record a rule returns."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
Comprehension = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
Loop = ast.For | ast.AsyncFor | ast.While | Comprehension

_STABLE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size"})


@dataclasses.dataclass(frozen=True)
class Hit:
    """One finding of a rule, before it has a path and a 1-based column."""

    code: str
    node: ast.AST
    message: str
    fix: str


def callee(node: ast.expr) -> ast.expr:
    """The function a decorator names: ``f`` for both ``@f`` and ``@f(...)``."""
    return node.func if isinstance(node, ast.Call) else node


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether ``inner`` lies within ``outer``'s source span."""
    start = (outer.lineno, outer.col_offset)
    end = (outer.end_lineno, outer.end_col_offset)
    return (
        start <= (inner.lineno, inner.col_offset)
        and (inner.end_lineno, inner.end_col_offset) <= end
    )


def literal(node: ast.AST) -> bool:
    """A constant, a name, or a tuple of them: one fixed value of a sweep."""
    if isinstance(node, ast.Tuple):
        return all(literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.operand, ast.Constant)
    return isinstance(node, ast.Constant | ast.Name | ast.Attribute)


def stored(target: ast.AST) -> set[str]:
    """Names an assignment target rebinds (``a, *b = ...``), not ``x`` of ``x.attr = ...``."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Starred):
        return stored(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return set().union(*(stored(e) for e in target.elts))
    return set()


def names_loaded(node: ast.AST) -> Iterator[ast.Name]:
    """Names read in ``node``, skipping ``x.shape``-like parts whose value rarely changes."""
    if isinstance(node, ast.Attribute) and node.attr in _STABLE_ATTRIBUTES:
        return
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("len", "type"):
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        yield node
    for child in ast.iter_child_nodes(node):
        yield from names_loaded(child)


def walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``scope``'s own code, not of the functions and classes nested in it."""
    for child in ast.iter_child_nodes(scope):
        yield child
        if not isinstance(child, FunctionNode | ast.Lambda | ast.ClassDef):
            yield from walk_scope(child)


def self_name(fn: FunctionNode) -> str | None:
    """The name of a method's first parameter (``self``), if it has one."""
    args = fn.args.posonlyargs + fn.args.args
    return args[0].arg if args else None


def self_attribute(target: ast.AST, name: str | None) -> str | None:
    """``attr`` when ``target`` is ``<name>.attr`` (``self.attr``)."""
    if isinstance(target, ast.Attribute) and getattr(target.value, "id", None) == name:
        return target.attr
    return None


def assignments(fn: FunctionNode) -> Iterator[tuple[ast.stmt, ast.expr, ast.expr]]:
    """``(statement, target, value)`` of every plain assignment in ``fn``'s own code."""
    for node in walk_scope(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield node, target, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield node, node.target, node.value


def short(node: ast.AST, limit: int = 60) -> str:
    """Source text of ``node`` for a message, cut to ``limit`` characters."""
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def loop_text(loop: Loop) -> str:
    """``the loop over `step` (line 30)``: how messages name a loop."""
    if isinstance(loop, ast.For | ast.AsyncFor):
        return f"the loop over `{short(loop.target, 40)}` (line {loop.lineno})"
    if isinstance(loop, ast.While):
        return f"the `while` loop at line {loop.lineno}"
    return f"the comprehension at line {loop.lineno}"
