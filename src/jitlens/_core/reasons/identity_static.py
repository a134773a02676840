"""The ``identity_static`` reason: a static that looks the same but compares by identity.

``functools.partial``, ``jax.tree_util.Partial``, lambdas, closures, bound methods, jitted
functions, optax transforms, instances without ``__eq__``, a class defined again, a NaN:
``_identity_fix`` says what the object is and offers a fix checked to work
(``tests/test_fixes.py``).

An instance of a class without ``__eq__`` gets the fix its attributes call for
(``instance_fix``, reading ``_core/instances.py``): the same values (a rebuild) may reuse one
instance or freeze the class (``NO_EQ_FIX``); arrays make it a pytree (``ARRAYS_PYTREE_FIX``);
other numbers that changed (jax#28418 made to work: a copy changed each step, or a new
instance each step) are traced, never "reuse one instance", which is the stale hit jax#28418
reported (``NO_EQ_TRACED_FIX``, with the registration code); other values, or values
jitlens cannot read, freeze the class, one compile per configuration (``NO_EQ_VALUES_FIX``).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
from typing import Any

from ..._compat import optax_api
from ..._peek import has_static_attr, instance_dict, is_a, static_attr
from ..builds import same_build
from ..instances import array_fields, changed_attributes, pytree_registration
from ..key import StaticVal, is_number, short_repr
from ..kinds import Fact, ReasonKind, SubjectKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    LIMIT,
    Template,
    Words,
    _reason,
    with_fix,
)
from .spec import KindSpec
from .static_value import unstatic as _unstatic

IDENTITY_MSG = Template(M.IDENTITY, "{what} is {desc}, which compares by identity: {consequence}.")


CLASS_MSG = Template(
    M.CLASS,
    "{path} is an instance of a class {name} defined again (a new class object, e.g. a class "
    "statement inside a factory function); classes compare by identity.",
)


CLASS_FIX = Template(
    K.CLASS, "Define `class {name}` once at module level and pass its configuration to `__init__`."
)


def class_redefined(arg: str, path: str, name: str) -> Reason:
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, f"<class '{name}'> (earlier definition)",
        f"<class '{name}'> (new definition)",
        CLASS_MSG.words(path=f"`{path}`", name=f"`{name}`"),
        CLASS_FIX.words(name=name.rsplit(".", 1)[-1]), fix_kind=K.CLASS,
        subject=SubjectKind.CLASS_REDEFINED,
    )  # fmt: skip


OPTAX_KIND_FIX = Template(
    K.OPTAX_KIND,
    "Expected once per optimizer build: `{path}` is another optimizer, not only other "
    "hyper-parameters (its state `{state}` changed structure too); reuse one optimizer object "
    "to share one compile.",
)


def optax_kind(r: Reason, state: str) -> Reason:
    """``r`` (a new optax transform) when its state's structure changed too: a sweep of
    hyper-parameters (``inject_hyperparams``) would not remove this compile."""
    return with_fix(r, K.OPTAX_KIND, OPTAX_KIND_FIX.words(path=r.path, state=state), expected=False)


def identity_static(
    arg: str,
    path: str,
    attr: str,
    old: StaticVal,
    new: StaticVal,
    *,
    in_graph: bool,
    unstatic: Words | None = None,
) -> Reason:
    value = new.value()
    found = _identity_fix(value, attr, path, arg, in_graph, new, unstatic, old.value())
    consequence = (
        "every new instance holds a new object and the cache key never matches"
        if in_graph
        else "a new object each call is a new key, even when it looks the same"
    )
    msg = IDENTITY_MSG.words(what=f"`{path}`", desc=found.desc, consequence=consequence)
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, old.display(), new.display(), msg, found.words,
        fix_kind=found.fix_kind, subject=found.subject,
        facts=(Fact.IN_GRAPH,) if in_graph else (),
    )  # fmt: skip


NAN_MSG = Template(
    M.NAN,
    "{what} is NaN on both calls, but NaN never equals itself (`nan != nan`): a static NaN "
    "hits the cache only when it is the very same object, so each new `float('nan')` compiles "
    "again.",
)


NAN_FIX = Template(
    K.NAN,
    "Use one shared NaN object, `math.nan` (or `jnp.nan`: the same float every time), where "
    "`{attr}` is set, instead of `float('nan')` or a computed NaN; or mark the case with None "
    "or a flag instead of a static NaN.",
)


def nan_static(arg: str, path: str, attr: str, old: StaticVal, new: StaticVal) -> Reason:
    """Two NaNs: equal-looking, never equal. Python's caches compare them by identity."""
    msg = NAN_MSG.words(what=f"`{path}`")
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, old.display(), new.display(), msg,
        NAN_FIX.words(attr=attr), fix_kind=K.NAN, subject=SubjectKind.NAN,
    )  # fmt: skip


