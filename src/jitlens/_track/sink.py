"""Where jitlens' own words go: the terminal the program started with, not the program's.

Under ``jitlens run`` and ``JITLENS=1`` the program does not know jitlens is
there, so nothing jitlens says may enter the program's own machinery: not the
``sys.stderr`` of the moment (a ``contextlib.redirect_stderr`` buffer, pytest's
``capsys``), not its ``warnings`` records (``catch_warnings(record=True)``) or
its ``warnings.showwarning`` (which may raise ``SystemExit``).

* Under ``jitlens run`` (:func:`follow_terminal`) jitlens holds no descriptor of
  the program's: a line goes to descriptor 2 while that is still the file
  ``jitlens run`` itself writes to (so it comes in order with the program's own
  lines), else into the journal, which ``jitlens run`` shows (pytest's ``capfd``
  swapped descriptor 2 for a test: jitlens' lines are not the test's output).
* Under ``JITLENS=1`` nobody outlives the program to show them: at start-up,
  before the program runs, :func:`open_terminal` keeps a duplicate of
  descriptor 2, closed in every process forked from the program (a daemon's
  double fork must not hold the caller's pipe open).

Inside the program's own code (``jitlens.track()``, the pytest plugin), where
the user asked for jitlens, its warnings are ordinary Python warnings and
:func:`warn` calls :func:`warnings.warn` as before (an exception a filter makes
of it is logged instead, never raised into the program).
"""

from __future__ import annotations

import _thread
import os
import sys

TYPE_CHECKING = False  # (no ``typing``, ``threading``: imported at a tracked program's start-up)
if TYPE_CHECKING:
    from typing import Any

#: The duplicate of descriptor 2 taken at start-up under ``JITLENS=1``; 2 under ``jitlens run``
#: (``None``: jitlens runs inside the program).
TERMINAL: list[int | None] = [None]
#: Under ``jitlens run``: lines descriptor 2 cannot take go to the journal.
_FOLLOW = [False]
#: How a line goes into the journal (set when it opens: ``journal.say``); False: it did not.
SAY: list[Any] = [lambda text: False]
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
_LOCK = _thread.allocate_lock()


def open_terminal() -> None:
    """``JITLENS=1``: keep the terminal as it is before the program runs (once; not inherited
    by the program's children, closed in a forked one)."""
    if TERMINAL[0] is not None:
        return
    try:
        fd = os.dup(2)  # non-inheritable: the program's children never see it
        _IDENTITY[0] = _identity(fd)
        TERMINAL[0] = fd
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forked)
    except OSError:  # no descriptor 2: jitlens writes to sys.stderr as a library would
        TERMINAL[0] = None
    _ENCODING[0] = getattr(sys.__stderr__, "encoding", None) or "utf-8"


def follow_terminal(identity: list[int] | None) -> None:
    """``jitlens run``: write to descriptor 2 while it is ``identity`` (``jitlens run``'s own
    stderr: ``[device, inode]``), else into the journal for ``jitlens run`` to show."""
    TERMINAL[0] = 2
    _FOLLOW[0] = True
    _IDENTITY[0] = (identity[0], identity[1]) if identity else None
    _ENCODING[0] = getattr(sys.__stderr__, "encoding", None) or "utf-8"


def _forked() -> None:
    fd = TERMINAL[0]
    TERMINAL[0] = None
    if fd is not None and fd != 2:
        try:
            os.close(fd)
        except OSError:
            pass


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
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except Exception:
            pass
        return
    try:
        sys.__stderr__.flush()  # type: ignore[union-attr]  # the program's lines before ours
    except Exception:
        pass
    data = _encode(text)
    with _LOCK:
        old = _block_sigpipe()
        try:
            fd = _terminal_fd()
            if fd is None and _FOLLOW[0] and SAY[0](text):
                return
            while data and fd is not None:
                data = data[os.write(fd, data) :]
        except OSError:
            pass
        finally:
            _unblock_sigpipe(old)


def _block_sigpipe() -> Any:
    """A write of jitlens' to a pipe its reader closed (``jitlens run prog.py 2>&1 | head -1``)
    fails quietly, even in a program that put SIGPIPE's default action back (CLI tools do):
    the signal would kill the program for jitlens' words. SIGPIPE is blocked in this thread
    for the write (returns the mask to put back, or ``None``: nothing was blocked)."""
    import signal

    sigpipe = getattr(signal, "SIGPIPE", None)
    if (
        sigpipe is None
        or not hasattr(signal, "pthread_sigmask")
        or signal.getsignal(sigpipe) is signal.SIG_IGN  # python's own setting: EPIPE only
    ):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {sigpipe})


def _unblock_sigpipe(old: Any) -> None:
    """Put the mask back, once a SIGPIPE the write raised is taken off."""
    if old is None:
        return
    import signal

    try:
        if signal.SIGPIPE in signal.sigpending() and signal.SIGPIPE not in old:
            signal.sigtimedwait({signal.SIGPIPE}, 0)
    except Exception:
        pass
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
        import warnings

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
        import linecache

        line = linecache.getline(filename, lineno).strip()
    except Exception:
        line = ""
    text = f"{filename}:{lineno}: {category.__name__}: {message}\n"
    write(text + (f"  {line}\n" if line else ""))
