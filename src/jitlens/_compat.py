"""The private corners of JAX and Flax that jitlens reads, gathered in one place.

Pinned against jax 0.10.2 / flax 0.12.8. Every accessor degrades to ``None``
(or an empty result) instead of raising, so that a JAX/Flax upgrade turns
jitlens' explanations vaguer, never the user's program broken.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import FrameType
from typing import Any

import jax
from flax import nnx

# jax.monitoring event names (jax/_src/dispatch.py, compiler.py, compilation_cache.py).
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
PCACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"

try:
    from flax.nnx import extract as _extract
    from flax.nnx import graphlib
    from flax.nnx.transforms import compilation as _compilation
except ImportError:  # pragma: no cover - flax layout changed
    graphlib = None  # type: ignore[assignment]
    _compilation = None  # type: ignore[assignment]
    _extract = None  # type: ignore[assignment]

#: nnx wrapper classes whose ``__call__`` runs on every call, with the kind
#: jitlens reports for them.
NNX_WRAPPERS: tuple[tuple[type, str], ...] = tuple(
    (cls, kind)
    for cls, kind in (
        (getattr(_compilation, "JitWrapped", None), "nnx.jit"),
        (getattr(_compilation, "SimpleJitWrapped", None), "nnx.jit"),
        (getattr(_compilation, "SimpleJitPartialWrapped", None), "nnx.jit_partial"),
    )
    if cls is not None
)
#: The callables nnx hands to ``jax.jit`` (they run only while tracing).
NNX_INNER_FNS: tuple[type, ...] = tuple(
    c
    for c in (
        getattr(_compilation, "JitFn", None),
        getattr(_compilation, "SimpleJitFn", None),
        getattr(_compilation, "SimpleJitPartialFn", None),
    )
    if c is not None
)
NODE_STATES = getattr(_extract, "NodeStates", None)
TREE_STATE = getattr(_extract, "TreeState", None)


def nnx_kind(wrapper: Any) -> str:
    """The kind of an nnx wrapper, with its mode spelled like the user spelled it."""
    name = type(wrapper).__name__
    if name == "JitWrapped":
        return "nnx.jit"
    if name == "SimpleJitWrapped":
        return (
            "nnx.jit(graph=False)"
            if not getattr(wrapper, "graph", True)
            else ("nnx.jit(graph_updates=False)")
        )
    if name == "SimpleJitPartialWrapped":
        return "nnx.jit_partial"
    return "nnx.jit"


def in_cached_partial() -> bool:
    """True inside a call made through ``nnx.cached_partial``."""
    ctx = getattr(graphlib, "GRAPH_CONTEXT", None)
    return ctx is not None and getattr(ctx, "tmp_static_cache", None) is not None


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


def trace_context() -> tuple[Any, ...] | None:
    """JAX's config part of the trace cache key (x64, matmul precision, mesh, ...)."""
    try:
        from jax._src import config as jcfg

        names = jcfg.trace_context_names() if hasattr(jcfg, "trace_context_names") else None
        values = jcfg.trace_context()
        if names is not None and len(names) == len(values):
            return tuple(zip(names, values, strict=True))
        return tuple((str(i), v) for i, v in enumerate(values))
    except Exception:
        return None


_HIDDEN: set[str] = set()


def hide_from_tracebacks(path: str) -> None:
    """Let JAX's traceback filtering drop jitlens' frames, as it drops its own."""
    if path in _HIDDEN:
        return
    try:
        from jax._src import traceback_util

        traceback_util.register_exclusion(path)
        _HIDDEN.add(path)
    except Exception:
        pass


def partial_eval() -> Any:
    """``jax._src.interpreters.partial_eval`` (its ``trace_to_jaxpr`` runs the user's function)."""
    try:
        from jax._src.interpreters import partial_eval as pe

        return pe
    except ImportError:
        return None


def find_trace_frame(start: FrameType | None) -> FrameType | None:
    """The ``pjit._trace_for_jit`` frame above a trace-start monitoring callback."""
    f = start
    for _ in range(12):
        if f is None:
            return None
        if f.f_code.co_name == "_trace_for_jit":
            return f
        f = f.f_back
    return None


def trace_frame_info(frame: FrameType) -> dict[str, Any]:
    """What ``_trace_for_jit`` knows about the call being traced."""
    loc = frame.f_locals
    ji = loc.get("ji")
    return {
        "fun": loc.get("fun"),
        "dbg": loc.get("dbg"),
        "args": loc.get("args", ()),
        "kwargs": loc.get("kwargs", {}),
        "avals": loc.get("avals"),
        "static_argnums": tuple(getattr(ji, "static_argnums", ()) or ()),
        "static_argnames": tuple(getattr(ji, "static_argnames", ()) or ()),
        "in_shardings": loc.get("in_shardings_flat"),
        "donate_argnums": tuple(getattr(ji, "donate_argnums", ()) or ()),
        "ctx_mesh": loc.get("ctx_mesh"),
    }


