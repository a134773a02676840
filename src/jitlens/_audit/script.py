"""A script's definitions without its main part, and the context its factory is called in.

``jitlens audit train.py:create_model`` needs the factory, not the training. A script with
``if __name__ == "__main__":`` is imported as it is (the guard keeps its main part). One
without (an example written top to bottom: build, train, plot) would train first: of such a
file only its imports, definitions and assignments run, each statement as written; loops,
``with`` blocks, bare calls and ``if`` blocks do not (nor an assignment that needs what they
made), and the audit says which lines it left out and how to guard them.

The script itself says how it calls the factory: ``with jax.set_mesh(mesh): model, optimizer =
create_model()``. Built outside that block, a factory whose layers shard their parameters fails
("an auto mesh context ... is required"); the audit builds it inside the same ``with``, and says
so.
"""

from __future__ import annotations

import ast
import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Any

from .. import _pyast as pyast
from .._record import record

#: Top-level statements run from a script without a main guard: what defines, not what does.
DEFINING = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Try,
)
#: A bare call that sets the program up rather than runs it (``jax.config.update(...)``).
SETUP_CALLS = frozenset({"update", "filterwarnings", "simplefilter", "setdefault", "register"})
#: How a left-out statement is named in the audit's note.
WHAT = {
    ast.For: "a for loop",
    ast.AsyncFor: "a for loop",
    ast.While: "a while loop",
    ast.With: "a with block",
    ast.AsyncWith: "a with block",
    ast.If: "an if block",
    ast.Expr: "a call",
}
SKIPPED = (
    "ran {file}'s imports, definitions and assignments, not its other top-level statements "
    '(lines {lines}: {what}): the file has no `if __name__ == "__main__":`; put its main '
    "part under one to run it as before and audit it as it is"
)
#: Lines named in ``SKIPPED``; the rest are counted.
MAX_LINES = 6
IN_CONTEXT = "built inside `with {items}:`, as {file}:{line} calls {name}()"


@record
class Script:
    """What running a script's definitions found: the statements left out, and the ``with``
    blocks the script calls each of its functions in."""

    #: (line, what) of every top-level statement not run.
    skipped: tuple[tuple[int, str], ...]
    #: A function's name -> the context expressions of the ``with`` that calls it, and its line.
    contexts: dict[str, tuple[tuple[ast.expr, ...], int]]

    def note(self, file: str) -> str | None:
        """What the audit left out, in words (None: nothing)."""
        if not self.skipped:
            return None
        lines = [str(n) for n, _ in self.skipped[:MAX_LINES]]
        more = len(self.skipped) - MAX_LINES
        shown = ", ".join(lines) + (f" and {more} more" if more > 0 else "")
        what = ", ".join(dict.fromkeys(w for _, w in self.skipped))
        return SKIPPED.format(file=file, lines=shown, what=what)


def guarded(tree: ast.Module) -> bool:
    """Does the module put its main part under ``if __name__ == "__main__":``?"""
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            return True
    return False


def run_definitions(module: types.ModuleType, source: str, path: str) -> Script:
    """Run ``source``'s defining top-level statements in ``module``, each as written (its
    line numbers kept); an assignment that needs what a left-out statement made is left out
    too. Other exceptions are the file's own, raised as they come."""
    tree = pyast.parse(source, path)
    skipped: list[tuple[int, str]] = []
    for node in tree.body:
        if not _defining(node):
            skipped.append((node.lineno, WHAT.get(type(node), "a statement")))
            continue
        code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
        try:
            exec(code, module.__dict__)
        except NameError:
            if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                raise
            skipped.append((node.lineno, "an assignment that needs what those made"))
    return Script(tuple(skipped), contexts(tree))


def _defining(node: ast.stmt) -> bool:
    if isinstance(node, DEFINING):
        return True
    if isinstance(node, ast.Expr):  # a docstring, or a setup call (`jax.config.update(...)`)
        value = node.value
        if isinstance(value, ast.Constant):
            return True
        func = value.func if isinstance(value, ast.Call) else None
        return isinstance(func, ast.Attribute) and func.attr in SETUP_CALLS
    return False


def contexts(tree: ast.Module) -> dict[str, tuple[tuple[ast.expr, ...], int]]:
    """For each function a ``with`` block of the file calls, that block's context expressions
    (the first such block)."""
    found: dict[str, tuple[tuple[ast.expr, ...], int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.With):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                f = inner.func
                name = (
                    f.id
                    if isinstance(f, ast.Name)
                    else f.attr
                    if isinstance(f, ast.Attribute)
                    else ""
                )
                if name:
                    found.setdefault(
                        name, (tuple(i.context_expr for i in node.items), inner.lineno)
                    )
    return found


def in_context(
    factory: Callable[[], Any], module: types.ModuleType, script: Script, name: str, file: str
) -> tuple[Callable[[], Any], str | None]:
    """``factory`` built inside the ``with`` its script calls it in, and the note saying so;
    as it is (and None) when the script calls it in none."""
    found = script.contexts.get(name)
    if found is None:
        return factory, None
    exprs, line = found
    codes = [compile(ast.Expression(e), file, "eval") for e in exprs]
    try:  # names the module does not hold (a `with` inside the script's own main()): none
        _names_held(exprs, module)
    except NameError:
        return factory, None

    @contextlib.contextmanager
    def entered() -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for code in codes:
                stack.enter_context(eval(code, module.__dict__))
            yield

    def build() -> Any:
        with entered():
            return factory()

    build.__name__ = getattr(factory, "__name__", name)
    build.__qualname__ = getattr(factory, "__qualname__", name)
    items = ", ".join(ast.unparse(e) for e in exprs)
    return build, IN_CONTEXT.format(items=items, file=file, line=line, name=name)


def _names_held(exprs: tuple[ast.expr, ...], module: types.ModuleType) -> None:
    """Raise NameError unless every name the expressions read is the module's (or a builtin)."""
    import builtins

    for e in exprs:
        for node in ast.walk(e):
            if isinstance(node, ast.Name) and node.id not in module.__dict__:
                if not hasattr(builtins, node.id):
                    raise NameError(node.id)
