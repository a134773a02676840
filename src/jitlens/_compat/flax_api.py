"""Flax NNX's private pieces: jit wrapper classes, graph flattening, the cached-partial context.

Tested against flax 0.12.5-0.12.12. Each flax module is imported on its own, so
a module that moved disables only what needs it. Every accessor degrades to
``None`` (or an empty result) instead of raising.
"""

from __future__ import annotations

import importlib
from typing import Any


def _module(*names: str) -> Any:
    """The first of ``names`` that imports, or None."""
    for name in names:
        try:
            return importlib.import_module(name)
        except Exception:
            continue
    return None


try:
    from flax import nnx
except Exception:  # pragma: no cover - jitlens requires flax, but never breaks without it
    nnx = None  # type: ignore[assignment]

#: ``flax.nnx.graphlib`` (flax >= 0.12.5), ``flax.nnx.graph`` before.
graphlib = _module("flax.nnx.graphlib", "flax.nnx.graph")
_extract = _module("flax.nnx.extract")
_compilation = _module("flax.nnx.transforms.compilation")

#: nnx wrapper classes whose ``__call__`` runs on every call, with the kind
#: jitlens reports for them.
NNX_WRAPPERS: tuple[tuple[type, str], ...] = tuple(
    (cls, kind)
    for cls, kind in (
        (getattr(_compilation, "JitWrapped", None), "nnx.jit"),
        (getattr(_compilation, "SimpleJitWrapped", None), "nnx.jit"),
        (getattr(_compilation, "SimpleJitPartialWrapped", None), "nnx.jit_partial"),
        # flax 0.12.5's nnx.jit(graph=False), before it became SimpleJitWrapped
        (getattr(_compilation, "TreeJitWrapped", None), "nnx.jit"),
    )
    if isinstance(cls, type)
)
NNX_WRAPPER_TYPES: tuple[type, ...] = tuple(cls for cls, _ in NNX_WRAPPERS)
#: The callables nnx hands to ``jax.jit`` (they run only while tracing).
NNX_INNER_FNS: tuple[type, ...] = tuple(
    c
    for c in (
        getattr(_compilation, "JitFn", None),
        getattr(_compilation, "SimpleJitFn", None),
        getattr(_compilation, "SimpleJitPartialFn", None),
        getattr(_compilation, "TreeJitFn", None),  # flax 0.12.5
    )
    if isinstance(c, type)
)
#: The callable the default ``nnx.jit`` mode hands to ``jax.jit`` (its args are NodeStates).
NNX_SPLIT_FN: type | None = getattr(_compilation, "JitFn", None)
NODE_STATES = getattr(_extract, "NodeStates", None)
TREE_STATE = getattr(_extract, "TreeState", None)


def nnx_kind(wrapper: Any) -> str:
    """The kind of an nnx wrapper, with its mode spelled like the user spelled it."""
    name = type(wrapper).__name__
    if name == "SimpleJitWrapped":
        return (
            "nnx.jit(graph=False)"
            if not getattr(wrapper, "graph", True)
            else "nnx.jit(graph_updates=False)"
        )
    if name == "SimpleJitPartialWrapped":
        return "nnx.jit_partial"
    if name == "TreeJitWrapped":  # flax 0.12.5: only graph=False makes one
        return "nnx.jit(graph=False)"
    return "nnx.jit"


def is_flax_inner_fn(fun: Any) -> bool:
    """Is ``fun`` a callable flax hands to ``jax.jit`` (its wrapper is counted instead)?

    By class when the class is known, else by the module of its type, so that a
    renamed class is still not wrapped a second time.
    """
    if isinstance(fun, NNX_INNER_FNS):
        return True
    return (getattr(type(fun), "__module__", "") or "").startswith("flax.")


def is_nnx_wrapper(obj: Any) -> bool:
    return isinstance(obj, NNX_WRAPPER_TYPES)


def nnx_wrapper_of_traced(fun: Any) -> Any:
    """The nnx wrapper whose inner function JAX is tracing (``JitFn.ctxtag``), or None."""
    ctx = getattr(fun, "ctxtag", None)
    return ctx if isinstance(ctx, NNX_WRAPPER_TYPES) else None


def graph_context() -> Any:
    """flax's ``GRAPH_CONTEXT`` (thread-local; ``tmp_static_cache`` is set inside a
    ``cached_partial`` call), or None."""
    return getattr(graphlib, "GRAPH_CONTEXT", None)


def cached_partial_owners() -> list[tuple[Any, str]]:
    """``(module, attribute)`` pairs where ``cached_partial`` is looked up by users and flax."""
    out = []
    if nnx is not None and callable(getattr(nnx, "cached_partial", None)):
        out.append((nnx, "cached_partial"))
    if graphlib is not None and callable(getattr(graphlib, "cached_partial", None)):
        out.append((graphlib, "cached_partial"))
    return out


def is_graph_node(x: Any) -> bool:
    try:
        return bool(graphlib.is_graph_node(x)) or isinstance(x, nnx.Variable)
    except Exception:
        return False


def flatten_node(node: Any, ref_index: Any = None) -> tuple[Any, list[Any]] | None:
    """``(GraphDef, leaves)`` of a graph node, as nnx.jit's split sees it."""
    try:
        kwargs: dict[str, Any] = {"with_paths": False}
        if ref_index is not None:
            kwargs["ref_index"] = ref_index
        gd, leaves = graphlib.flatten(node, **kwargs)
        return gd, list(leaves)
    except Exception:
        return None


def new_ref_map() -> Any:
    try:
        return graphlib.RefMap()
    except Exception:
        return None


def flax_version() -> str:
    try:
        import flax

        return getattr(flax, "__version__", "?")
    except Exception:
        return "?"
