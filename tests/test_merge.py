"""merge_reports / find_divergence on hand-built reports, the merged renderers and `jitlens merge`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import jitlens
import merge_samples as s
from jitlens import ReportError, find_divergence, merge_reports


def _merge(argv: list[str]) -> int:
    """``jitlens merge ARGV`` as a user runs it, in this process."""
    return jitlens.main(["merge", *argv])


def _kinds(reports: list) -> list[str]:
    return [d.kind for d in find_divergence(reports)]


def test_consistent_processes_have_no_divergence() -> None:
    merged = merge_reports(s.consistent_pair())
    assert merged.consistent
    assert merged.divergences == ()
    assert [f.qualname for f in merged.functions] == ["train_step", "Trainer.evaluate"]
    assert all(not f.diverged and None not in f.reports for f in merged.functions)


def test_shape_divergence_names_processes_call_signatures_and_reason() -> None:
    (div,) = find_divergence(s.shape_divergence_pair())
    assert div.kind == "traces"
    assert (div.qualname, div.defined_at, div.event_index, div.call_index) == (
        "train_step",
        "train.py:12",
        1,
        1,
    )
    quiet, retraced = div.branches
    assert (quiet.processes, quiet.kind, quiet.calls) == ((0,), "none", 3)
    assert (retraced.processes, retraced.kind, retraced.call_index) == ((1,), "retrace", 1)
    assert retraced.signature == "batch: f32[12,3]"
    assert [(r.kind, r.before, r.after) for r in retraced.reasons] == [("shape", "8", "12")]
    assert div.processes == (0, 1)
    assert div.time == pytest.approx(1_700_000_000.2)


def test_the_side_that_did_not_retrace_names_the_program_it_ran_when_known() -> None:
    reports = [
        s.report(0, [s.step("f32[8,3]", entries=(0, 0, 0))]),
        s.report(1, [s.step("f32[8,3]", "f32[12,3]", entries=(0, 1, 1))]),
    ]
    (div,) = find_divergence(reports)
    quiet = div.branches[0]
    assert (quiet.kind, quiet.call_index, quiet.signature) == ("none", 1, "batch: f32[8,3]")
    assert "process 0  no trace: call 1 ran the program compiled for batch: f32[8,3]" in (
        merge_reports(reports).to_text()
    )


def test_processes_are_grouped_by_what_they_did() -> None:
    reports = [
        s.report(p, [s.step("f32[8,3]", *(["f32[12,3]"] if p == 2 else []))], process_count=4)
        for p in (3, 0, 2, 1)
    ]
    (div,) = find_divergence(reports)
    assert [b.processes for b in div.branches] == [(0, 1, 3), (2,)]


def test_same_trace_at_a_different_call_is_a_divergence() -> None:
    late = s.step("f32[8,3]", "f32[12,3]")
    late = dataclasses.replace(
        late, events=(late.events[0], dataclasses.replace(late.events[1], call_index=2))
    )
    reports = [s.report(0, [s.step("f32[8,3]", "f32[12,3]")]), s.report(1, [late])]
    (div,) = find_divergence(reports)
    assert (div.kind, div.call_index) == ("traces", 1)
    assert [b.call_index for b in div.branches] == [1, 2]


def test_object_addresses_in_signatures_and_reasons_are_not_divergences() -> None:
    def with_address(address: str) -> s.FunctionReport:
        reason = dataclasses.replace(s.shape_reason(), before=f"<fn at {address}>")
        return s.function(
            "f",
            [
                s.event(0, f"act: <function relu at {address}>"),
                s.event(1, "act: ...", reasons=[reason]),
            ],
        )

    reports = [s.report(0, [with_address("0x7f00aa")]), s.report(1, [with_address("0x7f11bb")])]
    assert find_divergence(reports) == ()


def test_missing_function() -> None:
    (div,) = find_divergence(s.missing_pair())
    assert (div.kind, div.qualname) == ("missing", "log_metrics")
    assert [(b.processes, b.kind) for b in div.branches] == [((0,), "present"), ((1,), "absent")]
    assert "exists in process 0 but not in process 1" in div.message
    assert "harmless if it only logs" in div.fix
    row = next(f for f in merge_reports(s.missing_pair()).functions if f.qualname == "log_metrics")
    assert row.reports[1] is None and row.diverged


def test_different_call_counts() -> None:
    (div,) = find_divergence(s.calls_pair())
    assert (div.kind, div.call_index) == ("calls", 3)
    assert [(b.processes, b.calls) for b in div.branches] == [((0,), 4), ((1,), 3)]
    assert "4 on process 0; 3 on process 1" in div.message


def test_same_programs_dispatched_in_a_different_order() -> None:
    (div,) = find_divergence(s.dispatch_pair())
    assert (div.kind, div.call_index) == ("dispatch", 2)
    assert [b.signature for b in div.branches] == ["batch: f32[8,3]", "batch: f32[4,3]"]


def test_calls_the_tracker_could_not_attribute_are_not_compared() -> None:
    reports = [
        s.report(0, [s.step("f32[8,3]", "f32[4,3]", entries=(0, 1, -1))]),
        s.report(1, [s.step("f32[8,3]", "f32[4,3]", entries=(0, 1, 0))]),
    ]
    assert find_divergence(reports) == ()


def test_unknown_call_counts_are_not_compared() -> None:
    reports = [s.report(p, [s.step("f32[8,3]", calls=None if p else 3)]) for p in (0, 1)]  # type: ignore[arg-type]
    assert find_divergence(reports) == ()


def test_records_sharing_qualname_and_place_match_by_order_of_creation() -> None:
    first, second = s.step("f32[8,3]"), s.step("f32[4,3]")
    reports = [s.report(0, [first, second]), s.report(1, [first, s.step("f32[6,3]")])]
    merged = merge_reports(reports)
    assert [f.occurrence for f in merged.functions] == [0, 1]
    (div,) = merged.divergences
    assert (div.occurrence, div.branches[1].signature) == (1, "batch: f32[6,3]")
    assert "[wrapper #2]" in merged.to_text()


def test_internal_functions_are_ignored_unless_asked() -> None:
    internal = s.function("_jitlens_probe", [s.event(0, "x: f32[]")], internal=True)
    reports = [s.report(0, [s.step("f32[8,3]"), internal]), s.report(1, [s.step("f32[8,3]")])]
    assert _kinds(reports) == []
    assert [d.kind for d in merge_reports(reports, include_internal=True).divergences] == [
        "missing"
    ]


def test_divergences_are_ordered_earliest_first() -> None:
    late = s.function("late", [s.event(0, "x: f32[1]", time=5.0)], defined_at="a.py:1")
    early = s.function("early", [s.event(0, "x: f32[1]", time=1.0)], defined_at="a.py:2")
    reports = [s.report(0, [late, early]), s.report(1, [])]
    assert [d.qualname for d in find_divergence(reports)] == ["early", "late"]


def test_single_report_and_missing_processes() -> None:
    merged = merge_reports([s.report(1, [s.step("f32[8,3]")], process_count=3)])
    assert not merged.consistent and not merged.divergences  # a process not seen may differ
    assert merged.missing_processes == (0, 2)
    text = merged.to_text(width=120, color=False)  # the verdict on one line
    assert "INCOMPLETE, no report from processes 0, 2" in text.splitlines()[0]
    assert "consistent" not in text and "Every process" not in text


def test_cli_one_of_two_reports_is_not_consistent(tmp_path: Path, capsys) -> None:
    (path,) = _write(tmp_path, s.consistent_pair()[1:])
    assert _merge([path]) == 1
    out = capsys.readouterr().out
    assert "no report from process 0" in out and "consistent" not in out


@pytest.mark.parametrize(
    ("reports", "words"),
    [
        ([], ["at least one report"]),
        (
            [s.report(0, []), s.report(0, [])],
            ["process_index 0 appears in 2 reports", "{process_index}"],
        ),
        (
            [s.report(0, [], process_count=2), s.report(1, [], process_count=4)],
            ["different jobs", "2 in report #0", "4 in report #1"],
        ),
        ([s.report(5, [], process_count=2)], ["process_index 5 is not below its process_count 2"]),
    ],
)
def test_bad_inputs_raise_clear_report_errors(reports: list, words: list[str]) -> None:
    with pytest.raises(ReportError) as info:
        merge_reports(reports)
    for word in words:
        assert word in str(info.value)


def test_duplicate_error_names_the_files() -> None:
    with pytest.raises(ReportError, match=r"a\.json, b\.json"):
        merge_reports([s.report(1, []), s.report(1, [])], sources=["a.json", "b.json"])


def test_json_form_is_plain_data() -> None:
    merged = merge_reports(s.shape_divergence_pair(), sources=["r0.json", "r1.json"])
    data = json.loads(merged.to_json())
    assert (data["schema"], data["schema_version"], data["consistent"]) == (
        "jitlens.merge",
        1,
        False,
    )
    assert [p["source"] for p in data["processes"]] == ["r0.json", "r1.json"]
    (div,) = data["divergences"]
    assert div["call_index"] == 1
    assert div["branches"][1]["reasons"][0]["after"] == "12"
    step = data["functions"][0]
    assert [p["signatures"] for p in step["per_process"]] == [
        ["batch: f32[8,3]"],
        ["batch: f32[8,3]", "batch: f32[12,3]"],
    ]


GOLDEN_DIVERGED = """\
jitlens merge: 2 of 2 processes, 2 hosts, 2 functions: 1 function DIVERGED
  Processes that compile or run different programs at the same step enter different collectives and
  wait for each other; the first divergence is the likely cause of a hang.