PARTIAL_GRAPH_FIX = Template(
    K.PARTIAL_GRAPH,
    "Call {call} in `__call__` instead of storing a partial, or assign one module-level partial",
)


PARTIAL_DATA_FIX = Template(K.PARTIAL_DATA, ", or {data}")


PARTIAL_ARG_FIX = Template(
    K.PARTIAL_ARG,
    "Build the partial once, outside the loop, and pass that same object; or pass `{func}`'s "
    "arguments as statics instead.",
)


BOUND_METHOD_FIX = Template(
    K.BOUND_METHOD,
    "Store the function, not the bound method (`type(obj).{name}`), or call the method inside "
    "`__call__`.",
)


#: A bound method passed as a static argument or kept in a pytree's static field (a linen
#: ``TrainState.apply_fn``): it is called as it is, so storing ``type(obj).method`` instead
#: would drop its object. Two bound methods are equal when their objects are the same object,
#: so it missed because the object is new: that object is the one to build once.
BOUND_METHOD_ARG_FIX = Template(
    K.BOUND_METHOD_ARG,
    "Build the `{owner}` object once, before the loop, and pass the same `{name}` method of it "
    "on every call: a method of a new `{owner}` object is a new key.",
)


FUNCTION_FIX = Template(
    K.FUNCTION,
    "Define the function once at module level (`def {name}(...)`) and assign that same object "
    "to `{target}`.",
)


JITTED_FIX = Template(
    K.JITTED,
    "Create the jitted function once at module level and store that one object in `{path}`, or "
    "call it instead of storing it.",
)


#: A sweep of hyper-parameters keeps one compile with ``inject_hyperparams``, whose values are
#: state: set in place through ``[...]`` in an nnx graph, replaced elsewhere (a linen
#: ``TrainState``) by an array of the same dtype: a Python float is weakly typed, a new key.
OPTAX_FIX = Template(
    K.OPTAX,
    "Expected once per optimizer build. To sweep hyperparameters with one compile, {build} "
    "once and set `{value}`{state} per run.",
)


#: The transform was built again from the same hyper-parameters (google/flax#5548: an
#: optimizer rebuilt every epoch): nothing is expected of this compile.
OPTAX_REBUILT_FIX = Template(
    K.OPTAX_REBUILT,
    "Build the optax transform once, before the loop, and pass that same object every time: "
    "this one was built again from the same hyper-parameters.",
)


#: How ``OPTAX_FIX`` builds the optimizer: with the optax function that built the user's
#: (``_compat.optax_api.factory_name``), or, where that is not known for sure, in general.
OPTAX_BUILD_NAMED = Template(
    M.OPTAX_BUILD_NAMED,
    "build `{name} = optax.inject_hyperparams(optax.{factory})(learning_rate=1e-3)`",
)
OPTAX_BUILD_ANY = Template(
    M.OPTAX_BUILD_ANY,
    "build the optimizer through `optax.inject_hyperparams` (pass it the optax function that "
    "makes your optimizer, then call the result with the same hyper-parameters)",
)


NO_EQ_FIX = Template(
    K.NO_EQ,
    "Make `{type}` a frozen dataclass (`@dataclasses.dataclass(frozen=True)`) so equal "
    "configurations compare equal, or reuse one instance.",
)


