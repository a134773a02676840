"""``jitlens run --gather MERGED.json``: one merged report of a multi-host run, on process 0.

At the program's clean end every process first writes its own files (the
``--json`` template filled with its index, HTML, trace), then hands its report
to ``_track.gather.gather_reports`` (the job's coordination service, with a
deadline); process 0 writes every report that arrived and the merged view,
marked incomplete and naming the processes that did not answer (dead, hung),
and prints the merge summary. After a failure the process does not gather:
it writes its own files as without ``--gather``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the launcher of jitlens run parses with argparse only when given options
    import argparse

GATHER_HELP = (
    "multi-host runs: every process writes its own --json report, then sends it to process 0 "
    "through the jax.distributed coordination service; process 0 writes the merged view to "
    "PATH, marked incomplete when a process does not answer within JITLENS_GATHER_TIMEOUT "
    "seconds (default 60)"
)
NEEDS_INDEX = (
    "--gather writes every process's report on process 0: put {{process_index}} in the --json "
    "path, e.g. --json 'report-{{process_index}}.json' (got {path!r})"
)
NOT_GATHERED = "jitlens: --gather skipped ({why}); each process wrote its own report"
GATHER_FAILED = "jitlens: --gather failed ({error}); each process wrote its own report"
SHUT_DOWN = (
    "the program shut jax.distributed down itself before its end; merge the reports with "
    "jitlens merge"
)


def _connected() -> bool:
    """Is ``jax.distributed`` still up (the program may have called its ``shutdown()``)?"""
    from .. import _compat

    return _compat.distributed_state() is not None


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Anchor the merged view's path where the program starts (it may ``os.chdir``); refuse
    a --json path without ``{process_index}``, which would write N reports to one file."""
    if not args.gather:
        return
    start = getattr(args, "launch_cwd", None)
    path = os.path.expanduser(args.gather)
    if start is None and not os.path.isabs(path):
        from .._track.process import NO_WORKING_DIR

        parser.error("--gather " + NO_WORKING_DIR.format(path=args.gather))
    args.gather = os.path.join(start or os.sep, path)  # no template: as given
    if args.json and "{process_index" not in args.json:
        parser.error(NEEDS_INDEX.format(path=args.json))


def write_gathered(
    report: Any,
    args: argparse.Namespace,
    clean: bool,
    write_outputs: Callable[[Any, argparse.Namespace], list[str]],
    shown: Callable[[str, Any], str],
) -> list[str]:
    """Write this process's files, then gather to process 0 and write the merged view there.

    Each process's own report comes first: a peer that died or hangs costs the
    merged view its report (named as missing), never this process's own.
    Process 0 waits at most ``JITLENS_GATHER_TIMEOUT`` seconds for the others
    (``_track.gather``). ``write_outputs`` and ``shown`` are ``jitlens run``'s
    own (how it writes one process's files, and names them).
    """
    import dataclasses

    from .._core.files import write_atomic
    from .._track import sink  # jitlens' own terminal: the program may have replaced stderr
    from .._track.gather import gather_reports
    from .._track.process import ProcessInfo, expand_path_template

    written = write_outputs(report, args)  # this process's JSON, HTML and trace, first
    if not clean or report.process_count <= 1 or not _connected():
        why = (
            "the program failed"
            if not clean
            else "a single-process run"
            if report.process_count <= 1
            else SHUT_DOWN
        )
        sink.write(NOT_GATHERED.format(why=why) + "\n")
        return written
    try:
        gathered = gather_reports(report)
    except Exception as exc:  # JAX's error: this process's report is written already
        sink.write(GATHER_FAILED.format(error=f"{type(exc).__name__}: {exc}") + "\n")
        return written
    if report.process_index != 0:
        return written
    from .._merge.merge import merge_reports
    from .._merge.render import render_merged_text

    sources = []
    for r in gathered.reports:
        info = ProcessInfo(r.process_index, r.process_count, r.host)
        path = expand_path_template(args.json, info) if args.json else ""
        if path and r is not report:
            write_atomic(path, r.to_json())
            written.append(shown(path, args))
        sources.append(path or f"process {r.process_index}")
    merged = merge_reports(
        gathered.reports, sources=sources, include_internal=args.include_internal
    )
    merged = dataclasses.replace(merged, missing_why=gathered.problems)
    write_atomic(args.gather, merged.to_json() + "\n")
    written.append(shown(args.gather, args))
    if not args.quiet:
        sink.write(render_merged_text(merged, color=False))
    return written
