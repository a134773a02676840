"""Budgets over a block instead of a function: ``no_retrace`` and the pytest marker's scope."""

from __future__ import annotations

import abc
import contextlib
import threading
import weakref
from collections.abc import Hashable, Iterator

from .. import _compat
from .._core.kinds import EventKind
from .._errors import ConfigError, UsageError
from . import hooks
from .budget import (
    BAD_BUDGET,
    OVER_BUDGET,
    OnExceed,
    act,
    add_scope,
    check_budget,
    check_on_exceed,
    message,
    remove_scope,
)
from .records import EventBuilder, Record
from .state import deref

RETRACE_IN_BLOCK = (
    "jitlens: `{name}` was traced again inside `jitlens.no_retrace()`; "
    "a warm loop must not compile."
)
NEW_IN_BLOCK = (
    "jitlens: `{name}` was traced for the first time inside "
    "`jitlens.no_retrace(allow_new=False)`; a warm loop must not compile."
)
EXIT_WITHOUT_ENTER = (
    "jitlens: `no_retrace()` was exited without a matching enter in this thread "
    "(exited twice, or entered in another thread); use it as `with jitlens.no_retrace():` "
    "or as a decorator, which enter and exit it once each, in the same thread."
)
COMPILED_UNSEEN = (
    "  it was compiled before jitlens was watching, so the key it compiled for is unknown; "
    "warm up inside the block (or inside jitlens.track()) to see what changed."
)


class _Scope(abc.ABC):
    """Rules for every user function traced while a block is open."""

    def __init__(self, on_exceed: OnExceed, thread: int | None) -> None:
        self.on_exceed = on_exceed
        self.thread = thread
        self.violations: list[str] = []

    @abc.abstractmethod
    def check(self, rec: Record, b: EventBuilder) -> str | None:
        """The failure text for this trace, or None when it is within the rules."""

    def on_trace(self, rec: Record, b: EventBuilder) -> None:
        __tracebackhide__ = True
        text = self.check(rec, b)
        if text is not None:
            self.violations.append(text)
            act(text, self.on_exceed)


class BudgetScope(_Scope):
    """At most ``budget`` traces per function while open (the pytest marker and option).

    A function is its code, as the summary folds it: a jit made anew per iteration
    (``jax.jit(lambda ...)`` in the loop) is one function of many wrappers, each
    compiling once, and its budget counts them together.
    """

    def __init__(self, budget: int, source: str, on_exceed: OnExceed) -> None:
        super().__init__(on_exceed, None)
        self.budget = budget
        self.source = source
        self.counts: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def check(self, rec: Record, b: EventBuilder) -> str | None:
        with self._lock:
            count = self.counts.get(rec.code_key, 0) + 1
            if count <= self.budget or self.on_exceed == "warn":
                self.counts[rec.code_key] = count
        if count <= self.budget:
            return None
        head = OVER_BUDGET.format(
            name=rec.qualname, count=count, budget=self.budget, source=self.source
        )
        return message(head, rec, b)


class _RetraceScope(_Scope):
    def __init__(self, allow_new: bool, on_exceed: OnExceed, thread: int) -> None:
        super().__init__(on_exceed, thread)
        self.allow_new = allow_new

    def check(self, rec: Record, b: EventBuilder) -> str | None:
        name = rec.qualname
        if b.kind == EventKind.RETRACE:
            return message(RETRACE_IN_BLOCK.format(name=name), rec, b)
        if not self.allow_new:
            return message(NEW_IN_BLOCK.format(name=name), rec, b)
        if _compiled_unseen(rec):
            return message(RETRACE_IN_BLOCK.format(name=name), rec, b, COMPILED_UNSEEN)
        return None


def _compiled_unseen(rec: Record) -> bool:
    """Was this first trace jitlens sees really a retrace (JAX traced the function before)?

    JAX's trace cache (``pjit._infer_params_cached``, weakly keyed by the
    traced function) already holds the key of the trace starting now; a
    second key for the same function means an earlier trace jitlens missed.
    """
    fun = deref(rec.inner_fun_ref)
    if fun is None:
        return False
    keys = _compat.trace_cache_keys()
    if keys is None:
        return False
    found = 0
    for key in keys:
        try:
            ref = key[0]
            hit = (ref() if isinstance(ref, weakref.ref) else ref) is fun
        except Exception:
            continue
        found += hit
        if found >= 2:
            return True
    return False


class NoRetrace(contextlib.ContextDecorator):
    """What :func:`no_retrace` returns: a context manager, also usable as a decorator."""

    def __init__(self, allow_new: bool, on_exceed: OnExceed) -> None:
        self.allow_new = allow_new
        self.on_exceed = on_exceed
        self._local = threading.local()

    def __enter__(self) -> NoRetrace:
        hooks.activate_counting("no_retrace")
        scope = _RetraceScope(self.allow_new, self.on_exceed, threading.get_ident())
        stack = self._local.__dict__.setdefault("stack", [])
        stack.append(scope)
        add_scope(scope)
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        stack = self._local.__dict__.get("stack")
        if not stack:  # nothing of this thread is open: no budget to close
            if exc_type is not None:  # the exception in flight is the user's: keep it
                import warnings

                warnings.warn(EXIT_WITHOUT_ENTER, RuntimeWarning, stacklevel=2)
                return
            raise UsageError(EXIT_WITHOUT_ENTER)
        scope = stack.pop()
        try:
            if exc_type is None:  # never replace the block's own exception
                hooks.confirm_counting("no_retrace")
        finally:
            remove_scope(scope)
            hooks.deactivate_counting()

    def __repr__(self) -> str:
        return f"<jitlens.no_retrace(allow_new={self.allow_new})>"


