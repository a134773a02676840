"""The per-call path: what runs on every call of a tracked function.

A cache hit costs one flag read and one counter increment. Misses are not
detected here: the trace-start listener walks up from JAX's trace frame to the
frame of the tracked call (its code is in :data:`CALL_CODES`) and reads the
call's record, index and arguments from its locals. Nothing is hashed,
flattened or published per call.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import jax

from .. import _compat
from . import advisor
from .records import Record
from .registry import REGISTRY
from .state import (
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


def _light(args: tuple[Any, ...]) -> Any:
    """A cheap per-call signature (top-level shapes and dtypes, else types) to file hits under entries."""
    out = []
    for a in args:
        t = type(a)
        arrayish = _ARRAYISH.get(t)
        if arrayish is None:
            arrayish = _ARRAYISH[t] = hasattr(t, "shape") and hasattr(t, "dtype")
        out.append((a.shape, a.dtype) if arrayish else t)
    return tuple(out)


def call_detailed(
    fn: Any, rec: Record, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """A call within the timeline window (or inside another trace): timed and filed."""
    __tracebackhide__ = True
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
        _after_detailed(rec, n, args, t, inside, local.nevents != n0)
        raise
    _after_detailed(rec, n, args, t, inside, local.nevents != n0)
    return out


def _after_detailed(
    rec: Record, n: int, args: tuple[Any, ...], t: float, inside: bool, missed: bool
) -> None:
    try:
        if inside:  # called while another function traces: JAX inlines it
            with rec.lock:
                rec.inlined_calls += 1
        else:
            advisor.note_eager(rec)
        if n < WINDOW[0]:
            light = _light(args)
            b = tls.last_built
            if missed and b is not None and b.record is rec:
                entry = rec.entry_by_light[light] = b.entry
            else:
                entry = rec.entry_by_light.get(light, -1)
            rec.call_times.append(t)
            rec.call_entries.append(entry)
    except Exception as exc:
        internal_failure("timing a call", exc)


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
                # raised here and filtered here: a bare re-raise adds no frame of jitlens'
                try:
                    raise exc.error.with_traceback(None) from None
                except BaseException as error:
                    _compat.without_hidden_frames(error)
                    raise
            except BaseException as exc:
                if not detailed:  # call_detailed counts its own failures
                    failed_call(rec, n)
                _compat.without_hidden_frames(exc)
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
                # raised here and filtered here: a bare re-raise adds no frame of jitlens'
                try:
                    raise exc.error.with_traceback(None) from None
                except BaseException as error:
                    _compat.without_hidden_frames(error)
                    raise
            except BaseException as exc:
                if not detailed:  # call_detailed counts its own failures
                    failed_call(rec, n)
                _compat.without_hidden_frames(exc)
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
        # `args` and `kwargs` (CALL_LOCALS); nothing is hashed or published here.
        if not STATE[0]:
            return self._jitted(*args, **kwargs)
        n = next(self._counter)
        if n < STATE[1]:  # timeline window, or another trace in progress
            try:
                return call_detailed(self._jitted, self._record, n, args, kwargs)
            except PassThrough as exc:
                # raised here and filtered here: a bare re-raise adds no frame of jitlens'
                try:
                    raise exc.error.with_traceback(None) from None
                except BaseException as error:
                    _compat.without_hidden_frames(error)
                    raise
            except BaseException as exc:  # counted by call_detailed
                _compat.without_hidden_frames(exc)
                raise
        try:
            return self._jitted(*args, **kwargs)
        except PassThrough as exc:
            # raised here and filtered here: a bare re-raise adds no frame of jitlens'
            try:
                raise exc.error.with_traceback(None) from None
            except BaseException as error:
                _compat.without_hidden_frames(error)
                raise
        except BaseException as exc:
            failed_call(self._record, n)
            _compat.without_hidden_frames(exc)
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
_PJIT_TYPE = type(jax.jit(lambda x: x))
for _name in [*dir(_PJIT_TYPE), "_fun", "_jit_info", "__signature__"]:
    dunder = _name.startswith("__") and _name.endswith("__")
    if (not dunder or _name == "__signature__") and not hasattr(TrackedJit, _name):
        setattr(TrackedJit, _name, _forward(_name))
del _name
# type(f).__name__ reads as without jitlens (isinstance cannot: JAX's type is final)
TrackedJit.__name__ = _PJIT_TYPE.__name__
TrackedJit.__qualname__ = _PJIT_TYPE.__qualname__
TrackedJit.__module__ = _PJIT_TYPE.__module__


#: The locals through which a counting frame hands its call to a trace below it,
#: for each counting function's code: (record, call index, args, kwargs). A
#: record local named ``self`` is a :class:`TrackedJit`, whose record it holds.
#: ``tests/test_invisible.py`` pins every name against the code objects.
CALL_LOCALS: dict[Any, tuple[str, str, str, str]] = {
    call_detailed.__code__: ("rec", "n", "args", "kwargs"),
    TrackedJit.__call__.__code__: ("self", "n", "args", "kwargs"),
    make_nnx_call(lambda self: None).__code__: ("rec", "n", "args", "kwargs"),
    make_frontend_call(lambda *a: None, None).__code__: ("rec", "n", "args", "kwargs"),
}
CALL_CODES = frozenset(CALL_LOCALS)


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


@dataclasses.dataclass(frozen=True)
class CountedCall:
    """A counted call in progress, as a trace that belongs to it finds it."""

    record: Record
    #: The call's index among the record's calls (0 for the first).
    index: int
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    #: Unique per call (frame ids are reused): one call is one miss however many events.
    frame_id: Any


def find_call(frame: Any) -> CountedCall | None:
    """The counted call a trace belongs to, found by walking up from the trace frame."""
    found = _compat.find_locals(frame, CALL_CODES, 40)
    if found is None:
        return None
    frame_id, loc, code = found
    rec_name, index_name, args_name, kwargs_name = CALL_LOCALS[code]
    rec = loc.get(rec_name)
    if isinstance(rec, TrackedJit):
        rec = rec._record
    if not isinstance(rec, Record):
        return None
    n = loc.get(index_name, 0)
    return CountedCall(rec, n, loc.get(args_name, ()), loc.get(kwargs_name, {}), (frame_id, n))


def note_miss(rec: Record, frame_id: Any) -> None:
    """Count one call as a miss, however many trace/compile events it had."""
    with rec.lock:
        if rec.last_miss_frame != frame_id:
            rec.last_miss_frame = frame_id
            rec.miss_calls += 1
