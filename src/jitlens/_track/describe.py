"""The one describe-and-explain step: a traced or compiled call -> its key and reasons.

Both the trace-start listener and the compile-only path (a compile with no
trace before it) call :func:`describe_and_explain`; it describes the call's
cache key, explains it against the record's earlier keys (or, for a first
trace, against other wrappers of the same code) and files the key.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

from .. import _compat
from .._core import callees
from .._core import explain as _explain
from .._core.key import Key
from .._core.kinds import EventKind
from .._core.signature import describe_call
from . import owned
from .frontend import of_kind
from .records import EventBuilder, Record
from .registry import REGISTRY
from .state import deref, internal_failure, tls


def _as_wrapper(rec: Record) -> _explain.Wrapper:
    bound = rec.user_fn()
    return _explain.Wrapper(
        name=rec.name,
        qualname=rec.qualname,
        kind=rec.kind,
        defined_at=rec.defined_at,
        calls=rec.calls,
        keys=tuple(rec.keys),
        partial=bound if isinstance(bound, functools.partial) else None,
        free_vars=_explain.data_free_vars(bound),
        callees=rec.callees or (),
        method=_compat.bound_method(bound),
        options=_static_options(rec.static_argnums, rec.static_argnames),
    )


def _static_options(nums: tuple[int, ...], names: tuple[str, ...]) -> str:
    """A jit's static options as the code that passes them: ``", static_argnums=1"``."""
    out = ""
    if nums:
        out += f", static_argnums={nums[0] if len(nums) == 1 else nums}"
    if names:
        out += (
            f", static_argnames={names[0]!r}" if len(names) == 1 else f", static_argnames={names}"
        )
    return out


def _first_trace_reasons(rec: Record, key: Key) -> list[Any]:
    if rec.callees is None:
        rec.callees = _compat.closure_callees(rec.user_fn())
    siblings = REGISTRY.by_code.get(rec.code_key, ())
    wrapper = deref(rec.wrapper_ref)
    shared = [
        k
        for r in siblings
        if r is not rec and wrapper is not None and deref(r.wrapper_ref) is wrapper
        for k in r.keys
    ]
    if shared:
        return _explain.explain_first_trace(key, _as_wrapper(rec), shared, ())
    others = [r for r in siblings if r is not rec and r.keys]
    me = _as_wrapper(rec)  # its free variables: those whose objects differ from an earlier one's
    free = callees.changing(*_held(rec), [_held(r) for r in others])
    me = dataclasses.replace(me, free_vars=free)
    return _explain.explain_first_trace(key, me, (), [_as_wrapper(r) for r in others])


def _held(rec: Record) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The data free variables of ``rec``'s function and the objects its closure holds."""
    bound = rec.user_fn()
    names = _explain.data_free_vars(bound)
    return names, callees.free_values(bound, names)


def describe_and_explain(
    rec: Record,
    b: EventBuilder,
    names_fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    statics: tuple[int, ...],
    static_names: tuple[str, ...],
    *,
    first: bool,
    compile_only: bool = False,
    options: tuple[tuple[str, Any], ...] | None = None,
    flat: Any = None,
) -> None:
    """Describe the call's key, explain it, file it under ``rec``; fill ``b``.

    ``compile_only``: a compile with no trace; an equal key compiled again is
    then usually a transformed (grad/vmap) or AOT variant, not an eviction.
    ``options``: this call's jit options, when a front-end's vary per call
    (default: the record's, fixed per wrapper).
    ``flat``: the arguments as JAX flattened them for this trace (``TraceFrame.flat``),
    when ``args`` and ``kwargs`` are the very ones JAX traces.
    """
    t = time.perf_counter()
    tls.busy = True
    try:
        fe = rec.frontend
        key = describe_call(
            names_fn,
            args,
            kwargs,
            statics,
            static_names,
            _compat.trace_context(),
            rec.options if options is None else options,
            static_leaves=fe is not None and fe.static_leaves,
            flat=flat,
        )
        b.signature = key.signature
        b.key = key
        live, cleared = rec.live_and_cleared()
        if compile_only:
            b.reasons = tuple(_explain.differences(key, live, cleared))
        else:
            reasons = (
                _first_trace_reasons(rec, key)
                if first
                else _explain.explain(key, live, cleared, _compat.trace_cache_fill())
            )
            own = of_kind(rec.kind)
            if reasons and own is not None:  # in its front-end's words (eqx.filter_jit, pmap, ...)
                reasons = own.reword(rec, list(reasons), key)
            if reasons and not rec.internal:  # a fix edits only code in the user's files
                reasons = owned.in_users_code(rec, list(reasons), key, names_fn, args, kwargs)
                reasons = [owned.rebuilt_kernel(rec, r, rec.user_fn()) for r in reasons]
            if reasons:
                b.kind = EventKind.RETRACE
                b.reasons = tuple(reasons)
        b.entry = rec.add_key(key)
        tls.last_built = b
        own = of_kind(rec.kind)
        if own is not None:  # what a later stale check compares (nn.jit's module fields)
            own.compiled(rec, key, args)
    finally:
        tls.busy = False
        b.explain_seconds = time.perf_counter() - t


def _key_of(rec: Record, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The key of a call of ``rec`` with ``args``, described as its traces' keys are (the
    front-end's static leaves included, so that equal calls have equal keys)."""
    return describe_call(
        rec.user_fn(),
        args,
        kwargs,
        rec.static_argnums,
        rec.static_argnames,
        _compat.trace_context(),
        rec.options,
        static_leaves=rec.frontend is not None and rec.frontend.static_leaves,
    )


def describe_only(
    rec: Record, b: EventBuilder, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """A compile's key and what differs from the closest compiled one, into ``b``, filing
    nothing: a compile budget's message, at the start of a compile it may stop."""
    tls.busy = True
    try:
        key = _key_of(rec, args, kwargs)
        b.signature = key.signature
        live, cleared = rec.live_and_cleared()
        b.reasons = tuple(_explain.differences(key, live, cleared))
    except Exception as exc:
        internal_failure("describing a compile", exc)
    finally:
        tls.busy = False


def entry_by_key(rec: Record, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """The compiled entry a cache hit's arguments fill: the filed key equal to theirs (-1: none,
    or the key could not be described). Costs a description of the arguments, as a trace does:
    ``ties`` asks only for hits their light signature cannot tie."""
    tls.busy = True
    try:
        key = _key_of(rec, args, kwargs)
        for k in reversed(rec.keys):
            if k.fingerprint == key.fingerprint and not _explain.diff_keys(k, key):
                return int(getattr(k, "entry", -1))
        return -1
    except Exception as exc:
        internal_failure("tying a cache hit to its entry", exc)
        return -1
    finally:
        tls.busy = False
