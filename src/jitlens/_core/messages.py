"""The words of every reason: templates for messages and fixes, one per cause.

Each builder returns a :class:`Reason` whose message says what changed and
why JAX cares, and whose fix is a concrete change that works in the installed
jax/flax (fixes that are substitutions are checked before they are offered,
see ``_identity_fix``). Messages and fixes are capped at 240 characters.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .report import Reason

LIMIT = 240

NEW_FUNCTION_MSG = (
    "{name} is a new {kind} object: its first call compiled again, though {count} earlier "
    "wrapper(s) of the same code (defined at {defined_at}) already compiled{equal}."
)
NEW_FUNCTION_FIX = (
    "Create the jitted function once, outside the loop or the function called repeatedly "
    "(e.g. `{name}_jit = {kind}({name})` at module level), and reuse it."
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
    "initial value, a hyper-parameter), make it a typed array with the same value, "
    "`{arg} = jnp.asarray({arg}, jnp.{dtype})`."
)
VAR_WEAK_FIX = (
    "Create `{attr}` typed where `__init__` makes it, `self.{attr} = {var}(jnp.asarray(value, "
    "jnp.{dtype}))`, not from a Python number (weakly typed until its first update); it stays "
    "a Variable."
)
SHARDING_MSG = "{path} arrived with a different sharding/placement: {before} -> {after}."
SHARDING_FIX = (
    "Place `{arg}` the same way on every call: `jax.device_put({arg}, sharding)` with one "
    "sharding for all calls, once, before the loop."
)
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
    kind: str, arg: str, path: str, before: str, after: str, message: str, fix: str
) -> Reason:
    return Reason(kind, arg, path, before, after, _cap(message), _cap(fix))


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
        fix = CLOSURE_FIX.format(
            name=name if name != "<lambda>" else "step_fn",
            free=", ".join(f"`{v}`" for v in free[:4]),
        )
    else:
        fix = (NEW_LAMBDA_FIX if is_lambda else NEW_FUNCTION_FIX).format(
            name=name.strip("<>") if not is_lambda else "step_fn", kind=kind
        )
    return _reason("new_function", "", name, f"{count} earlier wrapper(s)", "new wrapper", msg, fix)


DIFFERENT_FUNCTION_MSG = (
    "`{name}` calls a different function through `{free}` than its {count} earlier "
    "wrapper(s) ({before} -> {after}): a different function, compiled once on purpose."
)
DIFFERENT_FUNCTION_FIX = (
    "Expected once per function: nothing to fix. To run the same one again, keep this "
    "`{name}` and call it again rather than building a new one."
)


def different_function(name: str, count: int, free: str, before: str, after: str) -> Reason:
    """A new wrapper of the same code over different functions (three samplers' kernels)."""
    msg = DIFFERENT_FUNCTION_MSG.format(
        name=name, free=free, count=count, before=f"`{before}`", after=f"`{after}`"
    )
    r = _reason(
        "new_function", "", name, before, after, msg, DIFFERENT_FUNCTION_FIX.format(name=name)
    )
    return dataclasses.replace(r, expected=True)


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
        "new_function", "", name, f"{count} earlier wrapper(s)", "new partial",
        NEW_PARTIAL_MSG.format(name=name, count=count, defined_at=defined_at),
        NEW_PARTIAL_FIX.format(name=name, bound=", ".join(names)),
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
    fix = PARAM_SHAPE_FIX if in_graph else SHAPE_FIX
    if batch_axis is not None:
        msg = VMAP_SHAPE_MSG.format(path=f"`{path}`", axis=batch_axis, before=before, after=after)
    else:
        msg = SHAPE_MSG.format(path=f"`{path}`", before=before, after=after)
    return _reason("shape", arg, path, before, after, msg, fix)


def layer_config(arg: str, path: str, layer: str, before: str, after: str) -> Reason:
    attr = path.rsplit(".", 1)[-1]
    return _reason(
        "static_value", arg, path, before, after,
        LAYER_MSG.format(path=path, layer=f"nnx.{layer}", before=before, after=after),
        LAYER_FIX.format(attr=attr),
    )  # fmt: skip


KEY_FIX = (
    "Use one kind of PRNG key everywhere: typed keys (`jax.random.key(0)`) or legacy uint32 ones "
    "(`jax.random.PRNGKey(0)`); convert with `jax.random.key_data` / `jax.random.wrap_key_data`."
)


def dtype(arg: str, path: str, before: str, after: str, new_dtype: str, old_dtype: str) -> Reason:
    fix = (
        KEY_FIX
        if "key<" in old_dtype + new_dtype
        else DTYPE_FIX.format(arg=path, dtype=_wider(old_dtype, new_dtype))
    )
    return _reason(
        "dtype", arg, path, before, after,
        DTYPE_MSG.format(path=f"`{path}`", before=before, after=after), fix,
    )  # fmt: skip


def weak_type(
    arg: str,
    path: str,
    before: str,
    after: str,
    dtype: str,
    now_weak: bool,
    variable: str = "",
) -> Reason:
    """``variable``: the Variable's class (``nnx.Variable``) when the value is one's: the fix
    keeps it a Variable instead of replacing it with an array."""
    if variable and "." in path:
        fix = VAR_WEAK_FIX.format(
            attr=path.rsplit(".", 1)[-1], var=variable, dtype=_jnp_dtype(dtype)
        )
    else:
        fix = WEAK_FIX.format(arg=path, dtype=_jnp_dtype(dtype))
    return _reason(
        "weak_type",
        arg,
        path,
        before,
        after,
        WEAK_MSG.format(path=f"`{path}`", before=before, after=after),
        fix,
    )


def sharding(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        "sharding",
        arg,
        path,
        before,
        after,
        SHARDING_MSG.format(path=f"`{path}`", before=before, after=after),
        SHARDING_FIX.format(arg=path),
    )


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
        "identity_static",
        arg,
        path,
        f"<class '{name}'> (earlier definition)",
        f"<class '{name}'> (new definition)",
        CLASS_MSG.format(path=f"`{path}`", name=f"`{name}`"),
        CLASS_FIX.format(name=name.rsplit(".", 1)[-1]),
    )


