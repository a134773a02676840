"""Installing hooks: monitoring listeners, nnx wrapper patches and a tracked ``jax.jit``.

Design (see the research notes): misses are detected for free by
``jax.monitoring`` events, which fire only on trace / lower / compile; a
call's key is described at the *trace-start* event, while the user's objects
are still in their pre-call state; the per-call path only publishes the call
in a thread-local slot and compares an event counter. Nothing is hashed,
flattened or described on a cache hit.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import jax
from jax import monitoring

from . import _compat, _explain, _messages
from ._errors import JitlensInternalWarning
from ._records import MAX_CALL_TIMES, MAX_EVENTS, MAX_SIBLINGS, EventBuilder, Record
from ._signature import describe_call

log = logging.getLogger("jitlens")


class _TLS(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # traces in progress in this thread (a tracked call inside one is inlined)
        self.in_tracked_call = False
        self.top_fun: Any = None
        self.nevents = 0
        self.building: EventBuilder | None = None
        self.last_built: EventBuilder | None = None
        self.busy = False


tls = _TLS()


class Registry:
    """Process-wide state: active flag, records, listeners and patches."""

    def __init__(self) -> None:
        self.active = False
        self.lock = threading.RLock()
        self.records: list[Record] = []
        self.by_wrapper: dict[int, tuple[Any, Record]] = {}
        self.by_fun: dict[int, tuple[Any, Record]] = {}
        self.by_code: dict[Any, list[Record]] = {}
        self.t0 = time.perf_counter()
        self.depth = 0
        self.include_internal_keys = False
        self.on_trace: list[Callable[[Record, EventBuilder], None]] = []
        self.on_stale: list[Callable[[Record, Any], None]] = []
        self._originals: list[tuple[Any, str, Any]] = []
        self._warned: set[str] = set()
        self._listening = False
        self.timelines = 0

    # ------------------------------------------------------------ lifecycle

    def activate(self, timeline: bool = False) -> None:
        """Install the hooks (reference-counted); ``timeline`` also times each call."""
        with self.lock:
            self.depth += 1
            self.timelines += bool(timeline)
            _WINDOW[0] = MAX_CALL_TIMES if self.timelines else 0
            _update_threshold()
            if self.depth > 1:
                return
            if not self._listening:
                # Registered once per process and never removed: jax.monitoring
                # has no way to check what is registered, and an idle listener
                # costs one list read per trace/compile (never per call).
                monitoring.register_scalar_listener(_on_scalar)
                monitoring.register_event_duration_secs_listener(_on_duration)
                monitoring.register_event_listener(_on_event)
                self._listening = True
            self._patch()
            _TRACING[0] = 0
            _update_threshold()
            self.active = True
            _STATE[0] = True

    def deactivate(self, timeline: bool = False) -> None:
        with self.lock:
            self.depth -= 1
            self.timelines = max(0, self.timelines - bool(timeline))
            _WINDOW[0] = MAX_CALL_TIMES if self.timelines else 0
            _update_threshold()
            if self.depth > 0:
                return
            self.active = False
            _STATE[0] = False
            for owner, attr, original in reversed(self._originals):
                setattr(owner, attr, original)
            self._originals.clear()

    def _set(self, owner: Any, attr: str, value: Any) -> None:
        self._originals.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, value)

    def _patch(self) -> None:
        _compat.hide_from_tracebacks(os.path.dirname(os.path.abspath(__file__)))
        for cls, _kind in _compat.NNX_WRAPPERS:
            self._set(cls, "__call__", _make_nnx_call(cls.__call__))
        self._set(jax, "jit", _make_tracked_jit(jax.jit))
        try:
            from flax import nnx
            from flax.nnx import graphlib

            patched = _make_cached_partial(graphlib.cached_partial)
            self._set(nnx, "cached_partial", patched)
            self._set(graphlib, "cached_partial", patched)
        except Exception:
            pass
        self._set(jax, "eval_shape", _make_eval_shape(jax.eval_shape))
        pe = _compat.partial_eval()
        if pe is not None and hasattr(getattr(pe, "trace_to_jaxpr", None), "cache_info"):
            self._set(pe, "trace_to_jaxpr", _make_trace_to_jaxpr(pe.trace_to_jaxpr))

    def warn_internal(self, what: str, exc: BaseException) -> None:
        """jitlens failed: warn once per cause, log, and let the program go on."""
        key = f"{what}:{type(exc).__name__}"
        log.debug("jitlens internal failure in %s", what, exc_info=exc)
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(
            f"jitlens: {what} failed ({type(exc).__name__}: {exc}); tracking of this call was "
            "skipped, your program is unaffected.",
            JitlensInternalWarning,
            stacklevel=2,
        )

    # ------------------------------------------------------------ records

    def _index_fun(self, fun: Any, rec: Record) -> None:
        """Find ``rec`` from the callable JAX traces (weakly: dropped with ``fun``)."""
        ref = _weak(fun)
        if ref is not None:
            self.by_fun[id(fun)] = (ref, rec)
            _finalize(fun, self.by_fun.pop, id(fun))

    def _register(self, rec: Record) -> Record:
        with self.lock:
            self.records.append(rec)
            siblings = self.by_code.setdefault(rec.code_key, [])
            siblings.append(rec)
            # a jit re-created in a long loop: compare new wrappers with the
            # latest few only, so each new one costs O(1), not O(loop length)
            if len(siblings) > MAX_SIBLINGS:
                del siblings[0]
        return rec

    def record_for_wrapper(self, wrapper: Any, kind: str | None, cached: bool) -> Record:
        key = id(wrapper) * 2 + cached
        hit = self.by_wrapper.get(key)
        if hit is not None and hit[0]() is wrapper:
            return hit[1]
        if kind is None:
            kind = _compat.nnx_kind(wrapper)
        name, qualname, where = _compat.definition_site(wrapper)
        user_fn = _compat.user_function(wrapper)
        jitted = getattr(wrapper, "jitted_fn", None)
        rec = Record(
            kind="nnx.cached_partial" if cached else kind,
            name=name,
            qualname=qualname,
            defined_at=where,
            internal=not _is_user_where(user_fn),
            code_key=_code_key(user_fn),
            wrapper=wrapper,
            user_fn=user_fn,
            inner_fun=getattr(jitted, "__wrapped__", None),
            jax_name=name,
        )
        rec.options = _options_of(
            {
                k: getattr(wrapper, k, None)
                for k in ("in_shardings", "out_shardings", "static_argnums")
            }
        )
        ref = _weak(wrapper)
        if ref is not None:
            self.by_wrapper[key] = (ref, rec)
            _finalize(wrapper, self.by_wrapper.pop, key)
            _finalize(wrapper, rec.forget_keys, 1)
        if rec.inner_fun_ref is not None:
            self._index_fun(rec.inner_fun_ref(), rec)
        return self._register(rec)

    def record_for_jax_jit(self, fun: Any, jitted: Any, options: dict[str, Any]) -> Record:
        name, qualname, where = _compat.definition_site(fun)
        user_fn = _compat.user_function(fun)
        rec = Record(
            kind="jax.jit",
            name=name,
            qualname=qualname,
            defined_at=where,
            internal=not _is_user_where(user_fn),
            code_key=_code_key(fun),
            user_fn=fun,
            inner_fun=fun,
            jax_name=getattr(fun, "__name__", name),
        )
        sa = options.get("static_argnums")
        rec.static_argnums = (sa,) if isinstance(sa, int) else tuple(sa or ())
        sn = options.get("static_argnames")
        rec.static_argnames = (sn,) if isinstance(sn, str) else tuple(sn or ())
        rec.options = _options_of(options)
        self._index_fun(fun, rec)
        return self._register(rec)

    def record_for_untracked(self, fun: Any, fun_name: str, dbg: Any) -> Record:
        """A jit seen only through monitoring: created before tracking, or internal."""
        if fun is not None:
            if isinstance(fun, TrackedJit):  # traced by make_jaxpr / eval_shape / grad
                return fun._record
            hit = self.by_fun.get(id(fun))
            if hit is not None and hit[0]() is fun:
                return hit[1]
            ctx = getattr(fun, "ctxtag", None)
            if ctx is not None and isinstance(ctx, tuple(c for c, _ in _compat.NNX_WRAPPERS)):
                return self.record_for_wrapper(ctx, _compat.nnx_kind(ctx), False)
        info = _compat.src_info(dbg)
        if info is not None:
            name, where_abs = info
            file, _, line = where_abs.rpartition(":")
            internal = not _compat.is_user_file(file)
            where = f"{_compat.short_path(file)}:{line}"
        else:
            name, where, internal = fun_name, "?", True
        user_fn = _compat.user_function(fun) if fun is not None else None
        rec = Record(
            kind="jax.jit",
            name=name,
            qualname=getattr(user_fn, "__qualname__", name),
            defined_at=where,
            internal=internal,
            code_key=_code_key(user_fn) if user_fn is not None else ("name", fun_name),
            user_fn=user_fn,
            inner_fun=fun,
            counts_calls=False,
            jax_name=fun_name,
        )
        if fun is not None:
            self._index_fun(fun, rec)
        return self._register(rec)


REGISTRY = Registry()
#: What the hit path reads, as items of one global list (the cheapest reads):
#: [hooks active, calls below this index take the detailed path]. The
#: threshold is the timeline window (0 when off), or "every call" while any
#: thread traces (a tracked call inside a trace is inlined, not a hit).
_STATE: list[Any] = [False, 0]
_WINDOW = [0]
_TRACING = [0]


def _update_threshold() -> None:
    _STATE[1] = sys.maxsize if _TRACING[0] > 0 else _WINDOW[0]


def _weak(obj: Any) -> Any:
    import weakref

    try:
        return weakref.ref(obj)
    except TypeError:
        return None


def _finalize(obj: Any, pop: Callable[..., Any], key: Any) -> None:
    import weakref

    try:
        weakref.finalize(obj, pop, key, None)
    except TypeError:
        pass


#: jit options that change what a wrapper compiles (and so its cache).
_KEY_OPTIONS = (
    "in_shardings",
    "out_shardings",
    "static_argnums",
    "static_argnames",
    "donate_argnums",
    "donate_argnames",
    "device",
    "backend",
    "keep_unused",
    "inline",
    "compiler_options",
)


def _options_of(options: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    out = []
    for k in _KEY_OPTIONS:
        v = options.get(k)
        if v is None or v == () or v is False or type(v).__name__ == "UnspecifiedValue":
            continue
        if isinstance(v, list):
            v = tuple(v)
        out.append((k, v))
    return tuple(out)


def _code_key(fn: Any) -> Any:
    """What makes two jitted callables "the same code": the innermost function's
    code plus every wrapper on the way (``jax.grad(loss)`` is not ``loss``)."""
    chain: list[Any] = []
    target = fn
    for _ in range(8):
        if isinstance(target, functools.partial):
            chain.append("partial")
            target = target.func
            continue
        inner = getattr(target, "__wrapped__", None)
        if inner is None or inner is target:
            break
        chain.append(getattr(target, "__code__", type(target)))
        target = inner
    code = getattr(target, "__code__", None)
    base = (
        code
        if code is not None
        else ("obj", type(target).__qualname__, getattr(target, "__qualname__", None))
    )
    return (base, *chain) if chain else base


def _is_user_where(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    if code is None:
        return True
    return _compat.is_user_file(code.co_filename)


# ------------------------------------------------------------------ call path


def _first_call(rec: Record) -> None:
    # _first_call <- _call_detailed <- the wrapper's __call__ <- the user's call
    rec.first_call_site = _compat.user_call_site(sys._getframe(3))


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


def _call_detailed(
    fn: Any, rec: Record, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """A call within the timeline window (or inside another trace): timed and filed."""
    __tracebackhide__ = True
    if n == 0:
        _first_call(rec)
    local = tls
    if local.busy:
        return fn(*args, **kwargs)
    inside = local.depth > 0
    n0 = local.nevents
    t = time.perf_counter()
    try:
        out = fn(*args, **kwargs)
    except BaseException:
        if not isinstance(sys.exc_info()[1], _PassThrough):
            _failed_call(rec, n)
        _after_detailed(rec, n, args, t, inside, local.nevents != n0)
        raise
    _after_detailed(rec, n, args, t, inside, local.nevents != n0)
    return out


def _after_detailed(
    rec: Record, n: int, args: tuple[Any, ...], t: float, inside: bool, missed: bool
) -> None:
    if inside:  # called while another function traces: JAX inlines it
        with rec.lock:
            rec.inlined_calls += 1
    if n < _WINDOW[0]:
        light = _light(args)
        b = tls.last_built
        if missed and b is not None and b.record is rec:
            entry = rec.entry_by_light[light] = b.entry
        else:
            entry = rec.entry_by_light.get(light, -1)
        rec.call_times.append(t)
        rec.call_entries.append(entry)


def _make_nnx_call(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest: show the user's frame, not this one
        if _STATE[0]:
            try:
                cached = _compat.in_cached_partial()
                # the wrapper's records ride on the wrapper: one dict read per call
                recs = self.__dict__.get("_jitlens_records")
                rec = recs[cached] if recs is not None else None
                if rec is None:
                    rec = REGISTRY.record_for_wrapper(self, None, cached)
                    recs = list(recs or (None, None))
                    recs[cached] = rec
                    self.__dict__["_jitlens_records"] = tuple(recs)
            except Exception as exc:
                REGISTRY.warn_internal("recording an nnx.jit call", exc)
                return original(self, *args, **kwargs)
            n = next(rec.calls_counter)
            try:
                if n < _STATE[1]:  # timeline window, or another trace in progress
                    return _call_detailed(original.__get__(self), rec, n, args, kwargs)
                return original(self, *args, **kwargs)
            except _PassThrough as exc:
                __tracebackhide__ = True
                raise exc.error.with_traceback(None) from None
        return original(self, *args, **kwargs)

    __call__.__jitlens_original__ = original  # type: ignore[attr-defined]
    return __call__


class TrackedJit:
    """What ``jax.jit`` returns while jitlens tracks: the jitted function, counted.

    Behaves like the ``jax.jit`` object it wraps (``lower``, ``trace``,
    ``eval_shape``, ``clear_cache`` ... are forwarded); calls go straight
    through once tracking has stopped.
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
        _finalize(self, record.forget_keys, 1)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The hit path: count the call, nothing else. A miss is found by the
        # trace-start listener, which walks up to this frame for `self`, `n`,
        # `args` and `kwargs`; nothing is hashed, flattened or published here.
        try:
            if _STATE[0]:
                n = next(self._counter)
                if n < _STATE[1]:  # timeline window, or another trace in progress
                    return _call_detailed(self._jitted, self._record, n, args, kwargs)
            return self._jitted(*args, **kwargs)
        except _PassThrough as exc:
            __tracebackhide__ = True  # pytest: show the user's frame, not this one
            raise exc.error.with_traceback(None) from None
        except BaseException:
            if _STATE[0] and "n" in locals():  # the exception path only
                _failed_call(self._record, locals()["n"])
            raise

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def clear_cache(self) -> Any:
        self._record.mark_cleared()
        return self._jitted.clear_cache()

    def __repr__(self) -> str:
        return f"<jitlens-tracked {self._jitted!r}>"


