"""Where the renderings go: report paths checked before a program runs, then written one by one.

A report path is given when a program starts and written when it ends,
minutes or days later: a typo found then costs the whole run. So every
output (``--json``/``--html``/``--trace`` of ``jitlens run`` and ``jitlens
report``, ``JITLENS_REPORT``/``JITLENS_HTML``, the pytest plugin's
``--jitlens-report``) is checked up front by :func:`check_outputs`: it is not
an input or the script, not another output, not a folder or a device, and
its folder takes a new file. Symlinks are followed (the file the link points
to is replaced, the link stays). ``scheme://`` paths are written through
fsspec or ``etils.epath`` when one of them can open that scheme, and refused
up front otherwise. At the end :func:`write_outputs` writes each output on
its own: one that fails is reported by the user's own path and costs none of
the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._core.files import write_atomic
from .._core.report import Report
from .._errors import ConfigError, JitlensError
from .._track.process import ProcessInfo, expand_path_template, process_info

#: ``gs://bucket/r.json``, ``s3://…``, ``file:///…``: a URL, not a local path.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

IS_INPUT = "{name} is {input}: it would be overwritten; write the report elsewhere"
SAME_OUTPUT = "{name} is also {other}; give each report its own file"
IS_FOLDER = "{name} is a folder; give a file name, e.g. {example}"
NOT_REGULAR = "{name} is not a regular file (a FIFO or device); give a file name"
NOT_WRITABLE = "{name}: cannot create a file in {folder} ({why}); give a writable folder"
NO_URL_BACKEND = (
    "{name} is a {scheme}:// URL, and {why}; install fsspec with the {scheme} "
    "backend (e.g. pip install fsspec gcsfs), or give a local path"
)
CANNOT_WRITE = "jitlens: cannot write {path}: {why}"


class OutputError(JitlensError, ValueError):
    """A report path cannot be written (checked before the program runs)."""


@dataclasses.dataclass(frozen=True)
class Output:
    """One report file: what it holds, the path as the user gave it, and where it is written."""

    kind: str  # "json" | "html" | "trace"
    given: str  # as the user wrote it (shown in messages)
    path: str  # absolute (or a URL); may hold {process_index}-style fields
    label: str = ""  # how messages name it; default "--json PATH"

    @property
    def what(self) -> str:
        return OPTION_NAMES.get(self.kind, self.kind)

    @property
    def name(self) -> str:
        return self.label or f"{self.what} {self.given}"

    def target(self, info: ProcessInfo | None = None) -> str:
        """The file to write: fields filled in, symlinks followed (a URL is left as it is)."""
        expanded = expand_path_template(self.path, info)
        return expanded if is_url(expanded) else os.path.realpath(expanded)


#: How an output is named in messages (the option that set it).
OPTION_NAMES: dict[str, str] = {"json": "--json", "html": "--html", "trace": "--trace"}


def is_url(path: str) -> bool:
    return bool(_URL.match(path))


def check_outputs(outputs: Sequence[Output], inputs: Iterable[tuple[str, str]] = ()) -> None:
    """Raise :class:`OutputError` (one line, naming the path) for the first output that cannot be.

    ``inputs`` are ``(path, description)`` of the files the command reads or
    runs (``("train.py", "the script train.py")``): no output may be one of them.
    """
    info = process_info()
    readable = [(os.path.realpath(p), what) for p, what in inputs if p]
    seen: dict[str, Output] = {}
    for out in outputs:
        try:
            target = out.target(info)
        except ConfigError as exc:
            raise OutputError(str(exc)) from None
        if is_url(target):
            _check_url(out, target)
        else:
            _check_local(out, target, readable)
        earlier = seen.get(target)
        if earlier is not None:
            raise OutputError(SAME_OUTPUT.format(name=out.name, other=earlier.name))
        seen[target] = out


def output_problem(
    path: str | None, inputs: Iterable[tuple[str, str]] = (), option: str = "--json"
) -> str | None:
    """Why the one output ``path`` of a command cannot be written (one line), or ``None``."""
    if not path:
        return None
    target = path if is_url(path) else os.path.abspath(path)
    try:
        check_outputs([Output("json", path, target, f"{option} {path}")], inputs)
    except OutputError as exc:
        return str(exc)
    return None


def _check_local(out: Output, target: str, inputs: Sequence[tuple[str, str]]) -> None:
    for real, what in inputs:
        if real == target or _same_file(real, target):
            raise OutputError(IS_INPUT.format(name=out.name, input=what))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(
            NOT_WRITABLE.format(name=out.name, folder=target, why=exc.strerror)
        ) from None
    if mode is not None and stat.S_ISDIR(mode):
        example = os.path.join(out.given, "report." + ("html" if out.kind == "html" else "json"))
        raise OutputError(IS_FOLDER.format(name=out.name, example=example))
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputError(NOT_REGULAR.format(name=out.name))
    folder = os.path.dirname(target)
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)  # created at write time: probe where it would start
    try:
        fd, probe = tempfile.mkstemp(prefix=".jitlens-probe-", dir=folder)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise OutputError(NOT_WRITABLE.format(name=out.name, folder=folder, why=why)) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_url(out: Output, url: str) -> None:
    scheme = url.split("://", 1)[0]
    why = _url_backend_problem(scheme)
    if why is not None:
        raise OutputError(NO_URL_BACKEND.format(name=out.name, scheme=scheme, why=why))


def _url_backend_problem(scheme: str) -> str | None:
    """Why no installed library can write ``scheme://`` URLs (``None``: one can)."""
    if importlib.util.find_spec("fsspec") is not None:
        try:
            importlib.import_module("fsspec").get_filesystem_class(scheme)
            return None
        except (ImportError, ValueError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return f"fsspec cannot open it ({detail})"
    if importlib.util.find_spec("etils") is not None:
        return None  # etils.epath resolves its backends only when it writes
    return "neither fsspec nor etils is installed"


def prepare_urls(outputs: Sequence[Output]) -> None:
    """Load the URL outputs' backends now: written from an ``atexit`` hook, an import that
    registers its own hook (fsspec does) would fail ("can't register atexit after shutdown")."""
    for out in outputs:
        if not is_url(out.path):
            continue
        scheme = out.path.split("://", 1)[0]
        with contextlib.suppress(Exception):
            if importlib.util.find_spec("fsspec") is not None:
                importlib.import_module("fsspec").get_filesystem_class(scheme)
            elif importlib.util.find_spec("etils") is not None:
                importlib.import_module("etils.epath")


def _write_url(url: str, text: str) -> None:
    if importlib.util.find_spec("fsspec") is not None:
        fsspec = importlib.import_module("fsspec")
        with fsspec.open(url, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    from etils import epath  # type: ignore[import-not-found]

    epath.Path(url).write_text(text, encoding="utf-8")


def render(kind: str, report: Report) -> str:
    """The text of one output kind."""
    if kind == "json":
        return report.to_json()
    if kind == "html":
        from .html import render_html

        return render_html(report)
    import json

    from .perfetto import render_trace_events

    return json.dumps(render_trace_events(report), allow_nan=False, default=str)


def write_outputs(
    report: Report,
    outputs: Sequence[Output],
    shown: Callable[[str], str] = lambda p: p,
    problem: Callable[[str], Any] | None = None,
    info: ProcessInfo | None = None,
) -> list[str]:
    """Write every output, each on its own; returns the paths written (as ``shown`` gives them).

    A failure is passed to ``problem`` as one line naming the user's path
    (default: printed to stderr) and does not stop the other outputs. ``info``: the process
    the report's fields name (default: this one; ``jitlens run`` writes its program's).
    """
    info = info or process_info()
    written = []
    for out in outputs:
        try:
            target = out.target(info)
            text = render(out.kind, report)
            if is_url(target):
                _write_url(target, text)
                written.append(target)
            else:
                write_atomic(target, text)
                written.append(shown(expand_path_template(out.path, info)))
        except Exception as exc:
            why = getattr(exc, "strerror", None) or f"{type(exc).__name__}: {exc}"
            line = CANNOT_WRITE.format(path=out.given, why=why)
            if problem is not None:
                problem(line)
            else:
                with contextlib.suppress(Exception):
                    sys.stderr.write(line + "\n")
    return written