def graph_attribute(arg: str, path: str, what: str, *, added: bool, var_type: str = "") -> Reason:
    verb = "added to" if added else "removed from"
    fix = (
        SOW_FIX.format(arg=arg)
        if var_type == "Intermediate" or "Intermediate" in what
        else GRAPH_FIX.format(path=path)
    )
    return _reason(
        "graph_structure",
        arg,
        path,
        "absent" if added else what,
        what if added else "absent",
        GRAPH_ADDED_MSG.format(path=f"`{path}`", what=what, verb=verb),
        fix,
    )


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
    return Reason(
        r.kind, r.argument, r.path, r.before, r.after, r.message,
        _cap(LIBRARY_MADE_FIX.format(cls=cls, path=r.path, args=args)),
    )  # fmt: skip


def optax_kind(r: Reason, state: str) -> Reason:
    """``r`` (a new optax transform) when its state's structure changed too: a sweep of
    hyper-parameters (``inject_hyperparams``) would not remove this compile."""
    return Reason(
        r.kind, r.argument, r.path, r.before, r.after, r.message,
        _cap(OPTAX_KIND_FIX.format(path=r.path, state=state)),
    )  # fmt: skip


def optax_state(r: Reason, cls: str) -> Reason:
    """``r`` (a structure change) said of state optax makes: whose code it is, what to reuse.

    ``cls``: the optax state class seen there, or "" for state an ``nnx.Optimizer`` holds."""
    made = f"`{cls}`, from `tx.init`" if cls else "from `tx.init`, kept by nnx.Optimizer"
    return Reason(
        r.kind, r.argument, r.path, r.before, r.after, r.message,
        _cap(OPTAX_STATE_FIX.format(path=r.path, made=made)),
    )  # fmt: skip


NODE_TYPE_MSG = (
    "{path} is now {after}, before {before}: a different class is a different graph (cache key)."
)
NODE_TYPE_FIX = (
    "Expected once per class passed. If a factory builds the model, define each class once at "
    "module level, so the same class comes back."
)


VAR_VALUE_MSG = "{path} ({var}) holds a value whose structure changed {before} -> {after} (e.g. Module.sow appending every call); its structure is part of the key."


