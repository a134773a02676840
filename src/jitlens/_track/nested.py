"""Traces inside other traces (a jit under ``lax.scan``, ``jax.vmap``, ``jax.grad``, another jit).

JAX emits no monitoring event for them; ``patches.make_trace_to_jaxpr``
counts them and ``listeners.nested_trace`` files the event. This module
makes such an event as telling as a top-level one: the nested jit's own
``_trace_for_jit`` frame is still on the stack, with the arguments as
abstract tracers (their ``.aval`` gives shapes and dtypes), so the call is
described and explained like any other, and the reasons say which
transformation traced it. A new jitted wrapper made per call and traced by
``lax.scan`` (blackjax-devs/blackjax#486's ``one_step``) is named with the
variable it was assigned to. An ``eqx.filter_jit`` whose every call happens
under another transformation, in a program that imported equinox after
tracking began, gets its record here (its per-call function is patched for
the calls after). A body a control-flow primitive traces outside any jit is
:mod:`.eager`'s.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

from .. import _compat
from .._compat import transforms_api
from .._core.explain import data_free_vars
from .._core.kinds import ReasonKind, RowKind
from .._core.report import Reason
from . import calls, eager, owned
from .calls import find_call
from .describe import describe_and_explain
from .eager import EAGER_PRIMITIVES, PRIMITIVE_JITS
from .eager import eager_record as eager_record
from .frontend import frontend_of
from .records import EventBuilder, Record
from .registry import REGISTRY
from .state import internal_failure, tls


def frontend_record(frame: FrameType | None) -> Record | None:
    """The record of a library front-end's jit traced inside another trace, with no counted call."""
    tf = _compat.find_trace_frame(frame)
    if tf is None:
        return None
    info = _compat.trace_frame_info(tf)
    if info is None:
        return None
    fe = frontend_of(info.fun)
    if fe is None:
        return None
    jit_args = info.args
    user_fn = fe.user_function(jit_args)
    if user_fn is None:
        return None
    counted = fe.kind in REGISTRY.installed_kinds
    return REGISTRY.record_for_frontend(fe, fe.cache_key(jit_args), user_fn, counted)


def untracked_record(fun: Any, frame: FrameType | None) -> Record | None:
    """The record of a ``jax.jit`` made before tracking began, traced inside another trace.

    Only when ``frame`` is the jit's own trace frame tracing ``fun`` (JAX
    traces scan bodies, vmapped and differentiated functions through the same
    ``trace_to_jaxpr``: those are not jits). JAX's own helpers get internal
    records, hidden as at top level.
    """
    if isinstance(fun, calls.COUNTING_TYPES) or _compat.is_pjit_function(fun):
        return None  # make_jaxpr / grad of a jitted object: its own body's trace is counted
    tf = _compat.find_trace_frame(frame)
    if tf is None or tf is not frame:
        return None
    info = _compat.trace_frame_info(tf)
    if info is None or info.fun is not fun or frontend_of(fun) is not None:
        return None
    return REGISTRY.record_for_untracked(fun, getattr(fun, "__name__", "?"), info.debug_info)


def describe(rec: Record, b: EventBuilder, fun: Any, frame: FrameType | None) -> None:
    """Describe and explain the nested trace ``b`` of ``rec`` (left as it is if unreadable)."""
    try:
        if rec.kind is RowKind.LAX:
            eager.describe(rec, b, frame)
            return
        _describe(rec, b, fun, frame)
    except Exception as exc:
        internal_failure("describing a nested trace", exc)


