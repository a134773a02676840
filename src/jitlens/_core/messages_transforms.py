"""The words for jits met through other transformations: pmaps, linen's ``nn.jit``, traces in traces.

The explainer diffs keys alike for every front-end; these builders reword the
reasons whose cause or fix reads differently when the jit is a ``jax.pmap`` /
``nnx.pmap`` (a function rebuilt per epoch, state handed back sharded over
the pmap's devices), a flax.linen ``nn.jit`` (a jitted class rebuilt inside a
parent's ``__call__``, the mutable collections of init and apply), or a
``jax.jit`` / ``eqx.filter_jit`` traced inside ``lax.scan``, ``jax.vmap`` or
``jax.grad`` (the enclosing transformation traces again when it is handed a
new function object). Every fix here is checked by ``tests/test_frontends_more.py``.
"""

from __future__ import annotations

import dataclasses

from .kinds import Fact, ReasonKind
from .kinds import FixKind as K
from .messages import _cap, with_fix
from .report import EXPECTED_FIX, Reason

PMAP_NEW_FUNCTION_MSG = (
    "`{name}` is a new function handed to {kind}: pmap caches its compiled code per function "
    "object, so it traced and compiled again though {count} earlier {kind}(s) of the same code "
    "(defined at {defined_at}) already compiled{equal}."
)
PMAP_CALL_FIX = (
    "Build the pmapped function once, before the loop: `p_{callee} = {kind}({callee}, "
    "in_axes=({axes}))`, and call `p_{callee}({args})`; a lambda built per epoch is a new function."
)
PMAP_NEW_FUNCTION_FIX = (
    "Build the pmapped function once, before the loop (`p_step = {kind}(step)`), and pass "
    "what it reads from outside{free} as arguments (`in_axes=None` for those)."
)
PMAP_STATIC_FIX = (
    "Pass `{path}` as an array argument (drop it from static_broadcasted_argnums, `in_axes=None` "
    "for it) if it is a number that changes; keep it static for a few fixed values."
)
PMAP_SHARDING_MSG = (
    "`{path}` came back from {kind} sharded over its devices; the first call got it {before}, "
    "and the two placements are different keys, so the second call compiled again."
)
PMAP_SHARDING_FIX = (
    "Place it as {kind} returns it, before the first call: `s = NamedSharding(Mesh("
    "jax.local_devices()[:n], ('{axis}',)), P('{axis}'))`, {put}{named}."
)
LINEN_NEW_CLASS_MSG = (
    "`nn.jit({cls})` is applied inside `{where}`: every call builds a new jitted class and a new "
    "jax.jit, so `{cls}` traced and compiled again though {count} earlier one(s) of the same "
    "code compiled{equal}."
)
LINEN_NEW_CLASS_FIX = (
    "Apply nn.jit once, at module level: `Jit{cls} = nn.jit({cls})`, and use `Jit{cls}(...)` in "
    "`{where}`; the jitted class then keeps its compiled cache across apply calls."
)
LINEN_MUTABLE_MSG = (
    "`{cls}` was called with other mutable collections ({before} -> {after}): nn.jit compiles "
    "once per set of mutable collections (init makes all of them mutable, apply none by default)."
)
LINEN_MUTABLE_FIX = (
    EXPECTED_FIX + " init and each apply `mutable=` setting compile once; keep one `mutable=` "
    "per call site so that it stays at one compile per mode."
)
LINEN_MUTABLE_PATH = "mutable"
LINEN_RNGS_MSG = (
    "`{cls}` was given other rng streams (`{path}`: {before} -> {after}): nn.jit passes the "
    "rngs of `apply(..., rngs=...)` in, and each set of stream names compiles once."
)
LINEN_RNGS_FIX = (
    EXPECTED_FIX + " each set of rng names passed to `apply` compiles once; pass the same "
    "`rngs=` names on every call (e.g. always a 'dropout' key) to stay at one compile."
)
LINEN_FIELD_MSG = (
    "`{path}` changed value {before} -> {after}: nn.jit keys its cache on a hash of the "
    "module's fields, so each new value compiles again."
)
LINEN_FIELD_FIX = (
    "Keep `{path}` constant across apply calls (each value compiles once), or pass it to "
    "`{method}` as an array argument (`jnp.asarray(...)`) so that it is traced."
)
LINEN_FIELDS_MSG = (
    "`{cls}`'s fields hash differently ({before} -> {after}): nn.jit keys its cache on a hash "
    "of the module's attributes, so a changed field compiles again."
)
LINEN_FIELDS_FIX = (
    "Keep the fields of `{cls}` constant across apply calls; pass what changes as an argument "
    "of `{method}` (an array, so that it is traced)."
)
NESTED_NEW_FUNCTION_MSG = (
    "`{name}` is a new {kind} object traced inside {outer}: {outer} caches what it traced per "
    "function object, so it traced again though {count} earlier wrapper(s) of the same code "
    "(defined at {defined_at}) already traced{equal}."
)
NESTED_NEW_FUNCTION_FIX = (
    "Create `{name}` once, outside the function that runs {outer} (at module level: "
    "`{name} = {kind}(...)`), and pass what it reads from there{free} as arguments."
)
NESTED_SHAPE_SUFFIX = " (traced inside {outer}: {outer} traced its body again)"
#: JAX state a transformation sets for its body (pmap's axis environment and mesh): part of
#: the key of every jit traced inside, and nothing the user set.
TRANSFORM_CONTEXT = frozenset({"axis_env_state", "abstract_mesh_context_manager"})
NESTED_CONTEXT_MSG = (
    "traced inside {outer}: {outer} sets JAX's `{path}` for its body and a jit's key holds it, "
    "so a jit called both outside and inside {outer} compiles once for each"
)
NESTED_CONTEXT_FIX = (
    "Expected once per context, each compile then reused; to compile once, call it only "
    "inside {outer} (or only outside)."
)


