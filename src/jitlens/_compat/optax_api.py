"""optax: which public optimizer function built a transform, read only if the program imported optax.

A fix that sweeps hyper-parameters wraps the function that built the user's optimizer in
``optax.inject_hyperparams``; naming ``optax.adam`` for an ``optax.adamw`` would change the
optimizer. A transform does not say which function made it, but the functions it closes over
do (``scale_by_adam``, ``add_decayed_weights``, ...), with their flags (``nesterov``): optax
builds each of its public optimizer functions once here (``optax.adamw(1e-3)``: closures, no
arrays) and the one whose closures match the user's is the name. Two that match alike, or
none (a custom ``optax.chain``, a schedule in place of a rate): ``None``, and the fix says
it in general.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from typing import Any

MODULE = "optax"

#: How deep the closures of a transform are followed (a chain of chains of wrappers).
_DEPTH = 8


def factory_name(tx: Any) -> str | None:
    """``"adamw"`` if ``tx`` (an optax ``GradientTransformation``) is what ``optax.adamw(...)``
    builds, and no other public optimizer function builds the same; else ``None``."""
    if sys.modules.get(MODULE) is None:
        return None
    try:
        mark = _fingerprint(tx)
        names = [name for name, other in _factories() if other == mark]
    except Exception:
        return None
    return names[0] if len(names) == 1 else None


@functools.cache
def _factories() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(name, fingerprint)`` of each public optax function that builds an optimizer from a
    ``learning_rate`` alone (``optax.adam``, ``optax.sgd`` ...), each function once."""
    import optax

    out, seen = [], set()
    for name in sorted(vars(optax)):
        f = getattr(optax, name)
        if name.startswith("_") or not inspect.isfunction(f) or id(f) in seen:
            continue
        if not getattr(f, "__module__", "").startswith("optax._src.alias"):
            continue
        seen.add(id(f))
        try:
            if "learning_rate" not in inspect.signature(f).parameters:
                continue
            with warnings.catch_warnings():  # a rate alone may warn (noisy_sgd's key)
                warnings.simplefilter("ignore")
                tx = f(learning_rate=1e-3)
        except Exception:
            continue  # needs more than a rate (or warns and fails): never named
        if hasattr(tx, "init") and hasattr(tx, "update"):
            out.append((name, _fingerprint(tx)))
    return tuple(out)


def _fingerprint(tx: Any) -> tuple[str, ...]:
    """The optax functions ``tx``'s ``init`` and ``update`` close over, in order, with the
    flags and names (bools, strings, None) they hold: not its numbers, which a sweep changes."""
    out: list[str] = []
    _walk((tx.init, tx.update), 0, out)
    return tuple(out)


def _walk(value: Any, depth: int, out: list[str]) -> None:
    if depth > _DEPTH:
        return
    if isinstance(value, (tuple, list)):
        for v in value:
            _walk(v, depth + 1, out)
    elif isinstance(value, types.FunctionType):
        if (value.__module__ or "").startswith(MODULE):
            out.append(value.__qualname__)
        for cell in value.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if inner is None or isinstance(inner, (bool, str)):
                out.append(repr(inner))
            elif hasattr(inner, "init") and hasattr(inner, "update"):
                _walk((inner.init, inner.update), depth + 1, out)
            elif isinstance(inner, (types.FunctionType, tuple, list)):
                _walk(inner, depth + 1, out)
