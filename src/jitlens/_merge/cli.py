"""``jitlens merge``: the command line that merges per-process reports and flags divergence."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._core.files import write_atomic
from .._core.report import load_report
from .._errors import ReportError
from .._render.color import add_color_option, want_color

WROTE = "jitlens: wrote {what} to {path}"
BAD_INPUT = "jitlens merge: {error}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jitlens merge",
        description=(
            "Combine the reports of the processes of one multi-host run and flag the functions "
            "they traced, compiled or called differently (the usual cause of a hang). "
            "Exit status: 0 consistent, 1 divergence found or a process's report missing, "
            "2 bad input."
        ),
    )
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="per-process JSON reports")
    parser.add_argument("--json", metavar="OUT", help="write the merged view as JSON")
    parser.add_argument("--html", metavar="OUT", help="write the merged view as one HTML file")
    parser.add_argument(
        "--include-internal", action="store_true", help="also compare JAX's and Flax's own helpers"
    )
    parser.add_argument(
        "--width", type=int, help="terminal width (default: detected, 100 when piped)"
    )
    add_color_option(parser)
    return parser


def _output_problem(args: argparse.Namespace) -> str | None:
    """Why --json / --html cannot be written (an input, each other, no folder...), or None."""
    import os

    from .._render.outputs import Output, OutputError, check_outputs, is_url

    outputs = [
        Output(kind, path, path if is_url(path) else os.path.abspath(path))
        for kind, path in (("json", args.json), ("html", args.html))
        if path
    ]
    try:
        check_outputs(outputs, [(p, f"the report {p}") for p in args.reports])
    except OutputError as exc:
        return str(exc)
    return None


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``jitlens merge REPORT... [--json OUT] [--html OUT]``; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    # Imported here: `jitlens merge --help` answers without loading the merge machinery.
    from .merge import merge_reports
    from .page import render_merged_html
    from .render import render_merged_text

    problem = _output_problem(args)
    if problem is not None:
        print(BAD_INPUT.format(error=problem), file=sys.stderr)
        return 2
    try:
        reports = [load_report(path) for path in args.reports]
        merged = merge_reports(
            reports, sources=list(args.reports), include_internal=args.include_internal
        )
    except ReportError as exc:
        print(BAD_INPUT.format(error=exc), file=sys.stderr)
        return 2
    sys.stdout.write(render_merged_text(merged, color=want_color(args.color), width=args.width))
    try:
        if args.json:
            write_atomic(args.json, merged.to_json() + "\n")
            print(WROTE.format(what="JSON", path=args.json), file=sys.stderr)
        if args.html:
            write_atomic(args.html, render_merged_html(merged))
            print(WROTE.format(what="HTML", path=args.html), file=sys.stderr)
    except OSError as exc:
        print(BAD_INPUT.format(error=f"cannot write: {exc}"), file=sys.stderr)
        return 2
    return 0 if merged.consistent else 1
