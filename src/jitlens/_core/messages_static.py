"""The words for static values: a changed value, a value that compares by identity, a mode flip.

Statics are part of JAX's cache key, compared with ``==``/``hash``. These
builders say which case a differing static is and offer a fix only where one
is known to work (``_identity_fix`` checks substitutions before offering them).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import re
import sys
from typing import Any

from .key import StaticVal, diff_texts, short_repr
from .kinds import Fact, ReasonKind, SubjectKind
from .kinds import FixKind as K
from .messages import (
    CLASS_FIX,
    IDENTITY_MSG,
    LIMIT,
    STATIC_AUX_FIX,
    STATIC_MSG,
    _reason,
    with_fix,
)
from .report import Reason

#: Flags that flax layers (and common user code) flip between train and eval.
MODE_FLAGS = frozenset(
    {
        "deterministic",
        "use_running_average",
        "training",
        "train",
        "is_training",
        "eval_mode",
        "decode",
    }
)
MODE_MSG = (
    "static `{path}` flipped {before} -> {after} (a train/eval switch such as "
    "model.eval() / model.train()): each mode compiles once."
)
MODE_FIX = (
    "Expected once per mode. If it flips every step, switch modes outside the hot loop, or "
    "keep one jitted function per mode; don't toggle `{attr}` inside the step."
)
STATIC_FIELD_FIX = (
    "Keep `{path}` constant between calls (each value compiles once), or make `{attr}` a data "
    "field (a pytree child, e.g. drop `pytree_node=False` / `static=True`) if it must change."
)


STATIC_ROLE_FIX = (
    "If `{attr}` sets a shape, a loop bound or a branch it stays static (once per value); if "
    "it changes every call, make it state in `__init__`, `self.{attr} = nnx.Variable("
    "jnp.asarray({before}))`, and update it through `[...]`."
)
COUNTER_MSG = (
    "static `{path}` changes on every call: a counter ({values}); statics are part of the cache "
    "key, so every new value compiles again."
)
COUNTER_FIX = (
    "Make `{attr}` state where `__init__` sets it: `self.{attr} = nnx.Variable(jnp.asarray("
    "{initial}, jnp.{dtype}))`, and update it through `[...]`: `self.{attr}[...] += {delta}`; "
    "one compile then serves every value."
)
SIZE_FIX = (
    "Expected once per value: `{attr}` looks like a size (a shape, a loop bound, a branch), "
    'which must stay static (as an nnx.Variable it fails: "Shapes must be 1D sequences of '
    'concrete values"); models with one `{attr}` share a compile.'
)
#: Attribute names that count calls or steps (a counter belongs in an nnx.Variable) ...
COUNTER_NAMES = frozenset(
    {
        "step",
        "steps",
        "count",
        "counter",
        "iteration",
        "iter",
        "epoch",
        "calls",
        "call_count",
        "n_calls",
        "num_calls",
        "global_step",
        "num_updates",
        "updates",
        "t",
    }
)
#: ... and names of sizes, which must stay static (a shape, a loop bound, a layer count).
_SIZE_NAME = re.compile(
    r"(num|n)_\w+|\w*(size|dim|dims|features|heads|layers|blocks|length|len|channels|width|"
    r"depth|units|vocab|window|stride|kernel|rank|hidden)"
)


def number_role(attr: str, values: list[Any], *, calls: bool = True) -> str:
    """``counter``, ``size`` or ``""`` (unknown) for a module's static number and its values,
    in the order they were compiled.

    ``calls``: the values come from successive calls (a retrace), where one step of +1 is
    a counter's; two builds of a model (``jitlens audit``) need a counter's name or 3 values.
    """
    counter_name = attr in COUNTER_NAMES or attr.endswith(("_step", "_count", "_counter"))
    if _SIZE_NAME.fullmatch(attr) and not counter_name:
        return "size"
    steps = {b - a for a, b in itertools.pairwise(values)}
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    regular = ints and len(steps) == 1 and 0 not in steps and len(values) >= 2
    if counter_name or (regular and (len(values) >= 3 or (calls and steps == {1}))):
        return "counter"
    return ""


def counter_static(arg: str, path: str, attr: str, values: list[Any]) -> Reason:
    """A module's static number that changes on every call: one reason, one fix, however many
    retraces (the fix names the first value, not the current one)."""
    shown = " -> ".join(map(str, values[:4])) + (" -> …" if len(values) > 4 else "")
    delta = values[-1] - values[-2] if len(values) >= 2 else 1
    dtype = "int32" if all(isinstance(v, int) for v in values) else "float32"
    msg = COUNTER_MSG.format(path=path, values=shown)
    fix = COUNTER_FIX.format(attr=attr, initial=values[0], dtype=dtype, delta=delta)
    before, after = str(values[-2]) if len(values) >= 2 else "?", str(values[-1])
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
        fix_kind=K.COUNTER, subject=SubjectKind.NUMBER, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


#: A static number whose role the trace could not tell (a parameter of an operation differs,
#: or no program was seen): both cases in words, no code that could break.
STATIC_ARG_UNSURE_FIX = (
    "If `{arg}` only enters arithmetic, pass it as a traced argument (drop it from "
    "static_argnums/static_argnames); if it sets a shape, a slice, an index, a loop count or a "
    "Python branch it must stay static, each value compiling once."
)
#: A static number that changed the traced program's shapes or operations.
STATIC_SHAPE_FIX = (
    "Expected once per value: `{arg}` sets a shape, a slice, a loop count or a branch (the "
    "programs for {before} and {after} differ beyond constants), so it stays static; if it "
    "takes many values, round it up to a few sizes and mask."
)


#: A static number passed on to a custom_vjp's nondiff_argnums: JAX rejects a tracer there.
STATIC_RULE_FIX = (
    "Keep `{arg}` static while it goes to a custom_vjp's nondiff_argnums (a traced value "
    "raises UnexpectedTracerError there). To compile once, make it a regular argument of that "
    "function and return `None` as its cotangent from the bwd rule."
)


def static_flow(r: Reason, flow: str, data_fix: tuple[K | str, str]) -> Reason:
    """``r`` (a static number, ``flow`` "unchecked") once the trace's program showed where the
    number went (``report.STATIC_FLOWS``). ``data_fix``: the front-end's fix for a number that
    only enters arithmetic (a traced argument), with the template that made it."""
    if flow == "shape":
        fix = STATIC_SHAPE_FIX.format(arg=r.path, before=r.before, after=r.after)
        return with_fix(r, K.STATIC_SHAPE, fix, flow=flow, expected=True)
    if flow == "data":
        return with_fix(r, K(data_fix[0]), data_fix[1], flow=flow)
    if flow == "rule":
        return with_fix(r, K.STATIC_RULE, STATIC_RULE_FIX.format(arg=r.path), flow=flow)
    return dataclasses.replace(r, flow=flow)


STATIC_CHOICE_FIX = (
    "Expected once per value: each distinct `{path}` compiles once and is reused (an equal value "
    "hits the cache). If it changes on every call, keep it to a few values."
)


def static_value(
    arg: str,
    path: str,
    attr: str,
    old: StaticVal,
    new: StaticVal,
    *,
    in_graph: bool,
    aux: str = "",
    field: bool = False,
    history: list[Any] | None = None,
) -> Reason:
    """A static whose *value* changed (``==`` says unequal; a rebuild of the old one would hit).

    ``field``: a static field of a dataclass pytree (``flax.struct``,
    ``equinox``), rather than a static argument or a part of one.
    ``history``: a module attribute's values in every compiled key, in order, then the new
    one (tells a counter from a size; the fix names the first value, not the current one).
    """
    what = f"static `{path}`" if not aux else f"pytree aux data of `{path}`"
    before, after = diff_texts(old.full_text(), new.full_text())
    msg = STATIC_MSG.format(what=what, before=before, after=after)
    numbers = _is_number(old) and _is_number(new)
    flags = isinstance(old.value(), bool) and isinstance(new.value(), bool)
    subject = SubjectKind.NUMBER if numbers else SubjectKind.FLAG if flags else SubjectKind.VALUE
    facts = (Fact.IN_GRAPH,) if in_graph else ()
    if flags and attr in MODE_FLAGS:
        msg = MODE_MSG.format(path=path, before=before, after=after)
        mode = _reason(
            ReasonKind.STATIC_VALUE, arg, path, before, after, msg, MODE_FIX.format(attr=attr),
            fix_kind=K.MODE, subject=subject, facts=facts,
        )  # fmt: skip
        return dataclasses.replace(mode, expected=True)  # a mode's first compile
    elif aux:
        fk, fix = K.STATIC_AUX, STATIC_AUX_FIX.format(path=path)
    elif not numbers:
        fk, fix = K.STATIC_CHOICE, STATIC_CHOICE_FIX.format(path=path)
    elif in_graph:
        values = history or [old.value(), new.value()]
        role = number_role(attr, values, calls=history is not None)
        if role == "counter":
            return counter_static(arg, path, attr, values)
        fk, template = (K.SIZE, SIZE_FIX) if role == "size" else (K.STATIC_ROLE, STATIC_ROLE_FIX)
        fix = template.format(attr=attr, before=values[0])
    elif field:  # a static field inside an argument (flax.struct / equinox dataclass)
        fk, fix = K.STATIC_FIELD, STATIC_FIELD_FIX.format(path=path, attr=attr)
    elif path == arg:  # the static argument itself is the number: what it does decides
        fix = STATIC_ARG_UNSURE_FIX.format(arg=arg)
        reason = _reason(
            ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
            fix_kind=K.STATIC_ARG_UNSURE, subject=subject, facts=facts,
        )  # fmt: skip
        return dataclasses.replace(reason, flow="unchecked")  # the trace's program tells
    else:  # a number inside a static object (a tuple item, a config attribute)
        fk, fix = K.STATIC_CHOICE, STATIC_CHOICE_FIX.format(path=path)
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
        fix_kind=fk, subject=subject, facts=facts,
    )  # fmt: skip


DTYPE_SPELLING_MSG = (
    "static `{path}` is the same dtype ({dtype}) written two ways, {before} -> {after}: statics "
    "are compared as written (`{before} == {after}` is False), so the two spellings are "
    "different keys."
)
DTYPE_SPELLING_FIX = (
    "Write `{attr}` one way everywhere, e.g. always `{canonical}`; each spelling compiles once."
)


_DTYPE_NAME = re.compile(r"(bool|(u?int|float|complex|bfloat)\d+|float8_\w+)")


#: Modules whose scalar types name dtypes (``jnp.float32``, ``ml_dtypes.bfloat16``).
_SCALAR_MODULES = ("jax.numpy", "numpy", "ml_dtypes")


def as_dtype(value: Any) -> Any:
    """The NumPy dtype a static names (``jnp.float32``, ``np.float32``, ``'float32'``,
    ``np.dtype('float32')``), or None for anything else."""
    import numpy as np

    if isinstance(value, np.dtype):
        return value
    if isinstance(value, str):  # a dtype's full name only: 'f' or 'a' are other strings too
        named = _DTYPE_NAME.fullmatch(value) is not None
    else:
        named = isinstance(value, type) and (
            issubclass(value, np.generic) or getattr(value, "__module__", "") in _SCALAR_MODULES
        )
    if not named:
        return None
    try:
        return np.dtype(value)
    except Exception:
        return None


def dtype_spelling(arg: str, path: str, attr: str, old: StaticVal, new: StaticVal) -> Reason:
    """Two spellings of one dtype: unequal as statics, the same dtype to the user."""
    dt = as_dtype(new.value())
    before, after = old.display(), new.display()
    msg = DTYPE_SPELLING_MSG.format(path=path, dtype=dt, before=before, after=after)
    fix = DTYPE_SPELLING_FIX.format(attr=attr, canonical=f"jnp.{dt}")
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
        fix_kind=K.DTYPE_SPELLING, subject=SubjectKind.DTYPE,
    )  # fmt: skip


def _is_number(s: StaticVal) -> bool:
    return is_number(s.value())


def is_number(v: Any) -> bool:
    """A Python int or float, not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def identity_static(
    arg: str, path: str, attr: str, old: StaticVal, new: StaticVal, *, in_graph: bool
) -> Reason:
    value = new.value()
    found = _identity_fix(value, attr, path, arg, in_graph, new)
    consequence = (
        "every new instance holds a new object and the cache key never matches"
        if in_graph
        else "a new object each call is a new key, even when it looks the same"
    )
    msg = IDENTITY_MSG.format(what=f"`{path}`", desc=found.desc, consequence=consequence)
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, old.display(), new.display(), msg, found.fix,
        fix_kind=found.fix_kind, subject=found.subject,
        facts=(Fact.IN_GRAPH,) if in_graph else (),
    )  # fmt: skip