def _forward(name: str) -> property:
    return property(lambda self: getattr(self._jitted, name), doc=f"The jax.jit object's `{name}`.")


# Forward the jax.jit object's API as properties: a ``__getattr__`` hook would
# slow down every attribute read on the hit path.
for _name in dir(type(jax.jit(lambda x: x))):
    if not (_name.startswith("__") and _name.endswith("__")) and not hasattr(TrackedJit, _name):
        setattr(TrackedJit, _name, _forward(_name))
del _name


#: Code objects of the frames that carry a tracked call (`rec`, `n`, `args`, `kwargs`).
_CALL_CODES = frozenset(
    {
        _call_detailed.__code__,
        TrackedJit.__call__.__code__,
        _make_nnx_call(lambda self: None).__code__,
    }
)


def _failed_call(rec: Record, n: int) -> None:
    """A call raised: it was no cache hit, and a key its trace added was never compiled."""
    with rec.lock:
        rec.failed_calls += 1
    _forget_failed_trace(rec, n)


def _forget_failed_trace(rec: Record, n: int | None) -> None:
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


def _find_call(frame: Any) -> tuple[Record, int, tuple[Any, ...], dict[str, Any], Any] | None:
    """The tracked call a trace belongs to, found by walking up from the trace frame."""
    f = frame
    for _ in range(40):
        if f is None:
            return None
        if f.f_code in _CALL_CODES:
            loc = f.f_locals
            rec = loc.get("rec")
            if rec is None and isinstance(loc.get("self"), TrackedJit):
                rec = loc["self"]._record
            if isinstance(rec, Record):
                n = loc.get("n", 0)
                # the call index makes the call unique (frame ids are reused)
                return rec, n, loc.get("args", ()), loc.get("kwargs", {}), (id(f), n)
        f = f.f_back
    return None


