"""``jitlens merge``'s persistent-cache comparison on hand-made reports (no processes).

The two-process run in test_multiprocess.py shows it on what JAX did; these
pin the settings and notes comparisons and that none of it is a divergence.
"""

from __future__ import annotations

import jitlens
from jitlens import Report, merge_reports

#: What the tracker's diagnosis writes in ``run.notes`` for these settings (its rules are
#: tested in test_advice.py); the merge compares the notes' kinds between processes.
NOTES = {
    "min_entry_size": "jax_persistent_cache_min_entry_size_bytes",
    "not_process_0": "process_index",  # JAX checks the process before the thresholds
}


def _report(index: int, min_entry: int, writes: int, notes: tuple[str, ...] = ()) -> Report:
    pc = dict(
        dir="/shared/cache", enabled=True, min_compile_time_secs=0.0,
        min_entry_size_bytes=min_entry, requests=3, hits=0, writes=writes, compiles=3,
        longest_compile_seconds=0.1, dir_exists=True, dir_writable=True, entries=writes,
        entries_written=[f"jit_f-{i}-cache" for i in range(writes)],
    )  # fmt: skip
    data = Report(2, "0", "0", "0", "cpu", index, 3, "h", 0.0, 1.0, ()).to_dict()
    data["run"] = {
        "persistent_cache": pc,
        "notes": [
            {"kind": k, "setting": NOTES[k], "message": f"{k} on {index}", "fix": "f"}
            for k in notes
        ],
    }
    return jitlens.Report.from_dict(data)


def test_settings_and_notes_that_differ_are_flagged_not_diverged() -> None:
    reports = [
        _report(0, 10**9, 0, ("min_entry_size",)),
        _report(1, 0, 0, ("not_process_0",)),  # only process 0 writes, by design
        _report(2, 0, 0, ("not_process_0",)),
    ]
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
    text = merged.to_text()
    assert "persistent compilation cache: the processes behaved differently" in text
    assert merged.to_dict()["cache_differences"][1]["groups"] == [[0]]


def test_alike_or_unknown_caches_add_nothing() -> None:
    assert merge_reports([_report(0, 0, 3), _report(1, 0, 0)]).cache_differences == ()
    old = Report(2, "0", "0", "0", "cpu", 1, 3, "h", 0.0, 1.0, ())  # no run section
    assert merge_reports([_report(0, 0, 3), old]).cache_differences == ()
