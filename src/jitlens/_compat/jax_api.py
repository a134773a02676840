"""JAX's private and semi-public pieces: monitoring events, the trace frame, config, caches.

Tested against jax 0.9.2-0.12.0.1. Every accessor degrades to ``None`` (or an
empty result) instead of raising; :mod:`jitlens._compat.probe` records what is
missing so that figures jitlens cannot measure are reported as unknown.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType, MappingProxyType
from typing import Any

import jax

from .frames import TraceFrame

# jax.monitoring event names (jax/_src/dispatch.py, compiler.py, compilation_cache.py).
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
PCACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"

#: The function in which JAX traces a jitted callable; its locals describe the call.
TRACE_FRAME_NAME = "_trace_for_jit"
#: Locals of that frame jitlens reads (all must be present for the frame to count).
TRACE_FRAME_LOCALS = ("fun", "args", "kwargs")


def register_listeners(
    scalar: Callable[..., None], duration: Callable[..., None], event: Callable[..., None]
) -> list[str]:
    """Register the three monitoring listeners; return the names of those JAX lacks."""
    from jax import monitoring

    missing = []
    for name, fn in (
        ("register_scalar_listener", scalar),
        ("register_event_duration_secs_listener", duration),
        ("register_event_listener", event),
    ):
        register = getattr(monitoring, name, None)
        if register is None:
            missing.append(name)
            continue
        register(fn)
    return missing


#: (unregister, register) of each listener :func:`register_listeners` registers, in its order.
_LISTENER_PAIRS = (
    ("unregister_scalar_listener", "register_scalar_listener"),
    ("unregister_event_duration_listener", "register_event_duration_secs_listener"),
    ("unregister_event_listener", "register_event_listener"),
)


def listen_again(
    scalar: Callable[..., None], duration: Callable[..., None], event: Callable[..., None]
) -> None:
    """Each listener registered exactly once again, whatever the program removed
    (``jax.monitoring.clear_event_listeners()`` drops the duration and event ones: the
    compiles and cache hits would go uncounted). A JAX without ``unregister_*`` is left as
    it is."""
    from jax import monitoring

    for (unregister, register), fn in zip(_LISTENER_PAIRS, (scalar, duration, event), strict=True):
        un, reg = getattr(monitoring, unregister, None), getattr(monitoring, register, None)
        if un is None or reg is None:
            continue
        try:
            un(fn)  # asserts it is there (a ValueError under -O): absent is fine
        except Exception:
            pass
        reg(fn)


def listener_clearers() -> list[tuple[Any, str]]:
    """``(module, "clear_event_listeners")`` for each module that holds JAX's function
    clearing every monitoring listener (``jax.monitoring`` re-exports ``jax._src``'s)."""
    out: list[tuple[Any, str]] = []
    for name in ("jax.monitoring", "jax._src.monitoring"):
        module = sys.modules.get(name)
        if module is not None and callable(getattr(module, "clear_event_listeners", None)):
            out.append((module, "clear_event_listeners"))
    return out


def trace_context_names() -> tuple[str, ...] | None:
    """Names of the config options in JAX's trace cache key, in ``trace_context()`` order.

    jax 0.10.2 tells (``trace_context_names``); before, the names are recovered
    once by setting each config object to a sentinel, thread-locally, in a
    throwaway thread, and seeing which position of ``trace_context()`` holds it
    (about 1 ms; recomputed only if the context's length changes).
    """
    try:
        from jax._src import config as jcfg
    except ImportError:
        return None
    native = getattr(jcfg, "trace_context_names", None)
    if callable(native):
        try:
            return tuple(native())
        except Exception:
            pass
    try:
        size = len(jcfg.trace_context())
    except Exception:
        return None
    cached = _NAMES.get(size)
    if cached is None:
        cached = _NAMES[size] = _probe_names(jcfg, size)
    return cached


_NAMES: dict[int, tuple[str, ...] | None] = {}


def _probe_names(jcfg: Any, size: int) -> tuple[str, ...] | None:
    try:
        from jax._src import core

        config_type = jcfg.config_ext.Config
        candidates: dict[int, Any] = {}
        states = getattr(jcfg, "config_states", {})
        pool = [
            *getattr(states, "values", lambda: states)(),
            *vars(jcfg).values(),
            *vars(core).values(),
        ]
        for obj in pool:
            obj = getattr(obj, "_obj", obj)  # user_context wraps its Config
            if isinstance(obj, config_type):
                candidates[id(obj)] = obj
    except Exception:
        return None
    names: list[str | None] = [None] * size
    sentinel = object()

    def probe() -> None:  # thread-local changes, in a thread of its own: nobody else sees them
        for cfg in candidates.values():
            try:
                prev = cfg.swap_local(sentinel)
            except Exception:
                continue
            try:
                for i, v in enumerate(jcfg.trace_context()):
                    if v is sentinel:
                        names[i] = getattr(cfg, "name", None)
            finally:
                cfg.set_local(prev)

    import threading

    worker = threading.Thread(target=probe, name="jitlens-config-names", daemon=True)
    worker.start()
    worker.join(5.0)
    if worker.is_alive() or not any(names):
        return None
    return tuple(n if n else str(i) for i, n in enumerate(names))


def trace_context() -> tuple[Any, ...] | None:
    """JAX's config part of the trace cache key (x64, matmul precision, mesh, ...)."""
    try:
        from jax._src import config as jcfg

        values = jcfg.trace_context()
    except Exception:
        return None
    names = trace_context_names()
    if names is not None and len(names) == len(values):
        return tuple(zip(names, values, strict=True))
    return tuple((str(i), v) for i, v in enumerate(values))


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


def without_hidden_frames(exc: BaseException) -> None:
    """Drop jitlens' (and JAX's) frames from ``exc``'s traceback, as JAX drops its own.

    Called by a counting wrapper on its way out with the user's exception, then
    re-raised with a bare ``raise`` (which adds no frame). Honours
    ``JAX_TRACEBACK_FILTERING=off`` (nothing dropped).
    """
    try:
        from jax._src import traceback_util

        mode = traceback_util._filtering_mode()
        if mode == "off" or exc.__traceback__ is None:
            return
        if mode == "tracebackhide":
            traceback_util._add_tracebackhide_to_hidden_frames(exc.__traceback__)
            return
        exc.with_traceback(traceback_util.filter_traceback(exc.__traceback__))
    except Exception:
        pass


def partial_eval() -> Any:
    """``jax._src.interpreters.partial_eval`` (its ``trace_to_jaxpr`` runs the user's function)."""
    try:
        from jax._src.interpreters import partial_eval as pe

        return pe
    except ImportError:
        return None


def trace_to_jaxpr_patchable() -> bool:
    """Can jitlens count nested traces through ``pe.trace_to_jaxpr``'s cache?"""
    pe = partial_eval()
    return pe is not None and hasattr(getattr(pe, "trace_to_jaxpr", None), "cache_info")


def find_trace_frame(start: FrameType | None) -> FrameType | None:
    """The ``pjit._trace_for_jit`` frame above a trace-start monitoring callback."""
    f = start
    for _ in range(12):
        if f is None:
            return None
        if f.f_code.co_name == TRACE_FRAME_NAME:
            names = f.f_code.co_varnames
            return f if all(n in names for n in TRACE_FRAME_LOCALS) else None
        f = f.f_back
    return None


def trace_frame_info(frame: FrameType) -> TraceFrame | None:
    """What ``_trace_for_jit`` knows about the call being traced (None: its locals unreadable)."""
    try:
        loc = frame.f_locals
        ji = loc.get("ji")
        return TraceFrame(
            fun=loc.get("fun"),
            args=tuple(loc.get("args", ())),
            kwargs=MappingProxyType(dict(loc.get("kwargs", {}))),
            debug_info=loc.get("dbg"),
            static_argnums=_jit_field(ji, "static_argnums"),
            static_argnames=_jit_field(ji, "static_argnames"),
            flat=_flat_args(loc.get("args_ft"), loc.get("dbg")),
        )
    except Exception:
        return None


def _flat_args(args_ft: Any, dbg: Any) -> tuple[Any, tuple[Any, ...], Any] | None:
    """``(treedef, leaves, names)`` of the arguments as ``_trace_for_jit`` flattened them (its
    ``FlatTree``: ``((args, kwargs), {})`` with statics as leafless ``Static`` nodes); ``names``:
    each leaf's path as JAX wrote it for its debug info (``b.inner.w``), or None."""
    tree, vals = getattr(args_ft, "tree", None), getattr(args_ft, "vals", None)
    if not isinstance(tree, jax.tree_util.PyTreeDef) or not isinstance(vals, tuple):
        return None
    if tree.num_leaves != len(vals):
        return None
    names = getattr(dbg, "arg_names", None)
    if not (
        isinstance(names, tuple)
        and len(names) == len(vals)
        and all(isinstance(n, str) for n in names)
    ):
        names = None
    return tree, vals, names


_USER_FLATTEN: dict[type, bool] = {}


def flattens_in_user_code(node_type: Any) -> bool:
    """Does flattening a ``node_type`` pytree run a function from the user's files?

    Containers, namedtuples and ``register_dataclass`` types flatten in JAX's C++ or
    library code; a class the user registered with ``register_pytree_node(_class)`` or
    ``register_pytree_with_keys(_class)`` runs the user's flatten, which may be costly or
    count its calls: jitlens then reads its children from JAX's own flattening.
    """
    try:
        return _USER_FLATTEN[node_type]
    except (KeyError, TypeError):
        pass
    result = False
    try:
        from jax._src import tree_util

        entry = tree_util._registry.get(node_type)
        if entry is not None:
            result = _user_code(entry[0], node_type, depth=2)
    except Exception:
        result = False
    try:
        _USER_FLATTEN[node_type] = result
    except TypeError:
        pass
    return result


def _user_code(fn: Any, node_type: Any, depth: int) -> bool:
    """``fn``, or a function its closure holds (JAX's flatten made from a ``flatten_with_keys``),
    is defined in a user's file; ``register_pytree_node_class``'s ``methodcaller`` names
    a method of ``node_type``."""
    import operator

    from .frames import is_user_file

    if isinstance(fn, operator.methodcaller):
        name = fn.__reduce__()[1][0]
        fn = getattr(node_type, name, None) if isinstance(name, str) else None
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    generated = code.co_filename.startswith("<") and "__name__" not in getattr(
        fn, "__globals__", {}
    )  # code a library wrote for the class (equinox's fields' flatten), not the user's
    if is_user_file(code.co_filename) and not generated:
        return True
    if depth <= 0:
        return False
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        if callable(inner) and _user_code(inner, node_type, depth - 1):
            return True
    return False


def _jit_field(ji: Any, name: str) -> tuple[Any, ...] | None:
    """``ji.<name>`` (JAX's ``PjitInfo``: the jit's options) as a tuple; None when it has none."""
    value = getattr(ji, name, None)
    return None if value is None else tuple(value)


def src_info(dbg: Any) -> tuple[str, str] | None:
    """``(name, 'file:line')`` from a JAX DebugInfo's ``func_src_info``."""
    s = getattr(dbg, "func_src_info", None)
    if not isinstance(s, str) or " at " not in s:
        return None
    name, _, where = s.rpartition(" at ")
    return name, where


def trace_cache_keys() -> list[Any] | None:
    """Keys of JAX's trace cache (``pjit._infer_params_cached``), or None if unreadable."""
    try:
        from jax._src import pjit

        return list(pjit._infer_params_cached.cache_keys())
    except Exception:
        return None


def distributed_state() -> tuple[int, int] | None:
    """``(process_id, num_processes)`` once ``jax.distributed.initialize`` ran, else None."""
    try:
        from jax._src import distributed
    except ImportError:
        return None
    state = getattr(distributed, "global_state", None)
    if state is None or getattr(state, "client", None) is None:
        return None
    return int(state.process_id), int(state.num_processes)


def executable_counter(jitted: Any) -> Callable[[], int] | None:
    """The jit object's count of the executables its own cache holds (``_cache_size``).

    A bound C++ method (~25 ns a call), cheap enough for every timed call; None
    when the object has none (a pmap, a JAX that renamed it).
    """
    counter = getattr(jitted, "_cache_size", None)
    try:
        return counter if callable(counter) and isinstance(counter(), int) else None
    except Exception:
        return None


def is_pjit_function(fun: Any) -> bool:
    """Is ``fun`` the object ``jax.jit`` returns (its C++ ``PjitFunction``)?"""
    return type(fun).__name__ == "PjitFunction"


def trace_state_clean() -> bool:
    """False while a trace is in progress in this thread (JAX's own test, 0.9-0.10).

    Before jax 0.10.0 every jit traced inside another trace (jnp's own helpers
    included) announces its trace with the monitoring event; those events are
    part of the outer trace, not traces of their own. Unknown: True.
    """
    fn = _TRACE_STATE_CLEAN[0]
    if fn is None:
        try:
            from jax._src import core

            fn = core.trace_state_clean
        except Exception:
            fn = _always_clean
        _TRACE_STATE_CLEAN[0] = fn
    try:
        return bool(fn())
    except Exception:
        return True


def _always_clean() -> bool:
    return True


_TRACE_STATE_CLEAN: list[Any] = [None]


def backends_initialized() -> bool:
    """Has JAX created its backends? (Before that, config such as ``jax_num_cpu_devices``
    and ``jax.distributed.initialize`` can still change; jitlens must not run JAX yet.)"""
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except Exception:
        return True


def jax_version() -> str:
    return jax.__version__


def batched_value(x: Any) -> tuple[Any, int] | None:
    """The batched array behind a ``jax.vmap`` tracer and its batch axis, or None.

    Inside ``vmap`` a jitted function is traced per example, but compiled for
    the whole batch: the batch size is part of the compiled key.
    """
    if type(x).__name__ != "BatchTracer":
        return None
    val, axis = getattr(x, "val", None), getattr(x, "batch_dim", None)
    if val is None or not isinstance(axis, int):
        return None
    return val, axis


def exit_hooks() -> list[Any]:
    """JAX's own ``atexit`` hooks, in the order JAX registered them (``[]`` if not found).

    ``clean_up`` clears the backends and shuts ``jax.distributed`` down; a
    report taken after it cannot gather across processes. ``jitlens run``
    runs the program's hooks before taking its report and these after.
    """
    hooks = []
    for module, name in (("jax._src.dispatch", "wait_for_tokens"), ("jax._src.api", "clean_up")):
        hook = getattr(sys.modules.get(module), name, None)
        if callable(hook):
            hooks.append(hook)
    return hooks


def distributed_client() -> Any | None:
    """The ``jax.distributed`` client of this process (``None``: not initialized, or moved).

    Its key-value store lives in the job's coordination service: a value one
    process sets, another reads with a deadline (``blocking_key_value_get``),
    without a collective that a dead peer would leave waiting.
    """
    state = getattr(sys.modules.get("jax._src.distributed"), "global_state", None)
    client = getattr(state, "client", None)
    needed = ("key_value_set_bytes", "blocking_key_value_get_bytes", "key_value_set")
    return client if client is not None and all(hasattr(client, n) for n in needed) else None
