"""The words of every reason: templates for messages and fixes, one per cause.

Each builder returns a :class:`Reason` whose message says what changed and why JAX cares, and
whose fix is a concrete change that works in the installed jax/flax (substitutions are checked
before they are offered, see ``_identity_fix``). Messages and fixes are capped at 240 characters.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .code import callable_expr, identifier, placement_code
from .kinds import Fact, FixKind, ReasonKind, SubjectKind
from .kinds import FixKind as K
from .report import Reason

LIMIT = 240

NEW_FUNCTION_MSG = (
    "{name} is a new {kind} object: its first call compiled again, though {count} earlier "
    "wrapper(s) of the same code (defined at {defined_at}) already compiled{equal}."
)
NEW_FUNCTION_FIX = (
    "Create the jitted function once, outside the loop or the function called repeatedly "
    "(e.g. `{name}_jit = {kind}({expr})` at module level), and reuse it."
)
CLOSURE_FIX = (
    "Define `{name}` once at module level with {free} as parameters, jit it once, and pass "
    "{free} on every call; jitting the inner function once as it is would freeze their first values."
)
NEW_LAMBDA_FIX = (
    "Define the function once (`def {name}(...)` at module level, or `{name}_jit = jax.jit(...)` "
    "before the loop) and jit it once; a lambda or partial built per call is a new function each time."
)
SHAPE_MSG = "{path} changed shape {before} -> {after}; every distinct shape is compiled separately."
SHAPE_FIX = (
    "Keep shapes fixed: pad smaller batches to the largest shape (and mask the padding), or bucket "
    "lengths to a few sizes so each compiles once."
)
DTYPE_MSG = "{path} changed dtype {before} -> {after}; each dtype is a separate compilation."
DTYPE_FIX = (
    "Make `{arg}` one dtype where it is created: `jnp.asarray(..., jnp.{dtype})` (the wider of "
    "the two, so no value is rounded), or write the literal in that type (`1.0`, not `1`)."
)
WEAK_MSG = (
    "{path} changed weak type {before} -> {after}: a Python scalar is weakly typed, a jax.Array "
    "(e.g. the jitted output fed back) is not, and the two are different keys."
)
WEAK_FIX = (
    "Give `{arg}` one type on every call: where the Python number is made (a loop carry's "
    "initial value, a hyper-parameter), type it: `{arg} = jnp.asarray({arg}, jnp.{dtype})`."
)
#: ``WEAK_FIX`` where ``{arg} = ...`` cannot be written (an item of a tuple): the value, not
#: the assignment.
WEAK_VALUE_FIX = (
    "Give `{arg}` one type on every call: where the Python number is made (a loop carry's "
    "initial value, a hyper-parameter), type it: `jnp.asarray(value, jnp.{dtype})`."
)
VAR_WEAK_FIX = (
    "Create `{attr}` typed where `__init__` makes it, `self.{attr} = {var}(jnp.asarray(value, "
    "jnp.{dtype}))`, not from a Python number (weakly typed until its first update); it stays "
    "a Variable."
)
VAR_ASSIGN_FIX = (
    "Where a Python number is written into it after the compile, write a typed value: "
    "`{code}[...] = jnp.asarray(value, jnp.{dtype})`."
)
SHARDING_MSG = "{path} arrived with a different sharding/placement: {before} -> {after}."
SHARDING_FIX = (
    "Place `{arg}` one way for every call, once, before the loop, e.g. as this call has it: "
    "`{target} = jax.device_put({target}, {placement})`{note}.{why}"
)
SHARDING_WHY = " A jitted step that returns it placed otherwise than it came in does this once."
STATIC_MSG = "{what} changed value {before} -> {after}; statics are part of the cache key, so each new value compiles again."
STATIC_GRAPH_FIX = (
    "If it changes during training, make it state: `self.{attr} = nnx.Variable(jnp.array({before}))` "
    "and update it with `self.{attr}[...] = ...`; else keep it constant."
)
STATIC_ARG_FIX = (
    "Pass `{arg}` as a traced argument (drop it from static_argnums/static_argnames) if it is a "
    "number that changes; keep statics for a few fixed values."
)
STATIC_AUX_FIX = "Keep `{path}` constant between calls, or make the changing field a pytree child (data), not aux data."
IDENTITY_MSG = "{what} is {desc}, which compares by identity: {consequence}."
CLASS_MSG = (
    "{path} is an instance of a class {name} defined again (a new class object, e.g. a class "
    "statement inside a factory function); classes compare by identity."
)
CLASS_FIX = "Define `class {name}` once at module level and pass its configuration to `__init__`."
GRAPH_ADDED_MSG = "{path} ({what}) was {verb} the model's graph since the last compile; the graph structure is part of the key."
SOW_FIX = "Pop intermediates before the jitted function returns: `nnx.pop({arg}, nnx.Intermediate)` (or use `nnx.capture`)."
GRAPH_FIX = (
    "Create `{path}` in `__init__` as what it will hold later (the module or Variable itself, "
    "not None: nnx rejects that swap) and only update its values; each structure compiles once."
)
GRAPH_KIND_MSG = "{path} changed from {before} to {after} in the model's graph; the graph structure is part of the key."
GRAPH_KIND_FIX = "Keep `{path}` the same kind of thing on every call (e.g. always an nnx.Variable, or always a static), assigned in `__init__`."
PYTREE_KEY_MSG = (
    "{path} ({what}) was {verb} the argument's pytree; its structure is part of the key."
)
PYTREE_KEY_FIX = "Pass the same structure on every call: always provide `{path}` (use a neutral value), or never."
PYTREE_KIND_MSG = "{path} changed from {before} to {after}; the pytree structure (None vs array, container type) is part of the key."
NONE_FIX = "Always pass an array for `{path}` (e.g. an all-ones mask or zeros) instead of None, so the structure never changes."
PYTREE_KIND_FIX = "Pass `{path}` as the same kind of value on every call."
VAR_META_MSG = "{path} ({var}) changed metadata `{key}`: {before} -> {after}; Variable metadata is part of the graph (the key)."
VAR_META_FIX = "Don't write changing values into Variable metadata (`{key}`); keep them in an nnx.Variable of their own, e.g. `self.{key} = nnx.Variable(jnp.array(...))`."
ARG_MSG = "argument `{arg}` was {verb} this call; the set of arguments is part of the key."
ARG_FIX = (
    "Pass the same arguments on every call (give `{arg}` a default value that you always pass)."
)
SIGNATURE_MSG = "argument `{arg}` was passed {after}, before {before}; JAX keys positional and keyword arguments differently."
SIGNATURE_FIX = (
    "Pass `{arg}` the same way on every call (always by keyword, or always by position)."
)
CONFIG_MSG = (
    "JAX configuration `{name}` changed {before} -> {after}; the config is part of every cache key."
)
CONFIG_FIX = "Set `{name}` once at start-up (or keep the same context manager around every call)."
CLEARED_MSG = "The function's compilation cache was cleared (clear_cache() / jax.clear_caches()) since the last compile."
CLEARED_FIX = "Don't clear JAX caches between calls of a function you keep using."
UNKNOWN_MSG = "{path} differs ({before} -> {after}) in a way jitlens cannot classify."
UNKNOWN_FIX = (
    "If this retrace is unexpected, please report it to jitlens with the two values; it stops "
    "once {path} is identical between calls."
)


def with_article(noun: str) -> str:
    """``noun`` with its indefinite article: ``an int``, ``a list``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _cap(s: str) -> str:
    """``s`` on one line, at most ``LIMIT`` characters: cut after the last whole sentence or
    clause that fits, outside code (backticks), so that a fix is not cut mid-code."""
    s = " ".join(s.split())
    if len(s) <= LIMIT:
        return s
    ends = [
        i
        for i, c in enumerate(s[: LIMIT - 2])
        if c in ".;," and s[i + 1 : i + 2] == " " and s[:i].count("`") % 2 == 0
    ]
    if ends and ends[-1] > LIMIT // 2:
        return s[: ends[-1]] + (" …" if s[ends[-1]] != "." else ".")
    cut = LIMIT - 1
    if s[:cut].count("`") % 2:  # inside code: stop before it
        cut = max(s.rindex("`", 0, cut), LIMIT // 3)
    return s[:cut].rstrip() + "…"


def _reason(
    kind: str,
    arg: str,
    path: str,
    before: str,
    after: str,
    message: str,
    fix: str,
    *,
    fix_kind: FixKind = FixKind.UNSET,
    subject: SubjectKind = SubjectKind.UNSET,
    facts: tuple[Fact, ...] = (),
) -> Reason:
    """A reason with its words capped; ``fix_kind`` names the template ``fix`` was made from."""
    return Reason(
        kind, arg, path, before, after, _cap(message), _cap(fix),
        subject=subject, fix_kind=fix_kind, facts=facts,
    )  # fmt: skip


def with_fix(r: Reason, fix_kind: FixKind, fix: str, **changes: Any) -> Reason:
    """``r`` with another fix (and any other ``changes``): the words and the template that made
    them travel together."""
    return dataclasses.replace(r, fix=_cap(fix), fix_kind=fix_kind, **changes)


def _arg_or_path(arg: str, path: str) -> str:
    return path or arg


# ---------------------------------------------------------------- new function


def new_function(
    name: str,
    kind: str,
    defined_at: str,
    count: int,
    equal: bool,
    is_lambda: bool,
    free: tuple[str, ...] = (),
) -> Reason:
    msg = NEW_FUNCTION_MSG.format(
        name=f"`{name}`",
        kind=kind,
        count=count,
        defined_at=defined_at,
        equal=" this very key" if equal else "",
    )
    if free:  # it reads values of the function that builds it: they become arguments
        fk, fix = (
            K.CLOSURE,
            CLOSURE_FIX.format(
                name=name if name != "<lambda>" else "step_fn",
                free=", ".join(f"`{v}`" for v in free[:4]),
            ),
        )
    elif is_lambda:
        fk, fix = K.NEW_LAMBDA, NEW_LAMBDA_FIX.format(name="step_fn")
    else:
        fk = K.NEW_FUNCTION
        fix = NEW_FUNCTION_FIX.format(name=identifier(name), expr=callable_expr(name), kind=kind)
    subject = SubjectKind.LAMBDA if is_lambda else SubjectKind.WRAPPER
    return _reason(
        ReasonKind.NEW_FUNCTION, "", name, f"{count} earlier wrapper(s)", "new wrapper", msg, fix,
        fix_kind=fk, subject=subject,
    )  # fmt: skip


NEW_PARTIAL_MSG = (
    "`{name}` is jitted through a new functools.partial each time; each new partial is a new "
    "function to jax.jit, so it compiles again ({count} earlier wrapper(s) of `{name}`, defined at {defined_at})."
)
NEW_PARTIAL_FIX = (
    "Jit `{name}` once and pass {bound} as arguments instead of binding them in a partial "
    "(list them in static_argnames if they must stay static)."
)


def new_partial(name: str, defined_at: str, count: int, partial: Any) -> Reason:
    names = [f"`{k}`" for k in getattr(partial, "keywords", {})] or ["the bound values"]
    if getattr(partial, "args", ()):
        names.append(f"{len(partial.args)} positional value(s)")
    return _reason(
        ReasonKind.NEW_FUNCTION, "", name, f"{count} earlier wrapper(s)", "new partial",
        NEW_PARTIAL_MSG.format(name=name, count=count, defined_at=defined_at),
        NEW_PARTIAL_FIX.format(name=name, bound=", ".join(names)),
        fix_kind=K.NEW_PARTIAL, subject=SubjectKind.PARTIAL,
    )  # fmt: skip


# ---------------------------------------------------------------- avals


PARAM_SHAPE_FIX = (
    "Expected once per architecture: parameter shapes follow the layer sizes. If the models "
    "should be the same, build them with the same sizes."
)
LAYER_MSG = (
    "`{path}` of {layer} changed {before} -> {after}: a differently configured layer is a "
    "different model, compiled separately."
)
LAYER_FIX = (
    "Expected once per configuration; if the models should be the same, build them with the "
    "same arguments (here `{attr}`)."
)


VMAP_SHAPE_MSG = (
    "{path} is batched by jax.vmap (axis {axis}) and the batched shape changed {before} -> "
    "{after}: the function is traced per example but compiled per batch size."
)


def shape(
    arg: str,
    path: str,
    before: str,
    after: str,
    in_graph: bool = False,
    batch_axis: int | None = None,
) -> Reason:
    # the same words for every shape, so that a run of shape retraces folds into one
    fix, fk = (PARAM_SHAPE_FIX, K.PARAM_SHAPE) if in_graph else (SHAPE_FIX, K.SHAPE)
    facts = (Fact.IN_GRAPH,) if in_graph else ()
    if batch_axis is not None:
        msg = VMAP_SHAPE_MSG.format(path=f"`{path}`", axis=batch_axis, before=before, after=after)
        facts = (*facts, Fact.BATCHED)
    else:
        msg = SHAPE_MSG.format(path=f"`{path}`", before=before, after=after)
    return _reason(
        ReasonKind.SHAPE, arg, path, before, after, msg, fix,
        fix_kind=fk, subject=SubjectKind.ARRAY, facts=facts,
    )  # fmt: skip


def layer_config(arg: str, path: str, layer: str, before: str, after: str) -> Reason:
    attr = path.rsplit(".", 1)[-1]
    return _reason(
        ReasonKind.STATIC_VALUE, arg, path, before, after,
        LAYER_MSG.format(path=path, layer=f"nnx.{layer}", before=before, after=after),
        LAYER_FIX.format(attr=attr),
        fix_kind=K.LAYER, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


KEY_FIX = (
    "Use one kind of PRNG key everywhere: typed keys (`jax.random.key(0)`) or legacy uint32 ones "
    "(`jax.random.PRNGKey(0)`); convert with `jax.random.key_data` / `jax.random.wrap_key_data`."
)


def dtype(arg: str, path: str, before: str, after: str, new_dtype: str, old_dtype: str) -> Reason:
    if "key<" in old_dtype + new_dtype:
        fk, fix = K.KEY, KEY_FIX
    else:
        fk, fix = K.DTYPE, DTYPE_FIX.format(arg=path, dtype=_wider(old_dtype, new_dtype))
    return _reason(
        ReasonKind.DTYPE, arg, path, before, after,
        DTYPE_MSG.format(path=f"`{path}`", before=before, after=after), fix,
        fix_kind=fk, subject=SubjectKind.ARRAY,
    )  # fmt: skip


def weak_type(
    arg: str,
    path: str,
    before: str,
    after: str,
    dtype: str,
    now_weak: bool,
    variable: str = "",
    code: str | None = None,
) -> Reason:
    """``variable``: the Variable's class (``nnx.Variable``) when the value is one's: the fix
    keeps it a Variable instead of replacing it with an array. ``now_weak``: the direction;
    a typed Variable that became weak had a Python number assigned after its compile, and the
    fix goes to that assignment (``code``: the path as the user writes it, "" when it cannot
    be assigned, e.g. an item of a tuple), not to its creation.
    """
    if variable and now_weak:
        fk, fix = K.VAR_ASSIGN, VAR_ASSIGN_FIX.format(code=code or path, dtype=_jnp_dtype(dtype))
    elif variable and "." in path:
        fk, fix = (
            K.VAR_WEAK,
            VAR_WEAK_FIX.format(
                attr=path.rsplit(".", 1)[-1], var=variable, dtype=_jnp_dtype(dtype)
            ),
        )
    elif code is None or code:
        fk, fix = K.WEAK, WEAK_FIX.format(arg=path, dtype=_jnp_dtype(dtype))
    else:  # ``path = ...`` cannot be written (inside a tuple): type the value where it is made
        fk, fix = K.WEAK_VALUE, WEAK_VALUE_FIX.format(arg=path, dtype=_jnp_dtype(dtype))
    return _reason(
        ReasonKind.WEAK_TYPE, arg, path, before, after,
        WEAK_MSG.format(path=f"`{path}`", before=before, after=after), fix, fix_kind=fk,
        subject=SubjectKind.ARRAY,
    )  # fmt: skip


#: ``Aval.sharding_type`` of an array placed by a mesh and a partition spec.
NAMED_SHARDING = "NamedSharding"
_PLACED = {NAMED_SHARDING: SubjectKind.NAMED_SHARDING}


def _fits(template: str, extra: str, **fields: str) -> str:  # ``{why}``: if there is room
    full = template.format(why=extra, **fields)
    return full if len(full) <= LIMIT else template.format(why="", **fields)


def sharding(
    arg: str, path: str, before: str, after: str, after_type: str = "", target: str = ""
) -> Reason:
    placement, note = placement_code(after) or placement_code(before) or ("jax.devices()[0]", "")
    return _reason(
        ReasonKind.SHARDING, arg, path, before, after,
        SHARDING_MSG.format(path=f"`{path}`", before=before, after=after),
        _fits(SHARDING_FIX, SHARDING_WHY, arg=path, target=target or path, placement=placement, note=note),
        fix_kind=K.SHARDING, subject=_PLACED.get(after_type, SubjectKind.ARRAY),
    )  # fmt: skip


_DTYPES = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
    "i8": "int8",
    "u8": "uint8",
    "u32": "uint32",
    "bool": "bool_",
    "i16": "int16",
}


def _jnp_dtype(short: str) -> str:
    return _DTYPES.get(short, short)


def _wider(a: str, b: str) -> str:
    """The dtype both values fit in (``int32`` and ``float32`` -> ``float32``)."""
    try:
        import jax.numpy as jnp

        return str(jnp.promote_types(_jnp_dtype(a).rstrip("_"), _jnp_dtype(b).rstrip("_")))
    except Exception:
        return _jnp_dtype(b)


def class_redefined(arg: str, path: str, name: str) -> Reason:
    return _reason(
        ReasonKind.IDENTITY_STATIC, arg, path, f"<class '{name}'> (earlier definition)",
        f"<class '{name}'> (new definition)",
        CLASS_MSG.format(path=f"`{path}`", name=f"`{name}`"),
        CLASS_FIX.format(name=name.rsplit(".", 1)[-1]), fix_kind=K.CLASS,
        subject=SubjectKind.CLASS_REDEFINED,
    )  # fmt: skip


def graph_attribute(arg: str, path: str, what: str, *, added: bool, var_type: str = "") -> Reason:
    verb = "added to" if added else "removed from"
    if var_type == "Intermediate" or "Intermediate" in what:
        fk, fix = K.SOW, SOW_FIX.format(arg=arg)
    else:
        fk, fix = K.GRAPH, GRAPH_FIX.format(path=path)
    return _reason(
        ReasonKind.GRAPH_STRUCTURE, arg, path, "absent" if added else what,
        what if added else "absent",
        GRAPH_ADDED_MSG.format(path=f"`{path}`", what=what, verb=verb), fix, fix_kind=fk,
        facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


OPTAX_STATE_FIX = (
    "Expected once per optimizer build: optax makes `{path}` ({made}), not "
    "your code, and another optimizer makes another structure. Reuse one optimizer (the same "
    "`tx`) to share one compile."
)


OPTAX_KIND_FIX = (
    "Expected once per optimizer build: `{path}` is another optimizer, not only other "
    "hyper-parameters (its state `{state}` changed structure too); reuse one optimizer object "
    "to share one compile."
)


LIBRARY_MADE_FIX = (
    "Expected once per configuration: {cls} makes `{path}` from the arguments it is built "
    "with{args}, not your code; build every {cls} with the same arguments to share one compile."
)


def library_made(r: Reason, cls: str, args: str) -> Reason:
    """``r`` (a structure change) inside a library layer: the layer's arguments make it."""
    fix = LIBRARY_MADE_FIX.format(cls=cls, path=r.path, args=args)
    return with_fix(r, K.LIBRARY_MADE, fix, expected=False).with_facts(Fact.LIBRARY_MADE)


def optax_kind(r: Reason, state: str) -> Reason:
    """``r`` (a new optax transform) when its state's structure changed too: a sweep of
    hyper-parameters (``inject_hyperparams``) would not remove this compile."""
    return with_fix(
        r, K.OPTAX_KIND, OPTAX_KIND_FIX.format(path=r.path, state=state), expected=False
    )


def optax_state(r: Reason, cls: str) -> Reason:
    """``r`` (a structure change) said of state optax makes: whose code it is, what to reuse.

    ``cls``: the optax state class seen there, or "" for state an ``nnx.Optimizer`` holds."""
    made = f"`{cls}`, from `tx.init`" if cls else "from `tx.init`, kept by nnx.Optimizer"
    fix = OPTAX_STATE_FIX.format(path=r.path, made=made)
    return with_fix(r, K.OPTAX_STATE, fix, expected=False).with_facts(Fact.OPTAX_MADE)


NODE_TYPE_MSG = (
    "{path} is now {after}, before {before}: a different class is a different graph (cache key)."
)
NODE_TYPE_FIX = (
    "Expected once per class passed. If a factory builds the model, define each class once at "
    "module level, so the same class comes back."
)


VAR_VALUE_MSG = "{path} ({var}) holds a value whose structure changed {before} -> {after} (e.g. Module.sow appending every call); its structure is part of the key."


def variable_value_structure(arg: str, path: str, var: str, before: str, after: str) -> Reason:
    if var == "Intermediate":
        fk, fix = K.SOW, SOW_FIX.format(arg=arg)
    else:
        fk, fix = K.GRAPH, GRAPH_FIX.format(path=path)
    return _reason(
        ReasonKind.GRAPH_STRUCTURE, arg, path, before, after,
        VAR_VALUE_MSG.format(path=f"`{path}`", var=var, before=before, after=after), fix,
        fix_kind=fk, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


def node_type_change(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        ReasonKind.GRAPH_STRUCTURE,
        arg,
        path,
        before,
        after,
        NODE_TYPE_MSG.format(
            path=f"`{path}`", before=with_article(before), after=with_article(after)
        ),
        NODE_TYPE_FIX,
        fix_kind=K.NODE_TYPE,
        facts=(Fact.IN_GRAPH,),
    )


def graph_kind_change(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        ReasonKind.GRAPH_STRUCTURE, arg, path, before, after,
        GRAPH_KIND_MSG.format(path=f"`{path}`", before=before, after=after),
        GRAPH_KIND_FIX.format(path=path), fix_kind=K.GRAPH_KIND, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


def pytree_key(arg: str, path: str, what: str, *, added: bool) -> Reason:
    verb = "added to" if added else "removed from"
    return _reason(
        ReasonKind.PYTREE_STRUCTURE, arg, path, "absent" if added else what,
        what if added else "absent",
        PYTREE_KEY_MSG.format(path=f"`{path}`", what=what, verb=verb),
        PYTREE_KEY_FIX.format(path=path), fix_kind=K.PYTREE_KEY,
    )  # fmt: skip


def pytree_kind_change(arg: str, path: str, before: str, after: str, *, none: bool) -> Reason:
    """``none``: one side is None (the fix: always pass an array)."""
    fk, fix = (K.NONE, NONE_FIX) if none else (K.PYTREE_KIND, PYTREE_KIND_FIX)
    return _reason(
        ReasonKind.PYTREE_STRUCTURE, arg, path, before, after,
        PYTREE_KIND_MSG.format(path=f"`{path}`", before=before, after=after),
        fix.format(path=path), fix_kind=fk,
    )  # fmt: skip


def variable_metadata(arg: str, path: str, key: str, before: str, after: str, var: str) -> Reason:
    return _reason(
        ReasonKind.VARIABLE_METADATA, arg, f"{path}.{key}" if key else path, before, after,
        VAR_META_MSG.format(path=f"`{path}`", var=var, key=key, before=before, after=after),
        VAR_META_FIX.format(key=key), fix_kind=K.VAR_META, facts=(Fact.IN_GRAPH,),
    )  # fmt: skip


def argument_added_removed(arg: str, added: bool) -> Reason:
    return _reason(
        ReasonKind.SIGNATURE, arg, arg, "absent" if added else "passed",
        "passed" if added else "absent",
        ARG_MSG.format(arg=arg, verb="added in" if added else "left out of"),
        ARG_FIX.format(arg=arg), fix_kind=K.ARG,
    )  # fmt: skip


def signature(arg: str, before: str, after: str) -> Reason:
    return _reason(
        ReasonKind.SIGNATURE, arg, arg, before, after,
        SIGNATURE_MSG.format(arg=arg, before=before, after=after),
        SIGNATURE_FIX.format(arg=arg), fix_kind=K.SIGNATURE,
    )  # fmt: skip


JIT_OPTION_MSG = "The jit wrapper's `{name}` differs from the earlier wrapper's: {before} -> {after}; each wrapper's options are part of its cache."
JIT_OPTION_FIX = "Create one jitted function with the `{name}` you need and reuse it, instead of re-wrapping with different options."


def jit_option(name: str, before: str, after: str) -> Reason:
    placement = "sharding" in name or name in ("device", "backend")
    return _reason(
        ReasonKind.SHARDING if placement else ReasonKind.CONFIG, "", f"jit({name}=...)", before,
        after, JIT_OPTION_MSG.format(name=name, before=before, after=after),
        JIT_OPTION_FIX.format(name=name), fix_kind=K.JIT_OPTION,
    )  # fmt: skip


MESH_FIX = "Enter the mesh once around the whole loop (`with jax.set_mesh(mesh):`) so every call sees the same one."


def config(name: str, before: str, after: str) -> Reason:
    fk, fix = (K.MESH, MESH_FIX) if "mesh" in name else (K.CONFIG, CONFIG_FIX.format(name=name))
    return _reason(
        ReasonKind.CONFIG, "", name, before, after,
        CONFIG_MSG.format(name=name, before=before, after=after), fix, fix_kind=fk,
    )  # fmt: skip


def cache_cleared() -> Reason:
    return _reason(
        ReasonKind.CACHE_CLEARED, "", "", "compiled", "cleared", CLEARED_MSG, CLEARED_FIX,
        fix_kind=K.CLEARED,
    )  # fmt: skip


def unknown(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        ReasonKind.UNKNOWN, arg, path, before, after,
        UNKNOWN_MSG.format(path=f"`{path}`", before=before, after=after),
        UNKNOWN_FIX.format(path=path), fix_kind=K.UNKNOWN,
    )  # fmt: skip
