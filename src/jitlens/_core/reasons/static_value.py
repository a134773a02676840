"""The ``static_value`` reason: a static with a new, unequal value.

Statics are part of JAX's cache key, compared with ``==``/``hash``. These builders say which
case a differing static is (a mode flag, a counter, a size, a layer's configuration, a dtype
written two ways, a pmap's or linen's static) and offer a fix only where one is known to work;
once the traced program shows where a static number went (``static_flow``), the fix follows it.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping
from typing import Any

from ..._peek import dataclass_fields, is_a, static_attr
from ..key import Entry, Path, StaticVal, diff_texts
from ..key import is_number as is_number
from ..kinds import Fact, ReasonKind, SubjectKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from ..words import Words
from .base import (
    Template,
    _reason,
    with_fix,
)
from .spec import KindSpec

STATIC_MSG = Template(
    M.STATIC,
    "{what} changed value {before} -> {after}; statics are part of the cache key, so each new value compiles again.",
)


STATIC_GRAPH_FIX = Template(
    K.STATIC_GRAPH,
    "If it changes during training, make it state: `self.{attr} = nnx.Variable(jnp.array({before}))` "
    "and update it with `self.{attr}[...] = ...`; else keep it constant.",
)


STATIC_ARG_FIX = Template(
    K.STATIC_ARG,
    "Pass `{arg}` as a traced argument ({unstatic}) if it is a number that changes; keep statics "
    "for a few fixed values.",
)


#: How a fix stops an argument being static, in the jit option the user wrote (``unstatic``
#: of the fixes that trace it, made by :func:`unstatic`): the option drops out, or loses one
#: name or number; where the option is unknown (a jit whose options are not read), both.
STATIC_OPTION_DROP = Template(M.STATIC_OPTION_DROP, "drop `{option}`")
STATIC_OPTION_NARROW = Template(M.STATIC_OPTION_NARROW, "change `{option}` to `{rest}`")
STATIC_OPTION_BOTH = Template(M.STATIC_OPTION_BOTH, "{first} and {second}")
STATIC_OPTION_ANY = Template(
    M.STATIC_OPTION_ANY, "remove `{arg}` from static_argnums/static_argnames"
)


def unstatic(entries: Mapping[Path, Entry] | None, arg: str) -> Words:
    """The makings of "stop ``arg`` being static", in the options of the jit that made it
    static, read from the key's ``jit`` entries (the jit's own options, as written:
    ``static_argnames='cfg'``): each option that holds ``arg``, by name or by the position it
    was passed at, drops out or loses it; where no option is known to hold it, both, unnamed."""
    entries = entries or {}
    parts = []
    for option in ("static_argnames", "static_argnums"):
        e = entries.get((("jit", option),))
        value = e.static.value() if e is not None and e.static is not None else None
        if value is None:
            continue
        held = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        target = arg if option == "static_argnames" else _position(entries, arg, held)
        if target is None or target not in held:
            continue
        shown = f"{option}={value!r}"
        rest = tuple(v for v in held if v != target)
        if not rest:
            parts.append(STATIC_OPTION_DROP.words(option=shown))
        else:
            parts.append(STATIC_OPTION_NARROW.words(option=shown, rest=f"{option}={rest!r}"))
    if len(parts) == 2:
        return STATIC_OPTION_BOTH.words(first=parts[0], second=parts[1])
    return parts[0] if parts else _any(arg)


def _any(arg: str) -> Words:
    return STATIC_OPTION_ANY.words(arg=arg)


def _position(entries: Mapping[Path, Entry], arg: str, held: tuple[Any, ...]) -> int | None:
    """The number in ``held`` (a ``static_argnums``, negative counting from the end) of the
    positional argument ``arg``; None if it was passed by keyword or is not held."""
    passed = [p[0][1] for p, e in entries.items() if len(p) == 2 and p[1][0] == "passed"]
    positional = [
        name for name in passed
        if entries[(("arg", name), ("passed", ""))].target == "positional"
    ]  # fmt: skip
    if arg not in positional:
        return None
    i, n = positional.index(arg), len(positional)
    return next((v for v in held if isinstance(v, int) and v % n == i and -n <= v < n), None)


STATIC_AUX_FIX = Template(
    K.STATIC_AUX,
    "Keep `{path}` constant between calls, or make the changing field a pytree child (data), not aux data.",
)


LAYER_MSG = Template(
    M.LAYER,
    "`{path}` of {layer} changed {before} -> {after}: a differently configured layer is a "
    "different model, compiled separately.",
)


LAYER_FIX = Template(
    K.LAYER,
    "Expected once per configuration; if the models should be the same, build them with the "
    "same arguments (here `{attr}`).",
)


def layer_config(arg: str, path: str, layer: str, before: str, after: str) -> Reason:
    attr = path.rsplit(".", 1)[-1]
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after,
        LAYER_MSG.words(path=path, layer=f"nnx.{layer}", before=before, after=after),
        LAYER_FIX.words(attr=attr),
        fix_kind=K.LAYER, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


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


MODE_MSG = Template(
    M.MODE,
    "static `{path}` flipped {before} -> {after} (a train/eval switch such as "
    "model.eval() / model.train()): each mode compiles once.",
)


MODE_FIX = Template(
    K.MODE,
    "Expected once per mode. If it flips every step, switch modes outside the hot loop, or "
    "keep one jitted function per mode; don't toggle `{attr}` inside the step.",
)


STATIC_FIELD_FIX = Template(
    K.STATIC_FIELD,
    "Keep `{path}` constant between calls (each value compiles once), or make `{attr}` a data "
    "field (a pytree child, e.g. drop `pytree_node=False` / `static=True`) if it must change.",
)


STATIC_ROLE_FIX = Template(
    K.STATIC_ROLE,
    "If `{attr}` sets a shape, a loop bound or a branch, it stays static; if it changes every "
    "call, make it state: `self.{attr} = nnx.Variable(jnp.asarray({before}))` in `__init__`, "
    "then `{path}[...] = new_value`.",
)


COUNTER_MSG = Template(
    M.COUNTER,
    "static `{path}` changes on every call: a counter ({values}); statics are part of the cache "
    "key, so every new value compiles again.",
)


COUNTER_FIX = Template(
    K.COUNTER,
    "Make `{attr}` state where `__init__` sets it: `self.{attr} = nnx.Variable(jnp.asarray("
    "{initial}, jnp.{dtype}))`, and update it through `[...]`: `self.{attr}[...] += {delta}`; "
    "one compile then serves every value.",
)


SIZE_FIX = Template(
    K.SIZE,
    "Expected once per value: `{attr}` looks like a size (a shape, a loop bound, a branch), "
    'which must stay static (as an nnx.Variable it fails: "Shapes must be 1D sequences of '
    'concrete values"); models with one `{attr}` share a compile.',
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
    msg = COUNTER_MSG.words(path=path, values=shown)
    fix = COUNTER_FIX.words(attr=attr, initial=values[0], dtype=dtype, delta=delta)
    before, after = str(values[-2]) if len(values) >= 2 else "?", str(values[-1])
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
        fix_kind=K.COUNTER, subject=SubjectKind.NUMBER, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


#: A static number whose role the trace could not tell (a parameter of an operation differs,
#: or no program was seen): both cases in words, no code that could break.
STATIC_ARG_UNSURE_FIX = Template(
    K.STATIC_ARG_UNSURE,
    "If `{arg}` only enters arithmetic, pass it as a traced argument ({unstatic}); if it sets a shape, an index, a loop count or a branch it "
    "must stay static, each value compiling once.",
)


#: A static number that changed the traced program's shapes or operations.
STATIC_SHAPE_FIX = Template(
    K.STATIC_SHAPE,
    "Expected once per value: `{arg}` sets a shape, a slice, a loop count or a branch (the "
    "programs for {before} and {after} differ beyond constants), so it stays static; if it "
    "takes many values, round it up to a few sizes and mask.",
)


#: A static number passed on to a custom_vjp's nondiff_argnums: JAX rejects a tracer there.
STATIC_RULE_FIX = Template(
    K.STATIC_RULE,
    "Keep `{arg}` static while it goes to a custom_vjp's nondiff_argnums (a traced value "
    "raises UnexpectedTracerError there). To compile once, make it a regular argument of that "
    "function and return `None` as its cotangent from the bwd rule.",
)


def static_flow(r: Reason, flow: str, data_fix: tuple[K | str, Words | str]) -> Reason:
    """``r`` (a static number, ``flow`` "unchecked") once the trace's program showed where the
    number went (``report.STATIC_FLOWS``). ``data_fix``: the front-end's fix for a number that
    only enters arithmetic (a traced argument), with the template that made it."""
    if flow == "shape":
        fix = STATIC_SHAPE_FIX.words(arg=r.path, before=r.before, after=r.after)
        return with_fix(r, K.STATIC_SHAPE, fix, flow=flow, expected=True)
    if flow == "data":
        return with_fix(r, K(data_fix[0]), data_fix[1], flow=flow)
    if flow == "rule":
        return with_fix(r, K.STATIC_RULE, STATIC_RULE_FIX.words(arg=r.path), flow=flow)
    return r.replace(flow=flow)


STATIC_CHOICE_FIX = Template(
    K.STATIC_CHOICE,
    "Expected once per value: each distinct `{path}` compiles once and is reused (an equal value "
    "hits the cache). If it changes on every call, keep it to a few values.",
)


#: A number in a static plain dataclass (not a pytree) that changes: JAX cannot trace the
#: instance as it is ("Config is not a valid JAX type"); registered as a dataclass pytree whose
#: changing fields are data and the rest meta, it is traced and its meta fields stay static.
STATIC_DATACLASS_FIX = Template(
    K.STATIC_DATACLASS,
    "Make the changing field data and the rest static: `jax.tree_util.register_dataclass("
    "{cls}, data_fields={data}, meta_fields={meta})` after the class, then {unstatic}.{serves}",
)


#: The closing remark of ``STATIC_DATACLASS_FIX``, left out where the fix would be too long.
SERVES_EVERY_VALUE = " One compile serves every value."


def static_dataclass_field(
    arg: str,
    path: str,
    attr: str,
    old: StaticVal,
    new: StaticVal,
    cls: str,
    data: list[str],
    meta: list[str],
    *,
    unstatic: Words,
) -> Reason:
    """A number field of a static plain dataclass that changed (``cfg.lr``): the fix makes
    the fields that changed (``data``) traced and keeps the others (``meta``) static, and
    ``unstatic`` (:func:`unstatic`) stops the argument being static."""
    r = static_value(arg, path, attr, old, new, in_graph=False)
    fix = STATIC_DATACLASS_FIX.words(
        cls=cls, data=repr(data), meta=repr(meta), unstatic=unstatic, serves=SERVES_EVERY_VALUE
    )
    fix = dataclasses.replace(fix, optional="serves")  # its closing remark if there is room
    return with_fix(r, K.STATIC_DATACLASS, fix)


def data_fields(a: Any, b: Any) -> tuple[str, list[str], list[str]] | None:
    """The class name, data and meta fields that make ``a``'s class a dataclass pytree which
    traces what changed from ``a`` to ``b`` and keeps the rest static, or ``None``: not two
    instances of one plain dataclass (a NamedTuple, a ``flax.struct`` or any registered
    pytree is traced as it is), or what changed is not all floats."""
    import jax

    from ..._compat.jax_api import flattens_in_user_code

    fields = dataclass_fields(a)
    if type(a) is not type(b) or fields is None or flattens_in_user_code(type(a)):
        return None  # (a pytree of the program's is one already: its flatten is not run)
    try:
        if not jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(a)):
            return None  # a pytree already
    except Exception:
        return None
    data, meta = [], []
    for f in fields:
        x, y = static_attr(a, f.name), static_attr(b, f.name)
        changed = not _equal(x, y)
        # a float enters arithmetic; an int may set a shape or a loop count: it stays static
        if changed and not (f.init and type(x) is float and type(y) is float):
            return None
        if f.init:
            (data if changed else meta).append(f.name)
    return (type(a).__name__, data, meta) if data else None


def _equal(a: Any, b: Any) -> bool:
    """Equal by the builtins' rules (``contents.same_values``), never by the program's
    ``__eq__``: what cannot be told counts as changed."""
    from ..contents import same_values

    return same_values(a, b) is True


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
    unstatic: Words | None = None,
) -> Reason:
    """A static whose *value* changed (``==`` says unequal; a rebuild of the old one would hit).

    ``field``: a static field of a dataclass pytree (``flax.struct``,
    ``equinox``), rather than a static argument or a part of one.
    ``history``: a module attribute's values in every compiled key, in order, then the new
    one (tells a counter from a size; the fix names the first value, not the current one).
    ``unstatic``: how to stop the argument being static (:func:`unstatic`).
    """
    what = f"static `{path}`" if not aux else f"pytree aux data of `{path}`"
    before, after = diff_texts(old.full_text(), new.full_text())
    msg = STATIC_MSG.words(what=what, before=before, after=after)
    numbers = _is_number(old) and _is_number(new)
    flags = isinstance(old.value(), bool) and isinstance(new.value(), bool)
    subject = SubjectKind.NUMBER if numbers else SubjectKind.FLAG if flags else SubjectKind.VALUE
    facts = (Fact.IN_GRAPH,) if in_graph else ()
    if flags and attr in MODE_FLAGS:
        msg = MODE_MSG.words(path=path, before=before, after=after)
        mode = _reason(
            ReasonKind.STATIC_VALUE, arg, path, before, after, msg, MODE_FIX.words(attr=attr),
            fix_kind=K.MODE, subject=subject, facts=facts,
        )  # fmt: skip
        return mode.replace(expected=True)  # a mode's first compile
    elif aux:
        fk, fix = K.STATIC_AUX, STATIC_AUX_FIX.words(path=path)
    elif not numbers:
        fk, fix = K.STATIC_CHOICE, STATIC_CHOICE_FIX.words(path=path)
    elif in_graph:
        values = history or [old.value(), new.value()]
        role = number_role(attr, values, calls=history is not None)
        if role == "counter":
            return counter_static(arg, path, attr, values)
        fk, template = (K.SIZE, SIZE_FIX) if role == "size" else (K.STATIC_ROLE, STATIC_ROLE_FIX)
        fix = template.words(attr=attr, before=values[0], path=path)
    elif field:  # a static field inside an argument (flax.struct / equinox dataclass)
        fk, fix = K.STATIC_FIELD, STATIC_FIELD_FIX.words(path=path, attr=attr)
    elif path == arg:  # the static argument itself is the number: what it does decides
        fix = STATIC_ARG_UNSURE_FIX.words(arg=arg, unstatic=unstatic or _any(arg))
        reason = _reason(
            ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
            fix_kind=K.STATIC_ARG_UNSURE, subject=subject, facts=facts,
        )  # fmt: skip
        return reason.replace(flow="unchecked")  # the trace's program tells
    else:  # a number inside a static object (a tuple item, a config attribute)
        fk, fix = K.STATIC_CHOICE, STATIC_CHOICE_FIX.words(path=path)
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
        fix_kind=fk, subject=subject, facts=facts,
    )  # fmt: skip


#: Two runs' keys compared (``jitlens diff``): a static whose value differs from BEFORE to AFTER.
DIFF_STATIC_MSG = Template(
    M.DIFF_STATIC,
    "`{path}` is {before} in BEFORE and {after} in AFTER; each static value compiles.",
)


DIFF_STATIC_FIX = Template(
    K.DIFF_STATIC,
    "If the runs should share a compile, pass `{path}` with the value of the baseline run; "
    "else each value compiles once.",
)


def diff_static(arg: str, path: str, before: str, after: str) -> Reason:
    """A static that differs between two runs' keys, seen from their texts alone."""
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after,
        DIFF_STATIC_MSG.words(path=path, before=before, after=after),
        DIFF_STATIC_FIX.words(path=path), fix_kind=K.DIFF_STATIC,
    )  # fmt: skip


