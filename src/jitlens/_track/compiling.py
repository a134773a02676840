"""Compiles: the one that follows a trace, one with no trace before it, and compile budgets.

JAX announces a compile when it starts (a scalar event, before the persistent cache is looked
up) and reports its seconds when it ends. At its end, a compile is charged to the trace it
follows, or, with no trace before it (a new sharding under ``nnx.jit``, an ahead-of-time
``.compile()``), explained as its own event (:func:`compile_only`). At its start, the compile
budgets (``REGISTRY.on_compile``: ``jitlens.max_compiles``, the ``max_compiles`` marker, ``jitlens
run --max-compiles``) count it and may stop it before XLA runs (:func:`compile_start`); where
JAX announced no start, they count it at its end (:func:`ended`).
"""

from __future__ import annotations

import time

from .. import _compat
from .._core.kinds import EventKind
from .._errors import JitlensError as _JitlensError
from .._errors import RecompileWarning as _RecompileWarning
from . import cost, journal, live, nested, selfcheck
from .calls import find_call, note_miss
from .describe import describe_and_explain, describe_only
from .records import MAX_EVENTS, EventBuilder, Record
from .registry import REGISTRY
from .state import PassThrough, internal_failure, tls

#: Has any trace-start event reached jitlens in this process?
TRACES_SEEN = [False]
#: JAX compiled a function whose trace it never announced.
SILENT_TRACE_PROBLEM = "JAX compiled {name} without announcing its trace (trace counts unknown)"


# ------------------------------------------------------------------ compile budgets


def compile_start(fun_name: str) -> None:
    """JAX starts a compile (before the persistent cache is looked up and XLA runs): the
    compile budgets count it, and one over budget raises here, at the user's call, with what
    changed. Only called while a compile budget is open (``REGISTRY.on_compile``)."""
    __tracebackhide__ = True
    b = tls.building
    frame = _compat.caller(2)
    call = find_call(frame)
    if b is not None and same_fun(b, fun_name) and not stale_builder(b):
        rec = b.record  # the compile of the trace in progress (a first trace, a retrace)
    else:
        name = fun_name[4:-1] if fun_name.startswith("jit(") else fun_name
        if call is None or call.record.jax_name != name or call.record.internal:
            return  # no user function's call: an ahead-of-time compile, JAX's own helper
        rec = call.record  # a compile from the cached trace: what changed, for the message
        b = EventBuilder(rec, EventKind.COMPILE, call.index, _compat.user_call_site(frame), 0.0)
        describe_only(rec, b, call.args, call.kwargs)
    tls.compile_started = fun_name
    for check in list(REGISTRY.on_compile):
        try:
            check(rec, b)
        except (_JitlensError, _RecompileWarning) as error:
            tls.compile_started = None
            _stop(rec, b)
            if call is None:  # no tracked wrapper above to re-raise it cleanly
                raise
            raise PassThrough(error) from None


def _stop(rec: Record, b: EventBuilder) -> None:
    """A compile budget stopped this compile before XLA ran: it is no compile. Its trace (if
    it follows one) still ran; its event moves to the record's ``stopped`` list, which reports
    show, and the key it filed goes, so that the next call is explained against what did
    compile."""
    with rec.lock:
        if b in rec.events:
            rec.events.remove(b)
        b.kind = EventKind.STOPPED
        if len(rec.stopped) < MAX_EVENTS:
            rec.stopped.append(b)
        unfile_key(b)
    journal.note(rec)


def unfile_key(b: EventBuilder) -> None:
    """Take back the key an uncompiled trace filed, if still the last (record's lock held),
    and this thread's trace in progress is not ``b`` any more."""
    rec = b.record
    if b.key is not None and b.key in rec.keys and b.entry == rec.n_entries - 1:
        rec.keys.remove(b.key)
        rec.n_entries -= 1
    b.key = None
    if tls.building is b:
        tls.building = None
    if tls.last_built is b:
        tls.last_built = None


