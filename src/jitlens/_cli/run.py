"""``jitlens run``: run a Python program as ``python`` would, with tracking installed first.

The program gets the same ``sys.argv``, ``__name__ == "__main__"``,
``sys.path[0]``, exit code, exceptions and tracebacks as under ``python``;
tracking starts before it imports anything, so functions decorated at import
time (``@jax.jit`` in any module) are counted too. At exit the summary goes
to stderr and the report files asked for are written (also when the program
raises or calls ``sys.exit``).
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import traceback
import types
from typing import Any

from . import live_run  # issue 24: --fail-on-retrace, --max-traces, retraces live on stderr

#: jitlens' own directory (its frames are hidden from the program's tracebacks).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USAGE = (
    "jitlens run [--json PATH] [--html PATH] [--trace PATH] [--include-internal] [--quiet] "
    f"{live_run.USAGE} (SCRIPT.py | -m MODULE) [ARGS...]"  # issue 24
)
NOT_FOUND = "jitlens run: cannot open {path!r}: {why}"


#: The exit summary stays under 60 lines for any program (all of it: --json / --html).
EXIT_LINES = 56


def build_parser(prog: str = "jitlens run") -> argparse.ArgumentParser:
    """jitlens' own options; the program and its arguments are split off by :func:`split_argv`."""
    p = argparse.ArgumentParser(
        prog=prog,
        usage=USAGE,
        description="Run a Python program with every jitted function tracked; print why each "
        "retrace happened. Everything after SCRIPT.py or -m MODULE belongs to the program, "
        "as with python.",
    )
    add_output_options(p)
    live_run.add_live_options(p)  # issue 24
    p.add_argument(
        "--include-internal",
        action="store_true",
        help="also report JAX's and Flax's own jitted helpers",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no summary on stderr (report files are still written)",
    )
    p.add_argument(
        "-m",
        dest="module",
        metavar="MODULE",
        help="run a library module as a script, like python -m (the rest goes to the module)",
    )
    return p


#: jitlens run's options that take a value (``--json PATH`` or ``--json=PATH``).
_VALUE_OPTIONS = ("--json", "--html", "--trace", *live_run.VALUE_OPTIONS)


