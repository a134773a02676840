"""The ``jax.jit`` front-end: while jitlens tracks, ``jax.jit`` returns a counted wrapper.

:class:`TrackedJit` looks like the ``jax.jit`` object it wraps and counts each
call (one counter increment on a cache hit); its frame hands the call to a
trace below it through the locals registered with the engine. ``jax.eval_shape``
unwraps it, so JAX keeps its fast path for jit objects. A ``jax.jit`` made
before tracking started is seen through JAX's monitoring events only (no calls).
"""

from __future__ import annotations

import copy
import functools
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import jax

from ... import _compat
from ..._core.kinds import RowKind
from .. import advisor
from ..calls import (
    call_detailed,
    failed_call,
    register_counting_frame,
    register_counting_type,
    timed_after,
    timed_failure,
)
from ..frontend import frontend_of
from ..records import Record
from ..registry import REGISTRY
from ..state import (
    ADVICE_CALLS,
    EVENTS,
    STATE,
    TRACING,
    WINDOW,
    PassThrough,
    finalize,
    internal_failure,
    tls,
)

KIND = RowKind.JAX_JIT
_now = time.perf_counter


class TrackedJit:
    """What ``jax.jit`` returns while jitlens tracks: the jitted function, counted.

    Looks like the ``jax.jit`` object it wraps: the same ``repr``, ``__wrapped__``,
    ``__name__``/``__doc__``/``__signature__``, ``lower``/``trace``/``eval_shape``/
    ``clear_cache``... (forwarded), binding as a method. ``copy``/``deepcopy`` make
    what they make of the jax.jit object (a new object, equal only to itself, without
    the original's ``__wrapped__`` and names, sharing its trace cache), counted in the
    same row; pickling pickles the jax.jit object, as without jitlens. Calls go straight
    through once tracking stopped.
    """

    __slots__ = ("__dict__", "__weakref__", "_counter", "_jitted", "_record")

    def __init__(self, jitted: Any, record: Record, *, copied: bool = False) -> None:
        self._jitted = jitted
        self._record = record
        self._counter = record.calls_counter
        self._executables = _compat.executable_counter(jitted)
        for attr in ("__module__", "__name__", "__qualname__", "__doc__", "__wrapped__"):
            try:
                self.__dict__[attr] = getattr(jitted, attr)
            except AttributeError:
                pass
        if copied:  # the original's wrapper keeps the record's keys while it lives
            return
        self.__dict__.setdefault("__wrapped__", jitted)
        finalize(self, record.forget_keys, 1)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The hit path: count the call, nothing else. A miss is found by the
        # trace-start listener, which walks up to this frame for `self`, `n`,
        # `args` and `kwargs` (CALL_LOCALS); nothing is hashed or published here.
        if not STATE[0]:
            return self._jitted(*args, **kwargs)
        n = next(self._counter)
        if not n & (n - 1) & 63:  # calls 1, 2, 4, ... and every 64th (and a few more): one test
            if not n & 63 or not n & (n - 1):  # the journal's copy, kept if the process dies
                self._record.cell[0] = n
            if not n & (n - 1) and n:  # calls 1, 2, 4, ...: the check of statics changed in place
                try:
                    return _scheduled(self, n, args, kwargs)
                except BaseException as exc:  # filtered: this frame is not the user's
                    _compat.without_hidden_frames(exc)
                    raise
        if n < STATE[1]:  # timeline window, the advisor's first calls, or a trace in progress
            try:
                rec = self._record
                e = EVENTS[0]
                if e == rec.window_seq:
                    # The window's lean path: no trace, lower or compile anywhere since
                    # a call found that every hit goes to one entry (`calls._file_timed`):
                    # the call's start time is all it keeps (its entry is filled in later).
                    # Armed, `n < STATE[1]` is `n < WINDOW[0]`: no trace is in progress
                    # and the timeline is on (a change of either changes EVENTS). The next
                    # calls take it through `_LeanJit.__call__`, which checks only that.
                    self.__class__ = _LeanJit
                    t = _now()
                    try:  # (no empty dict merged into the call: a few dozen ns)
                        out = self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
                    except BaseException:
                        timed_failure(rec, n, args, kwargs, t, tls.nevents > e)
                        raise
                    if EVENTS[0] == e:
                        rec.call_times.append(t)
                        return out
                    # an event during the call: this thread's own (a miss) if it is later
                    timed_after(rec, n, args, kwargs, t, tls.nevents > e, self._executables)
                    return out
                local = tls
                if n >= rec.timed_until and not local.depth:
                    # the record's window closed (its hits settled): a plain hit
                    self.__class__ = _SettledJit
                    try:
                        return self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
                    except BaseException:
                        if not isinstance(sys.exc_info()[1], PassThrough):
                            failed_call(rec, n)
                        raise
                if n and n < WINDOW[0] and not local.depth and not local.busy:
                    # the window, not armed: timed here (no frame of call_detailed's), filed
                    # (and the lean path armed) by timed_after. Among the advisor's first
                    # calls it also notes a call run under jax_disable_jit, and leaves the
                    # calls the advisor samples to call_detailed.
                    first = n < ADVICE_CALLS[0]
                    if not first or not advisor.wants_sample(rec, n):
                        n0 = local.nevents
                        t = _now()
                        try:
                            out = self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
                        except BaseException:
                            timed_failure(rec, n, args, kwargs, t, local.nevents != n0)
                            raise
                        if first:
                            advisor.note_eager(rec)
                            if e == rec.early_seq and EVENTS[0] == e:
                                # every hit goes to one entry (`calls._file_timed`): keep the
                                # call's start time only, as the lean path does
                                rec.call_times.append(t)
                                return out
                        timed_after(rec, n, args, kwargs, t, local.nevents != n0, self._executables)
                        return out
                return call_detailed(self._jitted, rec, n, args, kwargs, self._executables)
            except PassThrough as exc:
                # raised here and filtered here: a bare re-raise adds no frame of jitlens'
                try:
                    raise exc.error.with_traceback(None) from None
                except BaseException as error:
                    _compat.without_hidden_frames(error)
                    raise
            except BaseException as exc:  # counted by call_detailed / timed_failure
                _compat.without_hidden_frames(exc)
                raise
        try:
            return self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
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
        return TrackedJit(copy.copy(self._jitted), self._record, copied=True)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return TrackedJit(copy.deepcopy(self._jitted, memo), self._record, copied=True)