def _equal(equal: bool) -> str:
    return " this very key" if equal else ""


def _free(free: tuple[str, ...]) -> str:
    return f" ({', '.join(f'`{v}`' for v in free[:4])})" if free else ""


def pmap_new_function(
    r: Reason,
    kind: str,
    count: int,
    defined_at: str,
    equal: bool,
    call: tuple[str, tuple[tuple[str, bool], ...]] | None,
    free: tuple[str, ...],
) -> Reason:
    """A pmap of a function rebuilt per call (google/flax#663's lambda per epoch).

    ``call``: ``(callee, ((argument, read from outside), ...))`` when the
    function is one call of a named function (``lambda b: step(params, b)``).
    """
    msg = PMAP_NEW_FUNCTION_MSG.format(
        name=r.path, kind=kind, count=count, defined_at=defined_at, equal=_equal(equal)
    )
    if call is not None:
        callee, args = call
        axes = ", ".join("None" if outside else "0" for _name, outside in args)
        fk, fix = (
            K.PMAP_CALL,
            PMAP_CALL_FIX.format(
                callee=callee,
                kind=kind,
                axes=axes + ("," if len(args) == 1 else ""),
                args=", ".join(name for name, _outside in args),
            ),
        )
    else:
        fk, fix = K.PMAP_NEW_FUNCTION, PMAP_NEW_FUNCTION_FIX.format(kind=kind, free=_free(free))
    return with_fix(r, fk, fix, message=_cap(msg))


def pmap_static(r: Reason) -> Reason:
    """A ``static_broadcasted_argnums`` value that changed: the pmap's spelling of the fix."""
    return with_fix(r, K.PMAP_STATIC, PMAP_STATIC_FIX.format(path=r.path))


def pmap_sharding(r: Reason, kind: str, axis: str | None, root: str, nnx_state: bool) -> Reason:
    """State handed back by a pmap sharded over its devices, compiled again at the next call."""
    name = axis or "batch"
    put = (
        f"`nnx.update({root}, jax.device_put(nnx.state({root}), s))`"
        if nnx_state
        else f"`{r.argument} = jax.device_put({r.argument}, s)`"
    )
    fix = PMAP_SHARDING_FIX.format(
        kind=kind,
        axis=name,
        put=put,
        named="" if axis else f", with `axis_name='{name}'` in {kind}",
    )
    msg = PMAP_SHARDING_MSG.format(path=r.path, kind=kind, before=r.before)
    return with_fix(r, K.PMAP_SHARDING, fix, message=_cap(msg))


