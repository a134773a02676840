"""Lint rules about Equinox: filter_jit of a new function (JL101), Python numbers (JL102), fields (JL103).

``eqx.filter_jit`` differs from ``jax.jit`` in the ways these rules catch:
it keys its cache on the function object (a lambda, closure or partial built
per call compiles again), it keeps every non-array argument static (a Python
float swept in a loop compiles once per value), and an ``eqx.Module``'s
non-array fields are static and compared by identity (a lambda built in
``__init__`` makes every instance a new key). Equinox's own spelling is
resolved through the file's imports; nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .index import PARTIALS, FileIndex, Vocabulary
from .nodes import (
    FunctionNode,
    Hit,
    Loop,
    assignments,
    callee,
    loop_text,
    self_attribute,
    self_name,
    short,
)
from .numbers import Numbers, literal_kind
from .rule import Rule
from .rules_jit import repeated_use

FILTER_JIT = "equinox.filter_jit"
EQX_MODULE = "equinox.Module"

JL101_MESSAGE = (
    "`{call}` runs {where} and wraps {target}, a new function object each time; "
    "eqx.filter_jit keys its compiled cache on the function, so every run traces and "
    "compiles again"
)
JL101_FIX = (
    "define the function once at module level and decorate it once with `@{wrapper}`, "
    "outside {place}; pass changing values as arguments (arrays) instead of closing over them"
)
JL102_MESSAGE = (
    "`{fn}` is an eqx.filter_jit function and this call passes `{value}`, a Python {kind} "
    "that changes on every iteration of {loop}; filter_jit keeps non-array arguments static "
    "(unlike jax.jit), so each new value traces and compiles again"
)
JL102_FIX = (
    "pass it as an array so it is traced: `{jnp}.asarray({value})` (one compile for every value)"
)
JL103_MESSAGE = (
    "`{cls}.{attr}` is assigned {what} in `{method}`; eqx.filter_jit keeps non-array Module "
    "fields static, compared by identity, so every new `{cls}` is a new cache key and "
    "filter_jit calls with it trace and compile again"
)
JL103_FIX_FUNCTION = (
    "define the function once at module level (`def {attr}(...)`) and store that one object: "
    "`self.{attr} = {attr}`"
)
JL103_FIX_PARTIAL = (
    "build the partial once at module level and store that one object, or keep its arguments "
    "as fields and call `{func}` in `__call__`"
)

# -- JL101 ---------------------------------------------------------------------------------------


def _is_filter_jit(index: FileIndex, node: ast.AST) -> bool:
    return index.qualname(callee(node)) == FILTER_JIT  # type: ignore[arg-type]


def check_filter_jit_in_loop(index: FileIndex) -> Iterator[Hit]:
    """JL101: ``eqx.filter_jit`` of a lambda, closure or partial, built again and again."""
    for node in index.nodes:
        if isinstance(node, ast.Call) and node.args and _is_filter_jit(index, node.func):
            site, wrapper, target = node, node.func, node.args[0]
            inside = "lambda ..." if isinstance(target, ast.Lambda) else short(target, 30)
            call = f"{short(wrapper)}({inside})"
        elif isinstance(node, FunctionNode):
            dec = next((d for d in node.decorator_list if _is_filter_jit(index, d)), None)
            if dec is None:
                continue
            site, wrapper, target = dec, callee(dec), node
            call = f"@{short(dec)} def {node.name}"
        else:
            continue
        repeated = repeated_use(index, site, node, target)
        if repeated is None:
            continue
        where, place, fresh = repeated
        if fresh is None:
            continue  # the same function object: equinox's cache hits
        message = JL101_MESSAGE.format(call=call, where=where, target=fresh)
        yield Hit("JL101", site, message, JL101_FIX.format(wrapper=short(wrapper), place=place))


# -- JL102 ---------------------------------------------------------------------------------------


def _filter_jit_names(index: FileIndex) -> dict[str, bool]:
    """Names that call a filter_jit function -> called as a method (``obj.step``)."""
    names: dict[str, bool] = {}
    for fns in index.functions.values():
        for fn in fns:
            if any(_is_filter_jit(index, d) for d in fn.decorator_list):
                names[fn.name] = index.is_method(fn)
    for node in index.nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if node.value.args and _is_filter_jit(index, node.value.func):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names[target.id] = False
    return names


def _iterated_numbers(index: FileIndex, loop: Loop, scope: ast.AST) -> dict[str, str]:
    """Loop variables that are Python numbers: ``range(...)``, literal number sequences."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return {}
    it, target = loop.iter, loop.target
    if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "enumerate" and it.args:
        if isinstance(target, ast.Tuple) and len(target.elts) == 2:
            out = _names_of(target.elts[0], "int")
            return out | _sequence_names(index, it.args[0], target.elts[1], scope)
        return {}
    if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "range":
        return _names_of(target, "int")
    return _sequence_names(index, it, target, scope)


