"""What every compile budget shares: its message, raising or warning at the user's line, dispatch."""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Literal, Protocol

from .. import _compat
from .._errors import ConfigError, RecompileError, RecompileWarning
from .records import EventBuilder, Record
from .registry import REGISTRY
from .state import deref

OnExceed = Literal["raise", "warn"]

#: Valid values of ``on_exceed``.
ON_EXCEED: tuple[str, ...] = ("raise", "warn")

OVER_BUDGET = "jitlens: `{name}` was traced {count} times, over its budget of {budget} ({source})."
BAD_BUDGET = "{what}: the budget must be an int >= 0 (or None, to only count), got {value!r}"
BAD_ON_EXCEED = "{what}: on_exceed must be one of {valid}, got {value!r}"

#: Set on errors raised from the trace-start listener, so that a guard's own
#: ``__call__`` may re-raise them with a traceback that ends at the user's call.
FROM_LISTENER = "_jitlens_from_listener"


class Watch(Protocol):
    """A budget on one function (``max_traces``)."""

    def matches(
        self, rec: Record, reachable: Callable[[], set[int]], b: EventBuilder | None = None
    ) -> bool: ...

    def on_trace(self, rec: Record, b: EventBuilder) -> None: ...


class Scope(Protocol):
    """A budget on every user function traced while a block is open."""

    #: The thread the block applies to; ``None``: every thread.
    thread: int | None

    def on_trace(self, rec: Record, b: EventBuilder) -> None: ...


def check_budget(value: Any, what: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ConfigError(BAD_BUDGET.format(what=what, value=value))


def check_on_exceed(value: Any, what: str) -> OnExceed:
    if value not in ON_EXCEED:
        raise ConfigError(BAD_ON_EXCEED.format(what=what, valid=ON_EXCEED, value=value))
    return value  # type: ignore[no-any-return]


def message(head: str, rec: Record, b: EventBuilder, *tail: str) -> str:
    """``head``, then the trace explained (call site, what changed, fix), indented."""
    explained = rec.explain_retrace(b, REGISTRY.t0)
    return "\n".join([head, *("  " + line for line in explained.splitlines()), *tail])


def warn(text: str) -> None:
    """Warn at the user's frame (the first one outside JAX, Flax and jitlens)."""
    __tracebackhide__ = True
    warnings.warn(RecompileWarning(text), stacklevel=_compat.user_stacklevel())


def act(text: str, on_exceed: OnExceed) -> None:
    """Over budget: warn, or raise the error from the trace-start listener."""
    __tracebackhide__ = True
    if on_exceed == "warn":
        warn(text)
        return
    error = RecompileError(text)
    setattr(error, FROM_LISTENER, True)
    raise error


# ------------------------------------------------------------------ dispatch

_LOCK = threading.Lock()
_WATCHES: weakref.WeakSet[Any] = weakref.WeakSet()
_SCOPES: tuple[Scope, ...] = ()


def add_watch(watch: Watch) -> None:
    """Check ``watch`` on every trace while it is alive (held weakly)."""
    _WATCHES.add(watch)


def add_scope(scope: Scope) -> None:
    global _SCOPES
    with _LOCK:
        _SCOPES = (*_SCOPES, scope)


def remove_scope(scope: Scope) -> None:
    global _SCOPES
    with _LOCK:
        _SCOPES = tuple(s for s in _SCOPES if s is not scope)


def _reachable(rec: Record) -> set[int]:
    """Ids of the callables a record's wrapper and traced function are built from."""
    stack = [o for o in (deref(rec.wrapper_ref), deref(rec.inner_fun_ref)) if o is not None]
    seen: set[int] = set()
    while stack and len(seen) < 32:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for attr in ("fun", "f", "func", "__wrapped__"):
            try:
                nxt = getattr(obj, attr, None)
            except Exception:
                continue
            if nxt is not None and callable(nxt):
                stack.append(nxt)
    return seen


def _on_trace(rec: Record, b: EventBuilder) -> None:
    """``REGISTRY.on_trace`` callback: check every budget that covers this trace."""
    __tracebackhide__ = True
    scopes = _SCOPES
    if not scopes and not _WATCHES:
        return
    cache: list[set[int]] = []

    def reachable() -> set[int]:
        if not cache:
            cache.append(_reachable(rec))
        return cache[0]

    watches: list[Watch] = list(_WATCHES)
    for watch in watches:
        if watch.matches(rec, reachable, b):
            watch.on_trace(rec, b)
    if rec.internal:
        return
    thread = threading.get_ident()
    for scope in scopes:
        if scope.thread is None or scope.thread == thread:
            scope.on_trace(rec, b)


if _on_trace not in REGISTRY.on_trace:
    REGISTRY.on_trace.append(_on_trace)