def split_argv(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """``argv`` -> (jitlens' options, ``-m`` module or ``None``, the program's argv).

    Like ``python``: the first word that is not one of jitlens' options is the
    script, and it and everything after it are the program's ``sys.argv``;
    ``-m MODULE`` ends jitlens' options the same way. A ``--`` before the
    script, or right after the script or module, only separates and is dropped.
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[:i], None, _drop_separator(argv[i + 1 :], at=1)
        if word == "-m":
            if i + 1 >= len(argv):
                return argv, None, []  # argparse says "-m: expected one argument"
            return argv[:i], argv[i + 1], _drop_separator(argv[i + 2 :], at=0)
        if word.startswith("-m") and not word.startswith("--"):
            return argv[:i], word[2:], _drop_separator(argv[i + 1 :], at=0)
        if word in _VALUE_OPTIONS:
            i += 2
            continue
        if not word.startswith("-") or word == "-":
            return argv[:i], None, _drop_separator(argv[i:], at=1)
        i += 1
    return argv, None, []


def _drop_separator(words: list[str], at: int) -> list[str]:
    return words[:at] + words[at + 1 :] if len(words) > at and words[at] == "--" else words


def add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json",
        metavar="PATH",
        help="write the JSON report; {process_index}, {host}, {pid} are filled in",
    )
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    p.add_argument("--trace", metavar="PATH", help="write a Chrome/Perfetto trace-event JSON")


def anchor_outputs(args: Any, cwd: str | None = None) -> None:
    """Make the report paths absolute now: the program may ``os.chdir`` before they are written."""
    from .._track.process import anchor_path

    args.launch_cwd = cwd or os.getcwd()
    for name in ("json", "html", "trace"):
        value = getattr(args, name, None)
        if value:
            setattr(args, name, anchor_path(value, cwd))


def _shown(path: str, args: Any) -> str:
    """``path`` relative to where the program started, when it is below it."""
    start = getattr(args, "launch_cwd", None)
    if start is None:
        return path
    rel = os.path.relpath(path, start)
    return path if rel.startswith(os.pardir) else rel


def write_outputs(report: Any, args: argparse.Namespace) -> list[str]:
    """Write the report files asked for; returns the paths written (as the user gave them)."""
    from .._core.report import write_atomic
    from .._track.process import expand_path_template, process_info

    info = process_info()
    written = []
    if args.json:
        path = expand_path_template(args.json, info)
        write_atomic(path, report.to_json())
        written.append(_shown(path, args))
    if args.html:
        from .._render.html import render_html

        path = expand_path_template(args.html, info)
        write_atomic(path, render_html(report))
        written.append(_shown(path, args))
    if args.trace:
        from .._render.perfetto import write_trace

        path = expand_path_template(args.trace, info)
        write_trace(report, path)
        written.append(_shown(path, args))
    return written


def main(argv: list[str]) -> int:
    """``jitlens run``: run the program tracked; the summary first, then its traceback, as python."""
    own, module, program = split_argv(list(argv))
    p = build_parser()
    args = p.parse_args(own)
    args.module = module if module is not None else args.module
    args.target = program
    anchor_outputs(args)
    if args.module is None and not args.target:
        p.error("give a SCRIPT.py to run, or -m MODULE")
    code_obj = None
    if args.module is None:
        script = args.target[0]
        try:
            with open(script, "rb") as fh:
                source = fh.read()
        except OSError as exc:
            why = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror or exc
            print(NOT_FOUND.format(path=script, why=why), file=sys.stderr)
            return 2
        try:  # python compiles the script before running any of it: so does jitlens run
            code_obj = compile(source, os.path.abspath(script), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            _print_user_traceback(exc)
            return 1
    from .._track.tracker import Tracker
    from .signals import finish_on_signals

    tracker = Tracker(include_internal=args.include_internal, timeline=True)
    outcome = Outcome()
    tracker.start()
    live = live_run.LiveRun(args)  # issue 24
    try:
        with finish_on_signals(lambda: _finish(tracker, args, outcome)):
            if live.start(outcome):  # issue 24 (False: a bad setting or a budget that cannot count)
                _run_program(args, code_obj, outcome)
    finally:
        live.stop(outcome)  # issue 24
        _finish(tracker, args, outcome)
    if outcome.exception is not None:  # the traceback is the last thing shown, as with python
        _print_user_traceback(outcome.exception)
    if outcome.exit_message is not None:
        print(outcome.exit_message, file=sys.stderr)
    if outcome.signal is not None:
        PENDING_SIGNAL[0] = outcome.signal
    return outcome.code


class Outcome:
    """How the program ended: exit code, the exception to show last, a signal to die of."""

    def __init__(self) -> None:
        self.code = 0
        self.exception: BaseException | None = None
        self.signal: int | None = None
        self.exit_message: str | None = None  # sys.exit("text"): printed last, as python does
        self.finished = False


#: A signal the program died of (SIGINT): the console entry point re-raises it, like python.
PENDING_SIGNAL: list[int | None] = [None]


def _finish(tracker: Any, args: argparse.Namespace, outcome: Outcome) -> None:
    """Write the report files and the summary, once (also from a signal handler)."""
    if outcome.finished:
        return
    outcome.finished = True
    try:
        tracker.stop()
        report = tracker.report()
        written = write_outputs(report, args)
        failed = outcome.code != 0 or outcome.exception is not None
        if not args.quiet and (report.functions or not failed):
            from .._render.text import render_text

            sys.stderr.write(
                "\n"
                + render_text(report, include_internal=args.include_internal, max_lines=EXIT_LINES)
                + "\n"
            )
        if not args.quiet:
            for path in written:
                sys.stderr.write(f"jitlens: wrote {path}\n")
        sys.stderr.flush()
    except Exception as exc:  # never turn a program's result into a jitlens failure
        sys.stderr.write(f"jitlens: could not write the report ({type(exc).__name__}: {exc})\n")
        outcome.code = outcome.code or 3


def _run_program(args: argparse.Namespace, code_obj: Any, outcome: Outcome) -> None:
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    main_mod = sys.modules.get("__main__")
    try:
        if args.module is not None:
            sys.argv = [args.module, *args.target]
            if sys.path:
                sys.path[0] = ""
            else:
                sys.path.insert(0, "")
            _guarded(
                lambda: runpy.run_module(args.module, run_name="__main__", alter_sys=True),
                outcome,
            )
            return
        script = args.target[0]
        sys.argv = list(args.target)
        script_dir = os.path.dirname(os.path.abspath(script))
        if sys.path:
            sys.path[0] = script_dir
        else:
            sys.path.insert(0, script_dir)
        _guarded(lambda: _exec_script(os.path.abspath(script), code_obj), outcome)
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        if main_mod is not None:
            sys.modules["__main__"] = main_mod


def _exec_script(path: str, code: Any) -> None:
    mod = types.ModuleType("__main__")
    mod.__file__ = path
    mod.__builtins__ = __builtins__  # type: ignore[attr-defined]
    mod.__loader__ = None  # type: ignore[assignment]
    mod.__spec__ = None
    sys.modules["__main__"] = mod
    exec(code, mod.__dict__)


def _guarded(fn: Any, outcome: Outcome) -> None:
    """Run ``fn``; record its exit code, or the exception to show and the code python exits with."""
    try:
        fn()
    except SystemExit as exc:
        outcome.code = _exit_code(exc.code)
        if not isinstance(exc.code, int | None):
            outcome.exit_message = str(exc.code)
    except KeyboardInterrupt as exc:
        outcome.exception, outcome.code, outcome.signal = exc, 130, signal.SIGINT
    except BaseException as exc:
        outcome.exception, outcome.code = exc, 1


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback Python would print, without jitlens' own frames (and runpy's)."""
    here = _PACKAGE_DIR + os.sep

    def mine(frame: traceback.FrameSummary) -> bool:
        name = frame.filename
        return os.path.abspath(name).startswith(here) or name.endswith(
            ("runpy.py", "<frozen runpy>")
        )

    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    seen: set[int] = set()
    todo = [te]
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        t.stack = traceback.StackSummary.from_list([f for f in t.stack if not mine(f)])
        todo += [c for c in (t.__cause__, t.__context__) if c is not None]
    sys.stderr.write("".join(te.format()))