#: An instance without ``__eq__`` that holds arrays: a frozen dataclass of it cannot be hashed
#: (jit raises TypeError on a static holding a jax Array); a pytree whose arrays are data and
#: the rest meta is traced instead, and one compile serves every rebuilt instance.
ARRAYS_PYTREE_FIX = Template(
    K.ARRAYS_PYTREE,
    "`{type}` holds arrays ({data}), which cannot be hashed as a static: make it a pytree whose "
    "arrays are traced and the rest static, then {unstatic}. {code}",
)


#: The shortest registration that works for the class, the last part of ``ARRAYS_PYTREE_FIX``:
#: a dataclass whose fields are all arrays takes the decorator alone; one with other fields
#: names them (data and meta) in one call after the class; any other class gets
#: ``register_pytree_node_class`` and its two methods, one short line each (``{methods}``).
ARRAYS_PYTREE_DECORATOR = Template(M.ARRAYS_PYTREE_DECORATOR, "Above the class: `{code}`.")
ARRAYS_PYTREE_CALL = Template(M.ARRAYS_PYTREE_CALL, "After the class: `{code}`.")
ARRAYS_PYTREE_METHODS = Template(
    M.ARRAYS_PYTREE_METHODS,
    "Put `@jax.tree_util.register_pytree_node_class` above `class {type}` and these in it:\n"
    "{methods}",
)


#: Two instances of a class without ``__eq__`` whose numbers differ: either way the user got
#: there (a copy changed each step, a new instance each step), reusing one instance is wrong.
NO_EQ_TRACED_FIX = Template(
    K.NO_EQ_TRACED,
    "`{type}` instances differ in {changed}: one instance changed in place would keep "
    "running the compile made for its old values. If {changed} sets a shape, a loop count or a branch, make "
    "`{type}` a frozen dataclass (one compile per value); else trace it, then {unstatic}: one "
    "compile serves every value. {code}",
)


NO_EQ_VALUES_FIX = Template(
    K.NO_EQ_VALUES,
    "Make `{type}` a frozen dataclass (`@dataclasses.dataclass(frozen=True)`, changed with "
    "`dataclasses.replace`) so equal configurations compare equal: one compile per distinct "
    "{changed}. Do not reuse one instance changed in place: it would run the old compile.",
)


#: The whole fixes ``PARTIAL_GRAPH_FIX`` makes: alone, or followed by ``PARTIAL_DATA_FIX``'s
#: ``nnx.data`` alternative.
_PARTIAL_GRAPH_WHOLE = Template(K.PARTIAL_GRAPH, PARTIAL_GRAPH_FIX + ".")
_PARTIAL_DATA_WHOLE = Template(K.PARTIAL_DATA, PARTIAL_GRAPH_FIX + PARTIAL_DATA_FIX + ".")


@dataclasses.dataclass(frozen=True)
class IdentityFix:
    """What an identity-compared static is (``subject``, and in words ``desc``) and a fix
    checked to work (``fix``, made from the template ``fix_kind``)."""

    subject: SubjectKind
    desc: str
    fix_kind: K
    #: The fix's makings: its template and parameters.
    words: Words

    @property
    def fix(self) -> str:
        """The fix in words (``jitlens audit`` prints them)."""
        return self.words.make()


