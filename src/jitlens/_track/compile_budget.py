"""Compile budgets: ``max_compiles`` on a function or a block, counted at each compile's start.

A trace budget (:func:`jitlens.max_traces`) counts the runs of a function's Python body. JAX
also compiles again without running it: a parameter placed otherwise under ``nnx.jit`` (an
FSDP step), a wrapper's new jit options. Such a recompile passed ``max_traces(1)`` while the
table said ``compiles 2``. A compile budget counts what the table's ``compiles`` column counts,
at the start of each compile (``compiling.compile_start``, before XLA runs), and stops the
compile over budget at the user's call with what changed and the fix. A load from the
persistent compilation cache counts too: JAX asks for it as a compile, and whether the cache
serves it is known only after; so a budget holds alike on a cold and on a warm cache.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator
from typing import Any, ParamSpec, TypeVar, overload

from .._core.key import short_repr
from .._errors import ConfigError
from . import hooks
from .budget import BAD_BUDGET, OnExceed, _reachable, act, check_budget, check_on_exceed, message
from .guards import Guarded, UncountableError, _jitted_target, _uncountable, _Watch
from .records import EventBuilder, Record
from .registry import REGISTRY

P = ParamSpec("P")
R = TypeVar("R")

#: How a per-function budget names itself.
SOURCE = "max_compiles"
OVER_COMPILES = (
    "jitlens: `{name}` was compiled {count} times, over its budget of {budget} ({source})."
)
NO_BUDGET = "max_compiles({name}) needs a budget: write max_compiles({name}, n) or @max_compiles(n)"
CANNOT_COUNT = (
    "max_compiles cannot count the compiles of {name}: it is {what}, which never compiles "
    "again; guard the jitted function it came from, f = jitlens.max_compiles(jax.jit(fn), {n})"
)

_UNSET: Any = object()
_LOCK = threading.Lock()
_WATCHES: weakref.WeakSet[Any] = weakref.WeakSet()
_SCOPES: tuple[CompileScope, ...] = ()


class _CompileWatch(_Watch):
    """The compile budget and count of one guarded function (``max_traces``' watch, counting
    compiles: the same matching above and below a jit)."""

    source = SOURCE

    def on_trace(self, rec: Record, b: EventBuilder) -> None:
        return  # a trace is no compile: its compile, if any, is counted at its start

    def on_compile(self, rec: Record, b: EventBuilder) -> None:
        __tracebackhide__ = True
        with self._lock:
            count = self.count + 1
            over = self.budget is not None and count > self.budget
            if not over or self.on_exceed == "warn":
                self.count = count
        if over:
            head = OVER_COMPILES.format(
                name=rec.qualname, count=count, budget=self.budget, source=SOURCE
            )
            act(message(head, rec, b), self.on_exceed)


class CompileScope:
    """At most ``budget`` compiles per function while a block is open, in every thread: ``with
    jitlens.max_compiles(n):``, the ``max_compiles`` marker, ``jitlens run --max-compiles N``
    (``fail_on_recompile``: a function's second compile fails, whatever the budget).

    A function is its code, as the summary folds it: a jit made anew per iteration is one
    function of many wrappers, each compiling once, and its budget counts them together.
    """

    def __init__(
        self, budget: int | None, source: str, on_exceed: OnExceed = "raise", head: str = ""
    ) -> None:
        self.budget = budget
        self.source = source
        self.on_exceed = on_exceed
        #: The error's first line (``OVER_COMPILES`` unless a command words its own).
        self.head = head or OVER_COMPILES
        self.counts: dict[Hashable, int] = {}
        self.violations: list[str] = []
        self._lock = threading.Lock()

    def on_compile(self, rec: Record, b: EventBuilder) -> None:
        __tracebackhide__ = True
        with self._lock:
            count = self.counts.get(rec.code_key, 0) + 1
            over = self.budget is not None and count > self.budget
            if not over or self.on_exceed == "warn":
                self.counts[rec.code_key] = count
        if not over:
            return
        head = self.head.format(
            name=rec.qualname, count=count, budget=self.budget, source=self.source
        )
        text = message(head, rec, b)
        self.violations.append(text)
        act(text, self.on_exceed)

    @contextlib.contextmanager
    def open(self) -> Iterator[CompileScope]:
        """Count while the block is open (raises at once when jitlens cannot count here)."""
        global _SCOPES
        hooks.activate_counting(self.source)
        with _LOCK:
            _SCOPES = (*_SCOPES, self)
            _listen()
        try:
            yield self
            hooks.confirm_counting(self.source)  # not on the block's own exception
        finally:
            with _LOCK:
                _SCOPES = tuple(s for s in _SCOPES if s is not self)
                _listen()
            hooks.deactivate_counting()


def _on_compile(rec: Record, b: EventBuilder) -> None:
    """``REGISTRY.on_compile``: every compile budget that covers this compile."""
    __tracebackhide__ = True
    cache: list[set[int]] = []

    def reachable() -> set[int]:
        if not cache:
            cache.append(_reachable(rec))
        return cache[0]

    for watch in list(_WATCHES):
        if watch.matches(rec, reachable, b):
            watch.on_compile(rec, b)
    if rec.internal:
        return
    for scope in _SCOPES:
        scope.on_compile(rec, b)


def _listen() -> None:
    """Listen to compile starts while a compile budget exists (``_LOCK`` held): otherwise a
    compile costs jitlens nothing more."""
    wanted = bool(_SCOPES) or len(_WATCHES) > 0
    if wanted and _on_compile not in REGISTRY.on_compile:
        REGISTRY.on_compile.append(_on_compile)
    elif not wanted and _on_compile in REGISTRY.on_compile:
        REGISTRY.on_compile.remove(_on_compile)


def _forget(_unused: Any = None) -> None:
    with _LOCK:
        _listen()


def _add_watch(watch: _CompileWatch, owner: Any) -> None:
    with _LOCK:
        _WATCHES.add(watch)
        _listen()
    weakref.finalize(owner, _forget).atexit = False


def _guard(fn: Callable[P, R], budget: int | None, on_exceed: OnExceed) -> Callable[P, R]:
    what = _uncountable(fn)
    if what is not None:
        name = getattr(fn, "__name__", None) or f"this {type(fn).__name__} object"
        raise UncountableError(CANNOT_COUNT.format(name=name, what=what, n=budget))
    if not callable(fn):
        raise TypeError(f"max_compiles: expected a callable value, got {short_repr(fn)}")
    jitted = _jitted_target(fn)
    if jitted is not None:  # above the jit: the compiles of that jitted object
        watch = _CompileWatch(budget, on_exceed, jitted, body=False)
        guarded = Guarded(fn, watch)
        _add_watch(watch, guarded)
        return guarded

    @functools.wraps(fn)
    def compiled(*args: P.args, **kwargs: P.kwargs) -> R:
        return fn(*args, **kwargs)

    # below the jit: the compiles of every jit of this function (its first call is already
    # inside the first trace: watched from now on)
    watch = _CompileWatch(budget, on_exceed, compiled, body=True)
    compiled.__jitlens_watch__ = watch  # type: ignore[attr-defined]
    _add_watch(watch, compiled)
    watch.activate(compiled)
    return compiled


class MaxCompiles:
    """What ``jitlens.max_compiles(n)`` returns: a decorator that guards a jitted function, and a
    context manager (``with jitlens.max_compiles(n):``) that budgets every function's compiles
    inside the block."""

    def __init__(self, budget: int | None, on_exceed: OnExceed) -> None:
        self.budget = budget
        self.on_exceed = on_exceed
        self._local = threading.local()

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        return _guard(fn, self.budget, self.on_exceed)

    def __enter__(self) -> CompileScope:
        if self.budget is None:
            raise ConfigError(BAD_BUDGET.format(what=SOURCE, value=None))
        block = CompileScope(self.budget, f"with jitlens.{SOURCE}({self.budget})", self.on_exceed)
        opened = block.open()
        self._local.__dict__.setdefault("stack", []).append(opened)
        return opened.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._local.stack.pop().__exit__(*exc)

    def __repr__(self) -> str:
        return f"<jitlens.max_compiles({self.budget})>"


@overload
def max_compiles(n: int | None, /, *, on_exceed: OnExceed = "raise") -> MaxCompiles: ...


@overload
def max_compiles(
    fn: Callable[P, R], n: int | None, /, *, on_exceed: OnExceed = "raise"
) -> Callable[P, R]: ...


def max_compiles(fn_or_n: Any, n: Any = _UNSET, /, *, on_exceed: OnExceed = "raise") -> Any:
    """Fail when a jitted function is compiled more than ``n`` times, naming what changed.

    :func:`max_traces` counts the runs of a function's Python body; JAX also compiles again
    from the trace it has, without running it: a parameter placed otherwise under ``nnx.jit``
    (an FSDP step whose update leaves a parameter sharded otherwise), a new ``in_shardings`` or
    donation. Those pass a trace budget and cost as much as a retrace. ``max_compiles`` counts
    what the report's ``compiles`` column counts, and compile ``n + 1`` raises
    :class:`jitlens.RecompileError` at the call, before XLA compiles, with every leaf that
    changed (before -> after) and the fix. With ``on_exceed="warn"`` it issues a
    :class:`jitlens.RecompileWarning` instead.

    Use it as ``@max_compiles(n)`` above or below ``@jax.jit`` / ``@nnx.jit``, as
    ``max_compiles(fn, n)`` on a jitted function, or as ``with max_compiles(n):`` around a block
    (at most ``n`` compiles per function inside it, every thread; ``n`` must be an int there).
    A load from the persistent compilation cache counts as a compile: JAX asks for it as one,
    and a budget then holds alike on a cold and a warm cache.

    Args:
      fn_or_n: the jitted function (or the Python function to be jitted), or the budget when
        used as ``@max_compiles(n)`` / ``with max_compiles(n):``.
      n: the budget: how many compiles are allowed (``None``: count only).
      on_exceed: ``"raise"`` (default) or ``"warn"``.

    Returns:
      The guarded function, with the signature of ``fn``; or, given a budget alone, an object
      that is both a decorator and a context manager.

    Example:
      >>> import jax, jax.numpy as jnp, jitlens
      >>> @jitlens.max_compiles(1)
      ... @jax.jit
      ... def double(x):
      ...     return x * 2
      >>> _ = double(jnp.ones(3)); _ = double(jnp.ones(3))
      >>> double(jnp.ones(4))  # doctest: +IGNORE_EXCEPTION_DETAIL
      Traceback (most recent call last):
      jitlens.RecompileError: jitlens: `double` was compiled 2 times, over its budget of 1 (max_compiles).
      ...

    See also:
      :func:`max_traces` counts traces (``eqx.debug.assert_max_traces``, ``chex.assert_max_traces``
      alike): prefer it where a budget must hold before the trace runs. ``jax.no_tracing``
      forbids tracing only, and says nothing of a compile from a cached trace.
    """
    on_exceed = check_on_exceed(on_exceed, SOURCE)
    if n is _UNSET:
        if callable(fn_or_n):
            name = getattr(fn_or_n, "__name__", "fn")
            raise TypeError(NO_BUDGET.format(name=name))
        return MaxCompiles(check_budget(fn_or_n, SOURCE), on_exceed)
    return _guard(fn_or_n, check_budget(n, SOURCE), on_exceed)


#: ``jitlens run --fail-on-recompile``'s error: a function's second compile, whatever it is.
RECOMPILE_IN_RUN = (
    "jitlens: `{name}` was compiled again, and `jitlens run --fail-on-recompile` forbids it."
)


@contextlib.contextmanager
def compile_scope(
    budget: int, *, source: str, on_exceed: OnExceed = "raise", head: str = ""
) -> Iterator[CompileScope]:
    """At most ``budget`` compiles per user function while the block is open, in any thread:
    the pytest marker and option; ``jitlens run --max-compiles N`` is
    ``compile_scope(N, source="jitlens run --max-compiles")``, ``--fail-on-recompile`` is
    ``compile_scope(1, source="jitlens run --fail-on-recompile", head=RECOMPILE_IN_RUN)``.
    Raises ``JitlensError`` at once when jitlens cannot count compiles here, and at the
    block's end when it found it could not (a budget that cannot count does not pass)."""
    checked = check_budget(budget, source)
    if checked is None:
        raise ConfigError(BAD_BUDGET.format(what=source, value=budget))
    scope = CompileScope(checked, source, check_on_exceed(on_exceed, source), head)
    with scope.open():
        yield scope
