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

from .._render.color import CHOICES as COLOR_CHOICES
from .._render.color import add_color_option, want_color
from . import live_run  # issue 24: --fail-on-retrace, --max-traces, retraces live on stderr
from .gather import GATHER_HELP, check_options, write_gathered  # issue 23
from .outputs import add_output_options as add_output_options
from .outputs import anchor_outputs as anchor_outputs
from .outputs import output_problem, shown
from .outputs import write_outputs as write_outputs

#: jitlens' own directory (its frames are hidden from the program's tracebacks).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USAGE = (
    "jitlens run [--json PATH] [--html PATH] [--trace PATH] [--gather PATH] [--include-internal] "
    f"[--quiet] [--color {{auto,always,never}}] {live_run.USAGE} "  # issue 24
    "(SCRIPT.py | -m MODULE) [ARGS...]"
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
    add_color_option(p)
    p.add_argument("--gather", metavar="PATH", help=GATHER_HELP)  # issue 23
    p.add_argument(
        "-m",
        dest="module",
        metavar="MODULE",
        help="run a library module as a script, like python -m (the rest goes to the module)",
    )
    return p


#: jitlens run's options that take a value (``--json PATH`` or ``--json=PATH``).
_VALUE_OPTIONS = ("--json", "--html", "--trace", "--gather", *live_run.VALUE_OPTIONS)


