"""The journal: what a tracked process records as it happens, and the report read back from it.

A tracked program (``jitlens run``, ``JITLENS=1``, the pytest plugin) keeps one
journal file, written while it runs, never at its end only: whatever ends the
process (a SIGKILL from the OOM killer or a pre-empting scheduler, ``os._exit``,
an uncaught signal, an ``exec``), the kernel keeps what was written, and whoever
outlives the program builds its report from the file: ``jitlens run`` as the
program's parent, or later ``jitlens report JOURNAL``. Nothing inside the program
has to catch its ending. (A flight recorder, or coverage.py's data file.)

Layout (little-endian)::

    [0, 4096)                header: MAGIC, LAYOUT, the number of call slots
    [4096, FRAMES)           the calls of each record so far: one int64 per slot, stored
                             at every counted call through a file-backed ``mmap``
    [FRAMES, end)            frames, appended as things happen: <u32 size> <JSON> <u32 crc32>

Frames (``"t"``): ``start`` (who, when, the report options), ``fn`` (a function's
figures and its latest events: a trace, a compile, a retrace's reasons, written
when they happen), ``say`` (a line jitlens showed), ``proc`` (the process's
place in a multi-process job), ``verdict`` (a compile budget's violations),
``final`` (the whole report, at Python's own exit). A frame cut short by the
process's death fails its checksum and ends the reading there.

This module is pure: it encodes frames and reads a journal back into a
:class:`~jitlens._core.report.Report`; ``_track/journal.py`` writes it.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

TYPE_CHECKING = False  # (no ``typing``: a journal opens at a tracked program's start-up)
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"JITLENS-JOURNAL\x00"
#: The layout this jitlens writes and reads.
LAYOUT = 1
PAGE = 4096
#: Call slots (records beyond them are counted in their ``fn`` frames only).
SLOTS = 1 << 15
_HEAD = struct.Struct("<16sII")
_SIZE = struct.Struct("<I")
#: A frame larger than this is not jitlens' (a final report of 10,000 functions is ~30 MB).
FRAME_MAX = 256 * 1024 * 1024
#: The file name's suffix.
SUFFIX = ".jitlens-journal"

#: Said in a report built from a journal: how the program ended, and what the report holds.
FROM_JOURNAL = (
    "the program ended {how}, before Python's exit: this report was built from its journal "
    "({holds})"
)
#: ... when it reached Python's exit, where jitlens failed to make the report.
NOT_MADE = (
    "the program reached Python's exit, but jitlens could not make its report there: this "
    "report was built from its journal ({holds})"
)
#: ... when it reached Python's exit and was ended there before jitlens made the report.
ENDED_AT_EXIT = (
    "the program reached Python's exit and ended {how} there, before jitlens made its report: "
    "this report was built from its journal ({holds})"
)
HOLDS = (
    "traces, compiles and their reasons as they happened; calls counted until call "
    "{calls}{others}; no timeline, advice or persistent-cache figures"
)
#: How a program ended, when nobody saw it end (``jitlens report`` on an orphan journal).
UNSEEN_ENDING = "in a way nobody saw (SIGKILL, os._exit, a crash, or its parent killed too)"


def frames_offset(slots: int) -> int:
    """Where the frames start, after the header page and ``slots`` int64 call slots."""
    return PAGE + -(-slots * 8 // PAGE) * PAGE


def header(slots: int = SLOTS) -> bytes:
    """The header page of a new journal."""
    return _HEAD.pack(MAGIC, LAYOUT, slots).ljust(PAGE, b"\0")


def encode(frame: dict[str, Any]) -> bytes:
    """One frame: its size, its JSON, its checksum."""
    data = json.dumps(frame, separators=(",", ":"), allow_nan=False, default=str).encode()
    return _SIZE.pack(len(data)) + data + _SIZE.pack(zlib.crc32(data))


class Journal:
    """A journal read back: its frames in order, and the calls each slot holds."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.start: dict[str, Any] = {}
        #: function id -> its latest ``fn`` frame, and its events
        self.functions: dict[int, dict[str, Any]] = {}
        self.events: dict[int, list[dict[str, Any]]] = {}
        #: slot -> calls stored there
        self.calls: dict[int, int] = {}
        self.says: list[str] = []
        self.proc: dict[str, Any] | None = None
        self.verdict: dict[str, Any] | None = None
        self.final: dict[str, Any] | None = None
        self.warnings: tuple[str, ...] = ()
        #: The program reached Python's exit (jitlens' exit work began).
        self.exited = False
        #: A Ctrl-C stopped the report's writing at that exit: the user asked for no more.
        self.interrupted = False
        #: The last frame was cut short (the process died writing it).
        self.torn = False
        #: Where the frames read end (a reader following a live journal goes on from there).
        self.end = 0


