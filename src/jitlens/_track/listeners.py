"""``jax.monitoring`` listeners: traces, lowerings, compiles and persistent-cache hits.

JAX emits an event when a trace starts, and durations when a trace, a lowering
or a compile ends; none fires on a cache hit. At trace start the call's key is
described while the user's objects are still in their pre-call state. Every
listener runs under a guard: an internal failure is reported once
(:func:`~.state.internal_failure`) and never reaches the user's call. Only a
guard's own error (a compile budget exceeded) is raised, on purpose.
"""

from __future__ import annotations

import time
from typing import Any

from .. import _compat
from .._core.kinds import EventKind, Fact, ReasonKind
from .._errors import JitlensError, RecompileWarning
from .._record import record
from . import calls, cost, flows, journal, live, nested, pcache, selfcheck  # live: issue 24
from .calls import CountedCall, find_call, note_miss, take_back_miss
from .compiling import (
    TRACES_SEEN,
    compile_only,
    compile_start,
    same_fun,
    stale_builder,
    take_started,
    unfile_key,
)
from .compiling import ended as compile_ended
from .describe import describe_and_explain
from .frontend import Frontend, frontend_of
from .records import MAX_EVENTS, EventBuilder, Record
from .registry import REGISTRY
from .state import (
    DEPTH_KNOWN,
    TRACING,
    PassThrough,
    internal_failure,
    note_event,
    tls,
    update_threshold,
)

#: The signature shown for a trace that ran inside another function's trace.
NESTED_SIGNATURE = "(traced inside another function's trace)"
#: What a compile budget raises on purpose (``RecompileWarning`` under ``-W error``).
GUARD_ERRORS = (JitlensError, RecompileWarning)


# ------------------------------------------------------------------ scalar: trace start


def on_scalar(event: str, value: float, **kw: Any) -> None:
    if not REGISTRY.active:
        return
    try:
        if event == _compat.TRACE_EVENT:
            if not _compat.trace_state_clean():
                # Before jax 0.10, jnp's own jits inside a trace announce their
                # trace too: they are part of the outer function's trace.
                return
            TRACES_SEEN[0] = True
            if not tls.busy:
                abandon_open_trace()  # an earlier trace start that never reached its body
                tls.open_trace = [tls.depth, None]
            if DEPTH_KNOWN[0]:
                tls.depth += 1
                with REGISTRY.lock:
                    TRACING[0] += 1
                    update_threshold()
            tls.nevents = note_event()  # after TRACING: see calls._file_timed
        elif event == _compat.COMPILE_EVENT or event == _compat.LOWER_EVENT:
            tls.nevents = note_event()
            if event == _compat.COMPILE_EVENT and REGISTRY.on_compile:
                compile_start(kw.get("fun_name", "?"))  # a compile budget may stop it here
            return
        else:
            return
        if tls.busy:
            return
    except (PassThrough, *GUARD_ERRORS):  # a compile budget's, at a compile's start
        raise
    except Exception as exc:
        internal_failure("counting a trace", exc)
        return
    except BaseException:  # KeyboardInterrupt from a signal handler: JAX's trace stops here
        abandon_open_trace()
        raise
    try:
        trace_start(kw.get("fun_name", "?"))
    except PassThrough:
        tls.open_trace = None  # the guard took its trace back (abort_trace)
        end_trace()
        raise
    except GUARD_ERRORS as exc:  # a guard's error, no tracked wrapper above to re-raise it
        tls.open_trace = None
        end_trace()
        __tracebackhide__ = True
        raise exc.with_traceback(None) from None
    except Exception as exc:
        internal_failure("describing a trace", exc)
    except BaseException:  # KeyboardInterrupt landing in jitlens' work: the body never runs
        abandon_open_trace()
        raise


