"""Where the user's code assigned a name: the line that built an object a library owns.

A fix edits only code in the user's files. When the object that changed is a library's (a
``diffrax.Event``, the ``apply`` of a ``hk.transform``), the fix goes to the user's line
that builds it: ``event = diffrax.Event(cond_fn)`` at ``solve.py:6``. This module finds that
line in source text (pure: the caller reads the file), as the statement the user wrote.

Example:
    >>> src = "def solve(y0):\\n    event = Event(cond_fn)\\n    return run(y0, event)\\n"
    >>> found = assignment(src, "<src>", 1, "event", 3)
    >>> found.line, found.statement, found.value
    (2, 'event = Event(cond_fn)', 'Event(cond_fn)')
"""

from __future__ import annotations

import ast
import dataclasses

from .._pyast import parse


@dataclasses.dataclass(frozen=True)
class Assignment:
    """One assignment of a name, as written."""

    #: Its line in the file.
    line: int
    #: The whole statement (``f = hk.transform(forward)``), on one line.
    statement: str
    #: The value assigned (``hk.transform(forward)``).
    value: str
    #: Is it inside a loop of its function (``for``/``while``)?
    in_loop: bool


#: Statements longer than this are not quoted (the fix names the line instead).
LONGEST = 120


def assignment(source: str, filename: str, first_line: int, name: str, before: int) -> Assignment | None:
    """The last assignment ``name = ...`` in the function defined at ``first_line`` of
    ``source`` (the module itself when ``first_line`` is 0 or 1 and no function starts there)
    at or before line ``before``; None when there is none (a parameter, a global set
    elsewhere) or the source does not parse."""
    try:
        tree = parse(source, filename)
    except (SyntaxError, ValueError):
        return None
    scope: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = [d.lineno for d in node.decorator_list] + [node.lineno]
            if first_line in lines:
                scope = node
                break
    found: Assignment | None = None
    for node, in_loop in _statements(scope, False):
        if node.lineno > before:
            continue
        value = _assigned(node, name)
        if value is None:
            continue
        text = ast.get_source_segment(source, node) or ""
        text = " ".join(text.split())
        value_text = " ".join((ast.get_source_segment(source, value) or "").split())
        if found is None or node.lineno >= found.line:
            found = Assignment(node.lineno, text if len(text) <= LONGEST else "", value_text, in_loop)
    return found


def _statements(scope: ast.AST, in_loop: bool):  # type: ignore[no-untyped-def]
    """Every statement of ``scope``, nested blocks followed (not nested functions or classes)."""
    for node in ast.iter_child_nodes(scope):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.stmt):
            yield node, in_loop
        loop = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        yield from _statements(node, loop)


def _assigned(node: ast.AST, name: str) -> ast.expr | None:
    """The value ``node`` assigns to ``name`` (``name = v``, ``name: T = v``), or None."""
    if isinstance(node, ast.Assign):
        if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        if isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None
