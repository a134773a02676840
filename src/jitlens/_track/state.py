"""The flags the hot path reads, per-thread tracing state, and jitlens' fail-safe.

Everything a tracked call touches on a cache hit lives here as items of small
global lists (the cheapest reads in CPython). :func:`internal_failure` is the
one door through which jitlens' own errors leave: logged, warned once, kept
for the report, and never raised into the user's program.
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .._errors import JitlensInternalWarning
from . import sink

log = logging.getLogger("jitlens")


class _TLS(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # traces in progress in this thread (a tracked call inside one is inlined)
        self.in_tracked_call = False
        self.top_fun: Any = None
        self.nevents = 0  # the serial (EVENTS) of this thread's last trace/lower/compile
        self.building: Any = None  # the EventBuilder of the trace in progress
        self.last_built: Any = None
        self.busy = False
        #: ``[depth before, EventBuilder or None]`` of a trace JAX announced whose body
        #: cannot have run yet (before ``trace_to_jaxpr``); left set, the trace was aborted
        self.open_trace: list[Any] | None = None


tls = _TLS()

#: What the hit path reads, as items of one global list (the cheapest reads):
#: [hooks active, calls below this index take the detailed path]. The
#: threshold is the timeline window (0 when off), or "every call" while any
#: thread traces (a tracked call inside a trace is inlined, not a hit).
STATE: list[Any] = [False, 0]
#: Calls per record that are timed for the timeline (0: timeline off).
WINDOW = [0]
#: Calls per record that take the detailed path even without a timeline, so
#: the advisor can sample a few hits (``advisor.py``); later calls pay nothing.
ADVICE_CALLS = [32]
#: Traces in progress, all threads together.
TRACING = [0]
#: Does JAX report the end of traces (the duration listener)? Without it the
#: per-thread trace depth cannot be balanced, so it is not kept at all.
DEPTH_KNOWN = [True]
#: Serial number of the last trace start, lower or compile jitlens saw (all threads),
#: or of the last start/stop of tracking. A thread's own last one is ``tls.nevents``.
#: The timeline window's lean path (``TrackedJit.__call__``) compares it before and
#: after a call: unchanged, nothing entered or left a jit's cache in between.
EVENTS = [0]
#: May the window take its lean path? Only when JAX reports trace starts and ends
#: (both listeners registered): else an event could pass unseen.
LEAN_WINDOW = [False]
_EVENTS_LOCK = threading.Lock()


def note_event() -> int:
    """A new event serial, larger than every earlier one (the caller keeps it in ``tls``)."""
    with _EVENTS_LOCK:
        EVENTS[0] = serial = EVENTS[0] + 1
    return serial


def update_threshold() -> None:
    busy = TRACING[0] > 0
    STATE[1] = sys.maxsize if busy else max(WINDOW[0], ADVICE_CALLS[0])


class PassThrough(BaseException):
    """Carries a guard's error (``RecompileError``) from a listener up to the call.

    The tracked wrapper re-raises the error itself, so the traceback ends at
    the user's call instead of deep inside JAX's tracing machinery.
    """

    def __init__(self, error: BaseException) -> None:
        self.error = error


def weak(obj: Any) -> Any:
    """A weak reference to ``obj``, or None (for None and objects that refuse one)."""
    if obj is None:
        return None
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


def deref(ref: Any) -> Any:
    return ref() if ref is not None else None


def finalize(obj: Any, pop: Callable[..., Any], key: Any) -> None:
    """Call ``pop(key, None)`` when ``obj`` dies (nothing for objects without weakrefs)."""
    try:
        weakref.finalize(obj, pop, key, None)
    except TypeError:
        pass


INTERNAL_FAILURE = (
    "jitlens: {what} failed ({error}); jitlens stepped aside for it and your program "
    "is unaffected. Please report this with your jax/flax versions."
)

_FAILURES_LOCK = threading.Lock()
_WARNED: set[str] = set()
#: Each distinct internal failure of this process (its cause: what failed, and the error's
#: type) -> the number of its latest occurrence and that occurrence's words. A report's ``warnings`` hold
#: those that happened in its window (:func:`failures_since`): one in an earlier
#: ``track()`` block of the process (a test's injected fault) is not this window's.
FAILURES: dict[str, tuple[int, str]] = {}
_OCCURRENCES = [0]


def failure_mark() -> int:
    """The number of the latest internal failure so far (0: none): where a window starts."""
    return _OCCURRENCES[0]


def failures_since(mark: int) -> tuple[str, ...]:
    """The internal failures whose latest occurrence came after ``mark``, in that order (each
    in the words of its latest occurrence)."""
    with _FAILURES_LOCK:
        return tuple(text for n, text in FAILURES.values() if n > mark)


def internal_failure(what: str, exc: BaseException) -> None:
    """jitlens failed: log it, warn once per cause, remember it, never raise.

    The warning cannot become an exception in the user's program: with
    ``-W error`` (or pytest's ``filterwarnings = error``) it goes to the
    ``jitlens`` logger instead.
    """
    try:
        log.debug("jitlens internal failure in %s", what, exc_info=exc)
        key = f"{what}:{type(exc).__name__}"
        with _FAILURES_LOCK:
            _OCCURRENCES[0] += 1
            text = INTERNAL_FAILURE.format(what=what, error=f"{type(exc).__name__}: {exc}")
            FAILURES.pop(key, None)  # the latest occurrence's words, last in the order
            FAILURES[key] = (_OCCURRENCES[0], text)
            if key in _WARNED:
                return
            _WARNED.add(key)
        sink.warn(text, JitlensInternalWarning, stacklevel=3)
    except Exception:  # pragma: no cover - even logging failed: stay silent, stay out
        pass
