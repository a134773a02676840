"""Which expressions are Python numbers, and which of them change on every iteration.

JL102 needs this: ``eqx.filter_jit`` keeps a Python ``int``/``float`` static, so
a learning rate swept in a loop compiles once per value. The swept value is
rarely the loop variable itself: ``lr = 0.1 * (1 - i / NUM_STEPS)``,
``lr_at(i)``, ``0.5 * (1 + math.cos(math.pi * i / total))``. From the source
alone (nothing is imported) an expression is known to be a Python number when
it is built of number literals, names bound only to such expressions,
``len``/``float``/``int``/``round``/``abs``/``min``/``max``, ``math`` functions,
and calls of the file's own functions whose every ``return`` is such an
expression. Anything else (an attribute, an array, a library's schedule) is
not known to be a Python number, and the rule stays silent.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from .index import FileIndex
from .nodes import FunctionNode, Loop, Scope

#: ``math`` functions that return an ``int``; every other one returns a ``float``.
INT_MATH = frozenset({"floor", "ceil", "trunc", "isqrt", "factorial", "gcd", "lcm", "comb", "perm"})
#: How deep calls of the file's own functions are followed.
MAX_DEPTH = 3

#: (``int`` or ``float``, whether it changes on every iteration)
Kind = tuple[str, bool]


def literal_kind(node: ast.AST) -> str | None:
    """``float``/``int`` when ``node`` is a number literal (or a sequence of them)."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return type(node.value).__name__
    if isinstance(node, ast.Tuple | ast.List) and node.elts:
        kinds = {literal_kind(e) for e in node.elts}
        if None not in kinds:
            return "float" if "float" in kinds else "int"
    return None


def _join(kinds: list[Kind], op: ast.AST | None = None) -> Kind:
    kind = "float" if isinstance(op, ast.Div) or any(k == "float" for k, _ in kinds) else "int"
    return kind, any(changes for _, changes in kinds)


class Numbers:
    """Python-number expressions of one scope, given the names that change per iteration."""

    def __init__(
        self,
        index: FileIndex,
        scope: Scope,
        changing: dict[str, str],
        loops: Sequence[Loop] = (),
        depth: int = 0,
    ) -> None:
        self.index = index
        self.scope = scope
        self.changing = changing
        self.loops = loops  # innermost first: a name bound in the loop is that binding
        self.depth = depth
        self._resolving: set[str] = set()

    def changing_kind(self, node: ast.AST) -> str | None:
        """``int``/``float`` when ``node`` is a Python number that changes per iteration."""
        found = self.kind(node)
        return found[0] if found is not None and found[1] else None

    def kind(self, node: ast.AST) -> Kind | None:
        """``(kind, changes)`` when ``node`` is known to be a Python number, else None."""
        if isinstance(node, ast.Constant):
            value = node.value
            return (type(value).__name__, False) if type(value) in (int, float) else None
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            return self.kind(node.operand)
        if isinstance(node, ast.BinOp):
            sides = [self.kind(node.left), self.kind(node.right)]
            return None if None in sides else _join(sides, node.op)  # type: ignore[arg-type]
        if isinstance(node, ast.Call) and not node.keywords:
            return self._call(node)
        return None

    def _reads_changing(self, node: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Name) and (n.id in self.changing or self._changes(n.id))
            for n in ast.walk(node)
        )

    def _changes(self, name: str) -> bool:
        found = self._name(name)
        return found is not None and found[1]

    def _name(self, name: str) -> Kind | None:
        if name in self.changing:
            return self.changing[name], True
        if name in self._resolving:
            return None  # `lr = lr * 0.9`: not known from the source alone
        bound = self._bindings(name)
        if not bound:
            return None
        self._resolving.add(name)
        try:
            kinds = [self.kind(value) for value in bound]
        finally:
            self._resolving.discard(name)
        return None if None in kinds else _join(kinds)  # type: ignore[arg-type]

    def _bindings(self, name: str) -> list[ast.AST]:
        for loop in self.loops:
            inside = self.index.bindings(name, self.scope, within=loop)
            if inside:
                return inside
        return self.index.bindings(name, self.scope) or self.index.bindings(name, self.index.tree)

    def _call(self, node: ast.Call) -> Kind | None:
        args, func = node.args, node.func
        qualname = self.index.qualname(func) or ""
        name = func.id if isinstance(func, ast.Name) else None
        if qualname.startswith("math.") and args:
            kind = "int" if qualname.removeprefix("math.") in INT_MATH else "float"
            return kind, any(self._reads_changing(a) for a in args)
        if name in ("float", "int", "len") and len(args) == 1 and name not in self.index.functions:
            return "float" if name == "float" else "int", self._reads_changing(args[0])
        if name == "round" and args:
            return "int" if len(args) == 1 else "float", self._reads_changing(args[0])
        if name in ("abs", "min", "max") and args:
            kinds = [self.kind(a) for a in args]
            return None if None in kinds else _join(kinds)  # type: ignore[arg-type]
        if name is not None:
            return self._own_function(name, args)
        return None

    def _own_function(self, name: str, args: list[ast.expr]) -> Kind | None:
        """A call of the file's own function whose every ``return`` is a Python number."""
        fns = [f for f in self.index.functions.get(name, ()) if not self.index.is_method(f)]
        if len(fns) != 1 or self.depth >= MAX_DEPTH or fns[0].decorator_list:
            return None
        fn: FunctionNode = fns[0]
        params = [a.arg for a in fn.args.args]
        if fn.args.vararg or fn.args.kwarg or len(args) > len(params):
            return None
        passed = [self.kind(a) for a in args]
        if None in passed:
            return None
        returns = [n.value for n in _own_returns(fn)]
        if not returns or None in returns:
            return None
        inner = Numbers(
            self.index,
            fn,
            {p: k for p, (k, _) in zip(params, passed, strict=False)},  # type: ignore[misc]
            depth=self.depth + 1,
        )
        kinds = [inner.kind(r) for r in returns]  # type: ignore[arg-type]
        if None in kinds:
            return None
        kind, _ = _join(kinds)  # type: ignore[arg-type]
        return kind, any(changes for _, changes in passed)  # type: ignore[misc]


def _own_returns(fn: FunctionNode) -> list[ast.Return]:
    """The ``return`` statements of ``fn`` itself, not of functions nested in it."""
    found: list[ast.Return] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, FunctionNode | ast.Lambda | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))
    return found
