"""Every process's report on process 0, through the job's own coordination service, with a deadline.

A multi-host run writes one report per process (``--json 'report-{process_index}.json'``),
which someone then copies off N machines to ``jitlens merge`` them. With
gathering on (``jitlens run --gather``), each process publishes its report in
the key-value store of the ``jax.distributed`` coordination service the job
already runs (JAX's own client: ``key_value_set_bytes``, in chunks), and
process 0 reads them with ``blocking_key_value_get`` and a deadline. No
transport of jitlens' own, and no collective: a collective (``process_allgather``)
waits for every process, and a peer that died or hangs leaves it waiting or
failing, which is the moment a user most needs the reports. So process 0 waits
at most ``JITLENS_GATHER_TIMEOUT`` seconds (default 60) for the others and
names the ones that did not answer; the whole exchange runs in a daemon thread
joined with that deadline, so nothing JAX does can hold the program's exit.

Without a coordination-service client (a job not started by
``jax.distributed.initialize``), ``multihost_utils.process_allgather`` is the
fallback, bounded the same way.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from .._core.report import Report, report_from_dict

#: The store's keys: ``jitlens/gather/<index>`` holds the number of chunks, written last.
KEY = "jitlens/gather/{index}"
CHUNK_KEY = "jitlens/gather/{index}/{chunk}"
#: Bytes per stored value (gRPC's default message limit is 4 MiB).
CHUNK_BYTES = 1 << 20
#: Seconds added to the deadline for the thread itself (reading the chunks, parsing).
SLACK_SECONDS = 10.0

MISSING = "no report from process {index} within {seconds:g} s ({why})"
NOT_PUBLISHED = "did not publish its report"


@dataclasses.dataclass(frozen=True)
class Gathered:
    """What process 0 received: the reports, in process order, and who did not answer."""

    reports: tuple[Report, ...]
    #: Process indices whose report did not arrive (dead, hung, or too slow).
    missing: tuple[int, ...] = ()
    #: One line per missing process: why (a timeout, JAX's error).
    problems: tuple[str, ...] = ()


def gather_reports(report: Report, timeout: float | None = None) -> Gathered:
    """Every process's report on process 0, waiting at most ``timeout`` seconds for the others.

    Every process calls it once at its end; only process 0 waits (the others
    publish their report and return at once, with only their own).

    Args:
        report: This process's report.
        timeout: Seconds process 0 waits for the others (default: the
            ``gather_timeout`` setting, ``JITLENS_GATHER_TIMEOUT``, 60).

    Returns:
        A :class:`Gathered`: ``reports[i].process_index`` ascending; on process 0
        every report that arrived in time, and the indices of those that did not.

    Example:
        >>> from jitlens._core.report import Report
        >>> r = Report(2, "0", "0", "0", "cpu", 0, 1, "h", 0.0, 1.0, ())
        >>> gather_reports(r).reports == (r,)
        True

    See also:
        ``jitlens merge`` reads per-process files that were copied together.
    """
    if report.process_count <= 1:
        return Gathered((report,))
    if timeout is None:
        from .. import _config

        timeout = float(_config.get("gather_timeout"))
    from .. import _compat

    client = _compat.distributed_client()

    def exchange() -> Gathered:
        if client is not None:
            return _through_store(client, report, float(timeout))
        return _through_allgather(report)

    others = tuple(i for i in range(report.process_count) if i != report.process_index)
    done = _bounded(exchange, timeout + SLACK_SECONDS)
    if done is None:  # JAX held the thread past the deadline (a collective with a dead peer)
        if report.process_index != 0:
            return Gathered((report,))
        why = "JAX's exchange of the reports did not return; reports that did arrive are not read"
        return Gathered(
            (report,),
            others,
            tuple(
                MISSING.format(index=i, seconds=timeout + SLACK_SECONDS, why=why) for i in others
            ),
        )
    return done


def _bounded(fn: Callable[[], Gathered], seconds: float) -> Gathered | None:
    """``fn()`` in a daemon thread, abandoned after ``seconds`` (``None``); its error re-raised."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="jitlens-gather", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _through_store(client: Any, report: Report, timeout: float) -> Gathered:
    data = report.to_json(indent=None).encode("utf-8")
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    me = report.process_index
    for k, chunk in enumerate(chunks):
        client.key_value_set_bytes(CHUNK_KEY.format(index=me, chunk=k), chunk, True)
    client.key_value_set(KEY.format(index=me), str(len(chunks)), True)
    if me != 0:
        return Gathered((report,))
    deadline = time.monotonic() + timeout
    reports, missing, problems = [report], [], []
    for i in range(report.process_count):
        if i == me:
            continue
        try:
            reports.append(_read(client, i, deadline))
        except Exception as exc:  # a timeout or JAX's error about the dead peer
            missing.append(i)
            why = " ".join(str(exc).split())[:200] or type(exc).__name__
            if "DEADLINE_EXCEEDED" in why or time.monotonic() >= deadline:
                why = NOT_PUBLISHED
            problems.append(MISSING.format(index=i, seconds=timeout, why=why))
    reports.sort(key=lambda r: r.process_index)
    return Gathered(tuple(reports), tuple(missing), tuple(problems))


def _read(client: Any, index: int, deadline: float) -> Report:
    def left() -> int:
        return max(1, int((deadline - time.monotonic()) * 1000))

    count = int(client.blocking_key_value_get(KEY.format(index=index), left()))
    data = b"".join(
        bytes(client.blocking_key_value_get_bytes(CHUNK_KEY.format(index=index, chunk=k), left()))
        for k in range(count)
    )
    return report_from_dict(json.loads(data.decode("utf-8")))


def _through_allgather(report: Report) -> Gathered:
    """A collective over the job's devices: every process gets every report."""
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
    return Gathered(tuple(sorted(reports, key=lambda r: r.process_index)))
