"""The report options of ``jitlens run`` and ``jitlens report``: parsed, anchored, checked, written.

The checks and the writing live in ``_render.outputs`` (the pytest plugin uses
them too); this module ties them to the command line: ``--json``, ``--html``,
``--trace``, paths anchored where the program started (it may ``os.chdir``),
shown relative to it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # (no ``typing``: imported at a tracked program's start-up)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable
    from types import SimpleNamespace
    from typing import Any

    from .._render.outputs import Output

#: The report options, in the order they are checked and written.
KINDS = ("json", "html", "trace")


def add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json",
        metavar="PATH",
        help="write the JSON report; {process_index}, {host}, {pid} are filled in; "
        "gs://... and other URLs need fsspec",
    )
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    p.add_argument("--trace", metavar="PATH", help="write a Chrome/Perfetto trace-event JSON")


def anchor_outputs(args: Any, cwd: str | None = None) -> None:
    """Make the report paths absolute now: the program may ``os.chdir`` before they are written.

    A relative path where the working folder was removed names no folder: it stays as
    given, and :func:`output_problem` says why (``args.unanchored``: the kind and why).
    """
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:  # started in a folder since removed: a relative path names nothing
            cwd = None
    args.launch_cwd = cwd
    given = {}
    for name in KINDS:
        value = getattr(args, name, None)
        if value:
            from .._errors import ConfigError
            from .._render.outputs import is_url
            from .._track.process import anchor_path

            given[name] = value
            if not is_url(value):
                try:
                    setattr(args, name, anchor_path(value, cwd))
                except ConfigError as exc:
                    args.unanchored = (name, str(exc))
    args.given_outputs = given


def outputs_of(args: Any) -> list[Output]:
    from .._render.outputs import Output

    given = getattr(args, "given_outputs", {})
    return [
        Output(name, given.get(name, getattr(args, name)), getattr(args, name))
        for name in KINDS
        if getattr(args, name, None)
    ]


def output_problem(args: Any, inputs: Iterable[tuple[str, str]] = ()) -> str | None:
    """Why one of the report paths cannot be written (one line), or ``None``."""
    if not any(getattr(args, name, None) for name in KINDS):
        return None
    from .._render.outputs import OPTION_NAMES, OutputError, check_outputs

    unanchored = getattr(args, "unanchored", None)
    if unanchored is not None:
        return f"{OPTION_NAMES[unanchored[0]]} {unanchored[1]}"

    try:
        check_outputs(outputs_of(args), inputs)
    except OutputError as exc:
        return str(exc)
    return None


def shown(path: str, args: Any) -> str:
    """``path`` relative to where the program started, when it is below it."""
    start = getattr(args, "launch_cwd", None)
    if start is None:
        return path
    rel = os.path.relpath(path, start)
    return path if rel.startswith(os.pardir) else rel


def write_outputs(report: Any, args: Any, pid: int | None = None) -> list[str]:
    """Write each report file asked for, on its own; returns the paths written (as shown).
    The paths' fields name the report's process (``pid``: the program's, when not this one)."""
    if not any(getattr(args, name, None) for name in KINDS):
        return []  # nothing asked for (and the writers are not imported)
    from .._render.outputs import write_outputs as write
    from .._track import sink
    from .._track.process import ProcessInfo

    info = ProcessInfo(report.process_index, report.process_count, report.host, pid)
    # a failure's line goes where jitlens' words go: never into the program's own
    # sys.stderr replacement (a log file it opened), which is all sys.stderr is at exit
    return write(
        report,
        outputs_of(args),
        lambda p: shown(p, args),
        lambda line: sink.write(line + "\n"),
        info,
    )


# ------------------------------------------------ the report paths of a tracked program


def run_args(run: dict[str, Any]) -> SimpleNamespace:
    """``jitlens run``'s options, as the launcher hands them to the program (``JITLENS_RUN``)."""
    from types import SimpleNamespace

    keys = ("json", "html", "trace", "given_outputs", "launch_cwd", "gather", "quiet")
    args = SimpleNamespace(**{k: run.get(k) for k in keys})
    args.given_outputs = args.given_outputs or {}
    args.include_internal = bool(run.get("include_internal"))
    return args


class EnvArgs:
    """The report paths of the environment, shaped like ``jitlens run``'s options."""

    def __init__(self, cwd: str | None = None) -> None:
        from .. import _config

        self.json = _config.get("report") or None
        self.html = _config.get("html") or None
        self.trace = None
        self.gather = None
        self.quiet = False
        self.include_internal = bool(_config.get("include_internal"))
        anchor_outputs(self, cwd)  # relative paths: where the program started


#: How the environment's report paths are named in messages.
ENV_NAMES = {"json": "JITLENS_REPORT", "html": "JITLENS_HTML"}
PARENTS_PATH = (
    "jitlens: this process (pid {pid}, a child of the tracked program) wrote no {names}: "
    "the program's own report is written there; put {{pid}} in the path for one per process\n"
)


def leave_the_parents_paths(args: Any) -> list[str]:
    """A child tracked by ``JITLENS_CHILDREN=1`` inherits ``JITLENS_REPORT`` / ``JITLENS_HTML``:
    it writes only the paths holding ``{pid}`` (one file per process), never over the file
    its parent writes at its own exit. Returns how the paths left are named."""
    left = []
    for kind, env in ENV_NAMES.items():
        given = args.given_outputs.get(kind)
        if given and "{pid" not in given:
            setattr(args, kind, None)
            left.append(f"{env}={given}")
    return left


def check_report_paths(args: Any) -> None:
    """A bad ``JITLENS_REPORT`` / ``JITLENS_HTML`` stops the program before it runs (exit 2)."""
    if not (args.json or args.html):
        return  # nothing to check (and nothing to import)
    import dataclasses

    from .._render.outputs import OutputError, check_outputs
    from .._track import sink

    try:
        unanchored = getattr(args, "unanchored", None)
        if unanchored is not None:
            raise OutputError(f"{ENV_NAMES[unanchored[0]]}={unanchored[1]}")
        outputs = outputs_of(args)
        script = (getattr(sys, "argv", None) or [""])[0]
        inputs = [(script, f"the script {script}")] if os.path.isfile(script) else []
        named = [dataclasses.replace(o, label=f"{ENV_NAMES[o.kind]}={o.given}") for o in outputs]
        check_outputs(named, inputs)
    except OutputError as exc:
        sink.write(f"jitlens: {exc}\n")
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(2)
    except Exception as exc:  # never break the program over a check
        sink.write(f"jitlens: could not check the report paths ({type(exc).__name__}: {exc})")


class _Terminal:
    """What ``want_color`` asks of a stream: is jitlens' terminal a tty?"""

    def isatty(self) -> bool:
        from .._track import sink

        return sink.isatty()


def summary_text(report: Any, run: dict[str, Any], args: Any, failed: bool, lines: int) -> str:
    """``jitlens run``'s summary of ``report`` at most ``lines`` long ("" where a failed
    program jitted nothing), made in the program, where the report's modules are loaded,
    for the parent to show; coloured as ``jitlens run`` decided for its own stderr."""
    if not report.functions and failed:
        return ""
    from .._render.color import want_color
    from .._render.text import render_text

    text = render_text(
        report,
        color=want_color(run.get("color") or "auto", _Terminal()),  # type: ignore[arg-type]
        include_internal=args.include_internal,
        max_lines=lines,
    )
    return "\n" + text + "\n"