MUTATED_MSG = (
    "static `{path}` was changed in place after its compile ({then} then, {now} now): JAX "
    "keys on that very object, so calls passing it since then ran the old code (stale "
    "results), and an equal new value misses."
)
MUTATED_FIX = (
    "Treat statics as immutable: build a new object instead of changing this one (e.g. a "
    "frozen dataclass and `dataclasses.replace`), or pass what changes as a traced argument."
)


def mutated_static(arg: str, path: str, then: str, now: str, after: str) -> Reason:
    """A static object mutated after its compile: stale hits before, a miss now."""
    msg = MUTATED_MSG.format(path=path, then=then, now=now, after=after)
    return _reason(
        ReasonKind.MUTATED_STATIC, arg, path, f"{then} (now {now})", after, msg, MUTATED_FIX,
        fix_kind=K.MUTATED,
    )  # fmt: skip


NAN_MSG = (
    "{what} is NaN on both calls, but NaN never equals itself (`nan != nan`): a static NaN "
    "hits the cache only when it is the very same object, so each new `float('nan')` compiles "
    "again."
)
NAN_FIX = (
    "Use one shared NaN object, `math.nan` (or `jnp.nan`: the same float every time), where "
    "`{attr}` is set, instead of `float('nan')` or a computed NaN; or mark the case with None "
    "or a flag instead of a static NaN."
)


