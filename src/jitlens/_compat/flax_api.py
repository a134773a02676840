"""Flax NNX's private pieces: jit wrapper classes, graph flattening, the cached-partial context.

Tested against flax 0.12.5-0.12.12. Each flax module is imported on its own, so
a module that moved disables only what needs it. Every accessor degrades to
``None`` (or an empty result) instead of raising.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .libraries import Library, installed_versions


def _module(*names: str) -> Any:
    """The first of ``names`` that imports, or None."""
    for name in names:
        try:
            return importlib.import_module(name)
        except Exception:
            continue
    return None


#: Filled in by :func:`load`, once the program imported flax (jitlens never imports it first).
nnx: Any = None
#: ``flax.nnx.graphlib`` (flax >= 0.12.5), ``flax.nnx.graph`` before.
graphlib: Any = None
_extract: Any = None
_compilation: Any = None
#: nnx wrapper classes whose ``__call__`` runs on every call, with the kind
#: jitlens reports for them.
NNX_WRAPPERS: tuple[tuple[type, str], ...] = ()
NNX_WRAPPER_TYPES: tuple[type, ...] = ()
#: The callables nnx hands to ``jax.jit`` (they run only while tracing).
NNX_INNER_FNS: tuple[type, ...] = ()
#: The callable the default ``nnx.jit`` mode hands to ``jax.jit`` (its args are NodeStates).
NNX_SPLIT_FN: type | None = None
NODE_STATES: Any = None
TREE_STATE: Any = None
#: Names :func:`load` sets, also re-exported by the ``jitlens._compat`` package.
PUBLISHED = (
    "NNX_WRAPPERS",
    "NNX_WRAPPER_TYPES",
    "NNX_INNER_FNS",
    "NNX_SPLIT_FN",
    "NODE_STATES",
    "TREE_STATE",
)
_LOADED = [False]
#: The module whose import means "the program uses flax.nnx".
MODULE = "flax.nnx"


class LazyModule:
    """A library module imported on first use, for tools that need it (``jitlens audit``).

    Importing jitlens' tools then costs nothing for programs without the library,
    and using it without the library installed says how to get it.
    """

    def __init__(self, name: str, extra: str) -> None:
        self._name = name
        self._extra = extra

    def __getattr__(self, attr: str) -> Any:
        try:
            module = importlib.import_module(self._name)
        except ImportError as exc:
            raise ModuleNotFoundError(
                f"this needs {self._name}, which is not installed: "
                f"pip install 'jitlens[{self._extra}]'"
            ) from exc
        return getattr(module, attr)


#: ``flax.nnx``, imported when a tool first uses it.
LAZY_NNX = LazyModule("flax.nnx", "flax")


def loaded() -> bool:
    return _LOADED[0]


#: What jitlens knows of flax (``_compat/libraries``); its private pieces are probed by
#: ``probe`` itself. A layer is written ``nnx.Linear``.
LIBRARY = Library(
    distribution="flax",
    packages=("flax",),
    loaded=loaded,
    builds_models=True,
    layer_prefix="nnx.",
    model_apis=(("flax.nnx", "nnx"), ("flax.linen", "linen")),
)


def load_if_imported() -> bool:
    """Read flax's pieces if the program imported ``flax.nnx``; is it loaded?

    Every accessor of a piece that only :func:`load` fills calls it first: a tool
    (``jitlens audit``, ``jitlens.audit(make)``) runs with no tracking that would
    have loaded flax's pieces at the program's import, and must see them all the same.
    One dictionary read when nothing changed.
    """
    current = sys.modules.get(MODULE)
    if current is not None and (not _LOADED[0] or current is not nnx):
        load()
    return _LOADED[0]


def load() -> None:
    """Read flax's private pieces (the program imported ``flax.nnx``; idempotent)."""
    global nnx, graphlib, _extract, _compilation
    global NNX_WRAPPERS, NNX_WRAPPER_TYPES, NNX_INNER_FNS, NNX_SPLIT_FN, NODE_STATES, TREE_STATE
    if _LOADED[0] and nnx is not None and nnx is sys.modules.get(MODULE):
        return
    # (a flax imported anew, e.g. after sys.modules was restored by pytester: read it again)
    _LOADED[0] = True
    nnx = _module("flax.nnx")
    graphlib = _module("flax.nnx.graphlib", "flax.nnx.graph")
    _extract = _module("flax.nnx.extract")
    _compilation = _module("flax.nnx.transforms.compilation")
    NNX_WRAPPERS = tuple(
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
    NNX_WRAPPER_TYPES = tuple(cls for cls, _ in NNX_WRAPPERS)
    NNX_INNER_FNS = tuple(
        c
        for c in (
            getattr(_compilation, "JitFn", None),
            getattr(_compilation, "SimpleJitFn", None),
            getattr(_compilation, "SimpleJitPartialFn", None),
            getattr(_compilation, "TreeJitFn", None),  # flax 0.12.5
        )
        if isinstance(c, type)
    )
    NNX_SPLIT_FN = getattr(_compilation, "JitFn", None)
    NODE_STATES = getattr(_extract, "NodeStates", None)
    TREE_STATE = getattr(_extract, "TreeState", None)
    package = sys.modules.get(__name__.rpartition(".")[0])
    for name in PUBLISHED:  # `_compat.NNX_WRAPPERS` is read at call time everywhere
        setattr(package, name, globals()[name])


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


def nnx_wrapper_types() -> tuple[type, ...]:
    """The nnx jit wrapper classes (empty while the program has not imported flax.nnx)."""
    load_if_imported()
    return NNX_WRAPPER_TYPES


def is_nnx_wrapper(obj: Any) -> bool:
    load_if_imported()
    return isinstance(obj, NNX_WRAPPER_TYPES)


def nnx_wrapper_of_traced(fun: Any) -> Any:
    """The nnx wrapper whose inner function JAX is tracing (``JitFn.ctxtag``), or None."""
    ctx = getattr(fun, "ctxtag", None)
    return ctx if isinstance(ctx, NNX_WRAPPER_TYPES) else None


def graph_context() -> Any:
    """flax's ``GRAPH_CONTEXT`` (thread-local; ``tmp_static_cache`` is set inside a
    ``cached_partial`` call), or None."""
    load_if_imported()
    return getattr(graphlib, "GRAPH_CONTEXT", None)


def cached_partial_owners() -> list[tuple[Any, str]]:
    """``(module, attribute)`` pairs where ``cached_partial`` is looked up by users and flax."""
    load_if_imported()
    out = []
    if nnx is not None and callable(getattr(nnx, "cached_partial", None)):
        out.append((nnx, "cached_partial"))
    if graphlib is not None and callable(getattr(graphlib, "cached_partial", None)):
        out.append((graphlib, "cached_partial"))
    return out


def is_graph_node(x: Any) -> bool:
    """Is ``x`` an NNX object (a Module, an Optimizer, a Variable...)? False without flax."""
    load_if_imported()
    try:
        t = type(x)  # (by type: isinstance and flax's check read a program's __class__)
        if issubclass(t, nnx.Variable):
            return True
        registry = getattr(graphlib, "GRAPH_REGISTRY", None)
        if registry is None:
            return bool(graphlib.is_graph_node(x))
        if t in registry:
            return True
        # an array ref is JAX's own object; any other type of the program's is no graph node
        return t.__module__.partition(".")[0] in _JAX_PACKAGES and bool(graphlib.is_graph_node(x))
    except Exception:
        return False


_JAX_PACKAGES = frozenset({"jax", "jaxlib"})


def flatten_node(node: Any, ref_index: Any = None) -> tuple[Any, list[Any]] | None:
    """``(GraphDef, leaves)`` of a graph node, as nnx.jit's split sees it."""
    load_if_imported()
    try:
        kwargs: dict[str, Any] = {"with_paths": False}
        if ref_index is not None:
            kwargs["ref_index"] = ref_index
        gd, leaves = graphlib.flatten(node, **kwargs)
        return gd, list(leaves)
    except Exception:
        return None


def new_ref_map() -> Any:
    load_if_imported()
    try:
        return graphlib.RefMap()
    except Exception:
        return None


def flax_version() -> str:
    """flax's version, read without importing it ("absent" when it is not installed)."""
    mod = sys.modules.get("flax")
    if mod is not None:
        return str(getattr(mod, "__version__", "?"))
    return installed_versions().get("flax", "absent")
