"""The summary's title and legend: what the run covered and what the table's columns mean.

Shared by every text view of a report (``jitlens run``'s summary, ``jitlens report``,
``print(report)``); the rows and explanations below it are ``text``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.fold import count_functions
from .._core.report import total_traces

if TYPE_CHECKING:
    from .._core.report import Report

#: "lost to recompiles": a retrace's seconds and those of a compile from the cached trace (a new
#: sharding under ``nnx.jit``): every compile again, whether or not Python traced again.
TITLE = "jitlens: {functions}, {traces}, {lost:.2f} s lost to recompiles{hidden}"
HIDDEN = " ({n} internal hidden)"
CAPTION = (
    "{backend} on {host}, process {index}/{count}, {duration:.1f} s tracked{not_included}\n"
    "hits = cache hits; compile s = lowering + compiling; lost s = seconds spent compiling again"
)
#: What ``Report.duration_seconds`` leaves out: it runs from the start of tracking, which
#: under ``jitlens run``, ``JITLENS=1`` and the pytest plugin comes after Python and jax
#: have started (a shell's ``time`` counts those too).
NOT_INCLUDED = " (Python and jax start-up not included)"
#: A second run's question, "did JAX's persistent compilation cache serve it?", answered
#: where the figures are: such a load is neither a compile nor a cache hit of the table.
PERSISTENT_HITS = "persistent compilation cache: {programs} loaded instead of compiled ({names})"
#: At most this many function names in ``PERSISTENT_HITS``, then ``+N more``.
PERSISTENT_NAMES = 3


def plural(n: int, noun: str) -> str:
    """``1 jitted function``, ``2 jitted functions``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def heading(report: Report, include_internal: bool) -> tuple[str, str]:
    """The table's title and its legend (what the run covered, what the columns mean)."""
    shown = report.functions if include_internal else report.user_functions()
    hidden = len(report.functions) - len(shown)  # before folding and the row limit
    traces = total_traces(shown)
    title = TITLE.format(
        functions=plural(count_functions(shown), "jitted function"),
        traces=f"{traces} trace{'' if traces == '1' else 's'}",
        lost=sum(f.seconds_lost for f in shown),
        hidden=HIDDEN.format(n=hidden) if hidden else "",
    )
    caption = CAPTION.format(
        backend=report.backend,
        host=report.host,
        index=report.process_index,
        count=report.process_count,
        duration=report.duration_seconds,
        not_included=NOT_INCLUDED,
    )
    read = [f for f in shown if f.persistent_cache_hits]
    if read:
        names = ", ".join(f.qualname for f in read[:PERSISTENT_NAMES])
        more = len(read) - PERSISTENT_NAMES
        caption += "\n" + PERSISTENT_HITS.format(
            programs=plural(sum(f.persistent_cache_hits for f in read), "program"),
            names=names + (f", +{more} more" if more > 0 else ""),
        )
    return title, caption