def is_nan(value: Any) -> bool:
    """Is ``value`` a float NaN (Python or NumPy scalar, real or complex)?"""
    import numpy as np

    if not isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return False  # NaT (a datetime) is not NaN
    try:
        return bool(value != value)
    except Exception:
        return False


def nan_static(arg: str, path: str, attr: str, old: StaticVal, new: StaticVal) -> Reason:
    """Two NaNs: equal-looking, never equal. Python's caches compare them by identity."""
    msg = NAN_MSG.format(what=f"`{path}`")
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, old.display(), new.display(), msg,
        NAN_FIX.format(attr=attr), fix_kind=K.NAN, subject=SubjectKind.NAN,
    )  # fmt: skip


PARTIAL_GRAPH_FIX = (
    "Call {call} in `__call__` instead of storing a partial, or assign one module-level partial"
)
PARTIAL_DATA_FIX = ", or {data}"
PARTIAL_ARG_FIX = (
    "Build the partial once, outside the loop, and pass that same object; or pass `{func}`'s "
    "arguments as statics instead."
)
BOUND_METHOD_FIX = (
    "Store the function, not the bound method (`type(obj).{name}`), or call the method inside "
    "`__call__`."
)
FUNCTION_FIX = (
    "Define the function once at module level (`def {name}(...)`) and assign that same object "
    "to `{target}`."
)
JITTED_FIX = (
    "Create the jitted function once at module level and store that one object in `{path}`, or "
    "call it instead of storing it."
)
OPTAX_FIX = (
    "Expected once per optimizer build. To sweep hyperparameters with one compile, build "
    "`TX = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)` once and set "
    "`{opt}.opt_state.hyperparams['learning_rate'][...] = lr` per run."
)
NO_EQ_FIX = (
    "Make `{type}` a frozen dataclass (`@dataclasses.dataclass(frozen=True)`) so equal "
    "configurations compare equal, or reuse one instance."
)


