"""``JITLENS=1 python prog.py`` explains retraces with no code change; unset, nothing is imported."""

from __future__ import annotations

import json

from conftest import CASES, run_python


def test_env_switch_logs_retraces_and_writes_the_report(tmp_path):
    report = tmp_path / "r.json"
    proc = run_python(
        [str(next(CASES.glob("17_*.py")))],
        cwd=tmp_path,
        env={"JITLENS": "1", "JITLENS_REPORT": str(report)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "TRACES=5" in proc.stdout
    # one log record per retrace as it happens, then the summary at exit
    assert proc.stderr.count("jitlens: loss (jax.jit)") == 4
    assert "batch  shape" in proc.stderr
    (loss,) = [f for f in json.loads(report.read_text())["functions"] if f["name"] == "loss"]
    assert loss["traces"] == 5


def test_unset_costs_nothing_and_bad_value_is_named(tmp_path):
    probe = "import sys; print('jitlens' in sys.modules, 'jax' in sys.modules)"
    proc = run_python(["-c", probe], env={"JITLENS": "0"})
    assert proc.stdout.split() == ["False", "False"]
    proc = run_python(["-c", probe], env={"JITLENS": "maybe"})
    assert "JITLENS='maybe' is not valid" in proc.stderr
