"""Writing the journal as things happen (the file's layout: ``_core/journal.py``).

Opened by ``jitlens run``'s program, ``JITLENS=1`` and the pytest plugin when
tracking starts. From then on:

* a counted call stores its index in its record's slot of a file-backed ``mmap``
  (``Record.cell``): a function's calls 1, 2, 4, ..., 32 and every 64th (a store on
  every call cost a ``jax.jit`` hit 450 instructions, ~1%; the test that picks these
  calls costs it none, sharing the one of the in-place check's calls 1, 2, 4, ...), and
  a frame says the calls at each trace and compile; the kernel keeps the page when the
  process is killed;
* a trace, a compile, a retrace with its reasons, a stale hit or a trace a
  budget stopped writes its function's frame when it happens (:func:`note`):
  the function's figures and its latest events, never the whole history;
* a line jitlens shows while the program runs may go to the journal
  (:func:`say`) for ``jitlens run`` to show, when the program's descriptor 2 is
  not the terminal ``jitlens run`` started with.

Nothing here runs on a signal, a thread or a timer of its own: a process that
dies at any moment leaves every frame written before that moment. A process
forked from the tracked one writes nothing into it (``os.register_at_fork``).
Never raises: a journal that cannot be written is given up with one warning,
and the report at Python's exit is made as without it.
"""

from __future__ import annotations

import _thread
import mmap
import os
import time

from .._core import journal as layout

TYPE_CHECKING = False  # (no ``typing``: opened at a tracked program's start-up)
if TYPE_CHECKING:
    from typing import Any

    Record = Any  # (a ``records.Record``: not imported, which imports this module)

#: One slot for calls nobody reads: records without a slot of the journal's (none open, or
#: past its slots), and every record in a forked child.
TRASH = memoryview(bytearray(8)).cast("q")
#: Events re-written with each frame of a function: the trace in progress and the few before
#: it, which a compile, a budget or JAX's trace cache may still change.
TAIL = 4


class _Open:
    def __init__(self, fd: int, path: str, mm: mmap.mmap, t0: float, mm_fd: int) -> None:
        self.fd = fd
        self.path = path
        self.mm = mm
        #: The file's identity, to tell our descriptor from one the program reopened at its
        #: number after closing ours (``os.closerange``); ``mm_fd``: the one ``mmap`` keeps.
        self.ident = _ident(fd)
        self.mm_fd = mm_fd
        self.view = memoryview(mm)[layout.PAGE : layout.frames_offset(layout.SLOTS)].cast("q")
        self.t0 = t0
        self.pid = os.getpid()
        self.lock = _thread.RLock()
        #: record id -> its events already in the journal
        self.written: dict[int, int] = {}
        self.failures = 0
        self.proc: tuple[Any, ...] | None = None
        #: JAX's and Flax's own jitted helpers are journaled too (``--include-internal``).
        self.internal = False


JOURNAL: list[_Open | None] = [None]


def current_path() -> str | None:
    j = JOURNAL[0]
    return j.path if j is not None else None


def open_journal(path: str, start: dict[str, Any], t0: float, internal: bool = False) -> str | None:
    """Create the journal at ``path`` and write its ``start`` frame; ``t0``: the tracker's
    start (``time.perf_counter``), which event times count from. Returns why it could not."""
    if JOURNAL[0] is not None:
        return None
    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        return f"cannot create the journal {path} ({exc.strerror or exc})"
    try:
        first = layout.frames_offset(layout.SLOTS)
        os.write(fd, layout.header())
        os.ftruncate(fd, first)
        mm, mm_fd = _map(fd, first)
    except (OSError, ValueError) as exc:
        os.close(fd)
        _unlink(path)
        return f"cannot map the journal {path} ({exc})"
    j = _Open(fd, path, mm, t0, mm_fd)
    j.internal = internal
    JOURNAL[0] = j
    from . import sink

    sink.SAY[0] = say
    _write(j, {"t": "start", **start})
    _bind_cells()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
    return None


def _map(fd: int, size: int) -> tuple[mmap.mmap, int]:
    """A shared mapping of the journal (what is stored there is the file's) and the descriptor
    ``mmap`` keeps of it (-1: none; Python 3.13's ``trackfd=False``). Python's ``mmap`` closes
    that descriptor when the object goes, so its number is known, to keep it from closing a
    file of the program's that took the number after the program closed ours."""
    try:
        return mmap.mmap(fd, size, trackfd=False), -1  # type: ignore[call-arg]
    except TypeError:
        pass
    nxt = os.open(os.devnull, os.O_RDONLY)  # the lowest free number: the one mmap's own
    os.close(nxt)  # duplicate of ``fd`` takes next
    mm = mmap.mmap(fd, size)
    return mm, nxt if _ident(nxt) == _ident(fd) else -2


