"""The words of flax.linen's ``nn.jit``: how it says a reason of another kind.

A jitted class rebuilt inside a parent's ``__call__`` (a ``new_function`` reason), the mutable
collections and rng streams of ``init`` / ``apply`` and a module's fields (``static_value``).
The kinds these fixes belong to are ``kinds.REWORDED``'s; the linen front-end
(``_track/frontends/linen/words.py``) applies them.
"""

from __future__ import annotations

from ..kinds import ReasonKind
from ..reason import EXPECTED_FIX, Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import Template, _equal, with_fix

LINEN_NEW_CLASS_MSG = Template(
    M.LINEN_NEW_CLASS,
    "`nn.jit({cls})` is applied inside `{where}`: every call builds a new jitted class and a new "
    "jax.jit, so `{cls}` traced and compiled again though {count} earlier one(s) of the same "
    "code compiled{equal}.",
)


LINEN_NEW_CLASS_FIX = Template(
    K.LINEN_NEW_CLASS,
    "Apply nn.jit once, at module level: `Jit{cls} = nn.jit({cls})`, and use `Jit{cls}(...)` in "
    "`{where}`; the jitted class then keeps its compiled cache across apply calls.",
)


def linen_new_class(r: Reason, cls: str, where: str, count: int, equal: bool) -> Reason:
    """``nn.jit(Module)`` applied inside a parent's ``__call__`` (google/flax#3171)."""
    msg = LINEN_NEW_CLASS_MSG.words(cls=cls, where=where, count=count, equal=_equal(equal))
    fix = LINEN_NEW_CLASS_FIX.words(cls=cls, where=where)
    return with_fix(r, K.LINEN_NEW_CLASS, fix, path=cls, message=msg)


LINEN_MUTABLE_MSG = Template(
    M.LINEN_MUTABLE,
    "`{cls}` was called with other mutable collections ({before} -> {after}): nn.jit compiles "
    "once per set of mutable collections (init makes all of them mutable, apply none by default).",
)


LINEN_MUTABLE_FIX = Template(
    K.LINEN_MUTABLE,
    EXPECTED_FIX + " init and each apply `mutable=` setting compile once; keep one `mutable=` "
    "per call site so that it stays at one compile per mode.",
)


LINEN_MUTABLE_PATH = "mutable"


LINEN_RNGS_MSG = Template(
    M.LINEN_RNGS,
    "`{cls}` was given other rng streams (`{path}`: {before} -> {after}): nn.jit passes the "
    "rngs of `apply(..., rngs=...)` in, and each set of stream names compiles once.",
)


LINEN_RNGS_FIX = Template(
    K.LINEN_RNGS,
    EXPECTED_FIX + " each set of rng names passed to `apply` compiles once; pass the same "
    "`rngs=` names on every call (e.g. always a 'dropout' key) to stay at one compile.",
)


LINEN_FIELD_MSG = Template(
    M.LINEN_FIELD,
    "`{path}` changed value {before} -> {after}: nn.jit keys its cache on a hash of the "
    "module's fields, so each new value compiles again.",
)


LINEN_FIELD_FIX = Template(
    K.LINEN_FIELD,
    "Keep `{path}` constant across apply calls (each value compiles once), or pass it to "
    "`{method}` as an array argument (`jnp.asarray(...)`) so that it is traced.",
)


LINEN_FIELDS_MSG = Template(
    M.LINEN_FIELDS,
    "`{cls}`'s fields hash differently ({before} -> {after}): nn.jit keys its cache on a hash "
    "of the module's attributes, so a changed field compiles again.",
)


LINEN_FIELDS_FIX = Template(
    K.LINEN_FIELDS,
    "Keep the fields of `{cls}` constant across apply calls; pass what changes as an argument "
    "of `{method}` (an array, so that it is traced).",
)


def linen_mutable(r: Reason, cls: str, before: str, after: str) -> Reason:
    msg = LINEN_MUTABLE_MSG.words(cls=cls, before=before, after=after)
    return Reason(
        ReasonKind.STATIC_VALUE,
        r.argument,
        LINEN_MUTABLE_PATH,
        before,
        after,
        msg,
        LINEN_MUTABLE_FIX.words(),
        expected=True,  # init and apply compile once each
        fix_kind=K.LINEN_MUTABLE,
        where=r.where,
    )


def linen_rngs(r: Reason, cls: str) -> Reason:
    msg = LINEN_RNGS_MSG.words(cls=cls, path=r.path, before=r.before, after=r.after)
    return with_fix(r, K.LINEN_RNGS, LINEN_RNGS_FIX, message=msg, expected=True)


def linen_field(r: Reason, cls: str, method: str) -> Reason:
    """One field of an nn.jit module that changed value (the module hash changed with it)."""
    msg = LINEN_FIELD_MSG.words(path=r.path, before=r.before, after=r.after)
    fix = LINEN_FIELD_FIX.words(path=r.path, method=f"{cls}.{method}")
    return with_fix(r, K.LINEN_FIELD, fix, message=msg)


def linen_fields(r: Reason, cls: str, method: str) -> Reason:
    msg = LINEN_FIELDS_MSG.words(cls=cls, before=r.before, after=r.after)
    fix = LINEN_FIELDS_FIX.words(cls=cls, method=method)
    return with_fix(r, K.LINEN_FIELDS, fix, path=f"{cls} fields", message=msg)