def take_started(fun_name: str) -> bool:
    """Was this compile counted at its start (and the mark taken back)?"""
    started = getattr(tls, "compile_started", None) == fun_name
    tls.compile_started = None
    return started


def ended(rec: Record, b: EventBuilder, counted: bool) -> None:
    """A compile ended that no budget counted at its start (JAX announced none): count it now;
    one over budget raises here, the compile done, with what changed."""
    __tracebackhide__ = True
    if counted or not REGISTRY.on_compile or rec.internal:
        return
    for check in list(REGISTRY.on_compile):
        check(rec, b)


# ------------------------------------------------------------------ compiles with no trace


def stale_builder(b: EventBuilder) -> bool:
    """Is this compile happening in a tracked call other than the one that traced ``b``?"""
    found = find_call(_compat.caller(4))
    return found is not None and (found.record is not b.record or found.index != b.call_index)


def same_fun(b: EventBuilder, fun_name: str) -> bool:
    return fun_name in (f"jit({b.jax_name})", b.jax_name, f"pjit({b.jax_name})")


def compile_only(fun_name: str, secs: float) -> None:
    """A compile with no trace before it (AOT ``.compile()``, a new placement, an evicted executable).

    JAX's trace cache ignores some parts of the full key (e.g. which device a
    committed input lives on): those recompile without re-running Python. When
    the compile happens inside a tracked call, its key is described and
    explained like a retrace's.
    """
    name = fun_name[4:-1] if fun_name.startswith("jit(") else fun_name
    counted = take_started(fun_name)
    frame = _compat.caller(3)
    found = find_call(frame)
    if nested.claim_compile_only(name, secs, found):  # an eager vmap/grad's compile
        return
    cur = found if found is not None and found.record.jax_name == name else None
    rec = cur.record if cur is not None else None
    if cur is not None:
        note_miss(cur.record, cur.frame_id)
    if rec is None:
        with REGISTRY.lock:
            rec = next((r for r in reversed(REGISTRY.records) if r.jax_name == name), None)
    if rec is None:
        rec = REGISTRY.record_for_untracked(None, name, None)
        if not TRACES_SEEN[0]:  # every first compile follows a trace JAX announces
            selfcheck.runtime_problem(SILENT_TRACE_PROBLEM.format(name=name))
    with rec.lock:
        first = rec.uncompiled_nested_trace()
        if first is not None:  # traced inside another jit, compiled now from that trace
            first.compiled = True
            first.compile_seconds += secs
            rec.compiles += 1
    if first is not None:
        cost.note_compiled(first, frame)  # issue 45: e.g. a library's own jit
        journal.note(rec)
        ended(rec, first, counted)
        return
    b = EventBuilder(
        rec,
        EventKind.COMPILE,
        cur.index if cur is not None and cur.record is rec else None,
        _compat.user_call_site(frame),
        time.perf_counter() - secs,
    )
    b.compile_seconds = secs
    b.compiled = True
    b.jax_name = name
    if cur is not None and cur.record is rec and not rec.internal:
        try:
            describe_and_explain(
                rec,
                b,
                rec.user_fn(),
                cur.args,
                cur.kwargs,
                rec.static_argnums,
                rec.static_argnames,
                first=False,
                compile_only=True,
            )
        except Exception as exc:
            internal_failure("explaining a compile", exc)
    cost.note_compiled(b, frame)  # issue 45: a compile with no trace of its own
    with rec.lock:
        rec.compiles += 1
        rec.events.append(b)
    journal.note(rec)
    if b.reasons and not rec.internal:  # a recompile with a cause, as it happens (issue 47)
        live.log_retrace(rec, b)  # ... and the runaway warning, which counts it too
    else:
        live.check_runaway(rec, b)  # issue 24: recompiles without a retrace count too
    ended(rec, b, counted)
