"""The engine's own patch: ``pe.trace_to_jaxpr`` counts traces inside other traces.

JAX emits no monitoring event for a trace that runs inside another one (jit in
jit, grad/vmap/scan of a jit), but each runs the user's Python function: a
miss of ``trace_to_jaxpr``'s own cache is exactly "the body ran". Front-ends'
patches live in their adapters (:mod:`.frontends`). The patch steps aside
(calls the original) when jitlens fails inside it.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from .. import _compat
from .listeners import GUARD_ERRORS, nested_trace, uncount_trace
from .state import STATE, internal_failure, tls


def make_trace_to_jaxpr(original: Any) -> Callable[..., Any]:
    """Count traces that happen inside another trace (jit in jit, grad/vmap of a jit).

    JAX emits no monitoring event for those (only clean top-level traces get
    one), but they run the user's Python function all the same: a miss of
    ``pe.trace_to_jaxpr``'s own cache is exactly "the body ran".
    """

    #: id -> weak reference of each function whose trace raised here: JAX's cache keeps a
    #: failed entry, and every later lookup of it runs the body again, counted as a *hit*.
    failed: dict[int, Any] = {}

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
            before = original.cache_info()
        except Exception:
            return original(fun, *args, **kwargs)
        raised = False
        if top:
            local.open_trace = None  # the body may run from here: it ends the trace start
        try:
            return original(fun, *args, **kwargs)
        except BaseException:
            raised = True  # a trace that raised ran the body (the cache counts no miss)
            _note_failed(failed, fun)
            raise
        finally:
            try:
                after = original.cache_info()
                ran = (
                    raised
                    or after.misses != before.misses
                    or (after.hits != before.hits and _failed_before(failed, fun))
                )
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


def _note_failed(failed: dict[int, Any], fun: Any) -> None:
    key = id(fun)
    try:
        failed[key] = weakref.ref(fun, lambda _: failed.pop(key, None))
    except TypeError:
        pass  # not weakly referable: JAX's cache could not have kept it either


def _failed_before(failed: dict[int, Any], fun: Any) -> bool:
    """Has a trace of ``fun`` raised before? (Its "hit" may be the failed entry run again.)"""
    ref = failed.get(id(fun))
    return ref is not None and ref() is fun