def split_argv(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """``argv`` -> (jitlens' options, ``-m`` module or ``None``, the program's argv).

    Like ``python``: the first word that is not one of jitlens' options is the
    script, and it and everything after it are the program's ``sys.argv``;
    ``-m MODULE`` ends jitlens' options the same way. A ``--`` before the
    script (or ``-m``) only separates; one after the script is the program's
    and stays in its ``sys.argv``, as python keeps it.
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest = argv[i + 1 :]
            if rest and rest[0].startswith("-m"):
                return _module_split(argv[:i], rest)
            return argv[:i], None, rest
        if word.startswith("-m") and not word.startswith("--"):
            return _module_split(argv[:i], argv[i:])
        if word in _VALUE_OPTIONS or (
            word == "--color" and i + 1 < len(argv) and argv[i + 1] in COLOR_CHOICES
        ):
            i += 2
            continue
        if not word.startswith("-") or word == "-":
            return argv[:i], None, argv[i:]
        i += 1
    return argv, None, []


def _module_split(own: list[str], rest: list[str]) -> tuple[list[str], str | None, list[str]]:
    """``rest`` starts with ``-m MODULE`` or ``-mMODULE``."""
    if rest[0] != "-m":
        return own, rest[0][2:], rest[1:]
    if len(rest) < 2:
        return [*own, "-m"], None, []  # argparse says "-m: expected one argument"
    return own, rest[1], rest[2:]


def main(argv: list[str]) -> int:
    """``jitlens run``: run the program tracked; the summary first, then its traceback, as python."""
    own, module, program = split_argv(list(argv))
    p = build_parser()
    args = p.parse_args(own)
    args.module = module if module is not None else args.module
    args.target = program
    args.own_process = _owns_the_process()
    anchor_outputs(args)
    check_options(p, args)  # issue 23: --gather
    if args.module is None and not args.target:
        p.error("give a SCRIPT.py to run, or -m MODULE")
    script = args.target[0] if args.module is None else None
    problem = output_problem(args, [(script, f"the script {script}")] if script else [])
    if problem is not None:  # before the program runs: a typo must not cost the run
        print(f"jitlens run: {problem}", file=sys.stderr)
        return 2
    code_obj = None
    if script is not None and not _is_path_target(script):
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
    from .signals import Finish, finish_on_signals

    tracker = Tracker(include_internal=args.include_internal, timeline=True)
    outcome = Outcome()
    finish = Finish(lambda: _finish(tracker, args, outcome))
    tracker.start()
    live = live_run.LiveRun(args)  # issue 24
    with finish_on_signals(finish):
        try:
            if live.start(outcome):  # issue 24 (False: a bad setting or a budget that cannot count)
                _run_program(args, code_obj, outcome)
        finally:
            live.stop(outcome)  # issue 24
            finish()
    if outcome.exception is not None:  # the traceback is the last thing shown, as with python
        _print_user_traceback(outcome.exception)
    if outcome.exit_message is not None:
        _say(outcome.exit_message + "\n")
    if outcome.signal is not None:
        PENDING_SIGNAL[0] = outcome.signal
    return outcome.code


def _is_path_target(target: str) -> bool:
    """A folder with ``__main__.py`` or a zip application: python runs those too."""
    import zipfile

    return os.path.isdir(target) or (os.path.isfile(target) and zipfile.is_zipfile(target))


def _owns_the_process() -> bool:
    """``jitlens run`` is the process (not ``main(["run", ...])`` inside pytest or a notebook)."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name in ("jitlens", "__main__.py", "-c") and sys.argv[1:2] == ["run"]


def _wait_for_the_end(keep_jax_up: bool = False) -> None:
    """What python does after the main module: join non-daemon threads, then run atexit hooks.

    Done before the report is taken, so calls made there are in it. ``keep_jax_up``
    (``--gather``): JAX's own hook, which shuts ``jax.distributed`` down, is kept for
    the real exit, after the reports are gathered over the job's collectives.
    """
    import atexit
    import threading

    from .._track.process import process_info

    me = threading.current_thread()
    while True:
        alive = [t for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]
        if not alive:
            break
        for t in alive:
            t.join()
    process_info()  # seen now: JAX's own atexit hook shuts jax.distributed down
    hook = None
    if keep_jax_up and "jax" in sys.modules:
        from .. import _compat

        hook = _compat.exit_hook()
        if hook is not None:
            atexit.unregister(hook)
    atexit._run_exitfuncs()
    if hook is not None:
        atexit.register(hook)


def _say(text: str) -> None:
    """Write to stderr; a program that closed it keeps its exit status."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass


class Outcome:
    """How the program ended: exit code, the exception to show last, a signal to die of."""

    def __init__(self) -> None:
        self.code = 0
        self.exception: BaseException | None = None
        self.signal: int | None = None
        self.exit_message: str | None = None  # sys.exit("text"): printed last, as python does


#: A signal the program died of (SIGINT): the console entry point re-raises it, like python.
PENDING_SIGNAL: list[int | None] = [None]


def _finish(tracker: Any, args: argparse.Namespace, outcome: Outcome) -> None:
    """Write the report files and the summary (once: see ``signals.Finish``)."""
    try:
        tracker.stop()
        report = tracker.report()
    except Exception as exc:  # never turn a program's result into a jitlens failure
        _say(f"jitlens: could not take the report ({type(exc).__name__}: {exc})\n")
        return
    failed = outcome.code != 0 or outcome.exception is not None
    if getattr(args, "gather", None):  # issue 23: one merged report on process 0
        clean = not failed and outcome.signal is None
        written = write_gathered(report, args, clean, write_outputs, shown)
    else:
        written = write_outputs(report, args)
    if args.quiet:
        return
    try:
        if report.functions or not failed:
            from .._render.text import render_text

            text = render_text(
                report,
                color=want_color(args.color, sys.stderr),
                include_internal=args.include_internal,
                max_lines=EXIT_LINES,
            )
            _say("\n" + text + "\n")
    except Exception as exc:
        _say(f"jitlens: could not print the summary ({type(exc).__name__}: {exc})\n")
    _say("".join(f"jitlens: wrote {path}\n" for path in written))


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
        else:
            script = args.target[0]
            sys.argv = list(args.target)
            if code_obj is None:  # a folder or a zip: runpy puts it on sys.path, as python does
                _guarded(lambda: runpy.run_path(script, run_name="__main__"), outcome)
            else:
                script_dir = os.path.dirname(os.path.abspath(script))
                if sys.path:
                    sys.path[0] = script_dir
                else:
                    sys.path.insert(0, script_dir)
                _guarded(lambda: _exec_script(os.path.abspath(script), code_obj), outcome)
        if args.own_process:
            keep_jax_up = bool(getattr(args, "gather", None))  # issue 23: a collective follows
            _guarded(lambda: _wait_for_the_end(keep_jax_up), outcome)
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
