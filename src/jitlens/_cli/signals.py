"""Signals and ``os._exit`` under ``jitlens run`` and ``JITLENS=1``: the report, then the same end.

A program killed by SIGTERM (cluster pre-emption, ``timeout``, ``kill``)
dies at once, without running ``finally`` blocks; under ``jitlens run`` it
should die the same way, but only after the report files and the summary are
written. The handler writes them from a helper thread with a time limit (the
main thread may be stopped inside jitlens' own bookkeeping, holding a lock),
then restores the default action and sends the signal again, so the parent
sees "killed by SIGTERM" exactly as without jitlens. SIGINT needs nothing
here: Python turns it into ``KeyboardInterrupt``, prints its traceback, runs
the ``atexit`` hooks (jitlens' report among them) and dies of the signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

#: Signals whose default action is to terminate; handled only while that default is in place.
SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

#: Seconds the report may take before the program dies without it.
FINISH_TIMEOUT = 20.0


class Finish:
    """The report-writing step, run once, that a signal may interrupt without losing it.

    Called by ``jitlens run`` when the program ends, or by the signal handler
    when a signal ends it first. A signal that arrives while the main thread
    is already writing waits for it: the handler returns at once, the writing
    goes on, and the process dies of the signal right after (:meth:`__call__`).
    """

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self._done = threading.Event()
        self.started = False
        self.owner: int | None = None  # the thread writing
        self.deferred: int | None = None  # a signal that came while the main thread wrote
        self.handler: Any = None  # the signal handler :func:`install` put in place
        #: What ended the program before it reached its exit (``"SIGTERM"``, ``"os._exit(3)"``),
        #: for the report to say so; ``None``: Python's own exit.
        self.ending: str | None = None

    def __call__(self) -> None:
        # No lock: the handler runs on the main thread, between these bytecodes if need be
        # (the owner first: a handler that sees ``started`` knows who writes).
        if self.started:
            return
        self.owner = threading.get_ident()
        self.started = True
        try:
            _quietly(self._fn)
        finally:
            self._done.set()
        if self.deferred is not None and self.owner == threading.main_thread().ident:
            die_of(self.deferred)

    def within(self, ending: str, timeout: float = 0.0) -> None:
        """Write the report (``ending`` says what ends the program) from a helper thread, and
        wait for it at most ``timeout`` seconds (:data:`FINISH_TIMEOUT` by default): the
        calling thread may hold one of jitlens' locks (a signal handler's code runs between
        any two bytecodes), and the program's end must not wait on it. Writing already begun
        by another thread is waited for; by this one, not (it is the caller)."""
        timeout = timeout or FINISH_TIMEOUT
        if self.started:
            if self.owner != threading.get_ident():
                self.wait(timeout)
            return
        self.ending = ending
        try:
            threading.Thread(target=self, daemon=True).start()
        except Exception:  # no new thread (the interpreter refuses one): write from here
            self()
            return
        self.wait(timeout)

    def wait(self, timeout: float) -> None:
        self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()


def install(finish: Finish) -> list[int]:
    """From now on, SIGTERM / SIGHUP call ``finish`` and then kill the process as before.

    A handler the program (or its parent, with ``SIG_IGN``) set is left alone;
    so is one the program installs later. Returns the signals handled. Must be
    called on the main thread (else nothing is installed).
    """
    if threading.current_thread() is not threading.main_thread():
        return []
    pid = os.getpid()

    def handler(signum: int, frame: FrameType | None) -> None:
        if signal.getsignal(signum) is not handler:
            # called by the program's own handler, which replaced this one and chains to it
            # (``if callable(previous): previous(signum, frame)``): under python the one it
            # replaced was SIG_DFL, never called; its own shutdown goes on, and the report
            # is written at Python's exit
            return
        if finish.done or os.getpid() != pid:  # a forked child has no report to write
            die_of(signum)
        if finish.started and finish.owner == threading.get_ident():
            finish.deferred = signum  # the main thread is writing: let it finish, then die
            return
        if not finish.started:
            finish.ending = signal.Signals(signum).name
            threading.Thread(target=finish, daemon=True).start()
        finish.wait(FINISH_TIMEOUT)
        die_of(signum)

    installed = []
    for sig in SIGNALS:
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, handler)
            installed.append(sig)
    finish.handler = handler
    if installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: _forget(handler, installed))
    return installed


def watch_os_exit(finish: Finish, pid: int) -> None:
    """From now on, ``os._exit`` in this process writes the report before it ends the process.

    ``os._exit`` ends the process without Python's exit: no ``atexit`` hooks run,
    jitlens' among them, whether the program calls it in its main code, a thread, or
    an ``atexit`` hook of its own (those run before jitlens', which is registered
    first). Python offers no later hook (``threading``'s exit hooks and the audit
    events of finalisation come before or after ``atexit``, never after an
    ``os._exit``), so ``os._exit`` is the program's own function behind a step that
    writes the report first. A forked child (``multiprocessing``'s fork workers end
    with ``os._exit``) writes none; a status ``os._exit`` refuses (a string, a number
    out of range) raises as before, with nothing written.
    """
    real = os._exit

    def _exit(status: int) -> None:
        try:
            if os.getpid() == pid and not finish.done and _exit_status_ok(status):
                finish.within(f"os._exit({status!r})")
        except BaseException:  # a Ctrl-C while waiting: the program's exit goes on
            pass
        real(status)

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        with contextlib.suppress(Exception):
            setattr(_exit, attr, getattr(real, attr))
    os._exit = _exit  # type: ignore[assignment]


def _exit_status_ok(status: object) -> bool:
    """Does ``os._exit`` take ``status`` (a C ``int``), or will it raise and the program go on?"""
    return isinstance(status, int) and -(2**31) <= status < 2**31


def _forget(handler: Any, installed: list[int]) -> None:
    """In a forked child (``multiprocessing``'s fork workers, ``os.fork()``): the default
    actions back, as under python; ``Pool.terminate()``'s SIGTERM must not write a report."""
    for sig in installed:
        with contextlib.suppress(Exception):
            if signal.getsignal(sig) is handler:
                signal.signal(sig, signal.SIG_DFL)


@contextlib.contextmanager
def finish_on_signals(finish: Finish) -> Iterator[None]:
    """:func:`install` for the length of a block, which should end with ``finish()``."""
    installed = install(finish)
    try:
        yield
    finally:
        for sig in installed:
            if signal.getsignal(sig) is finish.handler:
                signal.signal(sig, signal.SIG_DFL)


def _quietly(finish: Callable[[], None]) -> None:
    try:
        finish()
    except Exception as exc:  # the process may be dying of its signal whatever happens here
        from .._track import sink

        sink.write(f"jitlens: could not write the report ({type(exc).__name__}: {exc})\n")


def die_of(signum: int) -> None:
    """End the process by ``signum`` with its default action (the exit status python would give)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)  # delivered to this thread at once: the process ends here
    os._exit(128 + signum)