class _LeanJit(TrackedJit):
    """A :class:`TrackedJit` while the timeline window's lean path holds for its record.

    The wrapper's class while ``EVENTS`` stands still since its record armed the lean
    path (``calls._file_timed``): that alone says tracking is on, the timeline too, no
    trace runs in any thread and the advisor's first calls are past, so the call reads
    no other flag (``TrackedJit.__call__`` reads three). The first call that finds the
    path disarmed (an event, tracking stopped, the window's end) turns the wrapper back.
    """

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        rec = self._record
        e = EVENTS[0]
        if e != rec.window_seq:  # disarmed (an event, tracking stopped): the full path
            self.__class__ = TrackedJit
            try:
                return TrackedJit.__call__(self, *args, **kwargs)
            except BaseException as exc:  # filtered below; this frame too
                _compat.without_hidden_frames(exc)
                raise
        n = next(self._counter)
        if not n & (n - 1) & 63:  # calls 1, 2, 4, ... and every 64th (and a few more): one test
            if not n & 63 or not n & (n - 1):  # the journal's copy, kept if the process dies
                self._record.cell[0] = n
            if not n & (n - 1) and n:  # calls 1, 2, 4, ...: the check of statics changed in place
                try:
                    return _scheduled(self, n, args, kwargs)
                except BaseException as exc:  # filtered: this frame is not the user's
                    _compat.without_hidden_frames(exc)
                    raise
        if n < rec.timed_until and n < WINDOW[0]:
            t = _now()
            try:
                out = self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
            except PassThrough as exc:
                timed_failure(rec, n, args, kwargs, t, tls.nevents > e)
                # raised here and filtered here: a bare re-raise adds no frame of jitlens'
                try:
                    raise exc.error.with_traceback(None) from None
                except BaseException as error:
                    _compat.without_hidden_frames(error)
                    raise
            except BaseException as exc:
                timed_failure(rec, n, args, kwargs, t, tls.nevents > e)
                _compat.without_hidden_frames(exc)
                raise
            if EVENTS[0] == e:
                rec.call_times.append(t)
                return out
            # an event during the call: this thread's own (a miss) if it is later
            timed_after(rec, n, args, kwargs, t, tls.nevents > e, self._executables)
            return out
        # past the window (or the record's hits settled): a plain hit, as are the next ones
        rec.window_seq = -1
        self.__class__ = _SettledJit if n >= rec.timed_until else TrackedJit
        try:
            return self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
        except PassThrough as exc:
            try:
                raise exc.error.with_traceback(None) from None
            except BaseException as error:
                _compat.without_hidden_frames(error)
                raise
        except BaseException as exc:
            failed_call(rec, n)
            _compat.without_hidden_frames(exc)
            raise