def abandon_open_trace() -> None:
    """A trace JAX announced and then abandoned before its body ran: not a trace.

    An exception (a signal handler's ``KeyboardInterrupt``, another listener's
    error) raised between JAX's trace-start event and ``trace_to_jaxpr`` stops the
    trace before the user's function runs, and JAX then reports no trace end. Its
    count, event and key go, and this thread's trace depth comes back. Called where
    such an exception passes (jitlens' listener, a counted call that raised) and
    at this thread's next trace start or report, whichever comes first.
    """
    opened = tls.open_trace
    if opened is None:
        return
    tls.open_trace = None
    depth, b = opened
    if b is not None:
        _drop_trace(b)
    while tls.depth > depth:
        end_trace()


def _drop_trace(b: EventBuilder) -> None:
    """Forget a trace whose body never ran: its count, event and the key it filed."""
    rec = b.record
    with rec.lock:
        if b in rec.events:  # not already taken back (a guard's abort, a cached trace)
            rec.events.remove(b)
            rec.traces = max(0, rec.traces - 1)
        unfile_key(b)
    journal.note(rec)


def settle_open_trace() -> None:
    """:func:`abandon_open_trace` when this thread is in no trace (a call that raised, a
    report): a trace start left open then was abandoned before its body."""
    if tls.open_trace is not None and not tls.busy and _compat.trace_state_clean():
        abandon_open_trace()


calls.ON_FAILED_CALL.append(settle_open_trace)


def end_trace() -> None:
    if tls.depth <= 0:  # a trace that started while jitlens was not watching
        return
    tls.depth -= 1
    with REGISTRY.lock:
        TRACING[0] = max(0, TRACING[0] - 1)
        update_threshold()


