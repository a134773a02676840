"""Lint rules about NNX graph statics: attributes (JL002, JL003), classes (JL004), metadata (JL006),
the optax transformation an ``nnx.Optimizer`` keeps (JL007)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .index import PARTIALS, FileIndex
from .nodes import (
    FunctionNode,
    Hit,
    Loop,
    Scope,
    assignments,
    callee,
    loop_text,
    names_loaded,
    self_attribute,
    self_name,
    short,
    walk_scope,
)
from .rule import Rule

JL002_MESSAGE = (
    "`{cls}.{attr}` is assigned {what} in `{method}`; NNX keeps it as a static attribute "
    "compared by identity, so every new `{cls}` is a new cache key and jitted calls with it "
    "trace and compile again{note}"
)
JL002_NOTE_PARTIAL = "; `jax.tree_util.Partial` alone does not help, NNX keeps it static too"
JL002_FIX_PARTIAL = (
    "call `{call}` in `__call__`, or store one module-level partial, or wrap with "
    "`{nnx}.data(jax.tree_util.Partial(...))`"
)
JL002_FIX_FUNCTION = (
    "define the function once at module level (or as a method) and call it from `__call__`"
)
JL002_FIX_JIT = "store the plain function instead, and jit the function that calls the model"
JL002_FIX_METHOD = "call `self.{name}(...)` where it is needed instead of storing the bound method"
JL003_MESSAGE = (
    "`{cls}.{attr}` is a plain Python {kind} (`{init}` at line {line}) and `{stmt}` changes "
    "it; NNX keeps non-array attributes as static graph data in the cache key, so each new "
    "value traces and compiles again"
)
JL003_FIX = (
    "store it as state: `self.{attr} = {nnx}.Variable({jnp}.array({value}))` in `__init__`, "
    "then update it in place: `{update}`"
)
JL004_MESSAGE = (
    "`{cls}` derives from `{base}` and is defined {where}; each run creates a new class "
    "object, and the class is part of the NNX graph's cache key, so models from different "
    "runs never share compiled code"
)
JL004_FIX = "define `{cls}` once at module level and pass {values} to its `__init__` instead"
JL006_MESSAGE = (
    "`{call}` writes `{value}`, which changes on every iteration of {loop}, into Variable "
    "metadata; metadata is part of the NNX graph's cache key, so the jitted calls in that "
    "loop trace and compile again"
)
JL006_FIX = (
    "keep changing values out of metadata: store them as a Variable's value "
    "(`nnx.Variable(jnp.array(...))`) or outside the model"
)

JL007_MESSAGE = (
    "`{made}` builds a new optax optimizer on every iteration of {loop}, and {holder}, "
    "compared by identity (its `init`/`update` are new closures), so the jitted calls in "
    "that loop trace and compile again"
)
JL007_HOLDER_OPTIMIZER = "`{optimizer}` keeps it as static graph data"
JL007_HOLDER_ARGUMENT = "`{fn}` ({jit}) keeps it as a static argument"
JL007_HOLDER_STATE = "`{state}` keeps it as a static field of the state (`pytree_node=False`)"
JL007_FIX = (
    "build it once before the loop (`tx = {made}`) and pass that same `tx` to `{target}`; "
    "to sweep a hyper-parameter with one compile, build "
    "`optax.inject_hyperparams({factory})(...)` once and set "
    "`opt_state.hyperparams[...]` per run"
)

# -- JL002 ---------------------------------------------------------------------------------------


def _identity_callable(
    index: FileIndex, value: ast.AST, method: FunctionNode, method_names: set[str]
) -> tuple[str, str, str] | None:
    """``(what, fix, note)`` when ``value`` is a callable that NNX compares by identity."""
    if isinstance(value, ast.IfExp):
        return _identity_callable(index, value.body, method, method_names) or _identity_callable(
            index, value.orelse, method, method_names
        )
    if isinstance(value, ast.Lambda):
        return "a lambda", JL002_FIX_FUNCTION, ""
    if isinstance(value, FunctionNode):
        return f"the nested function `{value.name}`", JL002_FIX_FUNCTION, ""
    if isinstance(value, ast.Name):
        found = (
            _identity_callable(index, b, method, method_names)
            for b in index.bindings(value.id, method)
        )
        return next((f for f in found if f), None)
    if isinstance(value, ast.Attribute):
        if self_attribute(value, self_name(method)) in method_names:
            fix = JL002_FIX_METHOD.format(name=value.attr)
            return f"the bound method `{short(value)}`", fix, ""
        return None
    if not isinstance(value, ast.Call):
        return None
    qualname = index.qualname(value.func)
    if qualname == "flax.nnx.data":
        return None
    if qualname == "flax.nnx.static" and value.args:
        return _identity_callable(index, value.args[0], method, method_names)
    if index.jit_factory(value.func) and value.args:
        return f"a new `{short(value.func)}(...)` wrapper", JL002_FIX_JIT, ""
    if qualname not in PARTIALS or not value.args:
        return None
    func, *bound_args = value.args
    what = f"a new `{short(value.func)}({short(func)}, ...)`"
    note = JL002_NOTE_PARTIAL if qualname == "jax.tree_util.Partial" else ""
    call = _call_text(func, bound_args, value.keywords, elide=False)
    if len(call) > 70:
        call = _call_text(func, bound_args, value.keywords, elide=True)
    nnx = index.spelling("flax.nnx", "nnx")
    return what, JL002_FIX_PARTIAL.format(call=call, nnx=nnx), note


def _call_text(
    func: ast.expr, args: list[ast.expr], keywords: list[ast.keyword], elide: bool
) -> str:
    """The direct call a partial stands for: ``partial(f, a, k=v)`` is ``f(a, x, k=v)``."""
    parts = ["..." if elide else ast.unparse(a) for a in args] + ["x"]
    for kw in keywords:
        value = "..." if elide else ast.unparse(kw.value)
        parts.append(f"{kw.arg}={value}" if kw.arg else f"**{value}")
    return f"{ast.unparse(func)}({', '.join(parts)})"


def check_callable_attributes(index: FileIndex) -> Iterator[Hit]:
    """JL002: a partial, lambda, nested function, jit wrapper or bound method on a Module."""
    for cls in index.module_classes:
        method_names = {m.name for c in index.class_family(cls) for m in index.methods(c)}
        for method in index.methods(cls):
            for stmt, target, value in assignments(method):
                attr = self_attribute(target, self_name(method))
                found = attr and _identity_callable(index, value, method, method_names)
                if found:
                    what, fix, note = found
                    message = JL002_MESSAGE.format(
                        cls=cls.name, attr=attr, what=what, method=method.name, note=note
                    )
                    yield Hit("JL002", stmt, message, fix)


# -- JL003 ---------------------------------------------------------------------------------------

_NumberAttribute = tuple[ast.ClassDef, str, ast.stmt, ast.expr]  # class, int/float, init, value


def _number_literal(value: ast.AST) -> str | None:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub | ast.UAdd):
        value = value.operand
    if isinstance(value, ast.Constant) and type(value.value) in (int, float):
        return type(value.value).__name__
    return None


def _number_attributes(index: FileIndex, cls: ast.ClassDef) -> dict[str, _NumberAttribute]:
    """Attributes an ``__init__`` sets to a number literal, and no method sets to an array."""
    found: dict[str, _NumberAttribute] = {}
    stateful: set[str] = set()
    for owner in index.class_family(cls):
        for method in index.methods(owner):
            for stmt, target, value in assignments(method):
                attr = self_attribute(target, self_name(method))
                kind = _number_literal(value)
                if attr and kind and method.name == "__init__":
                    found.setdefault(attr, (owner, kind, stmt, value))
                elif attr and isinstance(value, ast.Call):
                    qualname = index.qualname(value.func) or ""
                    if qualname.startswith(("flax.", "jax.", "numpy.")):
                        stateful.add(attr)
    protocol = _protocol_attributes(index, cls)
    return {a: info for a, info in found.items() if a not in stateful and a not in protocol}


#: Methods that must return a Python int or bool: an attribute they read cannot be a Variable.
INT_PROTOCOL = frozenset({"__len__", "__length_hint__", "__index__", "__int__", "__bool__"})


def _protocol_attributes(index: FileIndex, cls: ast.ClassDef) -> set[str]:
    """Attributes ``__len__`` and its kin read (``nnx.List._length``): the Module's own
    structure, which changes its graph anyway; the fix would break ``len()``."""
    found: set[str] = set()
    for owner in index.class_family(cls):
        for method in index.methods(owner):
            if method.name in INT_PROTOCOL:
                me = self_name(method)
                found.update(
                    n.attr
                    for n in ast.walk(method)
                    if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name)
                    and n.value.id == me
                )
    return found


def _mutation(node: ast.AST) -> ast.Attribute | None:
    """The ``x.a`` that ``x.a += 1``, ``x.a = x.a + 1`` or ``x.a = f(i)`` updates."""
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
        return node.target
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, ast.Attribute) and not isinstance(node.value, ast.Constant):
            return target
    return None


def _in_place(target: ast.Attribute, stmt: ast.AugAssign | ast.Assign) -> str:
    """The update written on a Variable: ``self.step[...] += 1``."""
    item = ast.Subscript(value=target, slice=ast.Constant(...), ctx=ast.Store())
    value = stmt.value
    if isinstance(stmt, ast.AugAssign):
        return ast.unparse(ast.AugAssign(item, stmt.op, value))
    if isinstance(value, ast.BinOp) and ast.unparse(value.left) == ast.unparse(target):
        return ast.unparse(ast.AugAssign(item, value.op, value.right))
    return ast.unparse(ast.Assign([item], value, lineno=0))


def check_number_attributes(index: FileIndex) -> Iterator[Hit]:
    """JL003: a Module's plain int/float attribute changed in a method or a loop."""
    anywhere: dict[str, _NumberAttribute] = {}
    for cls in index.module_classes:
        for attr, info in _number_attributes(index, cls).items():
            anywhere.setdefault(attr, info)
    for stmt in index.nodes:
        target = _mutation(stmt)
        if target is None or not isinstance(target.value, ast.Name):
            continue
        scope, loops = index.frame(stmt)
        if isinstance(scope, FunctionNode) and target.value.id == self_name(scope):
            owner = index.enclosing_class(stmt)
            if owner not in index.module_classes or scope.name == "__init__":
                continue
            numbers = _number_attributes(index, owner)
            reads_itself = isinstance(stmt, ast.AugAssign) or any(
                ast.unparse(n) == ast.unparse(target) for n in ast.walk(stmt.value)
            )
            if not reads_itself and not loops:
                continue
        elif loops:
            numbers = anywhere
        else:
            continue
        if target.attr not in numbers:
            continue
        cls, kind, init, value = numbers[target.attr]
        message = JL003_MESSAGE.format(
            cls=cls.name, attr=target.attr, kind=kind, init=short(init), line=init.lineno,
            stmt=short(stmt),
        )  # fmt: skip
        fix = JL003_FIX.format(
            attr=target.attr,
            nnx=index.spelling("flax.nnx", "nnx"),
            jnp=index.spelling("jax.numpy", "jnp"),
            value=ast.unparse(value),
            update=_in_place(target, stmt),
        )
        yield Hit("JL003", stmt, message, fix)


