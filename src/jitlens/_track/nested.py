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
the calls after).
"""

from __future__ import annotations

import weakref
from types import FrameType
from typing import Any

from .. import _compat
from .._compat import transforms_api
from .._core import messages as M
from .._core import messages_transforms as W
from .._core.explain import data_free_vars
from .._core.kinds import EventKind, Fact, FixKind, ReasonKind, RowKind, SubjectKind
from .._core.report import Reason
from . import calls
from .calls import find_call
from .describe import describe_and_explain
from .frontend import frontend_of
from .records import EventBuilder, Record
from .registry import REGISTRY
from .state import internal_failure, tls

#: Control-flow transformations run outside jit -> the primitive JAX compiles for each call.
EAGER_PRIMITIVES = {
    "lax.scan": "scan",
    "lax.map": "scan",
    "lax.fori_loop": "while",
    "lax.while_loop": "while",
    "lax.cond": "cond",
    "lax.switch": "cond",
}
#: The jits a primitive may compile as (``fori_loop`` with concrete bounds runs a ``scan``).
PRIMITIVE_JITS = {"while": ("while", "scan")}

#: A body traced again by a control-flow primitive run outside jit (markean/aimz#275). The
#: templates live here until the words move to ``_core/reasons/``.
EAGER_CLOSURE_MSG = (
    "`{name}` is a new function each time {made}, and {outer} outside jit traces and compiles "
    "its body again for each new function ({count} earlier one(s) of the same code, defined at "
    "{defined_at})."
)
EAGER_REWRAPPED_MSG = (
    "{outer} outside jit wraps `{name}` in a new function of its own on every call: JAX traced "
    "and compiled it again though `{name}` is the same function."
)
EAGER_PRIMITIVE_FIX = (
    "Put `@jax.jit` on {target}: under jit {outer} is traced once per input shape and reused "
    "(arguments that set shapes or branches: `static_argnames`)."
)

LIBRARY_EAGER_MSG = (
    "{library}'s `{entry}` runs {outer} outside jit over a function it builds on every call "
    "around your `{name}`: JAX traced `{name}` and compiled {outer} again."
)
LIBRARY_EAGER_FIX = (
    "Jit the call once, before the loop: `{v}_jit = jax.jit({v})`, then call `{v}_jit(...)` "
    "instead of `{v}(...)`: {outer} is traced once per input shape and reused."
)

#: (the body's code, the primitive) -> its record; the last body object it traced (weakly).
_EAGER: dict[tuple[Any, str], tuple[Record, Any]] = {}
#: A library's eager row's id -> the library call the user made, and the user's function.
_LIBRARY_LAST: dict[int, tuple[_compat.LibraryEntry, str]] = {}
#: An eager row's id -> its body's name, its last trace's caller (name, first line, line)
#: and whether that trace's body was a new function.
_LAST: dict[int, tuple[str, tuple[str, int, int], bool]] = {}


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


def eager_record(fun: Any, frame: FrameType | None) -> Record | None:
    """The row of a user function traced by ``lax.map`` / ``scan`` / ``cond`` / ``while`` outside jit.

    Outside jit each such call traces its body and compiles the primitive (JAX
    caches per function object): a body made per call (a closure) or re-wrapped by
    the primitive (``lax.map`` does) is traced and compiled on every call. Its row
    is named ``lax.map(one)``, one per body code and primitive; calls are not
    counted (a cached call runs no Python of jitlens').
    """
    if tls.depth != 0:
        return None  # inside a jit: the primitive is traced with the jit, once per jit trace
    outer = transforms_api.outer_transformation(frame)
    if outer not in EAGER_PRIMITIVES:
        return None
    caller = transforms_api.eager_caller(frame)
    if caller is None:
        return None
    if not _compat.is_user_file(caller.f_code.co_filename):
        return _library_eager_record(fun, caller, outer)
    body = transforms_api.user_body(fun)
    code = getattr(body, "__code__", None)
    if code is None:
        return None
    key = (code, outer)
    with REGISTRY.lock:
        hit = _EAGER.get(key)
        if hit is None:
            rec = REGISTRY.new_record(
                RowKind.LAX,
                body,
                user_fn=body,
                counts_calls=False,
                jax_name=EAGER_PRIMITIVES[outer],
            )
            rec.name = rec.qualname = f"{outer}({rec.name})"
            rec.internal = False
            hit = _EAGER[key] = (rec, None)
        rec = hit[0]
        new_body = hit[1] is not None and hit[1]() is not body
        where = (caller.f_code.co_name, caller.f_code.co_firstlineno, caller.f_lineno)
        _LAST[rec.id] = (getattr(body, "__name__", "?"), where, new_body)
        _EAGER[key] = (rec, _weak(body))
    return rec


def _library_eager_record(fun: Any, caller: FrameType, outer: str) -> Record | None:
    """A primitive one of the libraries runs outside jit around the user's code (numpyro's
    ``Predictive`` maps the user's model with ``lax.map``): a row named after the library
    call the user made, one per entry point."""
    entry = _compat.library_entry(caller)
    body = transforms_api.user_body(fun, depth=4)
    if entry is None or body is None:
        return None  # a library's own loop over its own code: its business
    key = (entry.code, outer)
    with REGISTRY.lock:
        hit = _EAGER.get(key)
        if hit is None:
            rec = REGISTRY.new_record(
                RowKind.LAX,
                body,
                user_fn=body,
                counts_calls=False,
                jax_name=EAGER_PRIMITIVES[outer],
            )
            rec.internal = False
            REGISTRY.rename(rec, f"{entry.library}: {entry.entry}")
            hit = _EAGER[key] = (rec, None)
        rec = hit[0]
        _LIBRARY_LAST[rec.id] = (entry, getattr(body, "__name__", "?"))
    return rec


def _weak(fn: Any) -> Any:
    try:
        return weakref.ref(fn)
    except TypeError:
        return None


def _describe_eager(rec: Record, b: EventBuilder, fun: Any, frame: FrameType | None) -> None:
    """The trace ``b`` of an eager row: the primitive's compile next is its; a retrace's reason."""
    outer = transforms_api.outer_transformation(frame)
    primitive = EAGER_PRIMITIVES.get(outer or "")
    if primitive is None:
        return
    tls.nested_pending = (b, primitive, None)
    if rec.traces <= 1:
        return
    if rec.id in _LIBRARY_LAST:
        _library_retrace(rec, b, outer or "", *_LIBRARY_LAST[rec.id])
        return
    last = _LAST.get(rec.id)
    if last is None:
        return
    name, (caller, first_line, line), new_body = last
    file = rec.defined_at.rpartition(":")[0]
    module = caller == "<module>"
    if new_body:
        made = f"line {line} runs" if module else f"`{caller}` is called (a closure made in it)"
        count = rec.traces - 1
        msg = EAGER_CLOSURE_MSG.format(
            name=name, made=made, outer=outer, count=count, defined_at=rec.defined_at
        )
        subject = SubjectKind.CLOSURE
    elif outer == "lax.map":
        msg = EAGER_REWRAPPED_MSG.format(name=name, outer=outer)
        subject = SubjectKind.FUNCTION
    else:
        return  # the same function traced again: its arguments changed (not described here)
    if module:
        target = f"a function of your own that makes the {outer} call at {file}:{line}"
    else:
        target = f"`{caller}` ({file}:{first_line}), which calls {outer}"
    fix = EAGER_PRIMITIVE_FIX.format(target=target, outer=outer)
    r = M.new_function(name, str(RowKind.LAX), rec.defined_at, rec.traces - 1, False, False)
    before = f"{rec.traces - 1} earlier {'closure' if new_body else 'wrapper'}(s)"
    after = "new closure" if new_body else f"new {outer} wrapper"
    r = M.with_fix(
        r,
        FixKind.EAGER_PRIMITIVE,
        fix,
        message=msg,
        path=rec.name,
        subject=subject,
        before=before,
        after=after,
    )
    b.kind = EventKind.RETRACE
    b.reasons = (r,)


def _library_retrace(
    rec: Record, b: EventBuilder, outer: str, entry: _compat.LibraryEntry, name: str
) -> None:
    """A library's eager primitive traced the user's function again: the call is the culprit."""
    short = entry.entry.removesuffix(".__call__")
    msg = LIBRARY_EAGER_MSG.format(library=entry.library, entry=short, outer=outer, name=name)
    if entry.spelled:
        fk, fix = FixKind.LIBRARY_EAGER, LIBRARY_EAGER_FIX.format(v=entry.spelled, outer=outer)
    else:
        fk, fix = (
            FixKind.EAGER_PRIMITIVE,
            EAGER_PRIMITIVE_FIX.format(
                target=f"a function of your own that calls `{short}`", outer=outer
            ),
        )
    r = M.new_function(name, str(RowKind.LAX), rec.defined_at, rec.traces - 1, False, False)
    before, after = f"{rec.traces - 1} earlier call(s)", f"a new {outer} body"
    r = M.with_fix(
        r,
        fk,
        fix,
        message=msg,
        path=rec.name,
        subject=SubjectKind.CLOSURE,
        before=before,
        after=after,
    )
    b.kind = EventKind.RETRACE
    b.reasons = (r.with_facts(Fact.LIBRARY_MADE),)


def describe(rec: Record, b: EventBuilder, fun: Any, frame: FrameType | None) -> None:
    """Describe and explain the nested trace ``b`` of ``rec`` (left as it is if unreadable)."""
    try:
        if rec.kind is RowKind.LAX:
            _describe_eager(rec, b, fun, frame)
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


def claim_compile(outer: EventBuilder, secs: float) -> None:
    """A compile of JAX's own jit of a control-flow primitive: due to the nested trace before it.

    ``lax.scan(one_step, ...)`` outside jit traces ``one_step`` (a nested
    trace, counted on ``one_step``'s row), then compiles the ``scan``
    primitive; when ``one_step`` is a new wrapper that compile is new too.
    Its seconds and its compile go to the nested trace's event, so that the
    row says what the retrace cost. ``outer`` is the internal record's event.
    """
    pending = getattr(tls, "nested_pending", None)
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
