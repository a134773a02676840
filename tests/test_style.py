"""The repository keeps its own rules: ruff clean, and no jitlens lint findings in source or examples."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from jitlens import lint_paths


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is in the [test] extra")
@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff(args):
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_lint_findings_in_jitlens_source_examples_and_benchmarks():
    findings = lint_paths([ROOT / "src", ROOT / "examples", ROOT / "benchmarks"])
    assert findings == [], "\n".join(f"{f.path}:{f.line}: {f.code} {f.message}" for f in findings)
