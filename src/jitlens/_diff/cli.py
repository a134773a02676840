"""``jitlens diff BEFORE.json AFTER.json``: the command line; exit 1 when compiles were added."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._core.files import write_atomic
from .._core.report import load_report
from .._errors import ReportError

WROTE = "jitlens: wrote JSON to {path}"
BAD_INPUT = "jitlens diff: {error}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jitlens diff",
        description=(
            "Compare two runs' reports of one program: per function, what was compiled again, "
            "loaded from the persistent cache or newly traced, and why (argument paths, XLA "
            "flags, versions, config, devices). Exit status: 0 nothing got worse, 1 a function "
            "gained traces or compiles, 2 bad input."
        ),
    )
    parser.add_argument("before", metavar="BEFORE", help="the baseline run's JSON report")
    parser.add_argument("after", metavar="AFTER", help="the run to judge")
    parser.add_argument("--json", metavar="OUT", help="write the comparison as JSON")
    parser.add_argument(
        "--include-internal", action="store_true", help="also compare JAX's and Flax's helpers"
    )
    parser.add_argument(
        "--width", type=int, help="terminal width (default: detected, 100 when piped)"
    )
    return parser


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``jitlens diff BEFORE AFTER [--json OUT]``; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    from .._render.outputs import output_problem
    from .._render.text import terminal_width
    from .diff import diff_reports
    from .render import render_diff_text

    inputs = [(path, f"the report {path}") for path in (args.before, args.after)]
    problem = output_problem(args.json, inputs)
    if problem is not None:  # checked before reading: a baseline is never overwritten
        print(BAD_INPUT.format(error=problem), file=sys.stderr)
        return 2
    try:
        before, after = load_report(args.before), load_report(args.after)
    except ReportError as exc:
        print(BAD_INPUT.format(error=exc), file=sys.stderr)
        return 2
    result = diff_reports(
        before, after, sources=[args.before, args.after], include_internal=args.include_internal
    )
    sys.stdout.write(render_diff_text(result, width=terminal_width(args.width)))
    if args.json:
        try:
            write_atomic(args.json, result.to_json() + "\n")
        except OSError as exc:
            print(BAD_INPUT.format(error=f"cannot write: {exc}"), file=sys.stderr)
            return 2
        print(WROTE.format(path=args.json), file=sys.stderr)
    return 1 if result.worse else 0