def _identity_fix(
    value: Any,
    attr: str,
    path: str,
    arg: str,
    in_graph: bool,
    sv: StaticVal,
    unstatic: Words | None = None,
    old: Any = None,
) -> IdentityFix:
    """Classify an identity-compared static and find a fix checked to work (tests/test_fixes.py).
    ``unstatic``: how to stop ``arg`` being static (``static_value.unstatic``)."""
    if not attr.isidentifier():  # a list item or dict key: name things generically
        attr = "fn"
    tname = sv.type_name
    if is_a(value, functools.partial) or tname in (
        "functools.partial",
        "jax.tree_util.Partial",
        "Partial",
    ):
        func = static_attr(value, "func")
        fq = _qualified(func) if func is not None else "f"
        keywords = static_attr(value, "keywords")
        kws = ", ".join(
            f"{k}={short_repr(v, 30)}"
            for k, v in (dict.items(keywords) if type(keywords) is dict else ())
        )
        desc = f"a {tname}"
        if not in_graph:
            return IdentityFix(
                SubjectKind.PARTIAL, desc, K.PARTIAL_ARG, PARTIAL_ARG_FIX.words(func=fq)
            )
        if "tree_util" in tname or tname == "Partial":
            desc += " (without arrays inside, still a static attribute)"
        call = f"`{fq}(x{', ' + kws if kws else ''})`"
        fix, fk = _PARTIAL_GRAPH_WHOLE.words(call=call), K.PARTIAL_GRAPH
        if _module_level(func) and _equal_when_rebuilt(value):
            data = (
                f"`self.{attr} = nnx.data(jax.tree_util.Partial({fq}{', ' + kws if kws else ''}))`"
            )
            if len(PARTIAL_GRAPH_FIX.format(call=call)) + len(data) + 6 > LIMIT:  # the cap
                data = f"`self.{attr} = nnx.data(jax.tree_util.Partial({fq}, ...))`"
            fix, fk = _PARTIAL_DATA_WHOLE.words(call=call, data=data), K.PARTIAL_DATA
        return IdentityFix(SubjectKind.PARTIAL, desc, fk, fix)
    if is_a(value, type) or tname == "type":
        fix = CLASS_FIX.words(name=_name(value, attr, "__qualname__"))
        return IdentityFix(SubjectKind.CLASS, "a class object", K.CLASS, fix)
    if type(value) is types.MethodType:
        name = _name(value.__func__, "method")
        if in_graph:
            return IdentityFix(
                SubjectKind.BOUND_METHOD,
                "a bound method (a new object on every attribute access)",
                K.BOUND_METHOD,
                BOUND_METHOD_FIX.words(name=name),
            )
        obj = value.__self__
        owner = _name(obj, "class") if is_a(obj, type) else type(obj).__name__
        return IdentityFix(
            SubjectKind.BOUND_METHOD,
            f"a method bound to a new `{owner}` object",
            K.BOUND_METHOD_ARG,
            BOUND_METHOD_ARG_FIX.words(owner=owner, name=name),
        )
    if callable(value) and (
        is_a(value, (types.FunctionType, types.BuiltinFunctionType))
        or has_static_attr(value, "__code__")
    ):
        name = _name(value, "fn")
        if name == "<lambda>":
            subject, desc = SubjectKind.LAMBDA, "a lambda"
        elif "<locals>" in _name(value, "", "__qualname__"):
            subject, desc = SubjectKind.CLOSURE, "a nested function (closure)"
        else:
            subject, desc = SubjectKind.FUNCTION, "a function"
        target = f"self.{attr}" if in_graph else path
        fix = FUNCTION_FIX.words(name=attr if name == "<lambda>" else name, target=target)
        return IdentityFix(subject, desc, K.FUNCTION, fix)
    if tname.endswith(("PjitFunction", "JitWrapped", "SimpleJitWrapped")) or has_static_attr(
        value, "lower"
    ):
        return IdentityFix(
            SubjectKind.JITTED_FUNCTION,
            "a jitted function object",
            K.JITTED,
            JITTED_FIX.words(path=path),
        )
    if "GradientTransformation" in tname:
        desc = "an optax transform (a tuple of closures made by each optax.* call)"
        if same_build(old, value):
            return IdentityFix(
                SubjectKind.OPTAX_TRANSFORM, desc, K.OPTAX_REBUILT, OPTAX_REBUILT_FIX.words()
            )
        # the transform passed itself (`step(params, opt_state, opt)`, optax's own examples):
        # its state is an argument the user named, not an attribute of an nnx.Optimizer
        bare = not in_graph and path.isidentifier()
        state = (
            "opt_state"
            if bare
            else f"{path[: -len('.tx')]}.opt_state"
            if path.endswith(".tx")
            else "optimizer.opt_state"
        )
        lr = f"{state}.hyperparams['learning_rate']"
        setter = f"{lr}[...] = lr" if in_graph else f"{lr} = jnp.float32(lr)"
        where = f" (on the state `{path}.init(...)` returns)" if bare else ""
        build = optax_build(value, path if bare else "TX")
        # whole: cut at the cap, the bare fix would lose which state to set
        make = OPTAX_FIX.as_written if bare else OPTAX_FIX.words
        return IdentityFix(
            SubjectKind.OPTAX_TRANSFORM,
            desc,
            K.OPTAX,
            make(value=setter, state=where, build=build),
        )
    tn = tname.rsplit(".", 1)[-1]
    fix_kind, words = instance_fix(value, old, tn, in_graph, unstatic or _unstatic(None, arg))
    return IdentityFix(
        SubjectKind.INSTANCE, f"a `{tn}` instance, and `{tn}` defines no `__eq__`", fix_kind, words
    )


