"""The per-call path: what runs on every call of a tracked function.

A cache hit costs one flag read and one counter increment. Misses are not
detected here: the trace-start listener walks up from JAX's trace frame to the
frame of the tracked call (its code is in :data:`CALL_CODES`) and reads the
call's record, index and arguments from its locals. Nothing is hashed,
flattened or published per call.
"""

from __future__ import annotations

import functools
import sys
import time
import types
import weakref
from collections.abc import Callable
from typing import Any

import jax

from .. import _compat
from . import advisor, selfcheck
from .records import Record
from .registry import REGISTRY
from .state import (
    CANARY_PENDING,
    STATE,
    WINDOW,
    PassThrough,
    finalize,
    internal_failure,
    tls,
    weak,
)


def _first_call(rec: Record) -> None:
    # _first_call <- call_detailed <- the wrapper's __call__ <- the user's call
    rec.first_call_site = _compat.user_call_site(_compat.caller(3))


_ARRAYISH: dict[type, bool] = {}
#: Types whose objects a light signature names by identity: NNX graph nodes (a
#: Module, an Optimizer), whose static structure it cannot see but which stay one
#: object from call to call; a new model built per epoch is then a new signature.
_BY_IDENTITY: dict[type, bool] = {}
#: Python values a static argument compares by: part of the light signature.
_SCALARS = frozenset({bool, int, float, complex, str, type(None)})
#: At most this many container items enter one call's light signature; a bigger
#: container is filed by its type and length (two entries then share a light
#: signature, and its calls show an unknown entry, never a wrong one).
LIGHT_ITEMS = 32


def _light(rec: Record, args: tuple[Any, ...], kwargs: dict[str, Any], objs: list[Any]) -> Any:
    """A cheap per-call signature to file hits under entries: shapes and dtypes of the
    arrays in the arguments and their tuples, lists and dicts (keyword arguments too),
    the values of static Python scalars, NNX objects by identity (collected in
    ``objs``), else types."""
    budget = [LIGHT_ITEMS]
    every = rec.frontend is not None  # eqx.filter_jit: every non-array is static
    nums, names = rec.static_argnums, rec.static_argnames
    out = [_light_value(a, every or i in nums, budget, objs) for i, a in enumerate(args)]
    if kwargs:
        out.append(
            tuple(
                (k, _light_value(v, every or k in names, budget, objs)) for k, v in kwargs.items()
            )
        )
    return tuple(out)


def _light_value(a: Any, static: bool, budget: list[int], objs: list[Any]) -> Any:
    t = type(a)
    arrayish = _ARRAYISH.get(t)
    if arrayish is None:
        arrayish = _ARRAYISH[t] = hasattr(t, "shape") and hasattr(t, "dtype")
    if arrayish:
        return (a.shape, a.dtype)
    if t is tuple or t is list or t is dict:
        if len(a) > budget[0]:
            return (t, len(a))
        budget[0] -= len(a)
        if t is dict:
            return (t, tuple((k, _light_value(v, static, budget, objs)) for k, v in a.items()))
        return (t, tuple(_light_value(v, static, budget, objs) for v in a))
    if static and t in _SCALARS:
        return (t, a)
    by_identity = _BY_IDENTITY.get(t)
    if by_identity is None:
        by_identity = _BY_IDENTITY[t] = _compat.is_graph_node(a) and weak(a) is not None
    if by_identity:
        objs.append(a)
        return (t, id(a))
    return t


