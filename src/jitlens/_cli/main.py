"""The ``jitlens`` command: one entry point, ``main(argv) -> int``, dispatching to subcommands."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence

USAGE = """usage: jitlens COMMAND [ARGS...]

Why did my jitted function compile again?

commands:
  demo      a Flax CNN that compiles again per instance, explained (start here)
  run       run a Python program with every jitted function tracked
  report    show a saved JSON report (terminal, --html, --trace)
  merge     merge per-process reports; flag processes that compiled differently
  diff      compare two runs: what compiled again and why (exit 1 if it grew)
  check     grade a solution of the nnx.jit exercise (not your own program)
  audit     find statics that will recompile for every new model instance
  lint      find recompile traps in source code (no imports)
  selfcheck check that jitlens counts right on the installed JAX/Flax/Equinox

`jitlens COMMAND --help` describes each command."""

#: command -> (module, function taking argv and returning an exit code)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("jitlens._cli.main", "_demo_main"),
    "run": ("jitlens._cli.run", "main"),
    "report": ("jitlens._cli.main", "_report_main"),
    "merge": ("jitlens._merge.cli", "cli_main"),
    "diff": ("jitlens._diff.cli", "cli_main"),
    "check": ("jitlens._exercise.check", "cli_main"),
    "audit": ("jitlens._audit.audit", "cli_main"),
    "lint": ("jitlens._lint.lint", "cli_main"),
    "selfcheck": ("jitlens._cli.main", "_selfcheck_main"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``jitlens`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        from .._version import __version__

        print(f"jitlens {__version__}")
        return 0
    command = args[0]
    if command not in COMMANDS:
        print(
            f"jitlens: unknown command {command!r}; choose one of: {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    module, func = COMMANDS[command]
    try:
        code = getattr(importlib.import_module(module), func)(args[1:])
    except SystemExit as exc:  # argparse errors and --help
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return int(code or 0)


def _demo_main(argv: list[str]) -> int:
    import argparse

    argparse.ArgumentParser(
        prog="jitlens demo",
        description="Run the CNN of the Flax discussion 'When does recreating a model trigger "
        "nnx.jit recompilation?' (a functools.partial stored on the module, so every new "
        "instance compiles again), its fix, and the exercise's jit_forward under jitlens, and "
        "print counts and explanations.",
    ).parse_args(argv)
    import importlib.util

    if importlib.util.find_spec("flax") is None:
        print(
            "jitlens demo runs a Flax NNX model, and flax is not installed: "
            "pip install 'jitlens[flax]'",
            file=sys.stderr,
        )
        return 2
    from .._exercise.demo import run_demo

    return run_demo()


def _report_main(argv: list[str]) -> int:
    import argparse

    from .outputs import add_output_options

    p = argparse.ArgumentParser(
        prog="jitlens report",
        description="Show a saved jitlens JSON report, or the report of a journal a tracked "
        "program left (it ended without Python's exit: a SIGKILL, os._exit); with no REPORT, "
        "list the journals left.",
    )
    p.add_argument(
        "report",
        nargs="?",
        help="a report written by `jitlens run --json`, or a journal (`*.jitlens-journal`)",
    )
    add_output_options(p)
    p.add_argument(
        "--include-internal", action="store_true", help="also show JAX's and Flax's own helpers"
    )
    p.add_argument(
        "--width", type=int, default=None, help="terminal width (default: detected, 100 when piped)"
    )
    from .._render.color import add_color_option, want_color

    add_color_option(p)
    args = p.parse_args(argv)
    if args.report is None:
        from .._journals import list_journals

        return list_journals(sys.stdout)
    from .._core.report import load_report
    from .._errors import ReportError
    from .outputs import anchor_outputs, output_problem

    anchor_outputs(args)
    problem = output_problem(args, [(args.report, f"the report {args.report}")])
    if problem is not None:
        print(f"jitlens report: {problem}", file=sys.stderr)
        return 2
    from .._core.journal import JournalError, is_journal
    from .._journals import report_of_journal

    try:
        if is_journal(args.report):
            report = report_of_journal(args.report, args.include_internal)
        else:
            report = load_report(args.report)
    except (ReportError, JournalError) as exc:
        print(f"jitlens report: {exc}", file=sys.stderr)
        return 2
    from .._render.text import render_text
    from .outputs import write_outputs

    color = want_color(args.color)
    text = render_text(
        report, color=color, width=args.width, include_internal=args.include_internal
    )
    sys.stdout.write(text)  # it ends its own last line: print() left a blank one after it
    for path in write_outputs(report, args):
        print(f"jitlens: wrote {path}", file=sys.stderr)
    return 0


SELFCHECK_PASSED = "jitlens selfcheck: passed on {versions}; {kept}"
SELFCHECK_FAILED = "jitlens selfcheck: {n} problem(s) on {versions}:\n{lines}\n{kept}"
KEPT = "verdict kept in {path}"
#: The cache folder took no file (``JITLENS_CACHE_DIR`` a device, a read-only home).
NOT_KEPT = "verdict not kept ({why}): tracked runs will not read it"


def _selfcheck_main(argv: list[str]) -> int:
    import argparse

    argparse.ArgumentParser(
        prog="jitlens selfcheck",
        description="Run jitlens' canary (a jax.jit, an nnx.jit and an eqx.filter_jit function "
        "checked against counters in their bodies) on the installed versions, in a clean "
        "process (CPU, a temporary folder, no JAX debugging or dump settings), and keep its "
        "verdict: tracked runs with the same versions read it. Tracked programs never start "
        "it themselves. Exit 1 when jitlens cannot count right here.",
    ).parse_args(argv)
    import json
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "jitlens._track.canary"],
            cwd=folder,  # nothing in the user's folder shadows jax, numpy or the stdlib
            env=_canary_env(os.environ),
            capture_output=True,
            text=True,
        )
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
        problems, versions, path = result["problems"], result["versions"], result["path"]
        kept = KEPT.format(path=path) if path else NOT_KEPT.format(why=result.get("not_kept"))
    except Exception:
        print(f"jitlens selfcheck: the canary failed (exit {done.returncode})", file=sys.stderr)
        print(done.stderr[-2000:], file=sys.stderr)
        return 1
    shown = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v)
    if not problems:
        print(SELFCHECK_PASSED.format(versions=shown, kept=kept))
        return 0
    lines = "\n".join(f"  - {p}" for p in problems)
    print(SELFCHECK_FAILED.format(n=len(problems), versions=shown, lines=lines, kept=kept))
    return 1


#: Settings that would make the canary measure a debugging session, not jitlens.
_NOT_FOR_THE_CANARY = (
    "JAX_DISABLE_JIT",
    "JAX_DUMP_IR_TO",
    "JAX_LOG_COMPILES",
    "JAX_EXPLAIN_CACHE_MISSES",
    "JAX_TRACEBACK_FILTERING",
    "XLA_FLAGS",
)


def _canary_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in environ.items()
        if k not in _NOT_FOR_THE_CANARY
        and not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE", "JITLENS"))
    }
    env["JAX_PLATFORMS"] = "cpu"
    if environ.get("JITLENS_CACHE_DIR"):
        env["JITLENS_CACHE_DIR"] = environ["JITLENS_CACHE_DIR"]
    return env