def src_info(dbg: Any) -> tuple[str, str] | None:
    """``(name, 'file:line')`` from a JAX DebugInfo's ``func_src_info``."""
    s = getattr(dbg, "func_src_info", None)
    if not isinstance(s, str) or " at " not in s:
        return None
    name, _, where = s.rpartition(" at ")
    return name, where


# --------------------------------------------------------------------------
# Where is user code?
# --------------------------------------------------------------------------

_FRAMEWORK_PACKAGES = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "chex",
    "orbax",
    "equinox",
    "numpy",
    "treescope",
    "ml_dtypes",
    "jitlens",
    "_pytest",
    "pluggy",
)


def _framework_roots() -> tuple[str, ...]:
    roots = []
    for name in _FRAMEWORK_PACKAGES:
        mod = sys.modules.get(name)
        f = getattr(mod, "__file__", None)
        if f:
            roots.append(os.path.dirname(os.path.abspath(f)) + os.sep)
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.append(os.path.abspath(p) + os.sep)
    return tuple(dict.fromkeys(roots))


#: jitlens' own examples of user code (the demo, the exercise) count as user code.
_USER_CODE_IN_JITLENS = (
    os.sep + "jitlens" + os.sep + "_demo.py",
    os.sep + "jitlens" + os.sep + "_exercise.py",
)
_ROOTS: tuple[str, ...] | None = None
_USER_CACHE: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    """False for JAX, Flax, optax, jitlens, the standard library and friends."""
    hit = _USER_CACHE.get(filename)
    if hit is not None:
        return hit
    global _ROOTS
    if _ROOTS is None:
        _ROOTS = _framework_roots()
    if filename.startswith("<frozen") or filename.startswith("<built-in"):
        result = False
    else:
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        site = os.sep + "site-packages" + os.sep
        in_framework_pkg = site in path and any(
            (site + p + os.sep) in path for p in _FRAMEWORK_PACKAGES
        )
        result = not (path.startswith(_ROOTS) or in_framework_pkg) or path.endswith(
            _USER_CODE_IN_JITLENS
        )
    _USER_CACHE[filename] = result
    return result


def short_path(filename: str) -> str:
    """A path relative to the working directory when below it; package-relative for installed code."""
    if filename.startswith("<"):
        return filename
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        rel = filename
    if not rel.startswith(".." + os.sep):
        return rel
    here = os.path.dirname(os.path.abspath(__file__))
    if filename.startswith(here + os.sep):
        return "jitlens" + filename[len(here) :]
    site = os.sep + "site-packages" + os.sep
    if site in filename:
        return filename.split(site, 1)[1]
    return filename


def user_call_site(frame: FrameType | None) -> str:
    """``file:line`` of the first user frame at or above ``frame``."""
    f = frame
    while f is not None:
        fn = f.f_code.co_filename
        if is_user_file(fn):
            return f"{short_path(fn)}:{f.f_lineno}"
        f = f.f_back
    return "?"


def definition_site(fn: Any) -> tuple[str, str, str]:
    """``(name, qualname, 'file:line')`` of the user function behind a wrapper."""
    import functools
    import inspect

    target = fn
    for _ in range(8):
        if isinstance(target, functools.partial):
            target = target.func
            continue
        inner = getattr(target, "__wrapped__", None) or getattr(target, "fun", None)
        if inner is None or inner is target:
            break
        target = inner
    name = getattr(target, "__name__", None) or type(target).__name__
    qualname = getattr(target, "__qualname__", None) or name
    code = getattr(target, "__code__", None)
    if code is None:
        # a callable object: where its class's __call__ is defined
        code = getattr(vars(type(target)).get("__call__"), "__code__", None)
    if code is not None:
        where = f"{short_path(code.co_filename)}:{code.co_firstlineno}"
    else:
        try:
            where = f"{short_path(inspect.getsourcefile(target) or '?')}:?"
        except TypeError:
            where = "?"
    return name, qualname, where


def user_function(fn: Any) -> Any:
    """The innermost user callable behind jit wrappers and partials."""
    import functools

    target = fn
    for _ in range(8):
        if isinstance(target, functools.partial):
            target = target.func
            continue
        inner = getattr(target, "__wrapped__", None)
        if inner is None:
            inner = (
                getattr(target, "fun", None)
                if isinstance(target, tuple(t for t, _ in NNX_WRAPPERS))
                else None
            )
        if inner is None or inner is target:
            break
        target = inner
    return target


def jax_version() -> str:
    return jax.__version__


def flax_version() -> str:
    import flax

    return getattr(flax, "__version__", "?")