def _sequence_names(
    index: FileIndex, it: ast.AST, target: ast.AST, scope: ast.AST
) -> dict[str, str]:
    if isinstance(it, ast.Name):
        bound = index.bindings(it.id, scope) or index.bindings(it.id, index.tree)  # type: ignore[arg-type]
        kinds = {literal_kind(b) for b in bound}
        kind = kinds.pop() if len(kinds) == 1 else None
    else:
        kind = literal_kind(it)
    return _names_of(target, kind) if kind else {}


def _names_of(target: ast.AST, kind: str) -> dict[str, str]:
    return {target.id: kind} if isinstance(target, ast.Name) else {}


def check_numbers_to_filter_jit(index: FileIndex) -> Iterator[Hit]:
    """JL102: a Python number that changes every iteration, passed to a filter_jit function."""
    jitted = _filter_jit_names(index)
    if not jitted:
        return
    jnp = index.spelling("jax.numpy", "jnp")
    for call in index.calls:
        func = call.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name not in jitted or (isinstance(func, ast.Attribute) and not jitted[name]):
            continue
        # sweeps count here: a swept Python float compiles once per value under filter_jit
        scope, loops = index._frame(call)
        if not loops:
            continue
        changing: dict[str, str] = {}
        for loop in loops:
            changing.update(_iterated_numbers(index, loop, scope))
        numbers = Numbers(index, scope, changing, loops)
        for value in [*call.args, *(kw.value for kw in call.keywords)]:
            kind = numbers.changing_kind(value)
            if kind is None:
                continue
            message = JL102_MESSAGE.format(
                fn=name, value=short(value, 40), kind=kind, loop=loop_text(loops[0])
            )
            yield Hit("JL102", value, message, JL102_FIX.format(jnp=jnp, value=short(value, 40)))


# -- JL103 ---------------------------------------------------------------------------------------


def _eqx_module_classes(index: FileIndex) -> list[ast.ClassDef]:
    return list(index.subclasses_of(lambda qualname: qualname == EQX_MODULE))


def _per_instance_callable(
    index: FileIndex, value: ast.AST, method: FunctionNode, attr: str
) -> tuple[str, str] | None:
    """``(what, fix)`` when ``value`` is a callable made anew by each run of ``method``."""
    if isinstance(value, ast.Lambda):
        return "a lambda", JL103_FIX_FUNCTION.format(attr=attr)
    if isinstance(value, FunctionNode):
        return f"the nested function `{value.name}`", JL103_FIX_FUNCTION.format(attr=attr)
    if isinstance(value, ast.Name):
        found = (
            _per_instance_callable(index, b, method, attr) for b in index.bindings(value.id, method)
        )
        return next((f for f in found if f), None)
    if isinstance(value, ast.Call) and value.args and index.qualname(value.func) in PARTIALS:
        what = f"a new `{short(value.func)}({short(value.args[0])}, ...)`"
        return what, JL103_FIX_PARTIAL.format(func=short(value.args[0]))
    return None


def check_module_callable_fields(index: FileIndex) -> Iterator[Hit]:
    """JL103: a lambda, nested function or partial stored in an ``eqx.Module`` field."""
    for cls in _eqx_module_classes(index):
        for method in index.methods(cls):
            for stmt, target, value in assignments(method):
                attr = self_attribute(target, self_name(method))
                found = attr and _per_instance_callable(index, value, method, attr)
                if found:
                    what, fix = found
                    message = JL103_MESSAGE.format(
                        cls=cls.name, attr=attr, what=what, method=method.name
                    )
                    yield Hit("JL103", stmt, message, fix)


#: Equinox (JL1xx): eqx.filter_jit keys functions, Python numbers and Module fields its own way.
RULES = (
    Rule(
        "JL101",
        "eqx.filter_jit of a lambda, closure or partial built per loop or call",
        check_filter_jit_in_loop,
    ),
    Rule(
        "JL102",
        "changing Python number passed to an eqx.filter_jit function in a loop",
        check_numbers_to_filter_jit,
    ),
    Rule(
        "JL103",
        "lambda, nested function or partial stored in an eqx.Module field",
        check_module_callable_fields,
    ),
)
#: Equinox's names: ``eqx``; ``@eqx.filter_jit`` traces the function and keeps every
#: argument that is no array static.
VOCABULARY = Vocabulary(
    aliases={"eqx": "equinox"},
    tracing=("equinox.",),
    static_argument_jits={FILTER_JIT: "eqx.filter_jit"},
)