DTYPE_SPELLING_MSG = Template(
    M.DTYPE_SPELLING,
    "static `{path}` is the same dtype ({dtype}) written two ways, {before} -> {after}: statics "
    "are compared as written (`{before} == {after}` is False), so the two spellings are "
    "different keys.",
)


DTYPE_SPELLING_FIX = Template(
    K.DTYPE_SPELLING,
    "Write `{attr}` one way everywhere, e.g. always `{canonical}`; each spelling compiles once.",
)


_DTYPE_NAME = re.compile(r"(bool|(u?int|float|complex|bfloat)\d+|float8_\w+)")


#: Modules whose scalar types name dtypes (``jnp.float32``, ``ml_dtypes.bfloat16``).
_SCALAR_MODULES = ("jax.numpy", "numpy", "ml_dtypes")


def as_dtype(value: Any) -> Any:
    """The NumPy dtype a static names (``jnp.float32``, ``np.float32``, ``'float32'``,
    ``np.dtype('float32')``), or None for anything else."""
    import numpy as np

    if is_a(value, np.dtype):
        return value
    if type(value) is str:  # a dtype's full name only: 'f' or 'a' are other strings too
        named = _DTYPE_NAME.fullmatch(value) is not None
    else:
        named = is_a(value, type) and (
            issubclass(value, np.generic) or static_attr(value, "__module__") in _SCALAR_MODULES
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
    msg = DTYPE_SPELLING_MSG.words(path=path, dtype=dt, before=before, after=after)
    fix = DTYPE_SPELLING_FIX.words(attr=attr, canonical=f"jnp.{dt}")
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after, msg, fix,
        fix_kind=K.DTYPE_SPELLING, subject=SubjectKind.DTYPE,
    )  # fmt: skip


