"""Every process's report on every process, through JAX's own ``multihost_utils``.

A multi-host run writes one report per process (``--json 'report-{process_index}.json'``),
which someone then copies off N machines to ``jitlens merge`` them. With
gathering on (``jitlens run --gather``), each process sends its report to the
others over the collectives the job already has (``process_allgather``, two
calls: the lengths, then the bytes padded to the longest), so process 0 can
write all of them and the merged view at once. No transport of jitlens' own:
the job's coordinator, network and timeouts apply.

Collective: every process must call :func:`gather_reports`, once, at the same
point (``jitlens run`` does at the program's normal end). A process that
died, or ended on an exception, never arrives: ``jitlens run`` gathers only
after a clean exit and writes its own file otherwise.
"""

from __future__ import annotations

import json

from .._core.report import Report, report_from_dict


def gather_reports(report: Report) -> tuple[Report, ...]:
    """All processes' reports, in process order, on every process (a collective call).

    Args:
        report: This process's report.

    Returns:
        One report per process, ``result[i].process_index == i``; just
        ``(report,)`` in a single-process run.

    Example:
        >>> from jitlens._core.report import Report
        >>> r = Report(2, "0", "0", "0", "cpu", 0, 1, "h", 0.0, 1.0, ())
        >>> gather_reports(r) == (r,)
        True

    See also:
        ``jitlens merge`` reads per-process files that were copied together.
    """
    if report.process_count <= 1:
        return (report,)
    import numpy as np
    from jax.experimental import multihost_utils

    data = np.frombuffer(report.to_json(indent=None).encode("utf-8"), dtype=np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.array([data.size], np.int32)))
    sizes = sizes.reshape(-1)
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[: data.size] = data
    everything = np.asarray(multihost_utils.process_allgather(padded))
    reports = [
        report_from_dict(json.loads(bytes(everything[i, : int(n)]).decode("utf-8")))
        for i, n in enumerate(sizes)
    ]
    return tuple(sorted(reports, key=lambda r: r.process_index))
