"""Where jitlens' own words go: the real terminal when jitlens runs the program from outside.

Under ``jitlens run`` and ``JITLENS=1`` the program does not know jitlens is
there, so nothing jitlens says may enter the program's own machinery: not the
``sys.stderr`` of the moment (a ``contextlib.redirect_stderr`` buffer, pytest's
``capsys``), not its ``warnings`` records (``catch_warnings(record=True)``) or
its ``warnings.showwarning`` (which may raise ``SystemExit``). At start-up,
before the program runs, :func:`open_terminal` keeps a duplicate of file
descriptor 2 as it was then; the live retrace lines, jitlens' warnings and the
exit summary are written there. pytest's ``capfd`` swaps descriptor 2 itself
for the length of a test, and jitlens' lines still reach the terminal: they
are jitlens' output, not the program's.

Inside the program's own code (``jitlens.track()``, the pytest plugin), where
the user asked for jitlens, its warnings are ordinary Python warnings and
:func:`warn` calls :func:`warnings.warn` as before (an exception a filter makes
of it is logged instead, never raised into the program).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import threading
import warnings
from typing import Any

#: The duplicate of descriptor 2 taken at start-up (``None``: jitlens runs inside the program).
TERMINAL: list[int | None] = [None]
#: The file the terminal descriptor was open on: (device, inode), to know it is still ours.
_IDENTITY: list[tuple[int, int] | None] = [None]
#: The terminal's encoding, as Python set up ``sys.stderr`` for it (``PYTHONIOENCODING``, locale).
_ENCODING = ["utf-8"]
#: jitlens' own drawing and typographic characters, in ASCII for a terminal without them.
_ASCII = str.maketrans(
    {
        **dict.fromkeys("─━═╌┄", "-"),
        **dict.fromkeys("│┃║", "|"),
        **dict.fromkeys("┌┐└┘├┤┬┴┼╭╮╰╯┏┓┗┛┡┩╇╋┯┷┿", "+"),
        **dict.fromkeys("\u2013\u2014", "-"),  # en and em dashes
        **dict.fromkeys("\u2018\u2019", "'"),
        **dict.fromkeys("“”", '"'),
        "…": "...",
        "→": "->",
        "←": "<-",
        "\u00d7": "x",  # multiplication sign
        "·": ".",
        "≈": "~",
    }
)
_LOCK = threading.Lock()


def open_terminal() -> None:
    """Keep the terminal as it is before the program runs (once; not inherited by children)."""
    if TERMINAL[0] is not None:
        return
    try:
        fd = os.dup(2)  # non-inheritable: the program's children never see it
        _IDENTITY[0] = _identity(fd)
        TERMINAL[0] = fd
    except OSError:  # no descriptor 2: jitlens writes to sys.stderr as a library would
        TERMINAL[0] = None
    _ENCODING[0] = getattr(sys.__stderr__, "encoding", None) or "utf-8"


def _encode(text: str) -> bytes:
    """``text`` in the terminal's encoding, as Python writes the program's ``sys.stderr``
    (``PYTHONIOENCODING=latin-1``, a Windows code page): UTF-8 bytes there were mojibake.
    What the encoding lacks: jitlens' rules and ellipses in ASCII, the rest (the user's
    names) escaped, as Python's ``sys.stderr`` escapes them."""
    try:
        return text.encode(_ENCODING[0])
    except UnicodeEncodeError:
        return text.translate(_ASCII).encode(_ENCODING[0], "backslashreplace")
    except LookupError:
        return text.encode("utf-8", "replace")


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _terminal_fd() -> int | None:
    """The descriptor of the terminal kept at start-up, if it still is that file.

    A program may close every descriptor (``os.closerange(3, ...)``, as daemonizing
    code does) and open its own files, which then get the kept number: jitlens
    must not write into them. Then descriptor 2 is used if it still is the
    terminal of the start, else nothing is written.
    """
    for fd in (TERMINAL[0], 2):
        try:
            if fd is not None and _identity(fd) == _IDENTITY[0]:
                return fd
        except OSError:
            pass
    return None


def outside() -> bool:
    """Is jitlens running the program from outside (``jitlens run``, ``JITLENS=1``)?"""
    return TERMINAL[0] is not None


def write(text: str) -> None:
    """Write ``text`` where jitlens' words go; never raises."""
    fd = TERMINAL[0]
    if fd is None:
        with contextlib.suppress(Exception):
            sys.stderr.write(text)
            sys.stderr.flush()
        return
    with contextlib.suppress(Exception):
        sys.__stderr__.flush()  # type: ignore[union-attr]  # the program's lines before ours
    data = _encode(text)
    with _LOCK, contextlib.suppress(OSError), _no_sigpipe():
        fd = _terminal_fd()
        while data and fd is not None:
            data = data[os.write(fd, data) :]


@contextlib.contextmanager
def _no_sigpipe() -> Any:
    """A write of jitlens' to a pipe its reader closed (``jitlens run prog.py 2>&1 | head -1``)
    fails quietly, even in a program that put SIGPIPE's default action back (CLI tools do):
    the signal would kill the program for jitlens' words. SIGPIPE is blocked in this thread
    for the write, and one it raised is taken off before it is unblocked."""
    import signal

    sigpipe = getattr(signal, "SIGPIPE", None)
    if (
        sigpipe is None
        or not hasattr(signal, "pthread_sigmask")
        or signal.getsignal(sigpipe) is signal.SIG_IGN  # python's own setting: EPIPE only
    ):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {sigpipe})
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            if sigpipe in signal.sigpending() and sigpipe not in old:
                signal.sigtimedwait({sigpipe}, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def isatty() -> bool:
    try:
        if TERMINAL[0] is not None:
            fd = _terminal_fd()
            return fd is not None and os.isatty(fd)
        return sys.stderr.isatty()
    except Exception:
        return False


def warn(message: str | Warning, category: type[Warning], stacklevel: int = 2) -> None:
    """Warn the user: on the terminal from outside the program, else with :func:`warnings.warn`.

    Never raises into the program: a filter that makes the warning an error
    (``-W error``) or a ``showwarning`` that raises is stepped around.
    """
    if TERMINAL[0] is None:
        try:
            warnings.warn(message, category, stacklevel=stacklevel + 1)
        except Exception:
            write(f"{category.__name__}: {message}\n")
        return
    try:
        from .._compat.frames import caller

        frame: Any = caller(stacklevel)  # stacklevel 1: the line that called warn()
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
    except Exception:
        filename, lineno = "sys", 1
    try:
        line = linecache.getline(filename, lineno).strip()
    except Exception:
        line = ""
    text = f"{filename}:{lineno}: {category.__name__}: {message}\n"
    write(text + (f"  {line}\n" if line else ""))