def no_retrace(*, allow_new: bool = True, on_exceed: OnExceed = "raise") -> NoRetrace:
    """Fail on any retrace of a user's jitted function inside the block: the warm loop check.

    Wrap the steady state of a training loop or a server, after the warm-up:
    a retrace raises :class:`jitlens.RecompileError` at the call that caused
    it, before JAX traces, with what changed and a fix. JAX's and Flax's own
    helpers are ignored. The block applies to the thread that entered it
    (like JAX's own context managers); enter it in each serving thread.

    First traces are allowed by default: a function jitlens never saw compile
    (a new eval step, a lazily built metric) is not a retrace. jitlens knows a
    function was compiled before even when that happened outside any
    ``track()`` (it asks JAX's trace cache), but it can only name what changed
    when it watched the earlier compile; warm up inside the block, or inside
    ``jitlens.track()``, to get the reason. Pass ``allow_new=False`` to forbid
    every trace, like ``jax.no_tracing``.

    Args:
      allow_new: allow first traces of functions (default ``True``).
      on_exceed: ``"raise"`` (default) or ``"warn"`` (a :class:`jitlens.RecompileWarning`).

    Example:
      >>> import jax, jax.numpy as jnp, jitlens
      >>> step = jax.jit(lambda x: x + 1)
      >>> _ = step(jnp.ones(3))  # warm-up
      >>> with jitlens.no_retrace():
      ...     _ = step(jnp.ones(3))  # cache hit: fine
      ...     _ = step(jnp.ones(4))  # doctest: +IGNORE_EXCEPTION_DETAIL
      Traceback (most recent call last):
      jitlens.RecompileError: jitlens: `<lambda>` was traced again inside `jitlens.no_retrace()`; ...

    See also:
      ``jax.no_tracing`` raises on every cache miss, first traces included,
      and only names the function: prefer it when a block must not trace at
      all and you need no explanation. :func:`max_traces` budgets one
      function wherever it is called; ``chex.assert_max_traces`` and
      ``eqx.debug.assert_max_traces`` do the same without reasons.
    """
    what = "no_retrace"
    return NoRetrace(bool(allow_new), check_on_exceed(on_exceed, what))


@contextlib.contextmanager
def budget_scope(
    budget: int, *, source: str, on_exceed: OnExceed = "raise"
) -> Iterator[BudgetScope]:
    """At most ``budget`` traces per user function while the block is open, in any thread."""
    checked = check_budget(budget, source)
    if checked is None:
        raise ConfigError(BAD_BUDGET.format(what=source, value=budget))
    scope = BudgetScope(checked, source, check_on_exceed(on_exceed, source))
    hooks.activate_counting(source)
    add_scope(scope)
    try:
        yield scope
        hooks.confirm_counting(source)  # not on the block's own exception
    finally:
        remove_scope(scope)
        hooks.deactivate_counting()


# ------------------------------------------------------------------ issue 24: jitlens run's stance

RETRACE_IN_RUN = (
    "jitlens: `{name}` was traced again, and `jitlens run --fail-on-retrace` forbids it."
)
OVER_RUN_BUDGET = (
    "jitlens: `{name}` was traced {count} times, over `jitlens run --max-traces {budget}`."
)


class ProgramScope(_Scope):
    """``jitlens run --fail-on-retrace`` / ``--max-traces N``: every user function, every thread.

    Like torch's ``set_stance("fail_on_recompile")``, but the error names the
    attribute path that changed and a fix. First traces are allowed; the
    budget counts every trace of one function (its first included), the
    wrappers of one code together (:class:`BudgetScope`).
    """

    def __init__(self, fail_on_retrace: bool, max_traces: int | None) -> None:
        super().__init__("raise", None)
        self.fail_on_retrace = fail_on_retrace
        self.max_traces = max_traces
        self.counts: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def check(self, rec: Record, b: EventBuilder) -> str | None:
        with self._lock:
            count = self.counts[rec.code_key] = self.counts.get(rec.code_key, 0) + 1
        if self.max_traces is not None and count > self.max_traces:
            head = OVER_RUN_BUDGET.format(name=rec.qualname, count=count, budget=self.max_traces)
            return message(head, rec, b)
        if self.fail_on_retrace and (b.kind == EventKind.RETRACE or _compiled_unseen(rec)):
            return message(RETRACE_IN_RUN.format(name=rec.qualname), rec, b)
        return None


@contextlib.contextmanager
def program_scope(fail_on_retrace: bool, max_traces: int | None) -> Iterator[ProgramScope]:
    """``jitlens run``'s program-wide budget while the block is open (raises when it cannot count)."""
    source = (
        "jitlens run --max-traces" if max_traces is not None else "jitlens run --fail-on-retrace"
    )
    checked = check_budget(max_traces, source)
    scope = ProgramScope(fail_on_retrace, checked)
    hooks.activate_counting(source)
    add_scope(scope)
    try:
        yield scope
        hooks.confirm_counting(source)  # a stance that could not count must not pass
    finally:
        remove_scope(scope)
        hooks.deactivate_counting()
