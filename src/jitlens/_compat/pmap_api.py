"""``jax.pmap`` and ``nnx.pmap`` seen from JAX's trace: which user function a pmap traces.

Since jax 0.9 ``jax.pmap`` is a ``shard_map`` under a ``jax.jit`` that JAX
builds inside ``jax/_src/pmap.py`` (``_cached_shard_map``): what
``_trace_for_jit`` traces is a shard_map of JAX's own ``_fun``, named ``_fun``
in every monitoring event, whatever the user's function. These accessors
recognise that callable and read the user's function back from its closure.
``nnx.pmap`` hands ``jax.pmap`` a ``PmapFn`` / ``SimplePmapFn`` holding the
user's function in ``.f``. Everything degrades to None.
"""

from __future__ import annotations

import sys
from typing import Any

#: The module that defines ``jax.pmap`` (loaded with jax).
PMAP_MODULE = "jax._src.pmap"
#: The name JAX gives every pmap's trace in its monitoring events.
TRACED_NAME = "_fun"
#: ``__qualname__`` of the callable JAX traces for a pmap.
_TRACED_QUALNAME = "_cached_shard_map.<locals>._fun"
#: flax's callables that ``nnx.pmap`` hands to ``jax.pmap``.
_NNX_PMAP_FNS = ("PmapFn", "SimplePmapFn")


def is_traced_pmap(fun: Any) -> bool:
    """Is ``fun`` (what ``_trace_for_jit`` traces) a pmap's shard_map of JAX's ``_fun``?"""
    inner = getattr(fun, "__wrapped__", fun)
    code = getattr(inner, "__code__", None)
    return (
        code is not None
        and getattr(inner, "__qualname__", "") == _TRACED_QUALNAME
        and code.co_filename.replace("\\", "/").endswith("jax/_src/pmap.py")
    )


def _cell(fun: Any, name: str) -> Any:
    inner = getattr(fun, "__wrapped__", fun)
    names = inner.__code__.co_freevars
    cells = dict(zip(names, inner.__closure__ or (), strict=False))
    return cells[name].cell_contents


def traced_user_function(fun: Any) -> Any:
    """The function a pmap's traced ``_fun`` runs (what the user handed ``jax.pmap``), or None."""
    try:
        wrapped = _cell(fun, "fun")
    except Exception:
        return None
    f = getattr(wrapped, "f", None)
    # argnums_partial (static_broadcasted_argnums) wraps the user's function once more
    while f is not None and getattr(f, "__qualname__", "").startswith("argnums_partial"):
        f = getattr(f, "__wrapped__", None)
    return f


def traced_user_args(
    fun: Any, flat_args: tuple[Any, ...]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The user's ``(args, kwargs)`` from the flat arguments JAX traces a pmap's ``_fun`` with.

    Static broadcasted arguments are not among them (JAX bound them already).
    """
    try:
        import jax

        args, kwargs = jax.tree_util.tree_unflatten(_cell(fun, "in_tree"), list(flat_args))
        return tuple(args), dict(kwargs)
    except Exception:
        return None


def is_nnx_pmap_fn(fun: Any) -> bool:
    """Is ``fun`` the callable ``nnx.pmap`` hands ``jax.pmap``?"""
    t = type(fun)
    return t.__name__ in _NNX_PMAP_FNS and (t.__module__ or "").startswith("flax.nnx")


def nnx_pmap_user_function(fun: Any) -> Any:
    """The user's function inside an nnx ``PmapFn`` (None when it is not one)."""
    return getattr(fun, "f", None) if is_nnx_pmap_fn(fun) else None


def pmap_loaded() -> bool:
    return PMAP_MODULE in sys.modules