def _note_miss(rec: Record, frame_id: Any) -> None:
    """Count one call as a miss, however many trace/compile events it had."""
    with rec.lock:
        if rec.last_miss_frame != frame_id:
            rec.last_miss_frame = frame_id
            rec.miss_calls += 1


def _make_tracked_jit(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def jit(fun: Any = None, /, **options: Any) -> Any:
        if fun is None:
            return lambda f: jit(f, **options)
        jitted = original(fun, **options)
        if not REGISTRY.active or isinstance(fun, _compat.NNX_INNER_FNS):
            return jitted
        try:
            rec = REGISTRY.record_for_jax_jit(fun, jitted, options)
            return TrackedJit(jitted, rec)
        except Exception as exc:
            REGISTRY.warn_internal("wrapping jax.jit", exc)
            return jitted

    jit.__jitlens_original__ = original  # type: ignore[attr-defined]
    return jit


NESTED_SIGNATURE = "(traced inside another function's trace)"


def _make_eval_shape(original: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.eval_shape`` takes its fast path only for a real jax.jit object: give it one."""

    @functools.wraps(original)
    def eval_shape(fun: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(fun, TrackedJit):
            fun = fun._jitted
        return original(fun, *args, **kwargs)

    return eval_shape


def _make_trace_to_jaxpr(original: Any) -> Callable[..., Any]:
    """Count traces that happen inside another trace (jit in jit, grad/vmap of a jit).

    JAX emits no monitoring event for those (only clean top-level traces get
    one), but they run the user's Python function all the same: a miss of
    ``pe.trace_to_jaxpr``'s own cache is exactly "the body ran".
    """

    @functools.wraps(original)
    def trace_to_jaxpr(fun: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # errors raised by the traced function are the user's
        local = tls
        if not _STATE[0] or local.busy:
            return original(fun, *args, **kwargs)
        top = local.top_fun is fun
        if top:
            local.top_fun = None
        misses = original.cache_info().misses
        raised = False
        try:
            return original(fun, *args, **kwargs)
        except BaseException:
            raised = True  # a trace that raised ran the body (the cache counts no miss)
            raise
        finally:
            ran = raised or original.cache_info().misses != misses
            if top and not ran:
                _uncount_trace(local.building)
            elif not top and ran:
                _nested_trace(fun)

    # JAX calls the cache's own methods on it (clear_cache -> evict_weakref, ...)
    for name in dir(original):
        if not name.startswith("__"):
            setattr(trace_to_jaxpr, name, getattr(original, name))
    return trace_to_jaxpr


def _uncount_trace(b: EventBuilder | None) -> None:
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
    b.kind = "compile"
    b.reasons = tuple(r for r in b.reasons if r.kind != "cache_cleared")
    b.detached = True


def _nested_trace(fun: Any) -> None:
    """Record a trace of a known function that ran inside another trace."""
    rec = None
    hit = REGISTRY.by_fun.get(id(fun))
    if hit is not None and hit[0]() is fun:
        rec = hit[1]
    elif isinstance(getattr(fun, "ctxtag", None), tuple(c for c, _ in _compat.NNX_WRAPPERS)):
        rec = REGISTRY.record_for_wrapper(fun.ctxtag, None, False)
    if rec is None or rec.internal:
        return
    frame = sys._getframe(2)
    call = _find_call(frame)
    if call is not None and call[0] is rec and tls.depth == 0:
        _note_miss(rec, call[4])  # e.g. under jax.checkpoint / lax.scan at top level
    b = EventBuilder(rec, "trace", None, _compat.user_call_site(frame), time.perf_counter())
    b.signature = NESTED_SIGNATURE
    b.jax_name = rec.jax_name
    with rec.lock:
        rec.traces += 1
        if len(rec.events) < MAX_EVENTS:
            rec.events.append(b)
    for cb in list(REGISTRY.on_trace):
        cb(rec, b)


def _make_cached_partial(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def cached_partial(f: Any, *cached_args: Any, **kw: Any) -> Any:
        out = original(f, *cached_args, **kw)
        if not REGISTRY.active:
            return out
        try:
            from ._stale import watch_cached_partial

            return watch_cached_partial(out, f, cached_args)
        except Exception as exc:
            REGISTRY.warn_internal("watching nnx.cached_partial", exc)
            return out

    return cached_partial


# ------------------------------------------------------------------ listeners


def _on_scalar(event: str, value: float, **kw: Any) -> None:
    if not REGISTRY.active:
        return
    if event == _compat.TRACE_EVENT:
        tls.nevents += 1
        tls.depth += 1
        with REGISTRY.lock:
            _TRACING[0] += 1
            _update_threshold()
        if tls.busy:
            return
        try:
            _trace_start(kw.get("fun_name", "?"))
        except _PassThrough:
            _end_trace()
            raise
        except Exception as exc:
            if type(exc).__module__ == "jitlens":  # a guard's error, no wrapper above
                _end_trace()
                __tracebackhide__ = True
                raise exc.with_traceback(None) from None
            REGISTRY.warn_internal("describing a trace", exc)
    elif event == _compat.COMPILE_EVENT or event == _compat.LOWER_EVENT:
        tls.nevents += 1


def _end_trace() -> None:
    if tls.depth <= 0:  # a trace that started while jitlens was not watching
        return
    tls.depth -= 1
    with REGISTRY.lock:
        _TRACING[0] = max(0, _TRACING[0] - 1)
        _update_threshold()


class _PassThrough(BaseException):
    """Carries a guard's error (``RecompileError``) from a listener up to the call.

    The tracked wrapper re-raises the error itself, so the traceback ends at
    the user's call instead of deep inside JAX's tracing machinery.
    """

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _trace_start(fun_name: str) -> bool:
    """Describe and explain a trace at its start; True when a tracked call was found."""
    now = time.perf_counter()
    frame = _compat.find_trace_frame(sys._getframe(2))
    info = _compat.trace_frame_info(frame) if frame is not None else None
    fun = info["fun"] if info else None
    if isinstance(fun, TrackedJit) or type(fun).__name__ == "PjitFunction":
        # make_jaxpr / grad of a jitted object: a transparent wrapper. The inner
        # function's own trace, if its body runs, is counted as a nested trace.
        return False
    call = _find_call(frame) if frame is not None else None
    if call is not None and call[0].matches(fun, fun_name):
        rec, call_index, args, kwargs, frame_id = call
        _note_miss(rec, frame_id)
        if info is not None and _compat.NNX_INNER_FNS and isinstance(fun, _compat.NNX_INNER_FNS[0]):
            # Default nnx.jit mode: nnx already split each graph node into its
            # GraphDef and leaves (NodeStates); describe those, don't split again.
            args, kwargs = tuple(info["args"]), dict(info["kwargs"])
    else:
        call = None
        rec = REGISTRY.record_for_untracked(fun, fun_name, info["dbg"] if info else None)
        call_index = None
        args = tuple(info["args"]) if info else ()
        kwargs = dict(info["kwargs"]) if info else {}
    tls.top_fun = fun  # its trace_to_jaxpr is this (already counted) trace
    site = _compat.user_call_site(frame) if frame is not None else "?"
    first = rec.traces == 0
    b = EventBuilder(rec, "trace", call_index, site, now)
    b.jax_name = fun_name
    tls.building = b
    with rec.lock:
        rec.traces += 1
        if len(rec.events) < MAX_EVENTS:
            rec.events.append(b)
    if rec.internal and not REGISTRY.include_internal_keys:
        return call is not None
    t = time.perf_counter()
    tls.busy = True
    try:
        user_fn = rec.user_fn()
        names_fn = user_fn if user_fn is not None else getattr(fun, "f", fun)
        statics = info["static_argnums"] if info else rec.static_argnums
        snames = info["static_argnames"] if info else rec.static_argnames
        key = describe_call(
            names_fn, args, kwargs, statics, snames, _compat.trace_context(), rec.options
        )
        b.signature = key.signature
        b.key = key
        live, cleared = rec.live_and_cleared()
        reasons: list[Any] = []
        if first:
            reasons = _new_function_reasons(rec, key)
        else:
            reasons = _explain.explain(key, live, cleared)
        if reasons:
            b.kind = "retrace"
            b.reasons = tuple(reasons)
        b.entry = rec.add_key(key)
        tls.last_built = b
    finally:
        tls.busy = False
    b.explain_seconds = time.perf_counter() - t
    tls.in_tracked_call = call is not None  # read by guards deciding where to raise
    if REGISTRY.on_trace:
        for cb in list(REGISTRY.on_trace):
            try:
                cb(rec, b)
            except Exception as err:
                if call is None:  # no tracked wrapper above to re-raise it cleanly
                    raise
                raise _PassThrough(err) from None
    return call is not None


def _new_function_reasons(rec: Record, key: Any) -> list[Any]:
    """First trace of a record: a retrace when another wrapper of this code compiled."""
    siblings = REGISTRY.by_code.get(rec.code_key, ())
    wrapper = rec.wrapper_ref() if rec.wrapper_ref is not None else None
    same_cache = [
        r
        for r in siblings
        if r is not rec
        and wrapper is not None
        and r.wrapper_ref is not None
        and r.wrapper_ref() is wrapper
    ]
    if same_cache:
        # nnx.cached_partial and plain calls of one nnx.jit wrapper share its cache.
        keys = [k for r in same_cache for k in r.keys]
        return _explain.explain(
            key, [k for k in keys if not k.cleared], [k for k in keys if k.cleared]
        )
    others = [r for r in siblings if r is not rec and r.keys and r.kind == rec.kind]
    if not others:
        return []
    keys = [k for r in others for k in r.keys]
    _k, diffs = _explain.closest(key, keys)
    # The new wrapper is the cause when another wrapper of this code compiled
    # this very key, or when every earlier wrapper was used for one call only
    # (the jit-in-a-loop pattern). Otherwise this is simply a new key seen by
    # a new wrapper: a first trace, not a retrace.
    if diffs and not all(r.calls <= 1 for r in others):
        return []
    name = rec.name
    kind = "nnx.jit" if rec.kind.startswith("nnx") else "jax.jit"
    is_lambda = name == "<lambda>" or ("<locals>" in rec.qualname and rec.kind == "jax.jit")
    bound = rec.user_fn()
    if isinstance(bound, functools.partial):  # a partial rebuilt per call: name what it binds
        head = _messages.new_partial(name, rec.defined_at, len(others), bound)
    else:
        head = _messages.new_function(name, kind, rec.defined_at, len(others), not diffs, is_lambda)
    return [head, *diffs]


def _log_retrace(rec: Record, b: EventBuilder) -> None:
    """Log a retrace (logger ``jitlens``, INFO) once its compile time is known."""
    if log.isEnabledFor(logging.INFO):
        log.info("jitlens: %s", rec.explain_retrace(b, REGISTRY.t0))


def _on_duration(event: str, secs: float, **kw: Any) -> None:
    if event == _compat.TRACE_EVENT:
        _end_trace()  # balanced even when tracking stopped during the trace
    if not REGISTRY.active:
        return
    b = tls.building
    if b is not None and event == _compat.COMPILE_EVENT and _stale_builder(b):
        tls.building = b = None  # its trace never compiled (lower/eval_shape/make_jaxpr)
    if b is None:
        if event == _compat.COMPILE_EVENT:
            _compile_only(kw.get("fun_name", "?"), secs)
        return
    if event == _compat.TRACE_EVENT:
        b.trace_seconds += secs
    elif event == _compat.LOWER_EVENT:
        if _same_fun(b, kw.get("fun_name", "")):
            b.lower_seconds += secs
    elif event == _compat.COMPILE_EVENT:
        if _same_fun(b, kw.get("fun_name", "")):
            b.compile_seconds += secs
            b.compiled = True
            if b.detached:  # a cached trace after all: the event is this compile
                b.detached = False
                with b.record.lock:
                    b.record.events.append(b)
            if not b.persistent_cache_hit:
                with b.record.lock:
                    b.record.compiles += 1
            tls.building = None
            if b.kind == "retrace":
                try:
                    _log_retrace(b.record, b)
                except Exception as exc:
                    REGISTRY.warn_internal("logging a retrace", exc)
        else:
            _compile_only(kw.get("fun_name", "?"), secs)


def _stale_builder(b: EventBuilder) -> bool:
    """Is this compile happening in a tracked call other than the one that traced ``b``?"""
    found = _find_call(sys._getframe(3))
    return found is not None and (found[0] is not b.record or found[1] != b.call_index)


def _same_fun(b: EventBuilder, fun_name: str) -> bool:
    return fun_name in (f"jit({b.jax_name})", b.jax_name, f"pjit({b.jax_name})")


def _compile_only(fun_name: str, secs: float) -> None:
    """A compile with no trace before it (AOT ``.compile()``, a new placement, an evicted executable).

    JAX's trace cache ignores some parts of the full key (e.g. which device a
    committed input lives on): those recompile without re-running Python. When
    the compile happens inside a tracked call, its key is described and
    explained like a retrace's.
    """
    name = fun_name[4:-1] if fun_name.startswith("jit(") else fun_name
    found = _find_call(sys._getframe(2))
    cur = found if found is not None and found[0].jax_name == name else None
    rec = cur[0] if cur is not None else None
    if cur is not None:
        _note_miss(cur[0], cur[4])
    if rec is None:
        with REGISTRY.lock:
            for r in reversed(REGISTRY.records):
                if r.jax_name == name:
                    rec = r
                    break
    if rec is None:
        rec = REGISTRY.record_for_untracked(None, name, None)
    frame = sys._getframe(2)
    b = EventBuilder(
        rec,
        "compile",
        cur[1] if cur is not None and cur[0] is rec else None,
        _compat.user_call_site(frame),
        time.perf_counter() - secs,
    )
    b.compile_seconds = secs
    b.compiled = True
    b.jax_name = name
    if cur is not None and cur[0] is rec and not rec.internal:
        t = time.perf_counter()
        tls.busy = True
        try:
            user_fn = rec.user_fn()
            key = describe_call(
                user_fn,
                cur[2],
                cur[3],
                rec.static_argnums,
                rec.static_argnames,
                _compat.trace_context(),
                rec.options,
            )
            live, cleared = rec.live_and_cleared()
            reasons = _explain.explain(key, live, cleared) if live or cleared else []
            # An equal key compiled again without a trace is usually a transformed
            # (grad/vmap) or AOT variant of it, not an eviction: claim nothing.
            b.reasons = tuple(r for r in reasons if r.kind != "cache_cleared")
            b.signature = key.signature
            b.entry = rec.add_key(key)
            tls.last_built = b
        except Exception as exc:
            REGISTRY.warn_internal("explaining a compile", exc)
        finally:
            tls.busy = False
        b.explain_seconds = time.perf_counter() - t
    with rec.lock:
        rec.compiles += 1
        rec.events.append(b)


def _on_event(event: str, **kw: Any) -> None:
    if REGISTRY.active and event == _compat.PCACHE_HIT_EVENT:
        b = tls.building
        if b is not None:
            b.persistent_cache_hit = True
            with b.record.lock:
                b.record.persistent_hits += 1