def variable_value_structure(arg: str, path: str, var: str, before: str, after: str) -> Reason:
    fix = SOW_FIX.format(arg=arg) if var == "Intermediate" else GRAPH_FIX.format(path=path)
    return _reason(
        "graph_structure",
        arg,
        path,
        before,
        after,
        VAR_VALUE_MSG.format(path=f"`{path}`", var=var, before=before, after=after),
        fix,
    )


def node_type_change(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        "graph_structure",
        arg,
        path,
        before,
        after,
        NODE_TYPE_MSG.format(
            path=f"`{path}`", before=with_article(before), after=with_article(after)
        ),
        NODE_TYPE_FIX,
    )


def graph_kind_change(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        "graph_structure",
        arg,
        path,
        before,
        after,
        GRAPH_KIND_MSG.format(path=f"`{path}`", before=before, after=after),
        GRAPH_KIND_FIX.format(path=path),
    )


def pytree_key(arg: str, path: str, what: str, *, added: bool) -> Reason:
    verb = "added to" if added else "removed from"
    return _reason(
        "pytree_structure",
        arg,
        path,
        "absent" if added else what,
        what if added else "absent",
        PYTREE_KEY_MSG.format(path=f"`{path}`", what=what, verb=verb),
        PYTREE_KEY_FIX.format(path=path),
    )


def pytree_kind_change(arg: str, path: str, before: str, after: str) -> Reason:
    fix = NONE_FIX if "None" in (before, after) else PYTREE_KIND_FIX
    return _reason(
        "pytree_structure",
        arg,
        path,
        before,
        after,
        PYTREE_KIND_MSG.format(path=f"`{path}`", before=before, after=after),
        fix.format(path=path),
    )


def variable_metadata(arg: str, path: str, key: str, before: str, after: str, var: str) -> Reason:
    return _reason(
        "variable_metadata",
        arg,
        f"{path}.{key}" if key else path,
        before,
        after,
        VAR_META_MSG.format(path=f"`{path}`", var=var, key=key, before=before, after=after),
        VAR_META_FIX.format(key=key),
    )


def argument_added_removed(arg: str, added: bool) -> Reason:
    return _reason(
        "signature",
        arg,
        arg,
        "absent" if added else "passed",
        "passed" if added else "absent",
        ARG_MSG.format(arg=arg, verb="added in" if added else "left out of"),
        ARG_FIX.format(arg=arg),
    )


def signature(arg: str, before: str, after: str) -> Reason:
    return _reason(
        "signature",
        arg,
        arg,
        before,
        after,
        SIGNATURE_MSG.format(arg=arg, before=before, after=after),
        SIGNATURE_FIX.format(arg=arg),
    )


JIT_OPTION_MSG = "The jit wrapper's `{name}` differs from the earlier wrapper's: {before} -> {after}; each wrapper's options are part of its cache."
JIT_OPTION_FIX = "Create one jitted function with the `{name}` you need and reuse it, instead of re-wrapping with different options."


def jit_option(name: str, before: str, after: str) -> Reason:
    kind = "sharding" if "sharding" in name or name in ("device", "backend") else "config"
    return _reason(
        kind,
        "",
        f"jit({name}=...)",
        before,
        after,
        JIT_OPTION_MSG.format(name=name, before=before, after=after),
        JIT_OPTION_FIX.format(name=name),
    )


MESH_FIX = "Enter the mesh once around the whole loop (`with jax.set_mesh(mesh):`) so every call sees the same one."


def config(name: str, before: str, after: str) -> Reason:
    fix = MESH_FIX if "mesh" in name else CONFIG_FIX.format(name=name)
    return _reason(
        "config", "", name, before, after,
        CONFIG_MSG.format(name=name, before=before, after=after), fix,
    )  # fmt: skip


def cache_cleared() -> Reason:
    return _reason("cache_cleared", "", "", "compiled", "cleared", CLEARED_MSG, CLEARED_FIX)


def unknown(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        "unknown",
        arg,
        path,
        before,
        after,
        UNKNOWN_MSG.format(path=f"`{path}`", before=before, after=after),
        UNKNOWN_FIX.format(path=path),
    )
