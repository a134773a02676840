"""``jitlens merge``'s persistent-cache comparison on hand-made reports (no processes).

The two-process run in test_multiprocess.py shows it on what JAX did; these
pin the settings and notes comparisons and that none of it is a divergence.
"""

from __future__ import annotations

from jitlens._core.pcache import diagnose
from jitlens._core.report import Report
from jitlens._core.runinfo import PersistentCache, RunInfo
from jitlens._merge.merge import merge_reports
from jitlens._merge.render import render_merged_text


def _report(index: int, min_entry: int, writes: int) -> Report:
    pc = PersistentCache(
        dir="/shared/cache", enabled=True, min_compile_time_secs=0.0,
        min_entry_size_bytes=min_entry, requests=3, hits=0, writes=writes, compiles=3,
        longest_compile_seconds=0.1, dir_exists=True, dir_writable=True, entries=writes,
        entries_written=tuple(f"jit_f-{i}-cache" for i in range(writes)),
    )  # fmt: skip
    run = RunInfo(persistent_cache=pc)
    run = RunInfo(persistent_cache=pc, notes=diagnose(run, index))
    return Report(2, "0", "0", "0", "cpu", index, 3, "h", 0.0, 1.0, (), run=run)


def test_settings_and_notes_that_differ_are_flagged_not_diverged() -> None:
    reports = [_report(0, 10**9, 0), _report(1, 0, 0), _report(2, 0, 0)]
    # JAX checks the process before the thresholds: only process 0 writes, by design
    assert [n.kind for n in reports[1].run.notes] == ["not_process_0"]
    merged = merge_reports(reports)
    assert merged.consistent
    kinds = [(d.kind, d.what, d.groups) for d in merged.cache_differences]
    assert kinds == [
        ("setting", "jax_persistent_cache_min_entry_size_bytes", ((0,), (1, 2))),
        ("note", "jax_persistent_cache_min_entry_size_bytes", ((0,),)),
    ]
    assert merged.cache_differences[0].message == (
        "jax_persistent_cache_min_entry_size_bytes differs between processes: "
        "1000000000 on process 0; 0 on processes 1, 2"
    )
    text = render_merged_text(merged)
    assert "persistent compilation cache: the processes behaved differently" in text
    assert merged.to_dict()["cache_differences"][1]["groups"] == [[0]]


def test_alike_or_unknown_caches_add_nothing() -> None:
    assert merge_reports([_report(0, 0, 3), _report(1, 0, 0)]).cache_differences == ()
    old = Report(2, "0", "0", "0", "cpu", 1, 3, "h", 0.0, 1.0, ())  # no run section
    assert merge_reports([_report(0, 0, 3), old]).cache_differences == ()