def _describe(rec: Record, b: EventBuilder, fun: Any, frame: FrameType | None) -> None:
    if rec.internal and not REGISTRY.include_internal_keys:
        return
    tf = _compat.find_trace_frame(frame)
    if tf is None:
        return
    info = _compat.trace_frame_info(tf)
    if info is None:
        return
    traced = info.fun
    if traced is not fun:
        return  # the frame found belongs to another jit
    fe = rec.frontend
    options = None
    if fe is not None:
        jit_args = info.args
        unpacked = fe.user_args(jit_args, dict(info.kwargs))
        if unpacked is None:
            return
        args, kwargs = unpacked
        user_fn = fe.user_function(jit_args)
        statics, names = rec.static_argnums, rec.static_argnames
        options = fe.jit_options(jit_args)
    elif rec.wrapper_ref is not None and rec.wrapper_ref() is not None:
        # an nnx wrapper: only the default mode's pure arguments (NodeStates) are readable here
        if _compat.NNX_SPLIT_FN is None or not isinstance(traced, _compat.NNX_SPLIT_FN):
            return
        args, kwargs = info.args, dict(info.kwargs)
        user_fn = rec.user_fn()
        statics, names = info.statics_or(rec.static_argnums, rec.static_argnames)
    else:
        args, kwargs = info.args, dict(info.kwargs)
        user_fn = rec.user_fn()
        statics, names = info.statics_or(rec.static_argnums, rec.static_argnames)
    call = find_call(frame)
    if call is not None and call.record is rec:
        b.call_index = call.index
    first = not rec.keys
    outer_built = tls.last_built  # the enclosing call's trace keeps its place (timeline, failures)
    try:
        describe_and_explain(
            rec,
            b,
            user_fn if user_fn is not None else getattr(traced, "f", traced),
            args,
            kwargs,
            statics,
            names,
            first=first,
            options=options,
        )
    finally:
        tls.last_built = outer_built
    outer = transforms_api.outer_transformation(frame)
    if tls.depth == 0 and outer is not None:
        # run outside jit, the transformation compiles next: that compile is this trace's
        # (lax.scan compiles its own primitive; jax.vmap / jax.grad the transformed jit)
        primitive = EAGER_PRIMITIVES.get(outer)
        above = call if primitive is None and call is not None and call.record is rec else None
        tls.nested_pending = (b, primitive or rec.jax_name, above.frame_id if above else None)
    elif outer is not None and not rec.internal:
        enclosing = tls.building
        if enclosing is not None and enclosing.record.internal and enclosing.record is not rec:
            # a library's own transformation around the user's row (numpyro's pmap over
            # chains): what it compiles next is this trace's code
            tls.nested_pending = (b, enclosing.record.jax_name, None)
    if b.reasons and outer is not None:
        alone = len(b.reasons) == 1
        b.reasons = tuple(_under(rec, r, outer, alone, user_fn) for r in b.reasons)
        b.reasons = tuple(owned.rebuilt_kernel(rec, r, user_fn, outer) for r in b.reasons)


def claim_compile(outer: EventBuilder, secs: float) -> None:
    """A compile of JAX's own jit of a control-flow primitive: due to the nested trace before it.

    ``lax.scan(one_step, ...)`` outside jit traces ``one_step`` (a nested
    trace, counted on ``one_step``'s row), then compiles the ``scan``
    primitive; when ``one_step`` is a new wrapper that compile is new too.
    Its seconds and its compile go to the nested trace's event, so that the
    row says what the retrace cost. ``outer`` is the internal record's event.
    """
    pending = getattr(tls, "nested_pending", None)
    if pending is None and outer.record.internal:  # no body traced: a new scan length?
        eager.compile_at_site(outer.jax_name, secs, _compat.caller(1))
        return
    if pending is None or not outer.record.internal or pending[2] is not None:
        return
    if outer.jax_name in PRIMITIVE_JITS.get(pending[1], (pending[1],)):
        tls.nested_pending = None  # (another helper's compile in between keeps it waiting)
        _charge(pending[0], secs)


def claim_compile_only(name: str, secs: float, found: Any) -> bool:
    """A compile with no trace of its own, right after a nested trace under eager vmap/grad.

    ``jax.vmap(f)(x)`` outside jit traces ``f`` inside vmap's trace, then
    compiles the batched ``f`` in the same call: one retrace, one compile,
    charged to the nested trace's event (True: the compile is claimed).
    """
    pending = getattr(tls, "nested_pending", None)
    if pending is None or pending[2] is None:
        return False
    b, jax_name, call_id = pending
    if found is None or found.frame_id != call_id or name != jax_name:
        return False
    tls.nested_pending = None
    _charge(b, secs)
    return True


def _charge(b: EventBuilder, secs: float) -> None:
    if b.compiled:
        return
    b.compile_seconds += secs
    b.compiled = True
    with b.record.lock:
        b.record.compiles += 1


def _under(rec: Record, r: Reason, outer: str, alone: bool, user_fn: Any) -> Reason:
    """A reason of a trace inside ``outer``, in those terms."""
    from .._core import reasons as W  # the words load at the first retrace

    if r.kind is ReasonKind.NEW_FUNCTION and not r.expected:  # (a different function: as is)
        name = transforms_api.assigned_name(user_fn) or r.path
        kind = rec.kind if rec.frontend is not None else RowKind.JAX_JIT
        return W.nested_new_function(
            r,
            name,
            kind,
            outer,
            REGISTRY.earlier_wrappers(rec),
            rec.defined_at,
            alone,
            data_free_vars(user_fn),
        )
    return W.nested_context(r, outer)
