"""``eqx.filter_jit``'s words: the explainer's reasons reworded in equinox's terms.

The explainer (``explain``) diffs keys the same way for every front-end; what
differs is what the user should be told. ``eqx.filter_jit`` keeps every
non-array leaf static (Python numbers too, unlike ``jax.jit``), keys an
``eqx.Module``'s non-array fields by identity and its ``eqx.field(static=True)``
fields by value, and an optax optimizer is a NamedTuple of fresh closures.
:func:`frontend_words` rewrites the reasons whose cause or fix reads
differently there; every fix offered here is checked against equinox by
``tests/test_equinox.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Any

from ...._compat.equinox_api import is_eqx_module_class
from ...._core.key import Entry, Key, Path, render_path
from ...._core.kinds import EntryKind, ReasonKind, SubjectKind
from ...._core.reasons import LAYER_FIX, LAYER_MSG, PARAM_SHAPE_FIX, Template, Words, _reason
from ...._core.report import Reason
from ...._core.template_kinds import FixKind
from ...._core.template_kinds import MessageKind as M

NEW_FUNCTION_MSG = Template(
    M.EQX_NEW_FUNCTION,
    "`{name}` is a new function object handed to eqx.filter_jit: equinox keys its compiled "
    "cache on the function, so it compiled again though earlier ones of the same code "
    "(defined at {defined_at}) already compiled.",
)
NEW_FUNCTION_FIX = Template(
    FixKind.EQX_NEW_FUNCTION,
    "Define the function once at module level, decorate it once (`@eqx.filter_jit`), and call "
    "that one object; a lambda, closure or partial built per call is a new function each time.",
)
SCALAR_MSG = Template(
    M.EQX_SCALAR,
    "`{path}` changed value {before} -> {after}: eqx.filter_jit keeps every non-array value "
    "(a Python int/float too) static, unlike jax.jit, so each new value compiles again.",
)
SCALAR_FIX = Template(
    FixKind.EQX_SCALAR,
    "Pass it as an array so it is traced: `jnp.asarray({expr})` at the call (one compile for "
    "every value); keep a Python number only for a few fixed values.",
)
#: Typed (a weakly typed ``jnp.asarray(0.5)`` flips adam's state to strong after one update:
#: a retrace again) and set in ``__init__`` too: a state ``opt.init`` made while the field was
#: a number has no slot for it (optax: "unsupported operand type(s) for *: 'float' and
#: 'NoneType'" once the gradient reaches it).
SCALAR_FIELD_FIX = Template(
    FixKind.EQX_SCALAR_FIELD,
    "Store it as an array so it is traced: set it with `jnp.asarray(value, {dtype})` "
    "(`{root} = eqx.tree_at(lambda m: m{rest}, {root}, jnp.asarray(value, {dtype}))`, and in "
    "`__init__`, before `opt.init`): one compile for every value. Gradients and optax then "
    "reach it too: read it as `jax.lax.stop_gradient(self.{attr})` if it must not be trained.",
)
#: A number in a dataclass pytree that is no eqx.Module (a ``flax.struct.dataclass``
#: ``TrainState``, equinox#792): no ``eqx.tree_at`` in the user's words, and "at the call"
#: cannot reach a field; the state is rebuilt with the field an array.
SCALAR_DATACLASS_FIX = Template(
    FixKind.EQX_SCALAR_DATACLASS,
    "Store it as an array so it is traced: create the {cls} with `{attr}=jnp.asarray(...)` "
    "(or `{root} = {replace}` before the call): one compile for every value; the jitted code "
    "then returns it as an array too.",
)
STATIC_MSG = Template(
    M.EQX_STATIC,
    "`{path}` changed value {before} -> {after}: eqx.filter_jit keeps every non-array value "
    "(in arguments and Module fields) static, compared by value, so each new value compiles again.",
)
STATIC_FIX = Template(
    FixKind.EQX_STATIC,
    "Expected once per distinct value: keep `{path}` to a few values; if it changes on every "
    "call, pass what varies as an array (branch with `jnp.where` / `jax.lax.cond`).",
)
FIELD_MSG = Template(
    M.EQX_FIELD,
    "static field `{path}` (`eqx.field(static=True)`) changed value {before} -> {after}; "
    "static fields are part of the pytree structure, so each new value compiles again.",
)
FIELD_NUMBER_FIX = Template(
    FixKind.EQX_FIELD_NUMBER,
    "Keep `{path}` constant between calls; if it must change, make `{attr}` an ordinary field "
    "holding an array (drop `static=True`, store `jnp.asarray(...)`) so its value is traced.",
)
FIELD_FIX = Template(
    FixKind.EQX_FIELD,
    "Keep `{path}` constant between calls (each value compiles once), or drop `static=True` "
    "from `{attr}` if its value can be traced.",
)
MODULE_IDENTITY_MSG = Template(
    M.EQX_MODULE_IDENTITY,
    "`{path}` is {desc} stored in an eqx.Module field; filter_jit keeps non-array fields "
    "static, compared by identity: every new instance holds a new object, so the key never "
    "matches.",
)
MODULE_FUNCTION_FIX = Template(
    FixKind.EQX_MODULE_FUNCTION,
    "Define it once at module level (`def {name}(...)`) and store that one object: "
    "`self.{attr} = {name}` in `__init__`; every instance then shares it.",
)
MODULE_LIBRARY_FUNCTION_FIX = Template(
    FixKind.EQX_MODULE_LIBRARY_FUNCTION,
    "Define it once at module level (`def {name}(...)`) and build every `{cls}` from that one "
    "object: `{call}`; they then share it and hit the cache.",
)
MODULE_PARTIAL_FIX = Template(
    FixKind.EQX_MODULE_PARTIAL,
    "Build the partial once at module level (`{upper} = functools.partial({func}, ...)`) and "
    "store that one object in `self.{attr}`, or keep its arguments as fields and call `{func}` "
    "in `__call__`.",
)
MODE_MSG = Template(
    M.EQX_MODE,
    "`{path}` flipped {before} -> {after} (train/inference switch, `eqx.nn.inference_mode`): it "
    "is a static field, so each mode compiles once.",
)
MODE_FIX = Template(
    FixKind.EQX_MODE,
    "Expected once per mode. Switch outside the hot loop: build `inference_model = "
    "eqx.nn.inference_mode(model)` once per evaluation, not per step, and keep one jitted call per mode.",
)
MODE_ARGUMENT_MSG = Template(
    M.EQX_MODE_ARGUMENT,
    "`{path}` flipped {before} -> {after}: eqx.filter_jit keeps a Python bool argument static, "
    "so each mode (training, inference) compiles once.",
)
MODE_ARGUMENT_FIX = Template(
    FixKind.EQX_MODE_ARGUMENT,
    "Expected once per mode: nothing to fix; both compiled calls stay cached and are reused.",
)
OPTAX_MSG = Template(
    M.EQX_OPTAX,
    "`{path}` is a new optax optimizer (a NamedTuple of the closures `init`/`update` each "
    "optax.* call makes); filter_jit keeps them static, compared by identity, so each new "
    "optimizer compiles again.",
)
OPTAX_FIX = Template(
    FixKind.EQX_OPTAX,
    "Build the optimizer once, outside the loop, and pass that same object; to sweep a "
    "hyper-parameter, build one `optax.inject_hyperparams(optax.adam)(learning_rate=...)` and "
    "set `opt_state.hyperparams['learning_rate']` per run.",
)


def frontend_words(reasons: list[Reason], key: Key, defined_at: str = "?") -> list[Reason]:
    """``reasons`` for a retrace of an ``eqx.filter_jit`` function, in equinox's terms.

    ``defined_at``: where the function is defined (named in a new-function reason).
    """
    out: list[Reason] = []
    seen_optax: set[Path] = set()
    for r in reasons:
        p = r.where if r.where in key.entries else None
        if r.kind == ReasonKind.NEW_FUNCTION:
            new: Reason | None = _new_function(r, defined_at)
        else:
            new = _eqx(r, p, key.entries, seen_optax) if p is not None else r
        if new is not None:
            out.append(new)
    return out


def _eqx(r: Reason, p: Path, entries: dict[Path, Entry], seen_optax: set[Path]) -> Reason | None:
    entry = entries.get(p)
    parent = entries.get(p[:-1]) if len(p) > 1 else None
    optax = _optax_owner(p, entries)
    if optax is not None:
        if optax in seen_optax:
            return None  # one reason for the optimizer, not one per closure
        seen_optax.add(optax)
        path = render_path(optax)
        tname = entries[optax].type_name
        return dataclasses.replace(
            _reason(
                ReasonKind.IDENTITY_STATIC, r.argument, path, f"{tname} built earlier",
                f"a new {tname}", OPTAX_MSG.words(path=path), OPTAX_FIX,
                fix_kind=FixKind.EQX_OPTAX, subject=SubjectKind.OPTAX_TRANSFORM,
            ),
            where=optax,
        )  # fmt: skip
    owner = _node_class(parent)
    attr = str(p[-1][1])
    if r.kind == ReasonKind.SHAPE and owner is not None and is_eqx_module_class(owner):
        return _with_fix(r, FixKind.PARAM_SHAPE, PARAM_SHAPE_FIX)
    static = entry.static if entry is not None else None
    if static is None:
        return r
    value = static.value()
    if r.kind == ReasonKind.STATIC_VALUE and isinstance(value, bool) and attr == "inference":
        if owner is None or not is_eqx_module_class(owner):  # `predict(model, x, inference)`
            return _with_fix(
                r,
                FixKind.EQX_MODE_ARGUMENT,
                MODE_ARGUMENT_FIX,
                message=MODE_ARGUMENT_MSG.as_written(path=r.path, before=r.before, after=r.after),
                expected=True,
            )
        return _with_fix(
            r,
            FixKind.EQX_MODE,
            MODE_FIX,
            message=MODE_MSG.as_written(path=r.path, before=r.before, after=r.after),
            expected=True,  # inference=True / False: each mode compiles once
        )
    if r.kind == ReasonKind.STATIC_VALUE and owner is not None and is_eqx_module_class(owner):
        if _is_library_class(owner):  # eqx.nn.Linear(in_features=3) vs 4
            layer = f"eqx.nn.{owner.__name__}"
            msg = LAYER_MSG.as_written(path=r.path, layer=layer, before=r.before, after=r.after)
            return _with_fix(r, FixKind.LAYER, LAYER_FIX.as_written(attr=attr), message=msg)
        if _is_static_field(owner, attr):
            fk, fix = (
                (FixKind.EQX_FIELD_NUMBER, FIELD_NUMBER_FIX)
                if _is_number(value)
                else (FixKind.EQX_FIELD, FIELD_FIX)
            )
            return _with_fix(
                r,
                fk,
                fix.as_written(path=r.path, attr=attr),
                message=FIELD_MSG.as_written(path=r.path, before=r.before, after=r.after),
            )
    if r.kind == ReasonKind.STATIC_VALUE and _is_number(value):
        root = p[0][1] if p and p[0][0] == "arg" else None
        if owner is not None and is_eqx_module_class(owner) and isinstance(root, str):
            fk, fix = (  # a Module's field, set where the model is built or updated
                FixKind.EQX_SCALAR_FIELD,
                SCALAR_FIELD_FIX.as_written(
                    root=root,
                    rest=render_path(p[1:]),
                    attr=attr,
                    dtype="jnp.int32" if isinstance(value, int) else "jnp.float32",
                ),
            )
        elif (
            owner is not None
            and dataclasses.is_dataclass(owner)
            and isinstance(root, str)
            and len(p) == 2
            and attr.isidentifier()
        ):  # a field of a dataclass argument (a flax.struct.dataclass state): rebuilt
            new = f"jnp.asarray({r.path})"
            replace = (
                f"{root}.replace({attr}={new})"
                if callable(getattr(owner, "replace", None))
                else f"dataclasses.replace({root}, {attr}={new})"
            )
            fk, fix = (
                FixKind.EQX_SCALAR_DATACLASS,
                SCALAR_DATACLASS_FIX.as_written(
                    cls=owner.__name__, attr=attr, root=root, replace=replace
                ),
            )
        else:
            fk, fix = FixKind.EQX_SCALAR, SCALAR_FIX.as_written(expr=r.path)
        return _with_fix(
            r,
            fk,
            fix,
            message=SCALAR_MSG.as_written(path=r.path, before=r.before, after=r.after),
            flow="unchecked",  # the trace's program tells whether it can be an array
        )
    if r.kind == ReasonKind.STATIC_VALUE:
        return _with_fix(
            r,
            FixKind.EQX_STATIC,
            STATIC_FIX.as_written(path=r.path),
            message=STATIC_MSG.as_written(path=r.path, before=r.before, after=r.after),
        )
    if r.kind == ReasonKind.IDENTITY_STATIC and owner is not None and is_eqx_module_class(owner):
        return _module_identity(r, attr, value, owner)
    return r


def _new_function(r: Reason, defined_at: str) -> Reason:
    return _with_fix(
        r,
        FixKind.EQX_NEW_FUNCTION,
        NEW_FUNCTION_FIX,
        message=NEW_FUNCTION_MSG.as_written(name=r.path, defined_at=defined_at),
    )


def _module_identity(r: Reason, attr: str, value: Any, owner: Any) -> Reason:
    if isinstance(value, functools.partial):
        func = getattr(value.func, "__name__", "f")
        desc = "a functools.partial"
        fk, fix = (
            FixKind.EQX_MODULE_PARTIAL,
            MODULE_PARTIAL_FIX.as_written(upper=attr.upper(), func=func, attr=attr),
        )
    elif callable(value) and hasattr(value, "__code__"):
        name = getattr(value, "__name__", attr)
        lam = name == "<lambda>"
        desc = (
            "a lambda"
            if lam
            else "a nested function (closure)"
            if "<locals>" in getattr(value, "__qualname__", "")
            else "a function"
        )
        fname = attr if lam else name
        if _is_library_class(owner):  # eqx.Partial(lambda ...): the user builds it, not __init__
            cls = _library_name(owner)
            fk = FixKind.EQX_MODULE_LIBRARY_FUNCTION
            call = _library_call(owner, cls, attr, fname)
            fix = MODULE_LIBRARY_FUNCTION_FIX.as_written(name=fname, cls=cls, call=call)
        else:
            fk, fix = (
                FixKind.EQX_MODULE_FUNCTION,
                MODULE_FUNCTION_FIX.as_written(name=fname, attr=attr),
            )
    else:
        return r
    return _with_fix(r, fk, fix, message=MODULE_IDENTITY_MSG.as_written(path=r.path, desc=desc))


def _optax_owner(p: Path, entries: dict[Path, Entry]) -> Path | None:
    """The path of the optax transform ``p`` sits in, if any."""
    for i in range(len(p) - 1, 0, -1):
        e = entries.get(p[:i])
        if e is not None and e.kind == EntryKind.NODE and "GradientTransformation" in e.type_name:
            return p[:i]
    return None


def _node_class(e: Entry | None) -> Any:
    if e is None or e.kind != EntryKind.NODE or e.type_ref is None:
        return None
    return e.type_ref()


def _eqx_module() -> Any:
    """equinox, if the program imported it (jitlens never imports it)."""
    return sys.modules.get("equinox")


def _library_name(owner: Any) -> str:
    """``owner`` as the program spells it: ``eqx.Partial``, ``eqx.nn.MLP``, or its bare name."""
    eqx, name = _eqx_module(), owner.__name__
    if getattr(eqx, name, None) is owner:
        return f"eqx.{name}"
    if getattr(getattr(eqx, "nn", None), name, None) is owner:
        return f"eqx.nn.{name}"
    return name


def _library_call(owner: Any, cls: str, attr: str, name: str) -> str:
    """The call that builds ``owner`` with ``name`` as its field ``attr``: positional when
    ``attr`` is the constructor's first parameter (``eqx.Partial(func, ...)``), else by keyword
    (``eqx.nn.MLP(..., activation=act)``), as equinox's own signature names it."""
    import inspect

    try:
        params = list(inspect.signature(owner).parameters)
    except (TypeError, ValueError):
        params = []
    if attr in params[1:]:
        return f"{cls}(..., {attr}={name})"
    return f"{cls}({name}, ...)"


def _is_library_class(cls: Any) -> bool:
    return (getattr(cls, "__module__", "") or "").startswith("equinox.")


def _is_static_field(cls: Any, name: str) -> bool:
    try:
        return any(
            f.name == name and f.metadata.get("static", False) for f in dataclasses.fields(cls)
        )
    except TypeError:
        return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _with_fix(r: Reason, fix_kind: FixKind, fix: Words | Template, **changes: Any) -> Reason:
    """``r`` with another fix made from the ``fix_kind`` template (as written: not capped),
    its words still unmade."""
    return r.replace(fix=fix, fix_kind=fix_kind, **changes)