def call_detailed(
    fn: Any, rec: Record, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """A call within the timeline window (or inside another trace): timed and filed."""
    __tracebackhide__ = True
    if CANARY_PENDING[0]:
        selfcheck.run_pending()
    if n == 0:
        try:
            _first_call(rec)
        except Exception as exc:
            internal_failure("finding the first call site", exc)
    local = tls
    if local.busy:
        return fn(*args, **kwargs)
    inside = local.depth > 0
    n0 = local.nevents
    sample = not inside and advisor.wants_sample(rec, n)
    t = time.perf_counter()
    try:
        out = advisor.sampled_call(fn, rec, args, kwargs) if sample else fn(*args, **kwargs)
    except BaseException:
        if not isinstance(sys.exc_info()[1], PassThrough):
            failed_call(rec, n)
        _after_detailed(rec, n, args, kwargs, t, inside, local.nevents != n0)
        raise
    _after_detailed(rec, n, args, kwargs, t, inside, local.nevents != n0)
    return out


def _after_detailed(
    rec: Record,
    n: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    t: float,
    inside: bool,
    missed: bool,
) -> None:
    try:
        if inside:  # called while another function traces: JAX inlines it
            with rec.lock:
                rec.inlined_calls += 1
        else:
            advisor.note_eager(rec)
        if n < WINDOW[0]:
            rec.call_times.append(t)
            rec.call_entries.append(-1 if inside else _entry_of(rec, args, kwargs, missed))
    except Exception as exc:
        internal_failure("timing a call", exc)


def _entry_of(rec: Record, args: tuple[Any, ...], kwargs: dict[str, Any], missed: bool) -> int:
    """The compiled entry a call went to: its own trace's, or the one its light signature
    was filed under; -1 (unknown) once two entries were made with one light signature."""
    objs: list[Any] = []
    light = _light(rec, args, kwargs, objs)
    known = rec.entry_by_light.get(light)
    # an object named by identity died and another took its address: not the same signature
    reused = known is not None and any(ref() is None for ref in known[1])
    if not missed:
        return -1 if known is None or reused else known[0]
    b = tls.last_built
    entry = b.entry if b is not None and b.record is rec else -1
    if known is None or reused or known[0] == entry:
        rec.entry_by_light[light] = (entry, tuple(weakref.ref(o) for o in objs))
    else:
        rec.entry_by_light[light] = (-1, ())
    return entry


def late_call(rec: Record) -> int:
    """Count a front-end call that went through its library's unpatched function (the
    library was patched at this call's trace) and time it; returns its index."""
    n = next(rec.calls_counter)
    rec.counts_calls = True
    if n < WINDOW[0]:  # its entry is filed by file_late_call once its trace made one
        rec.call_times.append(time.perf_counter())
        rec.call_entries.append(-1)
    return n


def file_late_call(rec: Record, n: int, entry: int) -> None:
    """The entry of a call :func:`late_call` counted, once its trace filed its key."""
    if n < len(rec.call_entries) and rec.call_entries[n] == -1:
        rec.call_entries[n] = entry


class WrapperRecords(list):  # type: ignore[type-arg]
    """The records riding on an nnx jit wrapper: ``[plain call's, cached_partial call's]``.

    Stored in the wrapper's ``__dict__`` (one dict read per call). jitlens'
    state is never copied with the user's object: a deep copy or a pickle of
    the wrapper gets an empty slot (its own row on its first call), a shallow
    copy shares it, as it shares the wrapper's compiled cache.
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> WrapperRecords:
        return WrapperRecords((None, None))

    def __reduce__(self) -> tuple[Any, ...]:
        return (WrapperRecords, ((None, None),))


def make_nnx_call(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ``__call__`` of an nnx jit wrapper class, counted."""

    # flax's graph context (thread-local state): read directly on every call
    context = _compat.graph_context()

    @functools.wraps(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest: show the user's frame, not this one
        if STATE[0]:
            try:
                cached = getattr(context, "tmp_static_cache", None) is not None
                # the wrapper's records ride on the wrapper: one dict read per call
                recs = self.__dict__.get("_jitlens_records")
                rec = recs[cached] if recs is not None else None
                if rec is None:
                    rec = REGISTRY.record_for_wrapper(self, None, cached)
                    if recs is None:
                        recs = self.__dict__["_jitlens_records"] = WrapperRecords((None, None))
                    recs[cached] = rec
            except Exception as exc:
                internal_failure("recording an nnx.jit call", exc)
                return original(self, *args, **kwargs)
            n = next(rec.calls_counter)
            detailed = n < STATE[1]  # timeline window, or another trace in progress
            try:
                if detailed:
                    return call_detailed(original.__get__(self), rec, n, args, kwargs)
                return original(self, *args, **kwargs)
            except PassThrough as exc:
                __tracebackhide__ = True
                raise exc.error.with_traceback(None) from None
            except BaseException:
                if not detailed:  # call_detailed counts its own failures
                    failed_call(rec, n)
                raise
        return original(self, *args, **kwargs)

    __call__.__jitlens_original__ = original  # type: ignore[attr-defined]
    return __call__


def make_frontend_call(original: Callable[..., Any], frontend: Any) -> Callable[..., Any]:
    """A library front-end's per-call function (``equinox._jit._call``), counted.

    Called as ``(wrapper, is_lower, args, kwargs)``. The record is found by the
    wrapper's id (one dict read per call: an eqx.Module's own ``__dict__`` goes
    through its ``__getattribute__``, ten times slower).
    """

    @functools.wraps(original)
    def call(wrapper: Any, is_lower: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest: show the user's frame, not this one
        if STATE[0] and not is_lower:
            try:
                hit = _FRONTEND_RECORDS.get(id(wrapper))
                if hit is not None and hit[0]() is wrapper:
                    rec = hit[1]
                else:
                    rec = _frontend_record(frontend, wrapper)
            except Exception as exc:
                internal_failure(f"recording an {frontend.kind} call", exc)
                return original(wrapper, is_lower, args, kwargs)
            n = next(rec.calls_counter)
            detailed = n < STATE[1]  # timeline window, or another trace in progress
            try:
                if detailed:
                    return call_detailed(
                        functools.partial(_through, original, wrapper), rec, n, args, kwargs
                    )
                return original(wrapper, is_lower, args, kwargs)
            except PassThrough as exc:
                __tracebackhide__ = True
                raise exc.error.with_traceback(None) from None
            except BaseException:
                if not detailed:  # call_detailed counts its own failures
                    failed_call(rec, n)
                raise
        return original(wrapper, is_lower, args, kwargs)

    call.__jitlens_original__ = original  # type: ignore[attr-defined]
    return call


#: id(library wrapper) -> (weak reference to it, its record).
_FRONTEND_RECORDS: dict[int, tuple[Any, Record]] = {}


def _frontend_record(frontend: Any, wrapper: Any) -> Record:
    rec = REGISTRY.record_for_frontend(
        frontend,
        frontend.wrapper_key(wrapper),
        frontend.wrapper_user_function(wrapper),
        counts_calls=True,
    )
    ref = weak(wrapper)
    if ref is not None:
        _FRONTEND_RECORDS[id(wrapper)] = (ref, rec)
        finalize(wrapper, _FRONTEND_RECORDS.pop, id(wrapper))
    return rec


def _through(original: Callable[..., Any], wrapper: Any, *args: Any, **kwargs: Any) -> Any:
    __tracebackhide__ = True
    return original(wrapper, False, args, kwargs)


class TrackedJit:
    """What ``jax.jit`` returns while jitlens tracks: the jitted function, counted.

    Looks like the ``jax.jit`` object it wraps: the same ``repr``, ``__wrapped__``,
    ``__name__``/``__doc__``/``__signature__``, ``lower``/``trace``/``eval_shape``/
    ``clear_cache``... (forwarded), binding as a method. ``copy``/``deepcopy``
    return it unchanged (an object holding a jitted function deep-copies); pickling
    pickles the jax.jit object, as without jitlens. Calls go straight through once
    tracking stopped.
    """

    __slots__ = ("__dict__", "__weakref__", "_counter", "_jitted", "_record")

    def __init__(self, jitted: Any, record: Record) -> None:
        self._jitted = jitted
        self._record = record
        self._counter = record.calls_counter
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                self.__dict__[attr] = getattr(jitted, attr)
            except AttributeError:
                pass
        self.__dict__["__wrapped__"] = getattr(jitted, "__wrapped__", jitted)
        finalize(self, record.forget_keys, 1)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The hit path: count the call, nothing else. A miss is found by the
        # trace-start listener, which walks up to this frame for `self`, `n`,
        # `args` and `kwargs`; nothing is hashed, flattened or published here.
        try:
            if STATE[0]:
                n = next(self._counter)
                if n < STATE[1]:  # timeline window, or another trace in progress
                    detailed = True  # call_detailed counts its own failures
                    return call_detailed(self._jitted, self._record, n, args, kwargs)
            return self._jitted(*args, **kwargs)
        except PassThrough as exc:
            __tracebackhide__ = True  # pytest: show the user's frame, not this one
            raise exc.error.with_traceback(None) from None
        except BaseException:
            loc = locals()  # the exception path only
            if "n" in loc and "detailed" not in loc:
                failed_call(self._record, loc["n"])
            raise

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # a bound method, like the jax.jit object's own binding
        return self if obj is None else types.MethodType(self, obj)

    def clear_cache(self) -> Any:
        self._record.mark_cleared()
        return self._jitted.clear_cache()

    def __repr__(self) -> str:
        return repr(self._jitted)

    def __reduce__(self) -> Any:
        # pickle behaves as for the jax.jit object: it is the jax.jit object that
        # is pickled (and fails or not exactly as it would without jitlens).
        return (_identity, (self._jitted,))

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self


def _identity(x: Any) -> Any:
    return x


def _forward(name: str) -> property:
    return property(lambda self: getattr(self._jitted, name), doc=f"The jax.jit object's `{name}`.")


# Forward the jax.jit object's API as properties: a ``__getattr__`` hook would
# slow down every attribute read on the hit path.
for _name in [*dir(type(jax.jit(lambda x: x))), "_fun", "_jit_info", "__signature__"]:
    dunder = _name.startswith("__") and _name.endswith("__")
    if (not dunder or _name == "__signature__") and not hasattr(TrackedJit, _name):
        setattr(TrackedJit, _name, _forward(_name))
del _name


#: Code objects of the frames that carry a tracked call (`rec`, `n`, `args`, `kwargs`).
CALL_CODES = frozenset(
    {
        call_detailed.__code__,
        TrackedJit.__call__.__code__,
        make_nnx_call(lambda self: None).__code__,
        make_frontend_call(lambda *a: None, None).__code__,
    }
)


def failed_call(rec: Record, n: int) -> None:
    """A call raised: it was no cache hit, and a key its trace added was never compiled."""
    try:
        with rec.lock:
            rec.failed_calls += 1
            if rec.last_miss_frame is not None and rec.last_miss_frame[1] == n:
                rec.failed_misses += 1  # already counted as a miss: don't subtract twice
        forget_failed_trace(rec, n)
    except Exception as exc:
        internal_failure("recording a failed call", exc)


def forget_failed_trace(rec: Record, n: int | None) -> None:
    """A call raised: a key its trace added was never compiled, so forget it.

    Otherwise the retry would be explained against a key JAX never cached.
    """
    b = tls.last_built
    if b is None or b.record is not rec or b.compiled or (n is not None and b.call_index != n):
        return
    with rec.lock:
        if b.key is not None and b.key in rec.keys and b.entry == rec.n_entries - 1:
            rec.keys.remove(b.key)
            rec.n_entries -= 1
    tls.last_built = None


def find_call(frame: Any) -> tuple[Record, int, tuple[Any, ...], dict[str, Any], Any] | None:
    """The tracked call a trace belongs to, found by walking up from the trace frame."""
    found = _compat.find_locals(frame, CALL_CODES, 40)
    if found is None:
        return None
    frame_id, loc = found
    rec = loc.get("rec")
    if rec is None and isinstance(loc.get("self"), TrackedJit):
        rec = loc["self"]._record  # type: ignore[attr-defined]
    if not isinstance(rec, Record):
        return None
    n = loc.get("n", 0)
    # the call index makes the call unique (frame ids are reused)
    return rec, n, loc.get("args", ()), loc.get("kwargs", {}), (frame_id, n)  # type: ignore[return-value]


def note_miss(rec: Record, frame_id: Any) -> None:
    """Count one call as a miss, however many trace/compile events it had."""
    with rec.lock:
        if rec.last_miss_frame != frame_id:
            rec.last_miss_frame = frame_id
            rec.miss_calls += 1
