"""The README opens with the two fresh-machine commands, and CI runs the second one verbatim."""

from __future__ import annotations

import re

import jitlens
from conftest import ROOT


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text[:1500])


def test_readme_opens_with_demo_and_test_commands():
    demo, tests = _commands()[:2]
    assert demo.startswith("python -m pip install '.[flax]'") and demo.endswith("jitlens demo")
    assert "[test]" in tests and "pytest" in tests


def test_ci_runs_the_readme_test_command():
    _demo, tests = _commands()[:2]
    assert tests in (ROOT / ".ci" / "run").read_text()


def test_public_names_are_pinned():
    assert sorted(jitlens.__all__) == sorted(
        [
            "SCHEMA_VERSION",
            "Advice",
            "AdviceKind",
            "AuditError",
            "AuditFinding",
            "AuditResult",
            "CheckError",
            "CheckResult",
            "ConfigError",
            "Event",
            "EventKind",
            "FunctionReport",
            "JitlensError",
            "LintFinding",
            "LintSkipWarning",
            "MergedReport",
            "Reason",
            "ReasonKind",
            "RecompileError",
            "RecompileWarning",
            "Report",
            "ReportDiff",
            "ReportError",
            "RunawayRecompileWarning",
            "StaleCacheWarning",
            "StaleHit",
            "JitlensCompatWarning",
            "JitlensInternalWarning",
            "Tracker",
            "Unchecked",
            "__version__",
            "audit",
            "check_jit_forward",
            "diff",
            "find_divergence",
            "get_num_traces",
            "jit_forward",
            "lint_paths",
            "lint_source",
            "load_report",
            "main",
            "max_compiles",
            "max_traces",
            "merge_reports",
            "no_retrace",
            "reset",
            "settings",
            "track",
        ]
    )
    for name in jitlens.__all__:
        assert getattr(jitlens, name) is not None
    assert issubclass(jitlens.AuditError, (jitlens.JitlensError, ValueError))
    assert issubclass(jitlens.CheckError, (jitlens.JitlensError, ValueError))
    assert issubclass(jitlens.RecompileError, (jitlens.JitlensError, AssertionError))
    assert issubclass(jitlens.ReportError, ValueError)


def test_guard_tests_pass_in_a_clone_named_jitlens(tmp_path):
    """`git clone` names the folder jitlens: no test may mistake that path for jitlens' own frames."""
    import shutil

    from conftest import run_python

    clone = tmp_path / "jitlens"
    shutil.copytree(ROOT / "src", clone / "src")
    (clone / "tests").mkdir()
    for name in ("conftest.py", "_cputime.py", "test_guards.py"):
        shutil.copy(ROOT / "tests" / name, clone / "tests" / name)
    shutil.copy(ROOT / "pyproject.toml", clone / "pyproject.toml")
    proc = run_python(
        [
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_guards.py::test_no_retrace_fails_on_a_retrace_and_allows_new_functions",
        ],
        cwd=clone,
        env={"PYTHONPATH": str(clone / "src")},
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "1 passed" in proc.stdout