def instance_fix(value: Any, old: Any, tn: str, in_graph: bool, unstatic: Words) -> tuple[K, Words]:
    """The fix for ``value``, an instance of ``tn`` compared by identity, that missed where
    ``old`` was compiled (the cases: the module's docstring)."""
    fields = None if in_graph else array_fields(value)
    if fields is not None:
        data, meta = fields
        code = pytree_code(value, tn, data, meta)
        named = ", ".join(f"`{d}`" for d in data)
        return K.ARRAYS_PYTREE, ARRAYS_PYTREE_FIX.as_written(
            type=tn, data=named, code=code, unstatic=unstatic
        )
    changed = changed_attributes(old, value)
    if changed == [] or old is None:  # a rebuild, or no earlier instance to compare (the audit)
        return K.NO_EQ, NO_EQ_FIX.words(type=tn)
    numbers = changed is not None and all(
        is_number(static_attr(old, a)) and is_number(static_attr(value, a)) for a in changed
    )
    named = ", ".join(f"`{a}`" for a in changed or ())
    if numbers and not in_graph and changed is not None:
        meta = [a for a in instance_dict(value) or () if a not in changed]
        return K.NO_EQ_TRACED, NO_EQ_TRACED_FIX.as_written(
            type=tn,
            changed=named,
            unstatic=unstatic,
            code=pytree_code(value, tn, changed, meta),
        )
    return K.NO_EQ_VALUES, NO_EQ_VALUES_FIX.words(type=tn, changed=named or "configuration")


def pytree_code(value: Any, tn: str, data: list[str], meta: list[str]) -> Words:
    """The registration that makes ``value``'s class a pytree with ``data`` traced and ``meta``
    static (``instances.pytree_registration``), as the closing part of a fix."""
    form, code = pytree_registration(value, tn, data, meta)
    if form == "decorator":
        return ARRAYS_PYTREE_DECORATOR.words(code=code)
    if form == "call":
        return ARRAYS_PYTREE_CALL.words(code=code)
    return ARRAYS_PYTREE_METHODS.as_written(type=tn, methods=code)


def optax_build(tx: Any, name: str = "TX") -> Words:
    """How ``OPTAX_FIX`` builds the optimizer ``tx`` again through ``inject_hyperparams``, into
    the variable ``name``."""
    factory = optax_api.factory_name(tx)
    if factory is None:
        return OPTAX_BUILD_ANY.words()
    return OPTAX_BUILD_NAMED.words(factory=factory, name=name)


def _qualified(func: Any) -> str:
    """The name a user would write for ``func`` (``nnx.avg_pool``, ``jnp.mean``)."""
    name = _name(func, "f")
    for prefix, modname in (
        ("jnp", "jax.numpy"),
        ("jax.nn", "jax.nn"),
        ("jax.lax", "jax.lax"),
        ("nnx", "flax.nnx"),
    ):
        mod = sys.modules.get(modname)
        if mod is not None and getattr(mod, name, None) is func:
            return f"{prefix}.{name}"
    return name


def _module_level(func: Any) -> bool:
    """True when ``func`` is reachable by name from its module (so it is one object)."""
    module, name = static_attr(func, "__module__"), static_attr(func, "__name__")
    mod = sys.modules.get(module) if is_a(module, str) else None
    return mod is not None and is_a(name, str) and static_attr(mod, name) is func


def _name(value: Any, default: str, attr: str = "__name__") -> str:
    """``value.__name__`` (or ``attr``) as stored, never by the program's code; else ``default``."""
    name = static_attr(value, attr)
    return name if is_a(name, str) else default


