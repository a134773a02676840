"""flax.linen's ``nn.jit`` seen from ``jax.jit``: which module method a lifted jit serves.

``nn.jit(Module)`` builds a new class whose ``__call__`` calls
``flax.core.lift.jit``; that one calls ``jax.jit`` on a function of its own,
``jitted(fingerprint, variable_groups, rng_groups, *args)``, defined in
flax's files, whose static ``fingerprint`` is ``(mutable collections,
_HashableProxy(module))`` (a hash of the module's fields). These accessors
recognise that function and read back the user's module class and method
from the closure of the scope function it wraps. Only used when the program
imported ``flax.linen``; everything degrades to None.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

#: Loaded whenever nn.jit can be in use.
LINEN_MODULE = "flax.linen"
#: ``__qualname__`` of the function ``lift.jit`` hands to ``jax.jit``.
_JITTED_QUALNAME = "jit.<locals>.jitted"


def linen_loaded() -> bool:
    return LINEN_MODULE in sys.modules


def is_lifted_jit(fun: Any) -> bool:
    """Is ``fun`` (handed to ``jax.jit``) the function ``flax.core.lift.jit`` jits?"""
    if not linen_loaded():
        return False
    code = getattr(fun, "__code__", None)
    return (
        code is not None
        and code.co_name == "jitted"
        and getattr(code, "co_qualname", _JITTED_QUALNAME) == _JITTED_QUALNAME
        and code.co_filename.replace("\\", "/").endswith("flax/core/lift.py")
    )


def _cells(fn: Any) -> dict[str, Any]:
    code, closure = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    if code is None or not closure:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, closure, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            continue
    return out


def lifted_target(fun: Any) -> tuple[Any, Any] | None:
    """``(module class, method)`` the lifted ``jitted`` function runs, or None.

    ``nn.jit(Module)``: the scope function's closure holds ``module_class`` and
    the method ``fn``; ``@nn.jit`` on a method: a partial wrapping the method.
    """
    inner = getattr(fun, "__wrapped__", None)
    if inner is None:
        return None
    cells = _cells(inner)
    if "module_class" in cells and callable(cells.get("fn")):
        return cells["module_class"], cells["fn"]
    method = getattr(inner, "__wrapped__", None)
    if callable(method):
        owner = getattr(method, "__qualname__", "").rpartition(".")[0]
        return owner or None, method
    return None


def fingerprint_parts(value: Any) -> tuple[Any, int | None] | None:
    """``(mutable collections, module hash)`` of a lifted jit's static fingerprint."""
    if not isinstance(value, tuple) or len(value) != 2:
        return None
    mutable, proxy = value
    h = getattr(proxy, "hash_key", None)
    return mutable, h if isinstance(h, int) else None


def module_of(value: Any) -> Any:
    """The module a lifted jit's fingerprint points to (None once it is gone)."""
    proxy = value[1] if isinstance(value, tuple) and len(value) == 2 else None
    try:
        return proxy.module if proxy is not None else None
    except Exception:
        return None


def module_fields(module: Any) -> dict[str, str]:
    """``{field: repr}`` of a linen module's constructor fields (not ``parent`` / ``name``)."""
    try:
        fields = dataclasses.fields(module)
    except TypeError:
        return {}
    out = {}
    for f in fields:
        if not f.init or f.name in ("parent", "name"):
            continue
        try:
            out[f.name] = repr(getattr(module, f.name))
        except Exception:
            continue
    return out


def module_field_values(module: Any) -> dict[str, Any]:
    """``{field: value}`` of a linen module's constructor fields (not ``parent`` / ``name``),
    read from its own ``__dict__`` (no property or ``__getattr__`` runs)."""
    try:
        fields = dataclasses.fields(module)
        own = object.__getattribute__(module, "__dict__")
    except (TypeError, AttributeError):
        return {}
    return {
        f.name: own[f.name]
        for f in fields
        if f.init and f.name not in ("parent", "name") and f.name in own
    }


def hashed_as_is(value: Any) -> bool:
    """Does flax's nn.jit fingerprint hash ``value`` itself (so a change in place may keep
    the hash), rather than walk it (a module, a dataclass, a mapping, an iterable, a
    string: a change there changes the hash, a miss)?"""
    from collections.abc import Iterable, Mapping

    if isinstance(value, (str, Mapping, Iterable)) or dataclasses.is_dataclass(value):
        return False
    return not hasattr(type(value), "__fn_or_cls__")
