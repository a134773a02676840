"""Every shared real-world case under jitlens: counts equal to the script's ground truth, culprit named.

Each case script counts its traces inside the jitted functions (``TRACES``
globals) and prints them; jitlens' report of the same process must report
exactly that many traces, and the retraces of the faulty variant must carry
the reason kind and path listed in ``tests/cases/README.md``.

Two cases, a Flax NNX program and a JAX one, run under ``jitlens run --json`` as a user
runs them (:data:`UNDER_RUN`); the others run one after another in one process, forked from
``fork_python``'s server (JAX imported once), each as ``__main__`` under a fresh
``jitlens.track()`` of its own, with its own standard streams and exit status: the counts,
culprits and fixes are the tracker's, whichever way its report leaves the process. (Each case
defines its own functions and sets no global JAX option; flax's import and its eager
initialisers' compiles are then paid once, not once per case.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

import conftest
from conftest import CASES, ROOT, run_python

#: How the printed ground-truth counters add up to all user traces of the
#: process (most scripts reset the counter per variant; case 27 does not).
TOTAL = {
    "01": [
        "FIXED_TRACES",
        "NNX_DATA_TREE_UTIL_PARTIAL_TRACES",
        "PLAIN_TREE_UTIL_PARTIAL_TRACES",
        "TRACES",
    ],
    "06": ["FIXED_TRACES", "TRACES"],
    "09": ["FIXED_TRACES", "TRACES"],
    "11": ["FIXED_TRACES", "TRACES"],
    "13": ["FIXED_TRACES", "TRACES"],
    "14": ["TRACES"],
    "15": ["FIXED_TRACES", "TRACES"],
    "17": ["TRACES"],
    "18": ["TRACES"],
    "19": ["FIXED_TRACES", "TRACES"],
    "21": ["FIXED_TRACES", "TRACES"],
    "24": ["FIXED_TRACES", "TRACES"],
    "27": ["TRACES"],
    "30": ["FIXED_TRACES", "JAX_JIT_REWRAP_SAME_FN_TRACES", "TRACES"],
    "32": ["TRACES"],
    "33": ["TRACES"],
}

#: The table of docs/explanation/reasons-and-fixes.md (test_docs_table_matches): the kind of
#: reason and a word its path or message names.
EXPECTED = {
    "01": ("identity_static", "avg_pool"),
    "06": ("static_value", "step"),
    "09": ("graph_structure", "hidden"),
    "11": ("variable_metadata", "last_update"),
    "13": ("identity_static", "MLP"),
    "15": ("weak_type", "acc"),
    "17": ("shape", "batch"),
    "18": ("dtype", "x"),
    "19": ("static_value", "temperature"),
    "21": ("new_function", "lambda"),
    "24": ("pytree_structure", "mask"),
    "27": ("sharding", "x"),
    "30": ("new_function", "train_step"),
}


def _case(num: str):
    return next(CASES.glob(f"{num}_*.py"))


pytestmark = pytest.mark.xdist_group("cases")

#: XLA compiles the cases without LLVM's optimisation passes (less CPU per compile, issue 48):
#: traces, keys and reasons are decided before XLA's backend runs.
FAST_XLA = {"XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " " + conftest.FAST_XLA).strip()}


#: Run as the user runs them, ``jitlens run --quiet --json``: an NNX case whose warning goes to
#: the terminal, a JAX case that configures its devices before JAX starts. (What the tests read
#: of the others is the tracker's, the same under ``jitlens run``: a fresh interpreter each,
#: about 1.6 CPU s, showed nothing more.)
UNDER_RUN = ("14", "27")

#: The others' driver: each case in turn as ``__main__`` under a fresh tracker, its streams
#: captured, its exit status as ``python CASE`` would give it, its report as JSON (none when it
#: failed): ``OUT/NUM.run.json``.
TRACKED = """
import contextlib, io, json, os, runpy, sys, traceback
import jitlens
out, *cases = sys.argv[1:]
for case in cases:
    stdout, stderr = io.StringIO(), io.StringIO()
    sys.argv = [case]
    tracker, code, report = jitlens.track(), 0, None
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            with tracker:
                runpy.run_path(case, run_name="__main__")
            report = tracker.report().to_dict()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BaseException:
            traceback.print_exc()
            code = 1
    run = {"returncode": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
    with open(os.path.join(out, os.path.basename(case)[:2] + ".run.json"), "w") as fh:
        json.dump({**run, "report": report}, fh)
"""


@pytest.fixture(scope="module")
def case_runs(tmp_path_factory, fork_python):
    """Run every case once (shared by the tests below): its process and its report."""
    tmp = tmp_path_factory.mktemp("cases")
    tracked = sorted(set(TOTAL) - set(UNDER_RUN))
    started = fork_python.submit(
        ["-c", TRACKED, str(tmp), *(str(_case(num)) for num in tracked)], cwd=tmp
    )
    out = {}
    for num in sorted(UNDER_RUN):
        command = ["-m", "jitlens", "run", "--quiet", "--json", str(tmp / f"{num}.json")]
        proc = run_python([*command, str(_case(num))], cwd=tmp, env=FAST_XLA)
        report = tmp / f"{num}.json"
        out[num] = (proc, json.loads(report.read_text()) if report.exists() else None)
    driver = fork_python.wait(started)
    assert driver.returncode == 0, driver.stderr[-3000:]
    for num in tracked:
        run = json.loads((tmp / f"{num}.run.json").read_text())
        proc = subprocess.CompletedProcess(
            [str(_case(num))], run["returncode"], run["stdout"], run["stderr"]
        )
        out[num] = (proc, run["report"])
    return out


def _printed(stdout: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"^(\w+)=(\d+)$", stdout, re.M)}


def test_docs_table_matches():
    """The shared-cases table in the docs says what these tests check, row by row."""
    text = (ROOT / "docs" / "explanation" / "reasons-and-fixes.md").read_text()
    rows = {
        cells[0]: cells
        for line in text.splitlines()
        if re.match(r"\| \d\d \|", line)
        for cells in [[c.strip().strip("`") for c in line.strip("|").split("|")]]
    }
    for num, (kind, word) in EXPECTED.items():
        assert num in rows, f"case {num} is missing from the docs' table"
        assert rows[num][2] == kind and word in rows[num][3] + rows[num][1], rows[num]


@pytest.mark.parametrize("num", sorted(TOTAL))
def test_traces_equal_ground_truth(case_runs, num):
    proc, report = case_runs[num]
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = _printed(proc.stdout)
    truth = sum(printed[k] for k in TOTAL[num])
    user = [f for f in report["functions"] if not f["internal"]]
    assert sum(f["traces"] for f in user) == truth, (
        printed,
        [(f["qualname"], f["traces"]) for f in user],
    )
    for f in user:
        if f["calls"] is not None:  # every tracked call is a hit, a miss or inlined
            assert f["cache_hits"] <= f["calls"]
            assert f["calls"] >= f["traces"] or f["kind"] == "jax.jit"


@pytest.mark.parametrize("num", sorted(EXPECTED))
def test_culprit_named(case_runs, num):
    _proc, report = case_runs[num]
    kind, word = EXPECTED[num]
    reasons = [
        r
        for f in report["functions"]
        if not f["internal"]
        for e in f["events"]
        if e["kind"] == "retrace"
        for r in e["reasons"]
    ]
    assert any(
        r["kind"] == kind and (word in r["path"] or word in r["message"]) for r in reasons
    ), reasons
    for r in reasons:
        assert r["kind"] != "unknown", r
        assert len(r["message"]) <= 240 and len(r["fix"]) <= 240, r


@pytest.mark.parametrize("num", ["32", "33"])
def test_negative_controls_have_no_retrace(case_runs, num):
    _proc, report = case_runs[num]
    events = [e for f in report["functions"] for e in f["events"] if not f["internal"]]
    assert events and all(e["kind"] == "trace" and not e["reasons"] for e in events)


#: Where the repaired variant's calls are: (qualname or None for the first
#: user record, number of its first calls that belong to the fixed variant).
FIXED = {
    "01": (None, None),
    "06": (None, None),
    "09": (None, None),
    "11": (None, None),
    "13": ("forward", 3),
    "15": ("update", 3),
    "19": ("softmax_dyn", None),
    "21": ("body", None),
    "24": ("masked_mean", 3),
    "30": (None, None),
}


@pytest.mark.parametrize("num", sorted(FIXED))
def test_fixed_variant_has_no_explanation(case_runs, num):
    _proc, report = case_runs[num]
    name, first_calls = FIXED[num]
    user = [f for f in report["functions"] if not f["internal"]]
    fn = user[0] if name is None else next(f for f in user if f["qualname"] == name)
    events = [
        e for e in fn["events"] if first_calls is None or (e["call_index"] or 0) < first_calls
    ]
    assert events and all(e["kind"] == "trace" and not e["reasons"] for e in events), events
    assert len(events) == 1


def test_stale_cached_partial_is_reported(case_runs):
    proc, report = case_runs["14"]
    stale = [s for f in report["functions"] for s in f["stale_hits"]]
    assert [s["path"] for s in stale] == ["model.scale"]
    assert stale[0]["before"] == "1.0" and stale[0]["after"] == "2.0"
    assert "StaleCacheWarning" in proc.stderr


def test_sow_case_names_the_intermediate(case_runs):
    _proc, report = case_runs["09"]
    buggy = [f for f in report["functions"] if not f["internal"]][-1]
    # The first trace of the buggy variant's wrapper is a key the fixed
    # variant's wrapper already compiled (a fresh model): new_function. Each
    # later call finds one more array in `hidden`.
    kinds = [e["reasons"][0]["kind"] for e in buggy["events"]]
    assert kinds == ["new_function", "graph_structure", "graph_structure", "graph_structure"]
    assert all("nnx.pop" in e["reasons"][0]["fix"] for e in buggy["events"][1:])


@pytest.mark.parametrize("num", sorted(TOTAL))
def test_every_case_report_renders(case_runs, num, tmp_path):
    """Terminal, HTML and Perfetto views of each real report (round-tripped through JSON)."""
    import html

    from jitlens import Report

    _proc, data = case_runs[num]
    report = Report.from_dict(data)
    assert report.to_dict() == data
    text = report.to_text(width=100)
    page = report.to_html()
    trace = report.to_trace_events()
    json.dumps(trace)
    for f in report.user_functions():
        assert f.qualname in text
        assert html.escape(f.qualname) in page
        for e in f.events:
            for r in e.reasons:
                assert html.escape(r.path) in page
    assert any(ev.get("ph") == "X" for ev in trace["traceEvents"])
