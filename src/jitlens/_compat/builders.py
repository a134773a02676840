"""Who built an object, read from the user's frames and source: the line a fix moves.

A fix edits only code in the user's files (``_track/owned``). Where the object that changed is
a library's (a ``diffrax.Event``, the ``apply`` of a ``hk.transform``), the fix goes to the
user's line that builds it: found here, on the stack (the user's frame that holds the object,
then its caller's when it came in as a parameter) and in that frame's source (the assignment
that made it, or the call written in the line that passed it).

Example:
    >>> src = "def solve(y0):\n    event = Event(cond_fn)\n    return run(y0, event)\n"
    >>> found = assignment(src, "<src>", 1, "event", 3)
    >>> found.line, found.statement, found.value
    (2, 'event = Event(cond_fn)', 'Event(cond_fn)')
"""

from __future__ import annotations

import ast
import linecache
import types
from collections.abc import Iterator
from types import FrameType
from typing import Any

from .._pyast import parse
from .._record import record
from .frames import is_user_file, short_path

#: User frames searched, from the call up, for the one that builds the object.
FRAMES_UP = 8


@record
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


def assignment(
    source: str, filename: str, first_line: int, name: str, before: int
) -> Assignment | None:
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
            found = Assignment(
                node.lineno, text if len(text) <= LONGEST else "", value_text, in_loop
            )
    return found


def _statements(scope: ast.AST, in_loop: bool) -> Iterator[tuple[ast.stmt, bool]]:
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


def built_at(frame: FrameType | None, match: Any, hint: str) -> tuple[str, str, str] | None:
    """``(file:line, " of `func`", statement)``: the user's assignment that built the object
    ``match`` recognises, found from ``frame`` up (a parameter sends the search to the caller)."""
    f, seen = frame, 0
    while f is not None and seen < FRAMES_UP:
        if not is_user_file(f.f_code.co_filename):
            f = f.f_back
            continue
        seen += 1
        scope = f.f_locals if f.f_code.co_name != "<module>" else f.f_globals
        names = [k for k, v in list(scope.items()) if isinstance(k, str) and _safe(match, v)]
        names.sort(key=lambda k: k != hint)
        code = f.f_code
        params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        for name in names:
            source = "".join(linecache.getlines(code.co_filename))
            first = 0 if code.co_name == "<module>" else code.co_firstlineno
            found = (
                assignment(source, code.co_filename, first, name, f.f_lineno) if source else None
            )
            if found is not None and found.statement:
                site = f"{short_path(code.co_filename)}:{found.line}"
                if code.co_name == "<module>" and not found.in_loop:
                    return None  # built once already: not the cause
                return site, _of(code), found.statement
        if not any(n in params for n in names):
            return None
        f = f.f_back
    return None


def inline_call(frame: FrameType | None, cls: type) -> tuple[str, str, str] | None:
    """``(file:line, " of `func`", call)``: a call building ``cls`` written in the user's line
    at ``frame`` (``NUTS(model)`` passed straight to the jitted function)."""
    import builtins

    if frame is None:
        return None
    code = frame.f_code
    source = "".join(linecache.getlines(code.co_filename))
    try:
        tree = parse(source, code.co_filename)
    except (SyntaxError, ValueError):
        return None
    scopes = (frame.f_locals, frame.f_globals, vars(builtins))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.lineno != frame.f_lineno:
            continue
        value: Any = None
        parts = ast.unparse(node.func).split(".")
        if not all(p.isidentifier() for p in parts):
            continue
        value = next((s[parts[0]] for s in scopes if parts[0] in s), None)
        for p in parts[1:]:
            value = getattr(value, p, None)
        if value is cls:
            text = " ".join((ast.get_source_segment(source, node) or "").split())
            if text and len(text) <= 80:
                return f"{short_path(code.co_filename)}:{node.lineno}", _of(code), text
    return None


def _of(code: Any) -> str:
    """`` of `solve` ``: the function whose every call runs the line ("" for a module's code
    or a comprehension's)."""
    return "" if code.co_name.startswith("<") else f" of `{code.co_name}`"


def _safe(match: Any, value: Any) -> bool:
    try:
        return bool(match(value))
    except Exception:
        return False


def spelled_class(cls: type, frame: FrameType | None) -> str:
    """``cls`` as the user's file reaches it: ``diffrax.Event`` through the module they
    imported, the bare name they imported, else its qualified name."""
    scope = frame.f_globals if frame is not None else {}
    modules = [(k, v) for k, v in list(scope.items()) if isinstance(v, types.ModuleType)]
    for name, v in list(scope.items()):
        if v is cls:
            return name
    for name, module in modules:
        if getattr(module, cls.__name__, None) is cls:
            return f"{name}.{cls.__name__}"
    for name, module in modules:  # one level down: `keras.losses.MeanSquaredError`
        for sub, inner in list(vars(module).items())[:512]:
            if isinstance(inner, types.ModuleType) and getattr(inner, cls.__name__, None) is cls:
                return f"{name}.{sub}.{cls.__name__}"
    return cls.__qualname__


def names_up(frame: FrameType | None) -> dict[str, Any]:
    """The variables of the user's frames from ``frame`` up, the innermost first, then their
    modules' globals: what names the values a library's closure holds."""
    out: dict[str, Any] = {}
    f, seen, scopes = frame, 0, []
    while f is not None and seen < FRAMES_UP:
        if is_user_file(f.f_code.co_filename):
            seen += 1
            scopes.append(f.f_globals)
            for k, v in list(f.f_locals.items()):
                out.setdefault(k, v)
        f = f.f_back
    for scope in scopes:
        for k, v in list(scope.items()):
            out.setdefault(k, v)
    return {k: v for k, v in out.items() if isinstance(k, str) and not k.startswith("_")}


def int_params(frame: FrameType) -> tuple[str, ...]:
    """The parameters of the function at ``frame`` holding a Python int now: static under a
    jit of it (they set lengths)."""
    code = frame.f_code
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    local = frame.f_locals
    return tuple(
        p for p in params if isinstance(local.get(p), int) and not isinstance(local.get(p), bool)
    )
