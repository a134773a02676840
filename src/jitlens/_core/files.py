"""Reading the files a command is given: regular files only, of bounded size.

Every jitlens command reads input it did not write (reports from other
machines, source trees, files named on a command line). Opening a FIFO
blocks until something writes to it, and a device or ``/dev/zero`` never
ends: :func:`read_regular` opens without blocking, refuses anything that is
not a regular file, and refuses files above a size limit before reading them.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from typing import Any

NOT_REGULAR = "not a regular file ({kind}); give the path of a file"
TOO_LARGE = "{size} MiB, above the limit of {limit} MiB for {what}"


class InputFileError(OSError):
    """A file jitlens will not read: not a regular file, or too large."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def regular_file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a regular file jitlens may read (``None``: it is one)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # opening it gives the real error
    return None if stat.S_ISREG(mode) else NOT_REGULAR.format(kind=_kind(mode))


def read_regular(
    path: str | os.PathLike[str], limit: int | None = None, what: str = "this file"
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises:
        InputFileError: not a regular file (a FIFO, a device, a folder) or larger than ``limit``.
        OSError: it cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(NOT_REGULAR.format(kind=_kind(info.st_mode)))
        if limit is not None and info.st_size > limit:
            size = round(info.st_size / (1 << 20))
            raise InputFileError(TOO_LARGE.format(size=size, limit=limit >> 20, what=what))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read() if limit is None else fh.read(limit + 1)
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:  # grew while being read
        size = round(len(data) / (1 << 20))
        raise InputFileError(TOO_LARGE.format(size=size, limit=limit >> 20, what=what))
    return data


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` so that ``path`` never holds a half-written file."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".jitlens-", dir=directory)
    try:
        # mkstemp makes 0600 files; a report is meant to be shared like any file the user writes.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    """The process umask: from /proc where it can be read, else by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: Characters a report from elsewhere may hold that would act on a terminal rather than be
#: read on it (ESC sequences that clear it or set its title, a carriage return that writes
#: over a line, bidirectional overrides that reorder what is shown): written as escapes.
_ACTING = {
    **{c: f"\\x{c:02x}" for c in range(0x20) if chr(c) not in "\t\n"},
    **{c: f"\\x{c:02x}" for c in range(0x7F, 0xA0)},
    **{c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
}


#: Any of them: most strings hold none, and a search costs a fifth of a ``translate``.
_ACTING_ANY = re.compile("[" + "".join(re.escape(chr(c)) for c in _ACTING) + "]")


def inert(value: str) -> str:
    """``value`` with the characters that would act on a terminal written as escapes."""
    return value.translate(_ACTING) if _ACTING_ANY.search(value) else value


#: What in a JSON text can decode to one of them: the character, or its escape (``\b``,
#: ``\f``, ``\r``, ``\u001b``...); a few other escapes match too, which costs only time.
_ACTING_JSON = re.compile(
    _ACTING_ANY.pattern + r"|\\[bfr]|\\u(?:00[01]|00[89]|007f|202[a-e]|206[6-9])", re.IGNORECASE
)


def loads_inert(text: str) -> Any:
    """``json.loads(text)``, every string of its objects made :func:`inert` (``inert_pairs``).
    A text in which nothing can decode to an acting character (a report as jitlens writes
    it) is parsed without the hook, which costs many times the parse itself."""
    if _ACTING_JSON.search(text) is None:
        return json.loads(text)
    return json.loads(text, object_pairs_hook=inert_pairs)


def inert_pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """``json.loads``' ``object_pairs_hook`` for untrusted reports: every string of the object,
    its keys and those in its lists included, made :func:`inert` (a report read from another
    machine is printed on this terminal by ``jitlens report``, ``merge`` and ``diff``)."""
    return {
        inert(key): inert(value)
        if isinstance(value, str)
        else [inert(v) if isinstance(v, str) else v for v in value]
        if isinstance(value, list)
        else value
        for key, value in pairs
    }