def _ident(fd: int) -> tuple[int, int] | None:
    """The file behind ``fd`` (device, inode); None: closed."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _ours(j: _Open) -> bool:
    """Is ``j.fd`` still the journal? Where the program closed it (``os.closerange``) it is
    opened again by its path, never written through a number the program now uses."""
    if _ident(j.fd) == j.ident:
        return True
    try:
        fd = os.open(j.path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    if _ident(fd) != j.ident:
        os.close(fd)
        return False
    j.fd = fd
    return True


def _let_go(j: _Open) -> None:
    """Close what the journal holds, and nothing the program took over: a descriptor whose
    number the program reopened is left alone, and so is the mapping that would close it."""
    if _ident(j.fd) == j.ident:
        os.close(j.fd)
    if j.mm_fd == -1 or (j.mm_fd >= 0 and _ident(j.mm_fd) == j.ident):
        j.mm.close()
    else:  # mmap would close a number that is not its file any more: it is kept forever
        _keep(j.mm)


def _keep(mm: mmap.mmap) -> None:
    """Never free ``mm``, not even when Python clears the modules at exit (freeing it closes
    the descriptor it holds, whose number a file of the program's may have now)."""
    try:
        import ctypes

        ctypes.pythonapi.Py_IncRef(ctypes.py_object(mm))
    except Exception:  # no ctypes: kept until the modules are cleared
        _KEPT.append(mm)


#: Mappings kept where ``ctypes`` is missing.
_KEPT: list[Any] = []


def started(t0: float) -> None:
    """Tracking started at ``t0`` (``time.perf_counter``): event times count from there."""
    j = JOURNAL[0]
    if j is not None and os.getpid() == j.pid:
        j.t0 = t0
        try:
            with j.lock:
                _write(j, {"t": "tracking", "started_at": time.time()})
        except Exception as exc:
            _failed(j, exc)


def cell_for(rec_id: int) -> memoryview:
    """Where the record ``rec_id`` stores the index of each of its calls."""
    j = JOURNAL[0]
    if j is None or not 0 < rec_id < layout.SLOTS:
        return TRASH
    return j.view[rec_id : rec_id + 1]


#: The records of the process (set by the registry: this module imports none of the engine).
RECORDS: list[Any] = [lambda: ()]


def _bind_cells() -> None:
    """Records made before the journal opened store their calls in it from now on."""
    for rec in RECORDS[0]():
        rec.cell = cell_for(rec.id)
        rec.cell[0] = rec.calls - 1 if rec.calls else 0


def _forked() -> None:
    """In a child forked from the tracked process: nothing of it goes into the parent's
    journal (its records count on, as before, into nothing the parent reads)."""
    j = JOURNAL[0]
    JOURNAL[0] = None
    if j is None:
        return
    try:
        for rec in RECORDS[0]():
            rec.cell = TRASH
        if _ident(j.fd) == j.ident:
            os.close(j.fd)
        _KEPT.append(j.mm)  # the parent's: left mapped (no import in a fork's handler)
    except Exception:
        pass


def note(rec: Record) -> None:
    """Write ``rec``'s frame: its figures now and its latest events. Never raises."""
    j = JOURNAL[0]
    if j is None or os.getpid() != j.pid or (rec.internal and not j.internal):
        return
    try:
        with j.lock:  # (one thread's frame at a time: each continues the one before)
            _write(j, _frame(j, rec))
            _proc(j, rec)
            _warnings(j)
    except Exception as exc:
        _failed(j, exc)


def _frame(j: _Open, rec: Record) -> dict[str, Any]:
    from .._core.report import _to_jsonable

    fr, tail_from, n, calls, not_hits = rec.journal_state(j.t0, j.written.get(rec.id), TAIL)
    j.written[rec.id] = n
    fn = _to_jsonable(fr)
    tail = fn.pop("events")
    fn["calls"] = calls if rec.counts_calls else None
    return {
        "t": "fn",
        "id": rec.id,
        "slot": rec.id if 0 < rec.id < layout.SLOTS else None,
        "fn": fn,
        "not_hits": not_hits,
        "tail_from": tail_from,
        "tail": tail,
    }


def _proc(j: _Open, rec: Record) -> None:
    """The process's place in a job and its backend, when first known or changed (read at a
    compile, when JAX's backends are up: reading them never starts them)."""
    if not rec.compiles:
        return
    from .process import process_info

    info = process_info()
    backend = _backend()
    now = (info.process_index, info.process_count, backend)
    if now != j.proc:
        from .. import _compat

        j.proc = now
        versions = {"jax_version": _compat.jax_version(), "flax_version": _compat.flax_version()}
        _write(j, {"t": "proc", "index": now[0], "count": now[1], "backend": backend, **versions})


def _backend() -> str:
    try:
        import jax

        return str(jax.default_backend())
    except Exception:
        return "?"


def _warnings(j: _Open) -> None:
    from .state import failure_mark, failures_since

    mark = failure_mark()
    if mark != j.failures:
        j.failures = mark
        _write(j, {"t": "warnings", "warnings": list(failures_since(0))})


def say(text: str) -> bool:
    """Put a line jitlens shows into the journal; False when there is none."""
    j = JOURNAL[0]
    if j is None or os.getpid() != j.pid:
        return False
    try:
        with j.lock:
            _write(j, {"t": "say", "text": text})
        return True
    except Exception as exc:
        _failed(j, exc)
        return False


def verdict(violations: int, flag: str) -> None:
    """A compile budget's violations, for ``jitlens run`` to judge the program's exit status."""
    j = JOURNAL[0]
    if j is not None and os.getpid() == j.pid:
        try:
            with j.lock:
                _write(j, {"t": "verdict", "violations": violations, "flag": flag})
        except Exception as exc:
            _failed(j, exc)


def exiting() -> None:
    """The program reached Python's exit: jitlens' exit work begins."""
    _mark("exit")


def interrupted() -> None:
    """A Ctrl-C stopped the report's writing at Python's exit: nobody writes it after."""
    _mark("interrupted")


def _mark(kind: str) -> None:
    """A frame that only says ``kind`` happened, written by the journal's own process."""
    j = JOURNAL[0]
    if j is not None and os.getpid() == j.pid:
        try:
            with j.lock:
                _write(j, {"t": kind})
        except Exception as exc:
            _failed(j, exc)


def final(report: Any, written: list[str], failed: bool, text: str | None = None) -> bool:
    """The whole report at Python's exit (the journal is complete); ``written``: the files the
    program wrote itself, ``failed``: it ended with an uncaught exception, ``text``: the
    summary it rendered for ``jitlens run`` to show (``None``: the parent renders it)."""
    j = JOURNAL[0]
    if j is None or os.getpid() != j.pid:
        return False
    try:
        frame = {"t": "final", "report": report.to_dict(), "written": written, "failed": failed}
        if text is not None:
            frame["text"] = text
        with j.lock:
            _write(j, frame)
        return True
    except Exception as exc:
        _failed(j, exc)
        return False


def close(delete: bool) -> None:
    """Stop writing; ``delete``: the report is out, the journal has nothing left to say."""
    j = JOURNAL[0]
    if j is None or os.getpid() != j.pid:
        return
    JOURNAL[0] = None
    try:
        for rec in RECORDS[0]():
            rec.cell = TRASH
        _let_go(j)
    except Exception:
        pass
    if delete:
        _unlink(j.path)


def _write(j: _Open, frame: dict[str, Any]) -> None:
    if not _ours(j):
        raise OSError("the journal's descriptor was closed and its file is gone")
    data = layout.encode(frame)
    while data:
        data = data[os.write(j.fd, data) :]


def _failed(j: _Open, exc: BaseException) -> None:
    """Writing failed (a full disk, a closed descriptor): stop journaling, say so once."""
    if JOURNAL[0] is j:
        JOURNAL[0] = None
    from .state import internal_failure

    internal_failure("writing the journal", exc)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def start_frame(argv: list[str], settings: dict[str, Any]) -> dict[str, Any]:
    """What a journal says of its process first: who, since when, and what it asked for."""
    import socket

    from .._version import __version__

    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "argv": argv,
        "cwd": _cwd(),
        "started_at": time.time(),
        "proc_start": process_start(os.getpid()),
        "jitlens_version": __version__,
        "settings": settings,
    }


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (Linux: ``/proc``), to tell it from a later one with its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return data.rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None