def _same_flat(info: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """JAX's flattening of the traced arguments, if those are the arguments described."""
    if info is None or info.flat is None or len(args) != len(info.args):
        return None
    same = all(a is b for a, b in zip(args, info.args, strict=True))
    if same and kwargs.keys() == info.kwargs.keys():
        return info.flat if all(kwargs[k] is info.kwargs[k] for k in kwargs) else None
    return None


def trace_start(fun_name: str) -> bool:
    """Describe and explain a trace at its start; True when a tracked call was found."""
    now = time.perf_counter()
    frame = _compat.find_trace_frame(_compat.caller(2))
    info = _compat.trace_frame_info(frame) if frame is not None else None
    if info is None:
        _unreadable_trace(frame)
    fun = info.fun if info is not None else None
    if isinstance(fun, calls.COUNTING_TYPES) or _compat.is_pjit_function(fun):
        # make_jaxpr / grad of a jitted object: transparent; its body's trace counts as nested
        return False
    call = find_call(frame) if frame is not None else None
    if call is None and _compat.shape_only_trace(frame) and REGISTRY.find_by_fun(fun) is None:
        # jax.eval_shape / make_jaxpr (nnx.eval_shape too) of a function no jit holds: no
        # jitted function's trace, not counted (its durations go to no event either)
        tls.building = None
        tls.top_fun = fun  # its trace_to_jaxpr is this trace, not one nested in another
        return False
    fe = frontend_of(fun) if info is not None else None
    user = _frontend_call(fe, info, call) if fe is not None else None
    if fe is not None and user is None:
        selfcheck.runtime_problem(UNPACK_PROBLEM.format(kind=fe.kind))
    if user is not None:  # a library's jit (eqx.filter_jit): the user's function and args
        rec, call, call_index, args, kwargs = (
            user.record,
            user.call,
            user.index,
            user.args,
            user.kwargs,
        )
    elif call is not None and call.record.matches(fun, fun_name):
        rec, call_index, args, kwargs = call.record, call.index, call.args, call.kwargs
        note_miss(rec, call.frame_id)
        if (
            info is not None
            and _compat.NNX_SPLIT_FN is not None
            and isinstance(fun, _compat.NNX_SPLIT_FN)
        ):
            # Default nnx.jit mode: nnx already split each graph node into its
            # GraphDef and leaves (NodeStates); describe those, don't split again.
            args, kwargs = info.args, dict(info.kwargs)
    elif (pm := REGISTRY.resolve_untracked(fun, info)) is not None:  # e.g. a pmap made before
        call, call_index = None, None
        rec, args, kwargs = pm
    else:
        if (
            call is not None
            and call.record.wrapper_ref is not None
            and _compat.is_flax_inner_fn(fun)
        ):
            # an nnx wrapper's own trace that jitlens could not tie to the wrapper
            selfcheck.runtime_problem(UNPACK_PROBLEM.format(kind=call.record.kind))
        call = None
        rec = REGISTRY.record_for_untracked(
            fun, fun_name, info.debug_info if info is not None else None
        )
        call_index = None
        args = info.args if info is not None else ()
        kwargs = dict(info.kwargs) if info is not None else {}
    tls.top_fun = fun  # its trace_to_jaxpr is this (already counted) trace
    site = _compat.user_call_site(frame) if frame is not None else "?"
    first = rec.traces == 0
    b = EventBuilder(rec, "trace", call_index, site, now)
    b.jax_name = fun_name
    if user is not None and fe is not None and info is not None:
        b.frontend_key = fe.cache_key(info.args)
    rec.note_library_trace(tls.building if tls.depth > 1 else None)  # the trace it is inside
    tls.building = b
    with rec.lock:
        rec.traces += 1
        if len(rec.events) < MAX_EVENTS:
            rec.events.append(b)
    opened = tls.open_trace
    if opened is not None and opened[1] is None:
        opened[1] = b  # counted before its body runs: dropped if the trace stops first
    tls.in_tracked_call = call is not None  # read by guards deciding where to raise
    if not rec.internal or REGISTRY.include_internal_keys:
        # the user's arguments: the record's statics (a front-end's own, e.g. a pmap's)
        own = user is not None or rec.own_statics
        statics = (rec.static_argnums, rec.static_argnames)
        if not own and info is not None:
            statics = info.statics_or(*statics)
        user_fn = user.user_fn if user is not None else rec.user_fn()
        try:
            describe_and_explain(
                rec,
                b,
                user_fn if user_fn is not None else getattr(fun, "f", fun),
                args,
                kwargs,
                *statics,
                first=first,
                options=user.options if user is not None else None,
                flat=_same_flat(info, args, kwargs),
            )
        except Exception as exc:
            internal_failure("describing a trace", exc)
    if REGISTRY.on_trace:
        for cb in list(REGISTRY.on_trace):
            try:
                cb(rec, b)
            except GUARD_ERRORS as err:
                abort_trace(b)
                if call is None:  # no tracked wrapper above to re-raise it cleanly
                    raise
                raise PassThrough(err) from None
            except Exception as exc:
                internal_failure("checking a compile budget", exc)
    journal.note(rec)  # the trace and its reasons, before its body runs
    return call is not None


#: A front-end recognises JAX's traced callable but cannot map it back to the user's call.
UNPACK_PROBLEM = (
    "{kind} traces are not matched to their functions (rows, calls and compile budgets "
    "of {kind} functions unknown)"
)
#: JAX announced a trace whose frame jitlens cannot read.
FRAME_PROBLEM = (
    "JAX's trace frame ({name}) cannot be read (traces cannot be attributed to functions)"
)


def _unreadable_trace(frame: Any) -> None:
    """A trace-start event without a readable trace frame: unless the probe said so, a problem."""
    if not _compat.has_trace_frame():
        return  # already known and announced as a missing piece
    if frame is None and tls.depth > 1:
        return  # a trace JAX starts inside another one (jnp's own jits before jax 0.10)
    selfcheck.runtime_problem(FRAME_PROBLEM.format(name=_compat.TRACE_FRAME_NAME))


@record
class FrontendTrace:
    """A library front-end's trace mapped back to the user's call."""

    record: Record
    #: The counted call above the trace (None when the library's entry point went uncounted).
    call: CountedCall | None
    index: int | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    user_fn: Any
    #: The library's options that are part of the compiled key (``donate=``).
    options: tuple[tuple[str, Any], ...]


def _frontend_call(
    fe: Frontend, info: _compat.TraceFrame, call: CountedCall | None
) -> FrontendTrace | None:
    """A front-end's trace as the user's call, or None (the adapter cannot unpack it).

    The record is the user function's (found from the library's key); the
    tracked call above is the library's counted per-call function.
    """
    jit_args = info.args
    user_fn = fe.user_function(jit_args)
    unpacked = fe.user_args(jit_args, dict(info.kwargs))
    if user_fn is None or unpacked is None:
        return None
    counted = fe.kind in REGISTRY.installed_kinds  # its entry point counts calls
    rec = REGISTRY.record_for_frontend(fe, fe.cache_key(jit_args), user_fn, counted)
    if call is not None and call.record is rec:
        note_miss(rec, call.frame_id)
        return FrontendTrace(
            rec, call, call.index, unpacked[0], unpacked[1], user_fn, fe.jit_options(jit_args)
        )
    return FrontendTrace(
        rec, None, None, unpacked[0], unpacked[1], user_fn, fe.jit_options(jit_args)
    )


# ------------------------------------------------------------------ aborted traces


def abort_trace(b: EventBuilder | None) -> None:
    """A compile budget stopped this trace before the user's function ran: not a trace.

    Its event, its count and the key it filed go (JAX cached nothing), so that
    ``traces`` equals the runs of the function's body and the next trace is
    not explained against a key that was never compiled. The event moves to the
    record's ``stopped`` list: reports still show what went over budget, and why.
    """
    if b is None or b.compiled:
        return
    rec = b.record
    with rec.lock:
        if b in rec.events:
            rec.events.remove(b)
            rec.traces = max(0, rec.traces - 1)
            b.kind = EventKind.STOPPED
            if len(rec.stopped) < MAX_EVENTS:
                rec.stopped.append(b)
        unfile_key(b)
    journal.note(rec)


# ------------------------------------------------------------------ nested traces


def uncount_trace(b: EventBuilder | None) -> None:
    """JAX announced a trace but served it from its trace cache: the body did not run.

    (A new ``jax.jit`` of an already-traced function that differs only in jit
    options, or a ``make_jaxpr``/``eval_shape`` wrapper, does this.) It is not a
    trace; if a compile follows, the event comes back as a compile, keeping the
    reasons that explain it (e.g. a different ``donate_argnums``).
    """
    if b is None:
        return
    rec = b.record
    with rec.lock:
        if b in rec.events:
            rec.events.remove(b)
            rec.traces = max(0, rec.traces - 1)
        taken = take_back_miss(rec, b.call_index)  # a hit, unless a compile follows
    b.kind = EventKind.COMPILE
    # an equal key served from the trace cache: neither a clear nor an unknown cause
    b.reasons = tuple(
        r
        for r in b.reasons
        if r.kind is not ReasonKind.CACHE_CLEARED and Fact.EQUAL_KEY not in r.facts
    )
    b.detached = taken or True  # the miss taken back (its call's frame), or True
    journal.note(rec)


def nested_trace(fun: Any, frame: Any) -> None:
    """Record a trace of a known function that ran inside another trace."""
    rec = REGISTRY.find_by_fun(fun)
    if rec is None and frontend_of(fun) is not None:
        # eqx.filter_jit inside another trace: its counted call is right above
        above = find_call(frame)
        rec = above.record if above is not None and above.record.frontend is not None else None
        if rec is None:  # no counted call above: the front-end's trace frame says whose it is
            rec = nested.frontend_record(frame)
    if rec is None:
        owner = _compat.nnx_wrapper_of_traced(fun)
        if owner is not None:
            rec = REGISTRY.record_for_wrapper(owner, None, False)
    if rec is None:  # jitlens-frontends: a jax.jit made before tracking, traced in a trace
        rec = nested.untracked_record(fun, frame)
    if rec is None:  # a user's body under lax.map / scan / cond / while outside jit
        rec = nested.eager_record(fun, frame)
    if rec is None or (rec.internal and not rec.counts_calls):  # JAX's helpers made before
        return  # tracking: no calls counted, no row to keep right
    rec.note_library_trace(tls.building)  # inside another function's trace
    call = find_call(frame)
    if call is not None and call.record is rec and tls.depth == 0:
        note_miss(rec, call.frame_id)  # e.g. under jax.checkpoint / lax.scan at top level
    b = EventBuilder(rec, "trace", None, _compat.user_call_site(frame), time.perf_counter())
    b.signature = NESTED_SIGNATURE
    b.entry = -1  # inlined into the outer function's entry: none of its own
    b.jax_name = rec.jax_name
    with rec.lock:
        rec.traces += 1
        if len(rec.events) < MAX_EVENTS:
            rec.events.append(b)
    nested.describe(rec, b, fun, frame)  # key and reasons, as at top level
    journal.note(rec)
    for cb in list(REGISTRY.on_trace):
        cb(rec, b)


# ------------------------------------------------------------------ durations


def on_duration(event: str, secs: float, **kw: Any) -> None:
    try:
        if event == _compat.TRACE_EVENT:
            if not _compat.trace_state_clean():
                return  # a nested jnp jit's trace (jax < 0.10), ignored at its start too
            tls.open_trace = None  # it ended: its body ran (or raised, as the user's)
            end_trace()  # balanced even when tracking stopped during the trace
        if not REGISTRY.active:
            return
        _duration(event, secs, kw.get("fun_name", "?"))
    except GUARD_ERRORS:  # a compile budget's, at the end of a compile JAX announced no start of
        raise
    except Exception as exc:
        internal_failure("timing a trace or compile", exc)


def _duration(event: str, secs: float, fun_name: str) -> None:
    b = tls.building
    if b is not None and event == _compat.COMPILE_EVENT and stale_builder(b):
        tls.building = b = None  # its trace never compiled (lower/eval_shape/make_jaxpr)
    if b is None:
        if event == _compat.COMPILE_EVENT:
            compile_only(fun_name, secs)
        return
    if event == _compat.TRACE_EVENT:
        b.trace_seconds += secs
        frame = _compat.find_trace_frame(_compat.caller(1))
        if b.key is not None and flows.wants_program(b.key):
            flows.note_program(b, frame)
        cost.note_trace_end(b, frame)
    elif event == _compat.LOWER_EVENT:
        if same_fun(b, fun_name):
            b.lower_seconds += secs
    elif event == _compat.COMPILE_EVENT:
        if same_fun(b, fun_name):
            counted = take_started(fun_name)
            b.compile_seconds += secs
            b.compiled = True
            cost.note_compiled(
                b, _compat.caller(2)
            )  # issues 34, 45: what a long compile was made of
            if b.detached:  # a cached trace after all: the event is this compile
                if b.detached is not True:  # its call compiled after all: a miss again
                    note_miss(b.record, b.detached)
                b.detached = False
                with b.record.lock:
                    first = b.record.uncompiled_nested_trace()
                    if first is not None:  # traced inside another jit, compiled now: one event
                        first.compiled = True
                        first.lower_seconds += b.lower_seconds
                        first.compile_seconds += b.compile_seconds
                    else:
                        b.record.events.append(b)
            if not b.persistent_cache_hit:
                with b.record.lock:
                    b.record.compiles += 1
            nested.claim_compile(b, secs)  # jitlens-frontends: an eager lax.scan's compile
            tls.building = None
            journal.note(b.record)  # the compile and its durations
            if b.kind == EventKind.RETRACE:  # logged once its compile time is known: folded,
                try:  # with record.jitlens, the runaway warning, the profiler (issue 24)
                    live.log_retrace(b.record, b)
                except Exception as exc:
                    internal_failure("logging a retrace", exc)
            compile_ended(b.record, b, counted)
        else:
            compile_only(fun_name, secs)


# ------------------------------------------------------------------ plain events


def on_event(event: str, **kw: Any) -> None:
    try:
        if REGISTRY.active:  # issue 23: the persistent cache's outcome
            pcache.note_event(event, tls.building)
        if REGISTRY.active and event == _compat.PCACHE_HIT_EVENT:
            b = tls.building
            if b is not None:
                b.persistent_cache_hit = True
                with b.record.lock:
                    b.record.persistent_hits += 1
    except Exception as exc:
        internal_failure("counting a persistent-cache hit", exc)
