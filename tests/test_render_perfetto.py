"""Chrome trace events of a report: valid JSON, nested spans, one named thread per function."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest

import jitlens
import report_samples


@pytest.fixture(scope="module")
def trace() -> dict[str, Any]:
    return report_samples.sample_report().to_trace_events()


def _spans(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def _thread(trace: dict[str, Any], name: str) -> int:
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"].startswith(name):
            return e["tid"]
    raise AssertionError(f"no thread named {name}")


def test_json_and_format(trace: dict[str, Any]) -> None:
    assert json.loads(json.dumps(trace, allow_nan=False)) == trace
    assert trace["displayTimeUnit"] == "ms"
    for e in trace["traceEvents"]:
        assert {"ph", "name", "pid", "tid"} <= set(e)
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0


def test_process_and_thread_names(trace: dict[str, Any]) -> None:
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    process = next(e for e in meta if e["name"] == "process_name")
    assert process["args"]["name"] == "jitlens devbox process 0/1"
    threads = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert sorted(threads.values())[0] == "Trainer.loss (jax.jit)"
    assert len(threads) == 5
    assert {e["tid"] for e in trace["traceEvents"] if e["ph"] != "M"} <= set(threads)


def test_one_span_per_event_holding_its_phases_in_order(trace: dict[str, Any]) -> None:
    tid = _thread(trace, "Trainer.loss")
    spans = [e for e in _spans(trace) if e["tid"] == tid]
    events = [e for e in spans if "args" in e]
    assert [e["name"] for e in events] == [
        "first trace Trainer.loss", "retrace #1 Trainer.loss", "retrace #2 Trainer.loss",
        "retrace #3 Trainer.loss", "retrace #4 Trainer.loss",
    ]  # fmt: skip
    first = events[1]
    assert first["args"]["reasons"] == ["shape x.shape[0]: 4 -> 2"]
    event = report_samples.sample_report().function("Trainer.loss").events[1]
    assert first["ts"] == event.time * 1e6 and first["dur"] == pytest.approx(event.seconds * 1e6)
    assert first["args"]["call_index"] == 12
    phases = [
        e for e in spans if "args" not in e and first["ts"] <= e["ts"] < first["ts"] + first["dur"]
    ]
    assert [p["name"] for p in phases] == ["trace", "lower", "compile"]
    for a, b in itertools.pairwise(phases):
        assert a["ts"] + a["dur"] == pytest.approx(b["ts"])
    assert phases[-1]["ts"] + phases[-1]["dur"] == pytest.approx(first["ts"] + first["dur"])


def test_spans_of_a_thread_nest(trace: dict[str, Any]) -> None:
    by_tid: dict[int, list[dict[str, Any]]] = {}
    for e in _spans(trace):
        by_tid.setdefault(e["tid"], []).append(e)
    for spans in by_tid.values():
        for a in spans:
            for b in spans:
                a0, a1, b0, b1 = a["ts"], a["ts"] + a["dur"], b["ts"], b["ts"] + b["dur"]
                overlap = a0 < b1 and b0 < a1
                nested = (a0 <= b0 and b1 <= a1) or (b0 <= a0 and a1 <= b1)
                assert not overlap or nested, (a, b)


def test_overlapping_events_are_laid_out_one_after_the_other() -> None:
    report = report_samples.sample_report()
    forward = report.function("forward")
    early = dataclasses.replace(forward.events[2], time=forward.events[1].time)
    forward = dataclasses.replace(forward, events=(*forward.events[:2], early))
    trace = dataclasses.replace(report, functions=(forward,)).to_trace_events()
    test_spans_of_a_thread_nest(trace)


def test_cache_hits_are_capped_instants() -> None:
    report = report_samples.sample_report()
    trace = report.to_trace_events()
    hits = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert len(hits) == 2 + 3  # Trainer.loss and evaluate; the others recorded no hit times
    assert {
        h["args"]["recorded_call"] for h in hits if h["tid"] == _thread(trace, "Trainer.loss")
    } == {1, 5}
    calls = 10_010  # a long run's hits, more than the trace keeps
    loss = dataclasses.replace(
        report.function("Trainer.loss"),
        call_times=tuple(float(i) for i in range(calls)),
        call_entries=(0,) * calls,
    )
    many = dataclasses.replace(report, functions=(loss,)).to_trace_events()
    assert len([e for e in many["traceEvents"] if e["ph"] == "i"]) == 10_000


def test_junk_numbers_become_valid_json(caplog: pytest.LogCaptureFixture) -> None:
    report = report_samples.sample_report()
    forward = report.function("forward")
    bad = dataclasses.replace(
        forward.events[1], time=math.nan, compile_seconds=math.inf, explain_seconds=math.nan
    )
    forward = dataclasses.replace(forward, events=(forward.events[0], bad))
    with caplog.at_level(logging.ERROR, logger="jitlens"):
        trace = dataclasses.replace(report, functions=(forward,)).to_trace_events()
    json.dumps(trace, allow_nan=False)
    # rendered for real, not through the fallback: both events' spans are there
    assert not caplog.records
    assert len([e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("dur", 0) > 0]) >= 2


def test_jitlens_report_writes_the_trace(tmp_path: Path) -> None:
    saved = tmp_path / "report.json"
    saved.write_text(report_samples.sample_report().to_json())
    path = tmp_path / "out" / "trace.json"
    assert jitlens.main(["report", str(saved), "--trace", str(path)]) == 0
    assert json.loads(path.read_text()) == json.loads(
        json.dumps(jitlens.load_report(saved).to_trace_events())
    )
    assert [p.name for p in path.parent.iterdir()] == ["trace.json"]  # written atomically


def test_internal_failure_falls_back_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    report = report_samples.sample_report()
    broken = dataclasses.replace(report, functions=(None,))  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="jitlens"):
        trace = broken.to_trace_events()
    assert trace["traceEvents"][0]["ph"] == "M"
    assert any("trace events failed" in r.message for r in caplog.records)