def _is_number(s: StaticVal) -> bool:
    return is_number(s.value())


SPEC = KindSpec(
    ReasonKind.STATIC_VALUE,
    what="a static with a new, unequal value (`static_argnums`, a Module's plain Python "
    "attribute, pytree aux data)",
    example="0 -> 1",
    fixes={
        K.STATIC_GRAPH: STATIC_GRAPH_FIX,
        K.STATIC_ARG: STATIC_ARG_FIX,
        K.STATIC_AUX: STATIC_AUX_FIX,
        K.MODE: MODE_FIX,
        K.STATIC_FIELD: STATIC_FIELD_FIX,
        K.STATIC_ROLE: STATIC_ROLE_FIX,
        K.COUNTER: COUNTER_FIX,
        K.SIZE: SIZE_FIX,
        K.STATIC_ARG_UNSURE: STATIC_ARG_UNSURE_FIX,
        K.STATIC_SHAPE: STATIC_SHAPE_FIX,
        K.STATIC_RULE: STATIC_RULE_FIX,
        K.STATIC_CHOICE: STATIC_CHOICE_FIX,
        K.STATIC_DATACLASS: STATIC_DATACLASS_FIX,
        K.DTYPE_SPELLING: DTYPE_SPELLING_FIX,
        K.LAYER: LAYER_FIX,
        K.DIFF_STATIC: DIFF_STATIC_FIX,
    },
    messages=(
        STATIC_MSG,
        MODE_MSG,
        COUNTER_MSG,
        DTYPE_SPELLING_MSG,
        LAYER_MSG,
        DIFF_STATIC_MSG,
        STATIC_OPTION_DROP,
        STATIC_OPTION_NARROW,
        STATIC_OPTION_BOTH,
        STATIC_OPTION_ANY,
    ),
)