# -- JL004 ---------------------------------------------------------------------------------------


def _runs_once(index: FileIndex, fn: FunctionNode) -> bool:
    """Test functions and fixtures: each runs once, so a class inside them is harmless."""
    owner = index.parents.get(fn)
    fixture = any((index.qualname(callee(d)) or "").endswith("fixture") for d in fn.decorator_list)
    in_test_class = isinstance(owner, ast.ClassDef) and owner.name.startswith("Test")
    return fn.name.startswith("test") or fixture or in_test_class


def check_local_module_class(index: FileIndex) -> Iterator[Hit]:
    """JL004: an NNX Module class created by a function (or a loop) instead of once."""
    for cls, base in index.module_classes.items():
        scope, loops = index.frame(cls)
        if isinstance(scope, FunctionNode) and not _runs_once(index, scope):
            where = f"inside `{scope.name}`"
            local = {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
            local |= {
                n.id
                for n in walk_scope(scope)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
        elif isinstance(scope, ast.Module) and loops:
            where = f"inside the loop at line {loops[0].lineno}"
            local = index.changing_names(loops[-1])
        else:
            continue
        used = [n.id for n in names_loaded(cls) if n.id in local and n.id != cls.name]
        values = ", ".join(f"`{name}`" for name in dict.fromkeys(used)) or "the values it needs"
        message = JL004_MESSAGE.format(cls=cls.name, base=base, where=where)
        yield Hit("JL004", cls, message, JL004_FIX.format(cls=cls.name, values=values))


# -- JL006 ---------------------------------------------------------------------------------------


def _calls_jitted(index: FileIndex, loop: ast.AST) -> bool:
    for node in ast.walk(loop):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in index.jitted_names:
                return True
    return False


def check_metadata_in_loop(index: FileIndex) -> Iterator[Hit]:
    """JL006: ``Variable.set_metadata`` fed a per-iteration value in a loop that calls a jit."""
    for call in index.calls:
        if getattr(call.func, "attr", None) != "set_metadata":
            continue
        for loop in index.frame(call)[1]:
            changing = index.changing_names(loop)
            if {n.id for n in names_loaded(call.func.value)} & changing:
                break  # a different Variable on each iteration: a setup loop
            values = list(call.args) + [kw.value for kw in call.keywords]
            moving = [v for v in values if {n.id for n in names_loaded(v)} & changing]
            if moving and _calls_jitted(index, loop):
                message = JL006_MESSAGE.format(
                    call=short(call), value=short(moving[0]), loop=loop_text(loop)
                )
                yield Hit("JL006", call, message, JL006_FIX)
                break


# -- JL007 ---------------------------------------------------------------------------------------


def _optax_call(index: FileIndex, node: ast.AST | None) -> ast.Call | None:
    if isinstance(node, ast.IfExp):
        return _optax_call(index, node.body) or _optax_call(index, node.orelse)
    if isinstance(node, ast.Call) and (index.qualname(node.func) or "").startswith("optax."):
        return node
    return None


def _static_argument_jits(index: FileIndex) -> dict[str, str]:
    """Names of functions jitted by a jit that keeps non-array arguments static -> that jit."""
    found: dict[str, str] = {}
    jits = index.vocabulary.static_argument_jits
    for node in index.nodes:
        if isinstance(node, FunctionNode):
            for d in node.decorator_list:
                jit = jits.get(index.qualname(callee(d)) or "")
                if jit is not None:
                    found[node.name] = jit
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            jit = jits.get(index.qualname(node.value.func) or "")
            if jit is not None and node.value.args:
                found.update({t.id: jit for t in node.targets if isinstance(t, ast.Name)})
    return found


def _made_in_loop(
    index: FileIndex, value: ast.AST | None, scope: Scope, loop: Loop
) -> ast.Call | None:
    """The optax call ``value`` is, or the one its name is bound to inside ``loop``."""
    made = _optax_call(index, value)
    if made is None and isinstance(value, ast.Name):
        found = (_optax_call(index, b) for b in index.bindings(value.id, scope, loop))
        made = next((m for m in found if m is not None), None)
    return made


def check_optimizer_in_loop(index: FileIndex) -> Iterator[Hit]:
    """JL007: an optax optimizer rebuilt in a loop that calls a jit which keeps it static.

    ``nnx.Optimizer(model, optax.adam(...))`` keeps ``tx`` in the graph's static data
    (google/flax#5548); ``eqx.filter_jit`` and ``nnx.jit`` keep an optimizer passed as an
    argument static (patrick-kidger/equinox#686). Either compares it by identity.
    """
    jitted = _static_argument_jits(index)
    for call in index.calls:
        name = getattr(call.func, "id", None)
        if index.qualname(call.func) == "flax.nnx.Optimizer":
            tx = call.args[1] if len(call.args) > 1 else None
            values = [next((k.value for k in call.keywords if k.arg == "tx"), tx)]
            target = short(call.func)
            holder = JL007_HOLDER_OPTIMIZER.format(optimizer=target)
        elif name in jitted:
            values = [*call.args, *(k.value for k in call.keywords)]
            target = name
            holder = JL007_HOLDER_ARGUMENT.format(fn=name, jit=jitted[name])
        elif getattr(call.func, "attr", None) == "create" and any(
            k.arg == "tx" for k in call.keywords
        ):  # a linen TrainState (or a subclass): `tx` is a static field, compared by identity
            values = [next(k.value for k in call.keywords if k.arg == "tx")]
            target = short(call.func)
            holder = JL007_HOLDER_STATE.format(state=target)
        else:
            continue
        scope, loops = index.frame(call)
        for loop in loops:
            if not _calls_jitted(index, loop) and name not in jitted:
                continue
            made = next(
                (m for v in values if (m := _made_in_loop(index, v, scope, loop)) is not None),
                None,
            )
            if made is None:
                continue
            message = JL007_MESSAGE.format(made=short(made), loop=loop_text(loop), holder=holder)
            fix = JL007_FIX.format(made=short(made), target=target, factory=short(made.func))
            yield Hit("JL007", made, message, fix)
            break


RULES = (
    Rule("JL002", "partial, lambda or function stored on an NNX Module", check_callable_attributes),
    Rule(
        "JL003", "plain int/float Module attribute changed after __init__", check_number_attributes
    ),
    Rule("JL004", "NNX Module class defined inside a function or loop", check_local_module_class),
    Rule("JL006", "Variable metadata rewritten on every loop iteration", check_metadata_in_loop),
    Rule(
        "JL007",
        "optax optimizer rebuilt per loop for an nnx.Optimizer or a TrainState",
        check_optimizer_in_loop,
    ),
)
