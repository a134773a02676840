"""Bounds on the user code ``jitlens audit`` runs: a time limit, and no silent exit.

``jitlens audit`` imports the target and calls its factory in its own process
(the findings are about those very objects). A factory that loops or waits
forever would hang a CI job, and one that calls ``sys.exit(0)`` or
``os._exit(0)`` would end audit with status 0 and no output: a gate that
passes. While :func:`bounded` is open, an alarm stops the code after
``timeout`` seconds, and both exits become :class:`AuditError`. Code stuck
inside a C call that never returns to Python is beyond an alarm's reach.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from .target import AuditError

#: Default seconds for importing the target and building the model twice.
DEFAULT_TIMEOUT = 120.0

TIMED_OUT = (
    "{target} did not finish within {seconds:g} s (stopped); a factory should build the model "
    "and return it: move training, downloads or waiting out of it, or raise --timeout"
)
EXITED = (
    "{target} called {how}({code!r}) instead of returning a model; audit needs the model: "
    "return it from the factory (status {code!r} would have passed a CI gate without an audit)"
)


class _Stop(BaseException):
    """Raised into the user's code: not an ``Exception``, so ``except Exception`` keeps it going."""


class _Exited(BaseException):
    def __init__(self, code: Any) -> None:
        self.code = code


@contextlib.contextmanager
def bounded(target: str, timeout: float | None = DEFAULT_TIMEOUT) -> Iterator[None]:
    """Run the block with a time limit; ``sys.exit`` / ``os._exit`` in it raise AuditError."""
    original_exit = os._exit

    def no_exit(code: int) -> None:
        raise _Exited(code)

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    alarm = bool(timeout) and threading.current_thread() is threading.main_thread()
    previous: Any = None
    if alarm:
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(timeout or 0))
    os._exit = no_exit  # type: ignore[assignment]
    try:
        yield
    except _Stop:
        raise AuditError(TIMED_OUT.format(target=target, seconds=timeout)) from None
    except _Exited as exc:
        raise AuditError(EXITED.format(target=target, how="os._exit", code=exc.code)) from None
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
        raise AuditError(EXITED.format(target=target, how="sys.exit", code=code)) from None
    finally:
        os._exit = original_exit
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        sys.stdout.flush()
