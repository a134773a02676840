"""Hand-built per-process reports for the merge tests: realistic data, no JAX needed."""

from __future__ import annotations

from collections.abc import Sequence

from jitlens import SCHEMA_VERSION, Event, FunctionReport, Reason, Report

#: A repr that would run as script if the HTML renderer forgot to escape it.
XSS = "<script>alert(1)</script>"


def shape_reason(before: str = "8", after: str = "12") -> Reason:
    return Reason(
        kind="shape",
        argument="batch",
        path="batch.shape[0]",
        before=before,
        after=after,
        message="a new shape compiles a new program.",
        fix="pad the batch to a fixed size (drop_remainder=True).",
    )


def event(
    call_index: int | None,
    signature: str,
    kind: str = "",
    reasons: Sequence[Reason] = (),
    time: float = 0.0,
    entry: int = 0,
) -> Event:
    return Event(
        call_index=call_index,
        kind=kind or ("trace" if call_index in (0, None) else "retrace"),
        call_site="train.py:40",
        signature=signature,
        reasons=tuple(reasons),
        time=time,
        trace_seconds=0.01,
        compile_seconds=0.02,
        compiled=True,
        entry=entry,
    )


def function(
    qualname: str,
    events: Sequence[Event],
    calls: int | None = 3,
    defined_at: str = "train.py:12",
    call_entries: Sequence[int] = (),
    internal: bool = False,
    fid: int = 1,
) -> FunctionReport:
    n = len(events)
    return FunctionReport(
        name=qualname.rsplit(".", 1)[-1],
        qualname=qualname,
        kind="jax.jit",
        defined_at=defined_at,
        first_call_site="train.py:40",
        calls=calls,
        traces=n,
        compiles=n,
        cache_hits=None if calls is None else calls - n,
        persistent_cache_hits=0,
        trace_seconds=0.01 * n,
        lower_seconds=0.0,
        compile_seconds=0.02 * n,
        events=tuple(events),
        internal=internal,
        id=fid,
        call_times=tuple(0.1 * (i + 1) for i in range(len(call_entries))),
        call_entries=tuple(call_entries),
    )


def report(
    process_index: int,
    functions: Sequence[FunctionReport],
    process_count: int = 2,
    host: str = "",
    started_at: float = 1_700_000_000.0,
) -> Report:
    return Report(
        schema_version=SCHEMA_VERSION,
        jitlens_version="0.1.0",
        jax_version="0.10.2",
        flax_version="0.12.8",
        backend="cpu",
        process_index=process_index,
        process_count=process_count,
        host=host or f"host-{process_index}",
        started_at=started_at,
        duration_seconds=2.0,
        functions=tuple(functions),
    )


def step(*shapes: str, calls: int = 3, entries: Sequence[int] = ()) -> FunctionReport:
    """``train_step`` traced once per shape in ``shapes``, at calls 0, 1, 2, ..."""
    events = [event(0, f"batch: {shapes[0]}", time=0.1)]
    for i, shape in enumerate(shapes[1:], 1):
        before = shapes[i - 1].split("[")[1].split(",")[0]
        after = shape.split("[")[1].split(",")[0]
        events.append(
            event(
                i,
                f"batch: {shape}",
                reasons=[shape_reason(before, after)],
                time=0.1 * (i + 1),
                entry=i,
            )
        )
    return function("train_step", events, calls=calls, call_entries=entries)


def evaluate() -> FunctionReport:
    return function(
        "Trainer.evaluate",
        [event(0, "params: dict[2], x: f32[8,3]", time=0.5)],
        calls=1,
        defined_at="train.py:30",
        fid=2,
    )


def consistent_pair() -> list[Report]:
    return [report(p, [step("f32[8,3]"), evaluate()]) for p in (0, 1)]


def shape_divergence_pair() -> list[Report]:
    """Process 1 gets a 12-row batch at call 1: it retraces, process 0 does not."""
    return [
        report(0, [step("f32[8,3]"), evaluate()]),
        report(1, [step("f32[8,3]", "f32[12,3]"), evaluate()]),
    ]


def missing_pair() -> list[Report]:
    """Only process 0 creates and calls ``log_metrics``."""
    log = function(
        "log_metrics", [event(0, "loss: f32[]", time=0.9)], calls=3, defined_at="train.py:50", fid=3
    )
    return [report(0, [step("f32[8,3]"), log]), report(1, [step("f32[8,3]")])]


def calls_pair() -> list[Report]:
    """Same programs, but process 1 stopped one call early (an uneven data shard)."""
    return [report(0, [step("f32[8,3]", calls=4)]), report(1, [step("f32[8,3]", calls=3)])]


def dispatch_pair() -> list[Report]:
    """Both compile 8 and 4 rows at calls 0 and 1, then run different ones at call 2."""
    return [
        report(0, [step("f32[8,3]", "f32[4,3]", entries=(0, 1, 0))]),
        report(1, [step("f32[8,3]", "f32[4,3]", entries=(0, 1, 1))]),
    ]


def job(processes: int, missing: Sequence[int] = (), odd: Sequence[int] = ()) -> list[Report]:
    """A job of ``processes`` processes running ``train_step``, ``Trainer.evaluate`` and
    ``log_metrics``; the ``odd`` ones get a 12-row batch at call 1 (a retrace the others do
    not make), the ``missing`` ones gave no report. Built as data: a thousand in a second."""
    out = []
    for p in range(processes):
        if p in missing:
            continue
        shapes = ("f32[8,3]", "f32[12,3]") if p in odd else ("f32[8,3]",)
        log = function("log_metrics", [event(0, "loss: f32[]", time=0.9)], defined_at="train.py:50")
        out.append(report(p, [step(*shapes), evaluate(), log], process_count=processes))
    return out
