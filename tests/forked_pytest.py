"""``pytester.runpytest_subprocess`` in a fork of the suite's JAX server (``fork_python``).

A pytest run of a test file that uses JAX costs a fresh interpreter its JAX import (about
2 CPU seconds) before the file's first test; where that start-up is not what a test shows
(a marker's budget, the plugin's words), the run is a fork of the server that imported JAX:
a fresh process, pytest and its plugins (jitlens' among them) loaded by the child, with the
environment ``pytester`` set up (its ``HOME``, no ``PYTEST_ADDOPTS``), in ``pytester.path``.
"""

from __future__ import annotations

import tempfile

import pytest


def runpytest_forked(pytester: pytest.Pytester, fork_python, *args: str) -> pytest.RunResult:
    """``pytester.runpytest_subprocess(*args)``, run by ``fork_python``; the same result
    (its duration left at 0: nothing reads it)."""
    basetemp = tempfile.mkdtemp(prefix="runpytest-", dir=pytester.path)
    proc = fork_python(
        ["-m", "pytest", f"--basetemp={basetemp}/t", *args], cwd=pytester.path, timeout=300
    )
    return pytest.RunResult(
        proc.returncode, proc.stdout.splitlines(), proc.stderr.splitlines(), 0.0
    )
