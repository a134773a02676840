"""Issue 44, costs that grow with the work: each measured as work done, never as time.

Merged views are built from reports made as data (no JAX compile), and a first retrace's
imports are read in a fresh process. The explainer's work on made-up keys is counted in
``test_robustness.py`` (it reaches inside: ``test_public_api.py``).
"""

from __future__ import annotations

import json

import merge_samples as s
from conftest import run_python
from jitlens import merge_reports

#: Processes whose own report a merged page holds, at most (``_merge/page.DETAILED``).
DETAILED = 16


def test_the_merged_page_is_bounded_and_keeps_what_differs() -> None:
    """``jitlens merge --html`` wrote every process's report (~25 KB each: 25 MB for 1,000
    processes). Now: the processes grouped by what they ran, the reports of one process per
    group and of the processes a divergence singles out; 40x the processes, the same size.
    The odd processes, their hosts and the missing peer stay on the page."""
    sizes = {}
    for n in (100, 1_000, 4_000):
        merged = merge_reports(s.job(n, missing=(n // 3,), odd=(7, n // 2)))
        html = merged.to_html()
        sizes[n] = len(html.encode())
        assert f"no report from process {n // 3}" in html
        assert f"processes 7, {n // 2}  retrace at call 1: batch: f32[12,3]" in html
        assert f"host-7, host-{n // 2}" in html  # the hosts that compiled differently
        assert html.count("<iframe") == 3  # one of the 997, and the two odd ones
        assert len(merged.to_text(width=100)) < 2_000
    assert sizes[1_000] <= 5_000_000
    assert sizes[4_000] <= sizes[100] * 1.05
    small = merge_reports(s.job(DETAILED, odd=(3,))).to_html()
    assert small.count("<iframe") == DETAILED  # a small job: every process, as before


def test_a_process_list_is_bounded_however_the_processes_alternate() -> None:
    """Every other process retracing names 2,000 runs of processes: the page names the first
    ``RUNS`` and how many processes the rest hold, in every list it shows."""
    merged = merge_reports(s.job(4_000, odd=range(0, 4_000, 2)))
    html = merged.to_html()
    assert "and 1,968 more" in html  # 32 of the 2,000 odd processes named
    assert len(html.encode()) < 1_000_000  # DETAILED reports of ~27 KB, and the rest
    assert html.count("<iframe") == DETAILED


_FIRST_RETRACE = """
import json
import sys
import numpy as np
from jitlens._core import explain
from jitlens._core.signature import describe_call

def f(x):
    pass

old = describe_call(f, (np.ones((2,), np.float32),), {})
new = describe_call(f, (np.ones((3,), np.float32),), {})
before = set(sys.modules)
reasons = explain.explain(new, [old])
print(reasons[0].kind, json.dumps(sorted(m for m in set(sys.modules) - before if "jitlens" in m)))
"""


def test_a_first_retrace_imports_the_words_of_its_own_kind_only() -> None:
    """A process's first retrace imported every reason kind's module, the ranking's and what
    they use (26 modules, 36-153 ms): a shape retrace now imports the words of shapes, their
    base, the ranking and the closest-key search, in a fresh process."""
    out = run_python(["-c", _FIRST_RETRACE])
    assert out.returncode == 0, out.stderr
    kind, loaded = out.stdout.split(" ", 1)
    assert kind == "shape"
    assert json.loads(loaded) == [
        "jitlens._core.nearest",
        "jitlens._core.rank",
        "jitlens._core.reasons",
        "jitlens._core.reasons.base",
        "jitlens._core.reasons.shape",
        "jitlens._core.reasons.spec",
        "jitlens._core.template_kinds",
    ]


def test_a_job_whose_every_process_differs_keeps_a_bounded_page() -> None:
    """Every process retracing to a shape of its own: one divergence of 2,000 branches and
    2,000 groups of processes; the page shows the first of each and says how many more."""
    reports = [
        s.report(p, [s.step("f32[8,3]", f"f32[{p + 9},3]")], process_count=2_000)
        for p in range(2_000)
    ]
    html = merge_reports(reports).to_html()
    assert "1,984 more group(s) of processes that did otherwise" in html  # 16 branches shown
    assert "1,936 more group(s): see" in html  # 64 rows of the groups table
    assert html.count("<iframe") == DETAILED
    assert len(html.encode()) < 1_000_000
