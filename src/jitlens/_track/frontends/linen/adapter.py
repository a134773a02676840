"""The flax.linen front-end: ``nn.jit`` rows, the lifted ``jax.jit`` named after the user's module.

``nn.jit`` reaches ``jax.jit`` through ``flax.core.lift.jit``, which jits a
function of flax's own: seen as a plain ``jax.jit`` it is a flax-internal row
(hidden), one per transformed class, named ``core_fn``. :func:`record_for`
makes it the user's row instead (kind ``nn.jit``, named after the module
class, defined where its method is), remembering where the jitted class was
built (the user's function running when ``jax.jit`` was called), which names
the culprit of google/flax#3171: ``nn.jit(Dense)`` applied inside a parent's
``__call__`` builds a new class and a new ``jax.jit`` at every ``apply``.
Its reasons are reworded in linen's terms by :mod:`.words`.
"""

from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass
from typing import Any

from .... import _compat
from ...._compat import linen_api
from ...._core.kinds import RowKind
from ...records import Record
from ...registry import REGISTRY, options_of

#: The row kind.
KIND = RowKind.NN_JIT  # the front-end's kinds (``__init__``)


@dataclass(frozen=True)
class LinenTarget:
    """What an nn.jit row jits: the user's module class and method, and where it was built."""

    cls: str
    method: str
    #: The user's function that was running when the jitted class made its jax.jit.
    built_in: str
    #: A callable whose signature names the lifted function's arguments (see :func:`_names_fn`).
    names: Any = None


#: record -> its target (records of nn.jit rows only).
TARGETS: weakref.WeakKeyDictionary[Record, LinenTarget] = weakref.WeakKeyDictionary()


def record_for(fun: Any, options: dict[str, Any]) -> Record | None:
    """The record of ``jax.jit(fun, **options)`` when ``fun`` is a lifted nn.jit function."""
    if not linen_api.is_lifted_jit(fun):
        return None
    target = linen_api.lifted_target(fun)
    if target is None:
        return None
    owner, method = target
    cls = owner if isinstance(owner, str) else getattr(owner, "__name__", "?")
    mname = getattr(method, "__name__", "__call__")
    names = _names_fn(method)
    rec = REGISTRY.new_record(
        KIND, method, user_fn=names, inner_fun=fun, jax_name=getattr(fun, "__name__", "")
    )
    rec.name = cls if mname == "__call__" else f"{cls}.{mname}"
    rec.qualname = f"{cls}.{mname}"
    sa = options.get("static_argnums")
    rec.static_argnums = (sa,) if isinstance(sa, int) else tuple(sa or ())
    sn = options.get("static_argnames")
    rec.static_argnames = (sn,) if isinstance(sn, str) else tuple(sn or ())
    rec.options = options_of(options)
    frame = _compat.user_frame(_compat.caller(2))
    code = frame.f_code if frame is not None else None
    built = getattr(code, "co_qualname", getattr(code, "co_name", "?")) if code else "?"
    TARGETS[rec] = LinenTarget(cls=cls, method=mname, built_in=built, names=names)
    return rec


#: Names of the lifted function's first three arguments (``jitted(fingerprint,
#: variable_groups, rng_groups, *args)``), in the user's terms.
LIFTED_NAMES = ("fingerprint", "variables", "rngs")


def _names_fn(method: Any) -> Any:
    """A stand-in whose signature is the lifted function's, with the method's own names after.

    ``inspect.signature`` of the lifted function follows ``__wrapped__`` to
    flax's scope function, whose parameters are not the ones JAX passes.
    """
    P = inspect.Parameter
    try:
        own = list(inspect.signature(method).parameters.values())[1:]  # without self
    except (TypeError, ValueError):
        own = [P("args", P.VAR_POSITIONAL), P("kwargs", P.VAR_KEYWORD)]
    head = [P(n, P.POSITIONAL_ONLY) for n in LIFTED_NAMES]
    own = [
        p.replace(kind=P.POSITIONAL_OR_KEYWORD) if p.kind is P.POSITIONAL_ONLY else p for p in own
    ]

    def lifted(*args: Any, **kwargs: Any) -> None:
        """The arguments of a lifted nn.jit function, named (never called)."""

    lifted.__signature__ = inspect.Signature([*head, *own])  # type: ignore[attr-defined]
    lifted.__qualname__ = getattr(method, "__qualname__", "lifted")
    return lifted


def target_of(rec: Record) -> LinenTarget | None:
    return TARGETS.get(rec) if rec.kind == KIND else None