def linen_new_class(r: Reason, cls: str, where: str, count: int, equal: bool) -> Reason:
    """``nn.jit(Module)`` applied inside a parent's ``__call__`` (google/flax#3171)."""
    msg = LINEN_NEW_CLASS_MSG.format(cls=cls, where=where, count=count, equal=_equal(equal))
    fix = LINEN_NEW_CLASS_FIX.format(cls=cls, where=where)
    return with_fix(r, K.LINEN_NEW_CLASS, fix, path=cls, message=_cap(msg))


def linen_mutable(r: Reason, cls: str, before: str, after: str) -> Reason:
    msg = LINEN_MUTABLE_MSG.format(cls=cls, before=before, after=after)
    return Reason(
        ReasonKind.STATIC_VALUE,
        r.argument,
        LINEN_MUTABLE_PATH,
        before,
        after,
        _cap(msg),
        _cap(LINEN_MUTABLE_FIX),
        expected=True,  # init and apply compile once each
        fix_kind=K.LINEN_MUTABLE,
        where=r.where,
    )


def linen_rngs(r: Reason, cls: str) -> Reason:
    msg = LINEN_RNGS_MSG.format(cls=cls, path=r.path, before=r.before, after=r.after)
    return with_fix(r, K.LINEN_RNGS, LINEN_RNGS_FIX, message=_cap(msg), expected=True)


def linen_field(r: Reason, cls: str, method: str) -> Reason:
    """One field of an nn.jit module that changed value (the module hash changed with it)."""
    msg = LINEN_FIELD_MSG.format(path=r.path, before=r.before, after=r.after)
    fix = LINEN_FIELD_FIX.format(path=r.path, method=f"{cls}.{method}")
    return with_fix(r, K.LINEN_FIELD, fix, message=_cap(msg))


def linen_fields(r: Reason, cls: str, method: str) -> Reason:
    msg = LINEN_FIELDS_MSG.format(cls=cls, before=r.before, after=r.after)
    fix = LINEN_FIELDS_FIX.format(cls=cls, method=method)
    return with_fix(r, K.LINEN_FIELDS, fix, path=f"{cls} fields", message=_cap(msg))


def nested_new_function(
    r: Reason,
    name: str,
    kind: str,
    outer: str,
    count: int,
    defined_at: str,
    equal: bool,
    free: tuple[str, ...],
) -> Reason:
    """A jit made anew per call and traced inside ``lax.scan`` / ``jax.vmap`` / ``jax.grad``."""
    msg = NESTED_NEW_FUNCTION_MSG.format(
        name=name, kind=kind, outer=outer, count=count, defined_at=defined_at, equal=_equal(equal)
    )
    fix = NESTED_NEW_FUNCTION_FIX.format(name=name, kind=kind, outer=outer, free=_free(free))
    nested = with_fix(r, K.NESTED_NEW_FUNCTION, fix, path=name, message=_cap(msg))
    return nested.with_facts(Fact.NESTED)


#: The ``outer`` of a trace inside ``jax.vmap`` (``_compat.transforms_api``): a batched shape's
#: message (``messages.VMAP_SHAPE_MSG``) names it already.
VMAP = "jax.vmap"


def nested_context(r: Reason, outer: str) -> Reason:
    """Any other reason of a trace inside ``outer``: say where it happened (once)."""
    if Fact.NESTED in r.facts or (Fact.BATCHED in r.facts and outer == VMAP):
        return r
    if r.kind is ReasonKind.CONFIG and r.path in TRANSFORM_CONTEXT:  # the transformation's own
        msg = NESTED_CONTEXT_MSG.format(outer=outer, path=r.path)
        fix = NESTED_CONTEXT_FIX.format(outer=outer)
        r = with_fix(r, K.NESTED_CONTEXT, fix, message=_cap(msg), expected=True)
        return r.with_facts(Fact.NESTED)
    message = r.message.rstrip(".") + NESTED_SHAPE_SUFFIX.format(outer=outer) + "."
    return dataclasses.replace(r, message=_cap(message)).with_facts(Fact.NESTED)
