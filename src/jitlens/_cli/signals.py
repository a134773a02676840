"""Signals under ``jitlens run``: write the report, then die of the signal as the program would.

A program killed by SIGTERM (cluster pre-emption, ``timeout``, ``kill``)
dies at once, without running ``finally`` blocks; under ``jitlens run`` it
should die the same way, but only after the report files and the summary are
written. The handler writes them from a helper thread with a time limit (the
main thread may be stopped inside jitlens' own bookkeeping, holding a lock),
then restores the default action and sends the signal again, so the parent
sees "killed by SIGTERM" exactly as without jitlens. SIGINT needs nothing
here: Python turns it into ``KeyboardInterrupt``, which ``jitlens run``
handles like any exception before re-raising the signal (see
:func:`die_of`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

#: Signals whose default action is to terminate; handled only while that default is in place.
SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

#: Seconds the report may take before the program dies without it.
FINISH_TIMEOUT = 20.0


@contextlib.contextmanager
def finish_on_signals(finish: Callable[[], None]) -> Iterator[None]:
    """While the block runs, SIGTERM / SIGHUP call ``finish`` and then kill the process as before.

    A handler the program (or its parent, with ``SIG_IGN``) set is left alone;
    so is one the program installs later.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        worker = threading.Thread(target=_quietly, args=(finish,), daemon=True)
        worker.start()
        worker.join(FINISH_TIMEOUT)
        die_of(signum)

    installed = []
    for sig in SIGNALS:
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, handler)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            if signal.getsignal(sig) is handler:
                signal.signal(sig, signal.SIG_DFL)


def _quietly(finish: Callable[[], None]) -> None:
    try:
        finish()
    except Exception as exc:  # the process is dying of its signal whatever happens here
        sys.stderr.write(f"jitlens: could not write the report ({type(exc).__name__}: {exc})\n")


def die_of(signum: int) -> None:
    """End the process by ``signum`` with its default action (the exit status python would give)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)  # delivered to this thread at once: the process ends here
    os._exit(128 + signum)