def _flattens_in_user_code(values: list[Any], depth: int) -> bool:
    """Does flattening ``values`` run a flatten of the program's (a class it registered)?"""
    from ..._compat.jax_api import flattens_in_user_code

    for v in values:
        t = type(v)
        if t in (tuple, list) and depth > 0:
            if _flattens_in_user_code(list(t.__iter__(v)), depth - 1):
                return True
        elif t is dict and depth > 0:
            if _flattens_in_user_code(list(dict.values(v)), depth - 1):
                return True
        elif flattens_in_user_code(t) or t in (tuple, list, dict):
            return True
    return False


def _equal_when_rebuilt(value: Any) -> bool:
    """Check that ``jax.tree_util.Partial`` rebuilt twice flattens to equal keys."""
    if _flattens_in_user_code([*value.args, *value.keywords.values()], 4):
        return False  # (flattening it would run the program's own flatten)
    try:
        import jax

        a = jax.tree_util.Partial(value.func, *value.args, **value.keywords)
        b = jax.tree_util.Partial(value.func, *value.args, **value.keywords)
        ta, tb = jax.tree_util.tree_structure(a), jax.tree_util.tree_structure(b)
        return ta == tb
    except Exception:
        return False


NAN_FIELD_MSG = Template(
    M.NAN_FIELD,
    "`{path}` is NaN on both calls, and NaN never equals itself (`nan != nan`). It is compared "
    "as a dataclass field (flax keeps nnx attributes in dataclass records), and Python 3.13's "
    "dataclasses compare fields with `==` alone: even one shared NaN object misses every call.",
)


NAN_FIELD_FIX = Template(
    K.NAN_FIELD,
    "Keep NaN out of statics: store None in `{attr}` and use `jnp.nan` where it is read "
    "(`jnp.nan if self.{attr} is None else self.{attr}`), or store a flag.",
)


def nan_field(arg: str, path: str, attr: str, old: StaticVal, new: StaticVal) -> Reason:
    """A NaN compared as a dataclass field on Python >= 3.13: no object of it ever hits."""
    msg = NAN_FIELD_MSG.words(path=path)
    fix = NAN_FIELD_FIX.words(attr=attr)
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, old.display(), new.display(), msg, fix,
        fix_kind=K.NAN_FIELD, subject=SubjectKind.NAN, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.IDENTITY_STATIC,
    what="a static that looks the same but compares by identity: `functools.partial`, "
    "`jax.tree_util.Partial`, lambdas, closures, bound methods, jitted functions, optax "
    "transforms, instances without `__eq__`, a class re-defined in a function",
    example="functools.partial(avg_pool, …) at 0x7f.. -> … at 0x7f..",
    fixes={
        K.CLASS: CLASS_FIX,
        K.NAN: NAN_FIX,
        K.PARTIAL_GRAPH: PARTIAL_GRAPH_FIX,
        K.PARTIAL_DATA: PARTIAL_DATA_FIX,
        K.PARTIAL_ARG: PARTIAL_ARG_FIX,
        K.BOUND_METHOD: BOUND_METHOD_FIX,
        K.BOUND_METHOD_ARG: BOUND_METHOD_ARG_FIX,
        K.FUNCTION: FUNCTION_FIX,
        K.JITTED: JITTED_FIX,
        K.OPTAX: OPTAX_FIX,
        K.OPTAX_REBUILT: OPTAX_REBUILT_FIX,
        K.NO_EQ: NO_EQ_FIX,
        K.NO_EQ_TRACED: NO_EQ_TRACED_FIX,
        K.NO_EQ_VALUES: NO_EQ_VALUES_FIX,
        K.ARRAYS_PYTREE: ARRAYS_PYTREE_FIX,
        K.OPTAX_KIND: OPTAX_KIND_FIX,
        K.NAN_FIELD: NAN_FIELD_FIX,
    },
    messages=(
        IDENTITY_MSG,
        CLASS_MSG,
        NAN_MSG,
        NAN_FIELD_MSG,
        ARRAYS_PYTREE_DECORATOR,
        ARRAYS_PYTREE_CALL,
        ARRAYS_PYTREE_METHODS,
        OPTAX_BUILD_NAMED,
        OPTAX_BUILD_ANY,
    ),
)
