"""The functions jitlens puts in place of JAX's and Flax's while tracking.

* ``jax.jit`` returns a :class:`~.calls.TrackedJit` (calls and hits counted);
* ``jax.eval_shape`` unwraps it, so JAX keeps its fast path for jit objects;
* ``pe.trace_to_jaxpr`` counts traces that run inside another trace (JAX emits
  no monitoring event for those);
* ``nnx.cached_partial`` watches the cached graph for statics changed after caching.

nnx wrapper classes get the counting ``__call__`` of :mod:`.calls`. Each patched
function steps aside (calls the original) when jitlens fails inside it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import _compat
from . import fe_linen
from .calls import TrackedJit
from .listeners import GUARD_ERRORS, nested_trace, uncount_trace
from .registry import REGISTRY
from .state import STATE, internal_failure, tls


def make_tracked_jit(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def jit(*args: Any, **options: Any) -> Any:
        if len(args) != 1 or not callable(args[0]):
            # decorator form (`jax.jit(static_argnums=0)`), or arguments JAX
            # rejects: JAX answers, with its own errors
            if not args and "fun" not in options:
                return lambda f: jit(f, **options)
            return original(*args, **options)
        fun = args[0]
        jitted = original(fun, **options)
        if not REGISTRY.active:
            return jitted
        try:
            if _compat.is_flax_inner_fn(fun) or _compat.frontend_of(fun) is not None:
                return jitted  # counted at the nnx wrapper / the library's own call
            rec = fe_linen.record_for(fun, options)  # jitlens-frontends: nn.jit rows
            if rec is None:
                rec = REGISTRY.record_for_jax_jit(fun, options)
            return TrackedJit(jitted, rec)
        except Exception as exc:
            internal_failure("wrapping jax.jit", exc)
            return jitted

    jit.__jitlens_original__ = original  # type: ignore[attr-defined]
    return jit


def make_eval_shape(original: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.eval_shape`` takes its fast path only for a real jax.jit object: give it one."""

    @functools.wraps(original)
    def eval_shape(fun: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(fun, TrackedJit):
            fun = fun._jitted
        return original(fun, *args, **kwargs)

    return eval_shape


def make_trace_to_jaxpr(original: Any) -> Callable[..., Any]:
    """Count traces that happen inside another trace (jit in jit, grad/vmap of a jit).

    JAX emits no monitoring event for those (only clean top-level traces get
    one), but they run the user's Python function all the same: a miss of
    ``pe.trace_to_jaxpr``'s own cache is exactly "the body ran".
    """

    @functools.wraps(original)
    def trace_to_jaxpr(fun: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # errors raised by the traced function are the user's
        local = tls
        if not STATE[0] or local.busy:
            return original(fun, *args, **kwargs)
        top = local.top_fun is fun
        if top:
            local.top_fun = None
        try:
            misses = original.cache_info().misses
        except Exception:
            return original(fun, *args, **kwargs)
        raised = False
        try:
            return original(fun, *args, **kwargs)
        except BaseException:
            raised = True  # a trace that raised ran the body (the cache counts no miss)
            raise
        finally:
            try:
                ran = raised or original.cache_info().misses != misses
                if top and not ran:
                    uncount_trace(local.building)
                elif not top and ran:
                    nested_trace(fun, _compat.caller(1))
            except GUARD_ERRORS:
                if not raised:
                    raise
            except Exception as exc:
                internal_failure("counting a nested trace", exc)

    # JAX calls the cache's own methods on it (clear_cache -> evict_weakref, ...)
    for name in dir(original):
        if not name.startswith("__"):
            setattr(trace_to_jaxpr, name, getattr(original, name))
    return trace_to_jaxpr


def make_cached_partial(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def cached_partial(f: Any, *cached_args: Any, **kw: Any) -> Any:
        out = original(f, *cached_args, **kw)
        if not REGISTRY.active:
            return out
        try:
            from .stale import watch_cached_partial

            return watch_cached_partial(out, f, cached_args)
        except Exception as exc:
            internal_failure("watching nnx.cached_partial", exc)
            return out

    return cached_partial
