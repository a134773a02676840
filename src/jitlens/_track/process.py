"""Which process of a multi-host JAX job this is, and per-process report paths."""

from __future__ import annotations

import os
import socket
import string
import sys
from typing import NamedTuple

from .._errors import ConfigError

#: Fields a report path may contain, e.g. ``report-{process_index}.json``.
PATH_FIELDS: tuple[str, ...] = ("process_index", "process_count", "host", "pid")

UNKNOWN_FIELD = (
    "report path {path!r} names the field {{{field}}}, which jitlens does not know; "
    "use one of {valid} (write {{{{ and }}}} for literal braces)"
)
POSITIONAL_FIELD = (
    "report path {path!r} has an unnamed field {{}}; name it, e.g. {example!r}; "
    "valid fields: {valid}"
)
BAD_TEMPLATE = (
    "report path {path!r} is not a valid template: {error}; write {{{{ and }}}} for literal braces"
)


class ProcessInfo(NamedTuple):
    """Where a report comes from: ``(process_index, process_count, host)``, and the program's pid
    (``None``: this process's)."""

    process_index: int
    process_count: int
    host: str
    pid: int | None = None


def process_info() -> ProcessInfo:
    """This process's place in a multi-process JAX job, without starting JAX.

    Reads ``jax.distributed``'s own state (set by ``jax.distributed.initialize``)
    rather than calling ``jax.process_index()``, which would initialise the
    backends as a side effect: a report written at exit, or a path expanded
    before the program touched JAX, must not do that. A process that never
    imported JAX, or never initialised ``jax.distributed``, is process 0 of 1.

    Example:
        >>> from jitlens._track.process import process_info
        >>> info = process_info()
        >>> info.process_index < info.process_count
        True
    """
    host = socket.gethostname()
    if "jax" not in sys.modules:
        return ProcessInfo(0, 1, host)
    from .. import _compat

    state = _compat.distributed_state()
    if state is None:
        # Shut down since it was last seen (JAX's own atexit hook does): still that process.
        return _SEEN[0] if _SEEN[0] is not None else ProcessInfo(0, 1, host)
    _SEEN[0] = ProcessInfo(state[0], state[1], host)
    return _SEEN[0]


#: The last place in a job :func:`process_info` saw while ``jax.distributed`` was up.
_SEEN: list[ProcessInfo | None] = [None]


def anchor_path(path: str, cwd: str | None = None) -> str:
    """``path`` made absolute against ``cwd`` (default: now), ``~`` expanded.

    Report paths are given on the command line or in the environment when the
    program starts and written when it ends: anchored at the start, an
    ``os.chdir`` in between does not move the files. Templates survive; braces in
    the directory are escaped, so :func:`expand_path_template` keeps them.
    """
    path = os.path.expanduser(path)
    if os.path.isabs(path):
        return path
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:  # the program was started in a folder since removed
            raise ConfigError(NO_WORKING_DIR.format(path=path)) from None
    here = cwd.replace("{", "{{").replace("}", "}}")  # not template fields
    return os.path.join(here, path)


NO_WORKING_DIR = (
    "{path} is a relative path and the working folder was removed, so it names no folder; "
    "give an absolute path"
)


def expand_path_template(path: str, info: ProcessInfo | None = None) -> str:
    """Fill ``{process_index}``, ``{process_count}``, ``{host}`` and ``{pid}`` in ``path``.

    Each process of a multi-host job can then write its own report from one
    command line (``jitlens run --json 'report-{process_index}.json' train.py``),
    to be combined afterwards with ``jitlens merge report-*.json``. Format
    specs work (``{process_index:03d}``); ``{{`` and ``}}`` are literal braces.

    Args:
        path: The template.
        info: The process to name; defaults to :func:`process_info`, read at call time.

    Raises:
        ConfigError: The template names an unknown field, an unnamed one, or is malformed.

    Example:
        >>> from jitlens._track.process import ProcessInfo, expand_path_template
        >>> expand_path_template("report-{process_index}-of-{process_count}.json",
        ...                      ProcessInfo(1, 4, "node7"))
        'report-1-of-4.json'
    """
    valid = ", ".join("{" + f + "}" for f in PATH_FIELDS)
    try:
        parsed = list(string.Formatter().parse(path))
    except ValueError as exc:
        raise ConfigError(BAD_TEMPLATE.format(path=path, error=exc)) from None
    fields = [field for _, field, _, _ in parsed if field is not None]
    if not fields:
        # No replacement fields: the path is used as written (``{{`` still unescaped).
        return path.replace("{{", "{").replace("}}", "}")
    for field in fields:
        if field == "" or field.isdigit():
            example = path.replace("{" + field + "}", "{process_index}", 1)
            raise ConfigError(POSITIONAL_FIELD.format(path=path, example=example, valid=valid))
        if field not in PATH_FIELDS:
            raise ConfigError(UNKNOWN_FIELD.format(path=path, field=field, valid=valid))
    if info is None:
        info = process_info()
    values = {
        "process_index": info.process_index,
        "process_count": info.process_count,
        "host": info.host,
        "pid": info.pid if info.pid is not None else os.getpid(),
    }
    try:
        return path.format(**values)
    except (ValueError, TypeError) as exc:
        raise ConfigError(BAD_TEMPLATE.format(path=path, error=exc)) from None
