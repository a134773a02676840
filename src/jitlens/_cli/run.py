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
import sys
import traceback
import types
from typing import Any

#: jitlens' own directory (its frames are hidden from the program's tracebacks).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USAGE = (
    "jitlens run [--json PATH] [--html PATH] [--trace PATH] [--include-internal] [--quiet] "
    "(SCRIPT.py | -m MODULE) [ARGS...]"
)
NOT_FOUND = "jitlens run: cannot open {path!r}: {why}"


#: The exit summary stays under 60 lines for any program (all of it: --json / --html).
EXIT_LINES = 56


def build_parser(prog: str = "jitlens run") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        usage=USAGE,
        description="Run a Python program with every jitted function tracked; print why each retrace happened.",
    )
    add_output_options(p)
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
        help="run a library module as a script, like python -m",
    )
    p.add_argument(
        "target", nargs=argparse.REMAINDER, help="SCRIPT.py [ARGS...] (or ARGS... after -m MODULE)"
    )
    return p


def add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json",
        metavar="PATH",
        help="write the JSON report; {process_index}, {host}, {pid} are filled in",
    )
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    p.add_argument("--trace", metavar="PATH", help="write a Chrome/Perfetto trace-event JSON")


def write_outputs(report: Any, args: argparse.Namespace) -> list[str]:
    """Write the report files asked for; returns the paths written."""
    from .._core.report import write_atomic
    from .._track.process import expand_path_template, process_info

    info = process_info()
    written = []
    if args.json:
        path = expand_path_template(args.json, info)
        write_atomic(path, report.to_json())
        written.append(path)
    if args.html:
        from .._render.html import render_html

        path = expand_path_template(args.html, info)
        write_atomic(path, render_html(report))
        written.append(path)
    if args.trace:
        from .._render.perfetto import write_trace

        path = expand_path_template(args.trace, info)
        write_trace(report, path)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.module is None and not args.target:
        p.error("give a SCRIPT.py to run, or -m MODULE")
    if args.module is None and args.target[0] == "-m":
        if len(args.target) < 2:
            p.error("-m needs a MODULE")
        args.module, args.target = args.target[1], args.target[2:]
    if args.module is None:
        script = args.target[0]
        if not os.path.exists(script):
            print(NOT_FOUND.format(path=script, why="no such file"), file=sys.stderr)
            return 2
    from .._track.tracker import Tracker

    tracker = Tracker(include_internal=args.include_internal, timeline=True)
    code = 0
    tracker.start()
    try:
        code = _run_program(args)
    finally:
        tracker.stop()
        code = _finish(tracker, args, code)
    return code


def _finish(tracker: Any, args: argparse.Namespace, code: int) -> int:
    try:
        report = tracker.report()
        written = write_outputs(report, args)
        if not args.quiet:
            from .._render.text import render_text

            sys.stderr.write(
                "\n"
                + render_text(report, include_internal=args.include_internal, max_lines=EXIT_LINES)
                + "\n"
            )
            for path in written:
                sys.stderr.write(f"jitlens: wrote {path}\n")
    except Exception as exc:  # never turn a program's result into a jitlens failure
        sys.stderr.write(f"jitlens: could not write the report ({type(exc).__name__}: {exc})\n")
        return code or 3
    return code


def _run_program(args: argparse.Namespace) -> int:
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    main_mod = sys.modules.get("__main__")
    try:
        if args.module is not None:
            sys.argv = [args.module, *args.target]
            if sys.path:
                sys.path[0] = ""
            else:
                sys.path.insert(0, "")
            return _guarded(
                lambda: runpy.run_module(args.module, run_name="__main__", alter_sys=True), None
            )
        script = args.target[0]
        sys.argv = list(args.target)
        script_dir = os.path.dirname(os.path.abspath(script))
        if sys.path:
            sys.path[0] = script_dir
        else:
            sys.path.insert(0, script_dir)
        return _guarded(lambda: _exec_script(os.path.abspath(script)), os.path.abspath(script))
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        if main_mod is not None:
            sys.modules["__main__"] = main_mod


def _exec_script(path: str) -> None:
    with open(path, "rb") as fh:
        source = fh.read()
    code = compile(source, path, "exec", dont_inherit=True)
    mod = types.ModuleType("__main__")
    mod.__file__ = path
    mod.__builtins__ = __builtins__  # type: ignore[attr-defined]
    mod.__loader__ = None  # type: ignore[assignment]
    mod.__spec__ = None
    sys.modules["__main__"] = mod
    exec(code, mod.__dict__)


def _guarded(fn: Any, script: str | None) -> int:
    """Run ``fn`` turning SystemExit / exceptions into exit codes, like the interpreter."""
    try:
        fn()
    except SystemExit as exc:
        return _exit_code(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException as exc:
        _print_user_traceback(exc)
        return 1
    return 0


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


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