@dataclasses.dataclass(frozen=True)
class IdentityFix:
    """What an identity-compared static is (``subject``, and in words ``desc``) and a fix
    checked to work (``fix``, made from the template ``fix_kind``)."""

    subject: SubjectKind
    desc: str
    fix_kind: K
    fix: str


def _identity_fix(
    value: Any, attr: str, path: str, arg: str, in_graph: bool, sv: StaticVal
) -> IdentityFix:
    """Classify an identity-compared static and find a fix checked to work (tests/test_fixes.py)."""
    if not attr.isidentifier():  # a list item or dict key: name things generically
        attr = "fn"
    tname = sv.type_name
    if isinstance(value, functools.partial) or tname in (
        "functools.partial",
        "jax.tree_util.Partial",
        "Partial",
    ):
        func = getattr(value, "func", None)
        fname = getattr(func, "__name__", "f")
        fq = _qualified(func) if func is not None else fname
        kws = ", ".join(
            f"{k}={short_repr(v, 30)}" for k, v in getattr(value, "keywords", {}).items()
        )
        desc = f"a {tname}"
        if not in_graph:
            return IdentityFix(
                SubjectKind.PARTIAL, desc, K.PARTIAL_ARG, PARTIAL_ARG_FIX.format(func=fq)
            )
        if "tree_util" in tname or tname == "Partial":
            desc += " (without arrays inside, still a static attribute)"
        call = f"`{fq}(x{', ' + kws if kws else ''})`"
        fix, fk = PARTIAL_GRAPH_FIX.format(call=call), K.PARTIAL_GRAPH
        if _module_level(func) and _equal_when_rebuilt(value):
            data = (
                f"`self.{attr} = nnx.data(jax.tree_util.Partial({fq}{', ' + kws if kws else ''}))`"
            )
            if len(fix) + len(data) + 6 > LIMIT:
                data = f"`self.{attr} = nnx.data(jax.tree_util.Partial({fq}, ...))`"
            fix, fk = fix + PARTIAL_DATA_FIX.format(data=data), K.PARTIAL_DATA
        return IdentityFix(SubjectKind.PARTIAL, desc, fk, fix + ".")
    if isinstance(value, type) or tname == "type":
        fix = CLASS_FIX.format(name=getattr(value, "__qualname__", attr))
        return IdentityFix(SubjectKind.CLASS, "a class object", K.CLASS, fix)
    if inspect.ismethod(value):
        return IdentityFix(
            SubjectKind.BOUND_METHOD,
            "a bound method (a new object on every attribute access)",
            K.BOUND_METHOD,
            BOUND_METHOD_FIX.format(name=getattr(value, "__name__", "method")),
        )
    if callable(value) and (
        inspect.isfunction(value) or inspect.isbuiltin(value) or hasattr(value, "__code__")
    ):
        name = getattr(value, "__name__", "fn")
        if name == "<lambda>":
            subject, desc = SubjectKind.LAMBDA, "a lambda"
        elif "<locals>" in getattr(value, "__qualname__", ""):
            subject, desc = SubjectKind.CLOSURE, "a nested function (closure)"
        else:
            subject, desc = SubjectKind.FUNCTION, "a function"
        target = f"self.{attr}" if in_graph else path
        fix = FUNCTION_FIX.format(name=attr if name == "<lambda>" else name, target=target)
        return IdentityFix(subject, desc, K.FUNCTION, fix)
    if tname.endswith(("PjitFunction", "JitWrapped", "SimpleJitWrapped")) or hasattr(
        value, "lower"
    ):
        return IdentityFix(
            SubjectKind.JITTED_FUNCTION,
            "a jitted function object",
            K.JITTED,
            JITTED_FIX.format(path=path),
        )
    if "GradientTransformation" in tname:
        opt = path[: -len(".tx")] if path.endswith(".tx") else "optimizer"
        return IdentityFix(
            SubjectKind.OPTAX_TRANSFORM,
            "an optax transform (a tuple of closures made by each optax.* call)",
            K.OPTAX,
            OPTAX_FIX.format(opt=opt),
        )
    tn = tname.rsplit(".", 1)[-1]
    return IdentityFix(
        SubjectKind.INSTANCE,
        f"a `{tn}` instance, and `{tn}` defines no `__eq__`",
        K.NO_EQ,
        NO_EQ_FIX.format(type=tn),
    )


def _qualified(func: Any) -> str:
    """The name a user would write for ``func`` (``nnx.avg_pool``, ``jnp.mean``)."""
    name = getattr(func, "__name__", "f")
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
    mod = sys.modules.get(getattr(func, "__module__", "") or "")
    name = getattr(func, "__name__", None)
    return mod is not None and name is not None and getattr(mod, name, None) is func


def _equal_when_rebuilt(value: Any) -> bool:
    """Check that ``jax.tree_util.Partial`` rebuilt twice flattens to equal keys."""
    try:
        import jax

        a = jax.tree_util.Partial(value.func, *value.args, **value.keywords)
        b = jax.tree_util.Partial(value.func, *value.args, **value.keywords)
        ta, tb = jax.tree_util.tree_structure(a), jax.tree_util.tree_structure(b)
        return ta == tb
    except Exception:
        return False


# ---------------------------------------------------------------- structure