divergence 1 of 1: train_step (train.py:12)
  `train_step` compiled differently across processes; they parted at call 1
    process 0  no further trace or compile (3 calls in all)
    process 1  retrace at call 1: batch: f32[12,3]
      batch.shape[0]  shape: 8 -> 12
        fix: pad the batch to a fixed size (drop_remainder=True).
  fix: make the inputs of `train_step` identical on every process: same shapes, dtypes, shardings
  and static values (e.g. pad or drop the last partial batch on all hosts alike)

  function           defined at    calls           traces         compiles   status
 ─────────────────────────────────────────────────────────────────────────────────────
  train_step         train.py:12       3   1 on 0; 2 on 1   1 on 0; 2 on 1   DIVERGED
  Trainer.evaluate   train.py:30       1                1                1   ok
"""

GOLDEN_CONSISTENT = """\
jitlens merge: 2 of 2 processes, 2 hosts, 2 functions: consistent
  Every process traced, compiled and called the same programs.

  function           defined at    calls   traces   compiles   status
 ─────────────────────────────────────────────────────────────────────
  train_step         train.py:12       3        1          1   ok
  Trainer.evaluate   train.py:30       1        1          1   ok
"""


def test_golden_text() -> None:
    assert merge_reports(s.shape_divergence_pair()).to_text(width=100) == GOLDEN_DIVERGED
    assert merge_reports(s.consistent_pair()).to_text(width=100) == GOLDEN_CONSISTENT
    assert str(merge_reports(s.consistent_pair())) == GOLDEN_CONSISTENT


def test_color_text_has_ansi_and_same_words() -> None:
    colored = merge_reports(s.shape_divergence_pair()).to_text(color=True, width=100)
    assert "\x1b[" in colored
    assert "retrace at call 1: batch: f32[12,3]" in colored


def test_html_is_self_contained_and_escaped() -> None:
    evil = s.function("evil", [s.event(0, f"x: {s.XSS}")], defined_at=s.XSS)
    merged = merge_reports([s.report(0, [evil]), s.report(1, [])])
    page = merged.to_html()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    assert "http://" not in page and "https://" not in page
    assert "process 1 on host-1" in page


def _write(tmp_path: Path, reports: list) -> list[str]:
    paths = []
    for r in reports:
        path = tmp_path / f"report-{r.process_index}.json"
        path.write_text(r.to_json())
        paths.append(str(path))
    return paths


def test_cli_exit_codes_and_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _merge(_write(tmp_path, s.consistent_pair())) == 0
    assert "consistent" in capsys.readouterr().out

    out_json, out_html = tmp_path / "m.json", tmp_path / "m.html"
    paths = _write(tmp_path, s.shape_divergence_pair())
    assert _merge([*paths, "--json", str(out_json), "--html", str(out_html)]) == 1
    captured = capsys.readouterr()
    assert "retrace at call 1: batch: f32[12,3]" in captured.out
    assert json.loads(out_json.read_text())["consistent"] is False
    assert "train_step" in out_html.read_text()


def test_cli_follows_the_terminal_width_like_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Piped with COLUMNS=80 (a user's terminal width passed on), merge printed 100 wide;
    --width sets it as `jitlens report --width` does."""
    paths = _write(tmp_path, s.shape_divergence_pair())
    monkeypatch.setenv("COLUMNS", "80")
    assert _merge(paths) == 1
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80 and any(len(line) > 70 for line in lines), lines
    assert _merge([*paths, "--width", "60"]) == 1
    assert max(map(len, capsys.readouterr().out.splitlines())) <= 60


def test_cli_bad_input_is_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": 1, "functions": [')
    assert _merge([str(broken)]) == 2
    assert "broken.json: not valid JSON" in capsys.readouterr().err

    assert _merge([str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err

    same = _write(tmp_path, [s.report(0, [])])
    assert _merge([same[0], same[0]]) == 2
    assert "process_index 0 appears in 2 reports" in capsys.readouterr().err

    assert _merge([]) == 2
    assert "jitlens merge" in capsys.readouterr().err
