"""Per-function compile budgets: ``max_traces``, ``get_num_traces`` and ``reset``."""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

from .. import _compat
from .._core.key import short_repr
from .._core.kinds import EventKind
from .._errors import JitlensError, RecompileError, RecompileWarning
from . import budget as _budget
from . import hooks
from .budget import OVER_BUDGET, OnExceed, act, check_budget, check_on_exceed, deref, warn
from .frontends.jax_jit import TrackedJit
from .listeners import abort_trace
from .records import EventBuilder, Record
from .registry import REGISTRY
from .state import tls

P = ParamSpec("P")
R = TypeVar("R")

NOT_SEEN = (
    "  jitlens saw no trace start for this run of `{name}` (it ran outside jax.jit/nnx.jit, "
    "or under a transformation jitlens does not watch), so it cannot say what changed."
)
NO_BUDGET = "max_traces({name}) needs a budget: write max_traces({name}, n) or @max_traces(n)"
NOT_WATCHED = (
    "{name} is not watched by jitlens: guard it with jitlens.max_traces(...), "
    "or call it inside jitlens.track() first"
)
CANNOT_COUNT = (
    "max_traces cannot count the traces of {name}: it is {what}, which never traces again "
    "(a call with new shapes raises instead of recompiling), so a budget on it would pass "
    "without counting anything; guard the jitted function it came from, "
    "f = jitlens.max_traces(jax.jit(fn), {n}), and call f instead of f.lower(...).compile()"
)


class UncountableError(JitlensError, TypeError):
    """A guard was asked to count something that cannot trace (a compiled executable)."""


#: How this budget names itself in its message.
SOURCE = "max_traces"

_UNSET: Any = object()


# ------------------------------------------------------------------ per-function budgets


class _Watch:
    """The trace budget and count of one guarded function."""

    #: How the budget names itself (its errors, its self-check).
    source = SOURCE

    def __init__(self, budget: int | None, on_exceed: OnExceed, target: Any, body: bool) -> None:
        self.budget = budget
        self.on_exceed = on_exceed
        #: Below the jit the guard wraps the Python function: its runs are the
        #: traces (ground truth); above, the guard counts trace starts of ``target``.
        self.body = body
        self._target = weakref.ref(target) if body else target
        self.count = 0
        self.active = False
        self._lock = threading.Lock()
        self._local = threading.local()

    def activate(self, owner: Any) -> None:
        """Install jitlens' hooks until ``owner`` (the guarded function) is collected."""
        with self._lock:
            if self.active:
                return
            self.active = True
        hooks.activate_counting(self.source)
        weakref.finalize(owner, hooks.deactivate_counting).atexit = False

    def matches(
        self, rec: Record, reachable: Callable[[], set[int]], b: EventBuilder | None = None
    ) -> bool:
        target = deref(self._target) if self.body else self._target
        if target is None:
            return False
        if self.body:
            return id(target) in reachable()
        if not _is_record_of(rec, target):
            return False
        if rec.frontend is not None and b is not None and b.frontend_key is not None:
            # one row can hold several wrappers (eqx.filter_jit of each instance of a Module
            # class): only this wrapper's own traces count against its budget
            return _same_key(rec.frontend.wrapper_key(target), b.frontend_key)
        return True

    def on_trace(self, rec: Record, b: EventBuilder) -> None:
        __tracebackhide__ = True
        with self._lock:
            count = self.count + 1
            over = self.budget is not None and count > self.budget
            if not self.body and (not over or self.on_exceed == "warn"):
                self.count = count
        if over:
            head = OVER_BUDGET.format(
                name=rec.qualname, count=count, budget=self.budget, source=SOURCE
            )
            text = _budget.message(head, rec, b)
            if self.body and not tls.in_tracked_call:
                # No tracked wrapper above to re-raise it cleanly: the guarded
                # function raises it from its own frame, the last one shown.
                self._local.pending = (b, text)
                return
        if self.body:
            self._local.announced = b  # its body run is counted, not checked again
        if over:
            act(text, self.on_exceed)

    def on_body(self, name: str) -> RecompileError | None:
        """A run of the guarded Python function (below the jit): count it.

        Returns the error to raise, so that the guarded function raises it from
        its own frame (the last one shown); warns itself.
        """
        __tracebackhide__ = True
        local = self._local
        building = tls.building
        pending = getattr(local, "pending", None)
        announced = building is not None and getattr(local, "announced", None) is building
        local.pending = local.announced = None
        if pending is not None and building is not None and pending[0] is building:
            if self.on_exceed == "raise":
                return RecompileError(pending[1])
            warn(pending[1])
            announced = True
        with self._lock:
            count = self.count + 1
            over = not announced and self.budget is not None and count > self.budget
            if not over or self.on_exceed == "warn":
                self.count = count
        if not over:
            return None
        head = OVER_BUDGET.format(name=name, count=count, budget=self.budget, source=SOURCE)
        text = head + "\n" + NOT_SEEN.format(name=name)
        if self.on_exceed == "raise":
            return RecompileError(text)
        warn(text)
        return None

    def reset(self) -> None:
        with self._lock:
            self.count = 0


