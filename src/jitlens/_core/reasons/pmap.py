"""The words of ``jax.pmap`` / ``nnx.pmap``: how a pmap says a reason of another kind.

A function rebuilt per epoch (a ``new_function`` reason: pmap caches per function object), a
``static_broadcasted_argnums`` value (``static_value``), state handed back sharded over the
pmap's devices (``sharding``). The kinds these fixes belong to are ``kinds.REWORDED``'s; the
pmap front-end (``_track/frontends/pmap/words.py``) applies them.
"""

from __future__ import annotations

from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import Template, _equal, _free, with_fix

PMAP_NEW_FUNCTION_MSG = Template(
    M.PMAP_NEW_FUNCTION,
    "`{name}` is a new function handed to {kind}: pmap caches its compiled code per function "
    "object, so it traced and compiled again though {count} earlier {kind}(s) of the same code "
    "(defined at {defined_at}) already compiled{equal}.",
)


PMAP_CALL_FIX = Template(
    K.PMAP_CALL,
    "Build the pmapped function once, before the loop: `p_{callee} = {kind}({callee}, "
    "in_axes=({axes}))`, and call `p_{callee}({args})`; a lambda built per epoch is a new function.",
)


PMAP_NEW_FUNCTION_FIX = Template(
    K.PMAP_NEW_FUNCTION,
    "Build the pmapped function once, before the loop (`p_step = {kind}(step)`), and pass "
    "what it reads from outside{free} as arguments (`in_axes=None` for those).",
)


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
    msg = PMAP_NEW_FUNCTION_MSG.words(
        name=r.path, kind=kind, count=count, defined_at=defined_at, equal=_equal(equal)
    )
    if call is not None:
        callee, args = call
        axes = ", ".join("None" if outside else "0" for _name, outside in args)
        fk, fix = (
            K.PMAP_CALL,
            PMAP_CALL_FIX.words(
                callee=callee,
                kind=kind,
                axes=axes + ("," if len(args) == 1 else ""),
                args=", ".join(name for name, _outside in args),
            ),
        )
    else:
        fk, fix = K.PMAP_NEW_FUNCTION, PMAP_NEW_FUNCTION_FIX.words(kind=kind, free=_free(free))
    return with_fix(r, fk, fix, message=msg)


PMAP_STATIC_FIX = Template(
    K.PMAP_STATIC,
    "Pass `{path}` as an array argument (drop it from static_broadcasted_argnums, `in_axes=None` "
    "for it) if it is a number that changes; keep it static for a few fixed values.",
)


def pmap_static(r: Reason) -> Reason:
    """A ``static_broadcasted_argnums`` value that changed: the pmap's spelling of the fix."""
    return with_fix(r, K.PMAP_STATIC, PMAP_STATIC_FIX.words(path=r.path))


PMAP_SHARDING_MSG = Template(
    M.PMAP_SHARDING,
    "`{path}` came back from {kind} sharded over its devices; the first call got it {before}, "
    "and the two placements are different keys, so the second call compiled again.",
)


PMAP_SHARDING_FIX = Template(
    K.PMAP_SHARDING,
    "Place it as {kind} returns it, before the first call: `s = NamedSharding(Mesh("
    "jax.local_devices()[:n], ('{axis}',)), P('{axis}'))`, {put}{named}.",
)


def pmap_sharding(r: Reason, kind: str, axis: str | None, root: str, nnx_state: bool) -> Reason:
    """State handed back by a pmap sharded over its devices, compiled again at the next call."""
    name = axis or "batch"
    put = (
        f"`nnx.update({root}, jax.device_put(nnx.state({root}), s))`"
        if nnx_state
        else f"`{r.argument} = jax.device_put({r.argument}, s)`"
    )
    fix = PMAP_SHARDING_FIX.words(
        kind=kind,
        axis=name,
        put=put,
        named="" if axis else f", with `axis_name='{name}'` in {kind}",
    )
    msg = PMAP_SHARDING_MSG.words(path=r.path, kind=kind, before=r.before)
    return with_fix(r, K.PMAP_SHARDING, fix, message=msg)