class _SettledJit(TrackedJit):
    """A :class:`TrackedJit` whose record's window closed early: its hits settled on one
    executable (``records.SETTLED_CALLS``), so its calls are counted, never timed.

    Its call is the hit path without the window's threshold (``STATE[1]``): only a
    trace in progress in any thread (a call inside one is inlined, not a hit) sends it
    back to the full path, as does tracking stopped.
    """

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if TRACING[0] or not STATE[0]:
            self.__class__ = TrackedJit
            try:
                return TrackedJit.__call__(self, *args, **kwargs)
            except BaseException as exc:  # filtered below; this frame too
                _compat.without_hidden_frames(exc)
                raise
        n = next(self._counter)
        if not n & (n - 1) & 63:  # calls 1, 2, 4, ... and every 64th (and a few more): one test
            if not n & 63 or not n & (n - 1):  # the journal's copy, kept if the process dies
                self._record.cell[0] = n
            if not n & (n - 1):  # calls 1, 2, 4, ...: the check of statics changed in place
                try:
                    return _scheduled(self, n, args, kwargs)
                except BaseException as exc:  # filtered: this frame is not the user's
                    _compat.without_hidden_frames(exc)
                    raise
        try:
            return self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
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


def _scheduled(self: TrackedJit, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``n`` (1, 2, 4, 8, ...: ``stale.check_statics``' schedule) of a counted jax.jit: made as the
    other calls are, then, if it hit the cache, checked for a static changed in place since
    its compile (``stale.check_statics``), which JAX compares with itself and serves the
    old compile for. log2 of the calls are checked, all told: the hit path pays one test."""
    __tracebackhide__ = True
    rec = self._record
    e, misses = EVENTS[0], rec.miss_calls
    detailed = n < STATE[1]  # the window's calls are made (and counted) by call_detailed
    try:
        if detailed:
            out = call_detailed(self._jitted, rec, n, args, kwargs, self._executables)
        else:
            out = self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
    except PassThrough as exc:
        # raised here and filtered here: a bare re-raise adds no frame of jitlens'
        try:
            raise exc.error.with_traceback(None) from None
        except BaseException as error:
            _compat.without_hidden_frames(error)
            raise
    except BaseException as exc:
        if not detailed:
            failed_call(rec, n)
        _compat.without_hidden_frames(exc)
        raise
    # a hit: was a changed static served? (A trace JAX announced and then served from its
    # trace cache is one too: a static whose hash changed with it, compared by identity.)
    hit = EVENTS[0] == e or rec.miss_calls == misses
    if hit and not tls.depth and rec.keys:
        from .. import stale  # (loaded at the first check, not at start)

        stale.check_statics(rec, n, args, kwargs)
    return out


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
_LeanJit.__name__, _LeanJit.__qualname__ = TrackedJit.__name__, TrackedJit.__qualname__
_LeanJit.__module__ = TrackedJit.__module__
_SettledJit.__name__, _SettledJit.__qualname__ = TrackedJit.__name__, TrackedJit.__qualname__
_SettledJit.__module__ = TrackedJit.__module__

register_counting_frame(TrackedJit.__call__.__code__, ("self", "n", "args", "kwargs"))
register_counting_frame(_LeanJit.__call__.__code__, ("self", "n", "args", "kwargs"))
register_counting_frame(_SettledJit.__call__.__code__, ("self", "n", "args", "kwargs"))
register_counting_frame(_scheduled.__code__, ("self", "n", "args", "kwargs"))
register_counting_type(TrackedJit)


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
            if _compat.is_flax_inner_fn(fun) or frontend_of(fun) is not None:
                return jitted  # counted at the nnx wrapper / the library's own call
            # a front-end's, a library's around user code, or plain
            rec = REGISTRY.jit_record_for(fun, options, _compat.caller(1))
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


def install(set_attr: Callable[[Any, str, Any], None]) -> None:
    """Swap ``jax.jit`` for the counting factory and ``jax.eval_shape`` for its unwrapper."""
    set_attr(jax, "jit", make_tracked_jit(jax.jit))
    set_attr(jax, "eval_shape", make_eval_shape(jax.eval_shape))