class JournalError(ValueError):
    """Not a journal jitlens can read."""


def read(path: str, *, limit: int = 2 * 1024 * 1024 * 1024) -> Journal:
    """Read the journal at ``path`` (a regular file, at most ``limit`` bytes)."""
    from .files import read_regular

    try:
        data = read_regular(path, limit=limit, what="a journal")
    except OSError as exc:
        raise JournalError(f"{path}: {exc}") from None
    return parse(data, path)


def parse(data: bytes, path: str = "<journal>") -> Journal:
    """A journal from its bytes."""
    slots = _slots(data, path)
    journal = Journal(path)
    _read_calls(journal, data, slots)
    journal.end, journal.torn = _read_frames(journal, data, frames_offset(slots))
    return journal


def _slots(data: bytes, path: str) -> int:
    if len(data) < _HEAD.size:
        raise JournalError(f"{path}: not a jitlens journal (too short)")
    magic, layout, slots = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise JournalError(f"{path}: not a jitlens journal")
    if layout != LAYOUT:
        raise JournalError(f"{path}: a journal of layout {layout}; this jitlens reads {LAYOUT}")
    return int(slots)


def _read_calls(journal: Journal, data: bytes, slots: int) -> None:
    counts = memoryview(data)[PAGE : min(frames_offset(slots), len(data))]
    usable = len(counts) // 8 * 8
    for slot, (n,) in enumerate(struct.iter_unpack("<q", counts[:usable])):
        if n:
            journal.calls[slot] = n + 1  # the index of the last call counted, from 0


def _read_frames(journal: Journal, data: bytes, pos: int) -> tuple[int, bool]:
    """Apply the whole frames of ``data`` from ``pos``; ``(where they end, cut short)``."""
    while pos + _SIZE.size <= len(data):
        (size,) = _SIZE.unpack_from(data, pos)
        stop = pos + _SIZE.size + size + _SIZE.size
        if size > FRAME_MAX:
            return pos, True
        if stop > len(data):
            return pos, True  # (a live journal: the rest is being written)
        body = data[pos + _SIZE.size : stop - _SIZE.size]
        (crc,) = _SIZE.unpack_from(data, stop - _SIZE.size)
        if zlib.crc32(body) != crc:
            return pos, True
        try:
            frame = json.loads(body)
        except ValueError:
            return pos, True
        if isinstance(frame, dict):
            _apply(journal, frame)
        pos = stop
    return pos, pos != len(data)


