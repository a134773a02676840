"""``jitlens run --gather MERGED.json``: one merged report of a multi-host run, on process 0.

At the program's clean end every process hands its report to
``_track.gather.gather_reports`` (JAX's ``multihost_utils``, a collective);
process 0 writes each process's report (the ``--json`` template filled with
that process's index) and the merged view, and prints the merge summary. The
other processes write their HTML/trace files only. After a failure the
processes do not gather (one that died would never arrive): each writes its
own files as without ``--gather``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

GATHER_HELP = (
    "multi-host runs: gather every process's report to process 0 through "
    "jax.experimental.multihost_utils; process 0 writes the merged view to PATH (and each "
    "process's --json report)"
)
NEEDS_INDEX = (
    "--gather writes every process's report on process 0: put {{process_index}} in the --json "
    "path, e.g. --json 'report-{{process_index}}.json' (got {path!r})"
)
NOT_GATHERED = "jitlens: --gather skipped ({why}); each process wrote its own report"


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Anchor the merged view's path where the program starts (it may ``os.chdir``); refuse
    a --json path without ``{process_index}``, which would write N reports to one file."""
    if not args.gather:
        return
    start = getattr(args, "launch_cwd", None) or os.getcwd()
    args.gather = os.path.join(start, os.path.expanduser(args.gather))  # no template: as given
    if args.json and "{process_index" not in args.json:
        parser.error(NEEDS_INDEX.format(path=args.json))


def write_gathered(
    report: Any,
    args: argparse.Namespace,
    clean: bool,
    write_outputs: Callable[[Any, argparse.Namespace], list[str]],
    shown: Callable[[str, Any], str],
) -> list[str]:
    """Gather (a collective call on every process) and write; returns the paths written.

    ``write_outputs`` and ``shown`` are ``jitlens run``'s own (how it writes
    one process's files, and names them).
    """
    from .._core.report import write_atomic
    from .._track.gather import gather_reports
    from .._track.process import ProcessInfo, expand_path_template

    if not clean or report.process_count <= 1:
        why = "the program failed" if not clean else "a single-process run"
        print(NOT_GATHERED.format(why=why), file=sys.stderr)
        return write_outputs(report, args)
    reports = gather_reports(report)
    json_path, args.json = args.json, None
    written = write_outputs(report, args)  # this process's HTML / trace
    args.json = json_path
    if report.process_index != 0:
        return written
    from .._merge.merge import merge_reports
    from .._merge.render import render_merged_text

    sources = []
    for r in reports:
        info = ProcessInfo(r.process_index, r.process_count, r.host)
        path = expand_path_template(json_path, info) if json_path else ""
        if path:
            write_atomic(path, r.to_json())
            written.append(shown(path, args))
        sources.append(path or f"process {r.process_index}")
    merged = merge_reports(reports, sources=sources, include_internal=args.include_internal)
    write_atomic(args.gather, merged.to_json() + "\n")
    written.append(shown(args.gather, args))
    if not args.quiet:
        sys.stderr.write(render_merged_text(merged, color=False))
    return written
