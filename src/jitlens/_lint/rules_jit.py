"""Lint rules about jit wrappers: jit applied again and again (JL001), unstable statics (JL005)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator

from .index import PARTIALS, FileIndex
from .nodes import (
    FunctionNode,
    Hit,
    Loop,
    Scope,
    loop_text,
    names_loaded,
    self_attribute,
    self_name,
    short,
    walk_scope,
)
from .rule import Rule

JL001_NEW_FUNCTION = (
    "`{call}` runs {where} and wraps {target}, a new function object each time; jit caches "
    "compiled code per function object, so every run traces and compiles again"
)
JL001_NNX_REWRAP = (
    "`{call}` runs {where} and builds a new jitted callable each time; nnx.jit keeps its "
    "cache in that callable, so every run traces and compiles again"
)
JL001_FIX_NAME = (
    "wrap once, outside {place}: `{name}_jit = {wrapper}({name})` (or decorate `def {name}` "
    "with `@{wrapper}`), and call `{name}_jit(...)` there"
)
JL001_FIX_METHOD = (
    "create it once per object, in `__init__`: `self.{attr}_jit = {call}`, and call "
    "`self.{attr}_jit(...)` in {place}; it reads `self` as at its first call, so pass values "
    "that change as arguments"
)
JL001_FIX = (
    "define the function once at module level and apply `{wrapper}` to it once, outside "
    "{place}; pass changing values as arguments instead of closing over them"
)
JL005_PREFIX = (
    "`{param}` is a static argument of `{fn}` ({how} at line {line}) and this call passes `{value}`"
)
JL005_CHANGING = (
    JL005_PREFIX + ", which changes on every iteration of {detail}; static arguments are part "
    "of the cache key, so each new value traces and compiles again"
)
JL005_ARRAY = (
    JL005_PREFIX + ", an array; arrays are unhashable, so jit rejects them as static "
    "arguments (and a hashable wrapper would compile again for every new array)"
)
JL005_FRESH = (
    JL005_PREFIX + ", {detail} built at the call and compared by identity, so every call is "
    "a new cache key and traces and compiles again"
)
JL005_UNHASHABLE = (
    JL005_PREFIX + ", a {detail}; it is unhashable, so jit rejects it as a static argument"
)
JL005_FIX_TRACED = (
    "make `{param}` a traced argument: remove it from `{how}` (and pick branches with "
    "`jnp.where` / `jax.lax.cond` instead of Python `if`)"
)
#: ``JL005_FIX_TRACED`` for a plain dataclass, which JAX cannot trace until it is a pytree.
JL005_FIX_DATACLASS = (
    "make the changing field data and the rest static: "
    "`jax.tree_util.register_dataclass({cls}, data_fields={data}, meta_fields={meta})` after "
    "the class, then remove `{param}` from `{how}`"
)
#: ``JL005_FIX_TRACED`` for an instance of another class: JAX cannot trace it as it is.
JL005_FIX_FIELD = (
    "pass what changes ({fields}) as a traced argument of its own and keep `{param}` static "
    "with values that repeat; or register `{cls}` as a pytree whose changing fields are children"
)
JL005_FIX_FRESH = "create it once, outside the call, and pass that same object every time"
JL005_FIX_CLASS = (
    "create it once and reuse it, or give `{cls}` value-based `__eq__` and `__hash__` "
    "(e.g. `@dataclasses.dataclass(frozen=True)`)"
)
JL005_FIX_UNHASHABLE = "pass a tuple instead (hashable, compared by value)"
#: A dict passed as a tuple breaks the body's ``cfg["a"]``: its items go in, a dict comes out.
JL005_FIX_UNHASHABLE_DICT = (
    "pass its items as a tuple, `tuple(sorted({param}.items()))` (hashable, compared by value), "
    "and read them back with `{param} = dict({param})` first thing in `{fn}`"
)
#: A set's order is not its value: a frozenset compares as the set did.
JL005_FIX_UNHASHABLE_SET = "pass a frozenset instead (hashable, compared by value)"

#: Calls that keep a callable for later instead of using it now.
_STORING = frozenset({"append", "add", "extend", "insert", "setdefault", "update", "appendleft"})
_NUMPY_SCALARS = frozenset(
    f"numpy.{t}"
    for t in (
        "float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 "
        "bool_ complex64 complex128 dtype"
    ).split()
)

# -- JL001 ---------------------------------------------------------------------------------------


def repetition(
    index: FileIndex, scope: Scope, loops: list[Loop]
) -> tuple[str, str, ast.AST] | None:
    """Where code of ``scope`` runs again and again: ``(where, place, unit)``.

    ``unit`` is the code that runs again: the loop, or the repeated function.
    """
    if loops:
        where = f"on every iteration of the loop at line {loops[0].lineno}"
        return where, "the loop", loops[-1]
    if isinstance(scope, FunctionNode) and scope in index.repeated:
        where = f"on every call of `{scope.name}` ({index.repeated[scope]})"
        return where, f"`{scope.name}`", scope
    return None


def repeated_use(
    index: FileIndex, site: ast.AST, node: ast.AST, target: ast.AST
) -> tuple[str, str, str | None] | None:
    """A jit wrapper built at ``site`` (``node``, of ``target``) that its own loop or repeated
    function calls: ``(where, place, how target is a new function each time, or None)``."""
    scope, loops = index.frame(site)
    repeated = repetition(index, scope, loops)
    if repeated is None:
        return None
    where, place, unit = repeated
    if not _used(index, node, unit):
        return None
    return where, place, fresh_function(index, target, scope, unit)


def fresh_function(index: FileIndex, target: ast.AST, scope: Scope, unit: ast.AST) -> str | None:
    """How ``target`` is a new function object on every run of ``unit``, if it is."""
    if isinstance(target, ast.Lambda):
        return "a lambda"
    if isinstance(target, FunctionNode):
        return f"the function `{target.name}` defined there"
    if isinstance(target, ast.Call):
        qualname = index.qualname(target.func) or ""
        if qualname in PARTIALS or qualname.startswith(("jax.", "flax.")):
            return f"the result of `{short(target.func)}(...)`"
        return None
    if isinstance(target, ast.Name):
        for value in index.bindings(target.id, scope, unit):
            if fresh_function(index, value, scope, unit) is not None:
                return f"the local function `{target.id}`"
        return None
    if isinstance(target, ast.Attribute) and isinstance(scope, FunctionNode):
        cls = index.enclosing_class(scope)
        if cls and self_attribute(target, self_name(scope)):
            methods = {m.name for c in index.class_family(cls) for m in index.methods(c)}
            if target.attr in methods:
                return f"the bound method `{short(target)}`"
    return None


def _used(index: FileIndex, node: ast.AST, unit: ast.AST) -> bool:
    """Whether the jitted callable built at ``node`` is called by ``unit`` itself.

    A loop that builds one jitted function per item and stores it (in a
    dict, a list, an attribute) is a one-time setup, not a trap.
    """
    if isinstance(node, FunctionNode):
        return _name_used(node.name, unit)
    parent = index.parents.get(node)
    if isinstance(parent, ast.keyword):
        parent = index.parents.get(parent)
    if isinstance(parent, ast.Call):
        return parent.func is node or getattr(parent.func, "attr", None) not in _STORING
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
        return isinstance(target, ast.Name) and _name_used(target.id, unit)
    return False


def _name_used(name: str, unit: ast.AST) -> bool:
    for node in walk_scope(unit):
        if isinstance(node, ast.Call):
            if getattr(node.func, "id", None) == name:
                return True
            if getattr(node.func, "attr", None) not in _STORING:
                arguments = node.args + [kw.value for kw in node.keywords]
                if any(getattr(a, "id", None) == name for a in arguments):
                    return True
    return False


def _method_of_self(index: FileIndex, site: ast.AST, target: ast.AST) -> str | None:
    """``loss`` when ``target`` reads ``self.loss`` of the method that builds the jit."""
    node = index.parents.get(site)
    while node is not None and not isinstance(node, FunctionNode):
        node = index.parents.get(node)
    if node is None or not isinstance(index.parents.get(node), ast.ClassDef):
        return None
    me = self_name(node)
    found = [a for n in ast.walk(target) if (a := self_attribute(n, me)) is not None]
    return found[-1] if found else None


def check_jit_in_loop(index: FileIndex) -> Iterator[Hit]:
    """JL001: a jit wrapper built on every iteration or every call, then used."""
    for node in index.nodes:
        if isinstance(node, ast.Call) and node.args and index.jit_factory(node.func):
            site, wrapper, target = node, node.func, node.args[0]
            more = ", ..." if len(node.args) > 1 or node.keywords else ""
            inside = "lambda ..." if isinstance(target, ast.Lambda) else short(target, 30)
            call = f"{short(wrapper)}({inside}{more})"
        elif isinstance(node, FunctionNode) and (dec := index.jit_decorator(node)):
            site, wrapper, target = dec, dec, node
            call = f"@{short(dec)} def {node.name}"
        else:
            continue
        if index.inside_traced(site):
            continue  # runs only while JAX traces the function around it, not on every call
        repeated = repeated_use(index, site, node, target)
        if repeated is None:
            continue
        where, place, fresh = repeated
        if fresh:
            message = JL001_NEW_FUNCTION.format(call=call, where=where, target=fresh)
        elif index.jit_factory(wrapper) == "flax.nnx.jit":
            message = JL001_NNX_REWRAP.format(call=call, where=where)
        else:
            continue  # jax.jit(f) on the same function object hits jax's own cache
        attr = _method_of_self(index, site, target)
        if isinstance(target, ast.Name) and not fresh:
            fix = JL001_FIX_NAME.format(place=place, name=target.id, wrapper=short(wrapper))
        elif attr is not None and isinstance(site, ast.Call):  # no module-level `self.loss`
            fix = JL001_FIX_METHOD.format(attr=attr, call=short(site, 60), place=place)
        else:
            fix = JL001_FIX.format(place=place, wrapper=short(wrapper))
        yield Hit("JL001", site, message, fix)


# -- JL005 ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _StaticSpec:
    """A jitted function with static arguments, as its call sites name it."""

    name: str
    by_attribute: bool
    offset: int
    params: list[str]
    static: dict[str, str]  # parameter name, or "#<position>" -> the option that marked it
    line: int


def _static_options(keywords: list[ast.keyword], params: list[str]) -> dict[str, str]:
    static: dict[str, str] = {}
    for kw in keywords:
        values = kw.value.elts if isinstance(kw.value, ast.Tuple | ast.List) else [kw.value]
        constants = [v.value for v in values if isinstance(v, ast.Constant)]
        if kw.arg == "static_argnames":
            for name in (c for c in constants if isinstance(c, str)):
                static[name] = kw.arg
                if name in params:
                    static[f"#{params.index(name)}"] = kw.arg
        elif kw.arg == "static_argnums":
            for i in (c for c in constants if type(c) is int):
                i = i + len(params) if i < 0 and params else i
                static[f"#{i}"] = kw.arg
                if 0 <= i < len(params):
                    static[params[i]] = kw.arg
    return static


def _params(fn: FunctionNode | None) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args] if fn else []


def _static_specs(index: FileIndex) -> Iterator[_StaticSpec]:
    """Functions jitted with ``static_argnums`` / ``static_argnames``, by decorator or call."""
    for fn in (fn for fns in index.functions.values() for fn in fns):
        dec = index.jit_decorator(fn)
        if isinstance(dec, ast.Call):
            method = index.is_method(fn)
            if static := _static_options(dec.keywords, _params(fn)):
                yield _StaticSpec(fn.name, method, int(method), _params(fn), static, dec.lineno)
    for node in index.nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        call, target = node.value, node.targets[0]
        if not (isinstance(call, ast.Call) and call.args and index.jit_factory(call.func)):
            continue
        keywords = call.keywords + (call.func.keywords if isinstance(call.func, ast.Call) else [])
        wrapped = call.args[0]
        name = getattr(wrapped, "id", None) or getattr(wrapped, "attr", None)
        fn = next(iter(index.functions.get(name or "", ())), None)
        params = _params(fn)[int(isinstance(wrapped, ast.Attribute)) :]
        static = _static_options(keywords, params)
        if static and isinstance(target, ast.Name | ast.Attribute):
            by_attribute = isinstance(target, ast.Attribute)
            name = target.attr if by_attribute else target.id
            yield _StaticSpec(name, by_attribute, 0, params, static, node.lineno)


def _static_arguments(spec: _StaticSpec, call: ast.Call) -> Iterator[tuple[str, str, ast.AST]]:
    """``(parameter, option, node)`` for each argument of ``call`` that ``spec`` makes static."""
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        position = i + spec.offset
        if f"#{position}" in spec.static:
            known = position < len(spec.params)
            param = spec.params[position] if known else f"argument {position}"
            yield param, spec.static[f"#{position}"], arg
    for kw in call.keywords:
        if kw.arg in spec.static:
            yield kw.arg, spec.static[kw.arg], kw


def _identity_class(index: FileIndex, value: ast.AST) -> str | None:
    """The in-file class ``value`` instantiates, if its instances compare by identity."""
    if not isinstance(value, ast.Call) or getattr(value.func, "id", None) not in index.classes:
        return None
    for cls in index.class_family(index.classes[value.func.id][-1]):
        if any(m.name == "__eq__" for m in index.methods(cls)) or cls.decorator_list:
            return None  # a decorator (dataclass, attrs, struct) may define __eq__
        bases = [b for b in cls.bases if ast.unparse(b) != "object"]
        if any(getattr(b, "id", None) not in index.classes for b in bases):
            return None  # a base from elsewhere may define __eq__
    return value.func.id


def _is_array(index: FileIndex, value: ast.AST, scope: Scope) -> bool:
    if isinstance(value, ast.Name):
        bound = index.bindings(value.id, scope)
        return bool(bound) and all(_is_array(index, b, scope) for b in bound)
    if not isinstance(value, ast.Call):
        return False
    qualname = index.qualname(value.func) or ""
    if qualname.startswith("numpy.random."):
        return True
    prefixes = ("jax.numpy.", "jax.random.", "numpy.")
    return qualname == "jax.device_put" or (
        qualname.startswith(prefixes) and qualname not in _NUMPY_SCALARS
    )


def _unstable(
    index: FileIndex, value: ast.expr, scope: Scope, loops: list[Loop]
) -> tuple[str, str] | None:
    """``(template, detail)`` when passing ``value`` as a static argument misses the cache."""
    if _is_array(index, value, scope):
        return JL005_ARRAY, ""
    if isinstance(value, ast.Lambda):
        return JL005_FRESH, "a lambda"
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return JL005_UNHASHABLE, type(value).__name__.lower().removesuffix("comp")
    if isinstance(value, ast.Call) and index.qualname(value.func) in PARTIALS:
        return JL005_FRESH, f"a `{short(value.func)}`"
    if cls := _identity_class(index, value):
        return JL005_FRESH, f"a `{cls}` instance"
    if _few_values(value):
        return None
    read = {n.id for n in names_loaded(value)}
    for loop in loops:
        if read & index.changing_names(loop):
            return JL005_CHANGING, loop_text(loop)
    return None


def _few_values(value: ast.expr) -> bool:
    """A flag (``i == 0``) or a remainder (``i % 4``): a few compiles, then cache hits."""
    if isinstance(value, ast.Compare | ast.BoolOp):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    return (
        isinstance(value, ast.BinOp)
        and isinstance(value.op, ast.Mod)
        and isinstance(value.right, ast.Constant)
    )


#: Decorators whose classes JAX already traces (their fields are pytree children).
_PYTREE_DECORATORS = frozenset({"flax.struct.dataclass", "chex.dataclass"})


def _record_fix(index: FileIndex, value: ast.expr, loops: list[Loop]) -> tuple[str, dict] | None:
    """The fix for an in-file class instance built with changing fields (``Config(lr=...)``),
    which JAX cannot trace as it is: ``(template, its fields)``, the caller adds ``param`` and
    ``how``. None when JAX traces the class already (a NamedTuple, a flax/chex dataclass), the
    class is not in the file, or no field is seen to change."""
    if not isinstance(value, ast.Call) or getattr(value.func, "id", None) not in index.classes:
        return None
    cls = index.classes[value.func.id][-1]
    if any(ast.unparse(b).rsplit(".", 1)[-1] == "NamedTuple" for b in cls.bases):
        return None
    decorators = {
        index.qualname(d.func if isinstance(d, ast.Call) else d) or "" for d in cls.decorator_list
    }
    if decorators & _PYTREE_DECORATORS:
        return None
    fields = [
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and "ClassVar" not in ast.unparse(n.annotation)
    ]
    changing = set().union(*(index.changing_names(loop) for loop in loops))
    given = dict(zip(fields, value.args, strict=False))
    given |= {k.arg: k.value for k in value.keywords if k.arg}
    data = [f for f, v in given.items() if {n.id for n in names_loaded(v)} & changing]
    if not data:
        return None
    if "dataclasses.dataclass" in decorators:
        meta = [f for f in fields if f not in data]
        return JL005_FIX_DATACLASS, {"cls": cls.name, "data": repr(data), "meta": repr(meta)}
    return JL005_FIX_FIELD, {"cls": cls.name, "fields": ", ".join(f"`{f}`" for f in data)}


def check_static_arguments(index: FileIndex) -> Iterator[Hit]:
    """JL005: a static argument given a changing, array, or identity-compared value."""
    specs = list(_static_specs(index))
    for call in index.calls:
        if index.inside_traced(call):
            continue
        called = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
        for spec in specs:
            if spec.name != called or spec.by_attribute != isinstance(call.func, ast.Attribute):
                continue
            scope, loops = index.frame(call)
            for param, how, node in _static_arguments(spec, call):
                value = node.value if isinstance(node, ast.keyword) else node
                found = _unstable(index, value, scope, loops)
                if not found:
                    continue
                template, detail = found
                message = template.format(
                    param=param, fn=spec.name, how=how, line=spec.line, value=short(value),
                    detail=detail,
                )  # fmt: skip
                if template == JL005_CHANGING and (record := _record_fix(index, value, loops)):
                    fix = record[0].format(param=param, how=how, **record[1])
                elif template in (JL005_CHANGING, JL005_ARRAY):
                    fix = JL005_FIX_TRACED.format(param=param, how=how)
                elif template == JL005_UNHASHABLE:
                    fix = {"dict": JL005_FIX_UNHASHABLE_DICT, "set": JL005_FIX_UNHASHABLE_SET}.get(
                        detail, JL005_FIX_UNHASHABLE
                    ).format(param=param, fn=spec.name)
                elif cls := _identity_class(index, value):
                    fix = JL005_FIX_CLASS.format(cls=cls)
                else:
                    fix = JL005_FIX_FRESH
                yield Hit("JL005", node, message, fix)


RULES = (
    Rule("JL001", "jit wrapper built in a loop or a repeatedly called function", check_jit_in_loop),
    Rule(
        "JL005",
        "static argument given a changing or identity-compared value",
        check_static_arguments,
    ),
)