class Follower:
    """A journal read while its process still writes it: each :meth:`poll` applies the frames
    written since the last one (the ``say`` lines among them are handed back)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.journal = Journal(path)
        self._fd: int | None = None
        self._first = 0
        self._buffer = b""
        #: The process became another program (``os.exec*``): its parent saw it.
        self.exec_seen = False

    def poll(self) -> list[str]:
        """The lines said since the last poll (none while the journal does not exist yet)."""
        if self._fd is None and not self._open():
            return []
        said = len(self.journal.says)
        try:
            chunk = os.read(self._fd, 1 << 20)  # type: ignore[arg-type]
            while chunk:
                self._buffer += chunk
                chunk = os.read(self._fd, 1 << 20)  # type: ignore[arg-type]
        except OSError:
            return []
        end, _torn = _read_frames(self.journal, self._buffer, 0)
        self._buffer = self._buffer[end:]
        return self.journal.says[said:]

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return False
        head = os.read(fd, PAGE)
        try:
            slots = _slots(head, self.path)
        except JournalError:
            os.close(fd)
            return False
        self._first = frames_offset(slots)
        os.lseek(fd, self._first, os.SEEK_SET)
        self._fd = fd
        return True

    def close(self) -> Journal | None:
        """The journal as its process left it (the calls of its slots too); ``None``: none."""
        self.poll()
        if self._fd is None:
            return None
        try:
            data = os.pread(self._fd, self._first, 0)
            _read_calls(self.journal, data, (self._first - PAGE) // 8)
        except OSError:
            pass
        self.journal.torn = bool(self._buffer)
        os.close(self._fd)
        self._fd = None
        return self.journal


def _apply(journal: Journal, frame: dict[str, Any]) -> None:
    kind = frame.get("t")
    if kind == "start":
        journal.start = frame
    elif kind == "fn":
        fid = int(frame["id"])
        events = journal.events.setdefault(fid, [])
        tail_from = int(frame.get("tail_from", 0))
        del events[tail_from:]
        events.extend(frame.get("tail") or ())
        journal.functions[fid] = frame
    elif kind == "say":
        journal.says.append(str(frame.get("text", "")))
    elif kind == "proc":
        journal.proc = frame
    elif kind == "verdict":
        journal.verdict = frame
    elif kind == "final":
        journal.final = frame
    elif kind == "exit":
        journal.exited = True
    elif kind == "interrupted":
        journal.interrupted = True
    elif kind == "tracking":
        journal.start = {**journal.start, "started_at": frame.get("started_at")}
    elif kind == "warnings":
        journal.warnings = tuple(str(w) for w in frame.get("warnings") or ())


def calls_counted(journal: Journal) -> int:
    """The most calls any one function made, as far as the journal knows."""
    best = 0
    for frame in journal.functions.values():
        best = max(best, _calls(journal, frame) or 0)
    return best


def _calls(journal: Journal, frame: dict[str, Any]) -> int | None:
    fn = frame.get("fn") or {}
    calls = fn.get("calls")
    slot = frame.get("slot")
    if calls is None:
        return None
    if slot is not None and journal.calls.get(int(slot), 0) > calls:
        return journal.calls[int(slot)]
    return int(calls)


def report_from_journal(
    journal: Journal, how: str | None = None, include_internal: bool = False
) -> Any:
    """The report of a program from its journal: its ``final`` report if it reached Python's
    exit, else one built from its frames, saying how it ended (``how``: "by SIGKILL")."""
    from .report import SCHEMA_VERSION, report_from_dict

    if journal.final is not None and how is None:
        return report_from_dict(journal.final["report"])
    start = journal.start
    functions = []
    for fid, frame in journal.functions.items():
        fn = dict(frame.get("fn") or {})
        if fn.get("internal") and not include_internal:
            continue
        events = journal.events.get(fid, [])
        fn["events"] = events
        calls = _calls(journal, frame)
        if calls is not None:
            fn["calls"] = calls
            fn["cache_hits"] = max(0, calls - int(frame.get("not_hits", 0)))
        for part in ("trace", "lower", "compile"):
            fn[f"{part}_seconds"] = sum(float(e.get(f"{part}_seconds", 0.0)) for e in events)
        if not fn.get("first_call_site") and events:
            fn["first_call_site"] = events[0].get("call_site", "")
        functions.append(fn)
    proc = journal.proc or {}
    holds = HOLDS.format(
        calls=f"{calls_counted(journal):,}",
        others=", the last frame cut short" if journal.torn else "",
    )
    if journal.exited and journal.final is None and how is None:
        ended = NOT_MADE.format(holds=holds)
    elif journal.exited and journal.final is None:
        ended = ENDED_AT_EXIT.format(how=how, holds=holds)
    else:
        ended = FROM_JOURNAL.format(how=how or UNSEEN_ENDING, holds=holds)
    data = {
        "schema_version": SCHEMA_VERSION,
        "jitlens_version": start.get("jitlens_version", "?"),
        "jax_version": proc.get("jax_version", "?"),
        "flax_version": proc.get("flax_version", ""),
        "backend": proc.get("backend", "?"),
        "process_index": proc.get("index", 0),
        "process_count": proc.get("count", 1),
        "host": start.get("host", "?"),
        "started_at": start.get("started_at", 0.0),
        "duration_seconds": max(0.0, _last_time(journal) - float(start.get("started_at", 0.0))),
        "functions": functions,
        "argv": start.get("argv", []),
        "warnings": [*journal.warnings, ended],
    }
    return report_from_dict(data)


def _last_time(journal: Journal) -> float:
    """Wall time of the journal's last write (its file's mtime), or of its start."""
    try:
        return os.stat(journal.path).st_mtime
    except OSError:
        return float(journal.start.get("started_at", 0.0))


def is_journal(path: str) -> bool:
    """Is ``path`` a file that starts with a journal's magic? (A FIFO or a device is never
    opened here: its reader would wait for a writer.)"""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def journal_dir() -> str:
    """Where tracked programs keep their journals (``JITLENS_JOURNAL_DIR``, else the folder
    ``journal`` of jitlens' cache folder: ``$XDG_CACHE_HOME/jitlens`` or ``~/.cache/jitlens``)."""
    from .. import _config

    configured = _config.get("journal_dir")
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    base = _config.get("cache_dir")
    if not base:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(cache, "jitlens")
    return os.path.join(os.path.abspath(os.path.expanduser(base)), "journal")


def new_path(directory: str, pid: int) -> str:
    """A journal's path: the time it starts and the pid, so a folder lists them in order."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime())
    return os.path.join(directory, f"{stamp}-{pid}{SUFFIX}")