def _same_key(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:
        return True  # cannot tell: count it (a budget must not miss a trace)


def _is_record_of(rec: Record, target: Any) -> bool:
    """Is ``rec`` the record of the jitted object ``target``?"""
    if isinstance(target, TrackedJit):
        return rec is target._record
    if isinstance(target, _compat.nnx_wrapper_types()):
        return deref(rec.wrapper_ref) is target
    if rec.frontend is not None:  # eqx.filter_jit: its key, not a recombined callable
        return REGISTRY.frontend_record_of(target) is rec
    inner = getattr(target, "__wrapped__", None)
    return inner is not None and rec.wrapper_ref is None and deref(rec.inner_fun_ref) is inner


class Guarded(Generic[P, R]):
    """A jitted function under a trace budget (what ``max_traces`` returns above a jit).

    Calls go straight to the jitted function; attributes (``lower``,
    ``eval_shape``, ``clear_cache`` ...) are forwarded to it.
    """

    def __init__(self, fn: Callable[P, R], watch: _Watch) -> None:
        functools.update_wrapper(self, fn, updated=())
        self.__dict__["_fn"] = fn
        self.__dict__["__jitlens_watch__"] = watch

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        watch: _Watch = self.__dict__["__jitlens_watch__"]
        if not watch.active:
            watch.activate(self)
        try:
            out = self.__dict__["_fn"](*args, **kwargs)
            hooks.confirm_counting(watch.source)  # a pending self-check, before a call passes
            return out  # type: ignore[no-any-return]
        except (RecompileError, RecompileWarning) as error:
            if isinstance(error, RecompileError) and not getattr(
                error, _budget.FROM_LISTENER, False
            ):
                raise
            __tracebackhide__ = True
            try:  # raised and filtered here: the traceback starts at the user's call
                raise error.with_traceback(None) from None
            except BaseException as raised:
                _compat.without_hidden_frames(raised)
                raise

    def __deepcopy__(self, memo: dict[int, Any]) -> Guarded[P, R]:
        return self  # a function stand-in: copy.deepcopy keeps functions as they are

    def __getattr__(self, name: str) -> Any:
        fn = self.__dict__.get("_fn")
        if fn is None:
            raise AttributeError(name)
        return getattr(fn, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        watch: _Watch = self.__dict__["__jitlens_watch__"]
        return f"<jitlens.{watch.source}({watch.budget}) of {self.__dict__['_fn']!r}>"


def _jitted_target(fn: Any) -> Any:
    """The jitted object behind ``fn`` (through partials and guards), or None."""
    target = fn
    for _ in range(8):
        if isinstance(target, functools.partial):
            target = target.func
        elif isinstance(target, Guarded):
            target = target.__dict__["_fn"]
        else:
            break
    if isinstance(target, (TrackedJit, *_compat.nnx_wrapper_types())):
        return target
    lower = getattr(target, "lower", None)
    return target if callable(lower) and hasattr(target, "__wrapped__") else None


def _uncountable(fn: Any) -> str | None:
    """What ``fn`` is, when it is an AOT stage no budget can count (``None`` otherwise)."""
    import jax

    stages = getattr(jax, "stages", None)
    for cls_name, what in (
        ("Compiled", "a compiled executable (from .lower(...).compile())"),
        ("Lowered", "a lowered computation (from .lower(...))"),
    ):
        cls = getattr(stages, cls_name, None)
        if isinstance(cls, type) and isinstance(fn, cls):
            return what
    return None


def _guard(fn: Callable[P, R], budget: int | None, on_exceed: OnExceed) -> Callable[P, R]:
    what = _uncountable(fn)
    if what is not None:
        name = getattr(fn, "__name__", None) or f"this {type(fn).__name__} object"
        raise UncountableError(CANNOT_COUNT.format(name=name, what=what, n=budget))
    if not callable(fn):  # as jax.jit(3) refuses it: at once, not at the first call
        raise TypeError(f"max_traces: expected a callable value, got {short_repr(fn)}")
    jitted = _jitted_target(fn)
    if jitted is not None:
        watch = _Watch(budget, on_exceed, jitted, body=False)
        guarded = Guarded(fn, watch)
        _budget.add_watch(watch)
        return guarded

    name = getattr(fn, "__qualname__", None) or repr(fn)

    @functools.wraps(fn)
    def traced(*args: P.args, **kwargs: P.kwargs) -> R:
        __tracebackhide__ = True
        error = body_watch.on_body(name)
        if error is not None:
            abort_trace(tls.building)  # stopped before the guarded body ran
            raise error
        return fn(*args, **kwargs)

    body_watch = _Watch(budget, on_exceed, traced, body=True)
    traced.__jitlens_watch__ = body_watch  # type: ignore[attr-defined]
    _budget.add_watch(body_watch)
    # Below the jit the first call is already inside the first trace: watch
    # from now on, or the first retrace would have nothing to compare with.
    body_watch.activate(traced)
    return traced


@overload
def max_traces(
    n: int | None, /, *, on_exceed: OnExceed = "raise"
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


@overload
def max_traces(
    fn: Callable[P, R], n: int | None, /, *, on_exceed: OnExceed = "raise"
) -> Callable[P, R]: ...


def max_traces(fn_or_n: Any, n: Any = _UNSET, /, *, on_exceed: OnExceed = "raise") -> Any:
    """Fail when a jitted function is traced more than ``n`` times, naming what changed.

    Use it as ``@max_traces(n)`` above or below ``@nnx.jit`` / ``@jax.jit``, or
    as ``max_traces(fn, n)`` on an existing jitted function. Trace ``n + 1``
    raises :class:`jitlens.RecompileError` *before* JAX traces again; the
    message names the function, the count, the budget, and what changed since
    the closest compiled call with a fix (the same explanation as
    ``jitlens.track()``). With ``on_exceed="warn"`` it issues a
    :class:`jitlens.RecompileWarning` instead (``-W error::jitlens.RecompileWarning``
    turns it back into an error).

    Counting: above the jit, the guard counts the traces of the jitted object
    from its first call through the guard; below it, every run of the Python
    function is a trace (as in ``eqx.debug.assert_max_traces``), and all jits
    of that function share the budget.

    Cost: jitlens' hooks stay installed while a guarded function is alive
    (from its first call above a jit; from decoration below one, since there
    the first call is already inside the first trace) and are removed when
    the last guard and ``track()`` are gone. Installed, they cost a few
    microseconds per call of an ``nnx.jit`` function or of a ``jax.jit``
    function created meanwhile, nothing for other ``jax.jit`` functions, and
    a description of the arguments per trace.

    Args:
      fn_or_n: the jitted function (or the Python function to be jitted), or
        the budget when used as ``@max_traces(n)``.
      n: the budget: how many traces are allowed (``None``: count only, see
        :func:`get_num_traces`).
      on_exceed: ``"raise"`` (default) or ``"warn"``.

    Returns:
      The guarded function, with the signature of ``fn``.

    Example:
      >>> import jax, jax.numpy as jnp, jitlens
      >>> @jitlens.max_traces(1)
      ... @jax.jit
      ... def double(x):
      ...     return x * 2
      >>> _ = double(jnp.ones(3)); _ = double(jnp.ones(3))
      >>> jitlens.get_num_traces(double)
      1
      >>> double(jnp.ones(4))  # doctest: +IGNORE_EXCEPTION_DETAIL
      Traceback (most recent call last):
      jitlens.RecompileError: jitlens: `double` was traced 2 times, over its budget of 1 (max_traces).
      ...

    See also:
      ``eqx.debug.assert_max_traces`` (which names the argument whose
      structure changed) and ``chex.assert_max_traces`` count runs of the
      Python function below the jit: prefer them in equinox or chex code
      without Flax, or where installing jitlens' hooks is unwelcome. Prefer
      ``max_traces`` for ``nnx.jit`` (it names the module attribute, e.g.
      ``model.blocks[2].avg_pool``, and gives a fix) and to guard a jitted
      function you did not write. ``jax.no_tracing`` forbids every trace in a
      block without saying why; see :func:`jitlens.no_retrace`.
    """
    what = "max_traces"
    on_exceed = check_on_exceed(on_exceed, what)
    if n is _UNSET:
        if callable(fn_or_n):
            name = getattr(fn_or_n, "__name__", "fn")
            raise TypeError(NO_BUDGET.format(name=name))
        budget = check_budget(fn_or_n, what)

        def decorate(fn: Callable[P, R]) -> Callable[P, R]:
            return _guard(fn, budget, on_exceed)

        return decorate
    return _guard(fn_or_n, check_budget(n, what), on_exceed)


# ------------------------------------------------------------------ counts


def _find_watch(fn: Any) -> _Watch | None:
    obj = fn
    for _ in range(8):
        if obj is None:
            return None
        try:
            watch = getattr(obj, "__jitlens_watch__", None)
        except Exception:
            watch = None
        if isinstance(watch, _Watch):
            return watch
        if isinstance(obj, functools.partial):
            obj = obj.func
        else:
            obj = getattr(obj, "__wrapped__", None) or getattr(obj, "fun", None)
    return None


def _records(fn: Any) -> list[Record]:
    from .tracker import _record_ids_for

    target = fn.func if isinstance(fn, functools.partial) else fn
    ids = _record_ids_for(target)
    with REGISTRY.lock:
        return [r for r in REGISTRY.records if r.id in ids]


_BASELINES: weakref.WeakKeyDictionary[Record, int] = weakref.WeakKeyDictionary()


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def get_num_traces(fn: Callable[..., Any]) -> int:
    """How many times ``fn`` was traced: by the jitted object or the function it wraps.

    For a function under :func:`max_traces`, the traces its guard counted
    (since the last :func:`reset`). For any other jitted function, the traces
    jitlens saw while it was watching (inside ``track()``, ``no_retrace()``
    or while a guard was alive).

    Raises:
      ValueError: jitlens never watched ``fn``.

    Example:
      >>> import jax, jax.numpy as jnp, jitlens
      >>> @jax.jit
      ... @jitlens.max_traces(None)
      ... def square(x):
      ...     return x * x
      >>> for n in (2, 2, 3):
      ...     _ = square(jnp.ones(n))
      >>> jitlens.get_num_traces(square)
      2

    See also:
      ``eqx.debug.get_num_traces``, the same for ``eqx.debug.assert_max_traces``.
    """
    watch = _find_watch(fn)
    if watch is not None:
        return watch.count
    records = _records(fn)
    if not records:
        raise ValueError(NOT_WATCHED.format(name=_name(fn)))
    return sum(max(0, _traces_of(r, fn) - _BASELINES.get(r, 0)) for r in records)


def _traces_of(rec: Record, fn: Any) -> int:
    """``rec``'s traces made through ``fn``: all of them, unless the row holds other wrappers
    too (``eqx.filter_jit`` of each instance of one Module class), then ``fn``'s own."""
    if rec.frontend is None or not _shared_row(rec):
        return rec.traces
    key = rec.frontend.wrapper_key(fn)
    with rec.lock:
        events = list(rec.events)
    return sum(
        1
        for e in events
        if e.kind != EventKind.COMPILE
        and e.frontend_key is not None
        and _same_key(key, e.frontend_key)
    )


def _shared_row(rec: Record) -> bool:
    """A Module class's row (its ``__call__``), shared by every instance jitted as the function."""
    fn = rec.user_fn()
    return getattr(fn, "__name__", "") == "__call__"


def reset(fn: Callable[..., Any]) -> None:
    """Start counting the traces of ``fn`` from zero again (its compiled cache is kept).

    Raises:
      ValueError: jitlens never watched ``fn``.

    Example:
      >>> import jax, jax.numpy as jnp, jitlens
      >>> double = jitlens.max_traces(1)(jax.jit(lambda x: 2 * x))
      >>> _ = double(jnp.ones(2))
      >>> jitlens.reset(double)
      >>> jitlens.get_num_traces(double)
      0

    See also:
      ``chex.clear_trace_counter``, which resets every chex counter at once.
    """
    watch = _find_watch(fn)
    if watch is not None:
        watch.reset()
        return
    records = _records(fn)
    if not records:
        raise ValueError(NOT_WATCHED.format(name=_name(fn)))
    for r in records:
        _BASELINES[r] = _traces_of(r, fn)
