"""The pytest plugin through pytester: marker, fixture, session options, header line and xdist.

Each pytester run imports JAX and compiles, so the checks are grouped into a
few runs: one with every session option, one with the marker alone, one under
pytest-xdist.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import sys
from pathlib import Path

import pytest
from forked_pytest import runpytest_forked

from jitlens import load_report, pytest_plugin

pytest_plugins = ["pytester"]

CASES = """
import functools

import jax
import jax.numpy as jnp
import pytest
from flax import nnx


class Net(nnx.Module):
    def __init__(self):
        self.avg_pool = functools.partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))

    def __call__(self, x):
        return self.avg_pool(x)


@nnx.jit
def forward(model, x):
    return model(x)


@jax.jit
def scale(x):
    return x * 2


X = jnp.ones((1, 4, 4, 1))


@pytest.mark.max_traces(1)
def test_within_budget():
    model = Net()
    forward(model, X)
    forward(model, X)


@pytest.mark.max_traces(1)
def test_over_budget():
    forward(Net(), X)
    forward(Net(), X)


@pytest.mark.max_traces(1)
def test_swallowed():
    with pytest.raises(Exception):
        forward(Net(), X)
        forward(Net(), X)


@pytest.mark.max_traces(1, on_exceed="warn")
def test_warn():
    scale(jnp.ones(3))
    scale(jnp.ones(5))


def test_fixture(jit_tracker):
    scale(jnp.ones(7))
    scale(jnp.ones(7))
    stats = jit_tracker.stats(scale)
    assert (stats.calls, stats.traces) == (2, 1)


def test_session_budget():
    shift = jax.jit(lambda x: x + 1)
    for n in range(1, 7):
        shift(jnp.ones(n))


@pytest.mark.max_traces()
def test_bad_marker():
    pass
"""

XDIST_CASES = """
import jax
import jax.numpy as jnp
import pytest


@jax.jit
def double(x):
    return x * 2


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_shapes(n):
    double(jnp.ones(n))
"""


def _line(needle: str, nth: int = 0) -> int:
    """Line number, in the written test file, of the ``nth`` line of CASES holding ``needle``."""
    return [i for i, line in enumerate(CASES.split("\n")) if needle in line][nth]


def _plugin_args() -> list[str]:
    """Load the plugin once: by its entry point when installed, else by module name.

    pytest-benchmark, when installed, is kept out: it warns inside xdist workers; so is
    hypothesis' plugin, which imports hypothesis at the summary (1.5 CPU s of each pytest
    process, hypothesis' modules assertion-rewritten): no test here uses it.
    """
    entry_points = importlib.metadata.entry_points(group="pytest11")
    installed = any(ep.value == pytest_plugin.__name__ for ep in entry_points)
    kept_out = ["-p", "no:benchmark", "-p", "no:hypothesispytest"]
    return kept_out + ([] if installed else ["-p", pytest_plugin.__name__])


def test_marker_fixture_and_every_session_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_budgeted=CASES)
    result = pytester.runpytest_inprocess(
        *_plugin_args(),
        "-p",
        "no:xdist",  # the session options need no pytest-xdist (its hooks are optional)
        "--jitlens",
        "--jitlens-max-traces=5",
        "--jitlens-report=out/report.json",
    )
    result.assert_outcomes(passed=3, failed=4, warnings=1)
    out = result.stdout.str()
    over = _line("forward(Net(), X)", 1)
    result.stdout.fnmatch_lines(
        [
            "jitlens: tracking jitted functions (summary at the end, at most 5 trace(s) per "
            "function, report to out/report.json)",
            "*_ test_over_budget _*",
            ">       forward(Net(), X)",
            "E       jitlens*RecompileError: jitlens: `forward` was traced 2 times, over its "
            "budget of 1 (@pytest.mark.max_traces).",
            f"E         forward (nnx.jit) test_budgeted.py:{over}  retrace #*",
            "E           model.avg_pool  identity_static",
            "*fix: Call `nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))`*",
            f"test_budgeted.py:{over}: RecompileError",
            "*_ test_swallowed _*",
            "the test caught this error, but the budget was exceeded all the same:",
            "jitlens: `forward` was traced 2 times, over its budget of 1 (@pytest.mark.max_traces).",
            "*_ test_session_budget _*",
            "E * jitlens*RecompileError: jitlens: `test_session_budget.<locals>.<lambda>` was "
            "traced 6 times, over its budget of 5 (--jitlens-max-traces).",
            "*_ test_bad_marker _*",
            "@pytest.mark.max_traces needs a budget*",
            f"*test_budgeted.py:{_line('scale(jnp.ones(5))')}: RecompileWarning: jitlens: `scale` was traced 2 times, over its "
            "budget of 1 (@pytest.mark.max_traces).",
            "*= jitlens =*",
            "jitlens: 3 jitted functions, * traces, * s lost to recompiles",
            "forward  retraced 2x*",
            "jitlens: wrote the report to out/report.json",
        ]
    )
    shown = out.split("test_over_budget")[1].split("test_swallowed")[0]
    assert "jitlens/_" not in shown and str(Path(pytest_plugin.__file__).parent) not in shown

    report = load_report(pytester.path / "out" / "report.json")
    traces = {f.qualname: f.traces for f in report.functions}
    # the body of `forward` ran 3 times: the 2 traces its budget stopped at their start are not traces
    assert traces["forward"] == 3 and traces["scale"] == 3
    stopped = {f.qualname: len(f.stopped) for f in report.functions}
    assert stopped["forward"] == 2 and stopped["scale"] == 0


ONLY_OVER_BUDGET = """
import jax
import jax.numpy as jnp
import pytest

RUNS = []


@jax.jit
def other(x):
    return x * 2


@jax.jit
def forward(x):
    RUNS.append(1)
    return x + 1


def test_other():
    other(jnp.ones(2))
    other(jnp.ones(3))


@pytest.mark.max_traces(1)
def test_forward():
    forward(jnp.ones(2))
    forward(jnp.ones(3))


def test_runs():
    assert len(RUNS) == 1
    once(jnp.ones(2))


@jax.jit
def once(x):
    return x - 1
"""


def test_the_summary_shows_the_function_whose_budget_failed(pytester: pytest.Pytester) -> None:
    """Its over-budget trace never ran the body (not a retrace), but it failed the test:
    the summary shows it, with what changed."""
    pytester.makepyfile(test_only=ONLY_OVER_BUDGET)
    result = pytester.runpytest_inprocess(
        *_plugin_args(), "-p", "no:xdist", "-p", "no:randomly", "--jitlens"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       jitlens*RecompileError: jitlens: `forward` was traced 2 times, over its "
            "budget of 1 (@pytest.mark.max_traces).",
            "*= jitlens =*",
            "jitlens: 2 of the session's 3 jitted functions compiled again or were stopped; "
            "only they are listed (every function: --jitlens-report PATH).",
            "jitlens: 2 jitted functions, 3 traces, * s lost to recompiles",
            "other  retraced 1x*",
            "forward  1 stopped by a compile budget   (defined at test_only.py:*)",
            "  test_only.py:*  stopped by a compile budget (call #2)",
            "    x  shape",
            "      f32[2] -> f32[3]",
        ]
    )


def test_marker_alone_needs_no_option_and_prints_nothing_else(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_budgeted=CASES)
    result = pytester.runpytest_inprocess(*_plugin_args(), "-k", "within_budget or over_budget")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E           model.avg_pool  identity_static"])
    result.stdout.no_fnmatch_line("jitlens: tracking*")
    result.stdout.no_fnmatch_line("*= jitlens =*")


@pytest.mark.slow
def test_xdist_workers_send_their_reports_to_the_controller(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_budgeted=XDIST_CASES)
    result = pytester.runpytest_subprocess(
        *_plugin_args(), "-n", "1", "--jitlens", "--jitlens-report=report.json"
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*= jitlens =*", " double [[]gw0[]] *"])
    report = load_report(pytester.path / "report.json")
    assert [(f.qualname, f.traces) for f in report.functions] == [("double [gw0]", 4)]


def test_plugin_module_imports_neither_jax_nor_jitlens_core() -> None:
    """Loaded in every pytest run by its entry point: it must cost nothing when unused."""
    tree = ast.parse(Path(pytest_plugin.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
    names |= {
        (n.module or "").split(".")[0]
        for n in top
        if isinstance(n, ast.ImportFrom) and n.level == 0
    }
    assert names <= {"__future__", "pytest", *sys.stdlib_module_names}, names
    assert not [n for n in top if isinstance(n, ast.ImportFrom) and n.level], "no jitlens module"


def test_the_session_report_is_written_where_pytest_started(
    pytester: pytest.Pytester, fork_python
) -> None:
    """A test that changes directory for good does not move --jitlens-report's file."""
    pytester.makepyfile(
        test_moves="""
        import os
        import jax, jax.numpy as jnp

        def test_moves(tmp_path):
            jax.jit(lambda x: x + 1)(jnp.ones(2))
            os.chdir(tmp_path)
        """
    )
    # a process of its own (the test changes its directory for good): a fork of the JAX server
    result = runpytest_forked(
        pytester, fork_python, *_plugin_args(), "--jitlens-report=report.json"
    )
    result.assert_outcomes(passed=1)
    assert (pytester.path / "report.json").exists()


def test_a_bad_report_path_is_a_usage_error_before_any_test_runs(pytester: pytest.Pytester) -> None:
    source = "def test_one():\n    open('ran', 'w').close()\n"
    pytester.makepyfile(test_mine=source)
    for bad, words in (("test_mine.py", "the test file"), (".", "folder")):
        result = pytester.runpytest_inprocess(
            *_plugin_args(), f"--jitlens-report={bad}", "test_mine.py"
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"--jitlens-report {bad}" in result.stderr.str() and words in result.stderr.str()
    assert (pytester.path / "test_mine.py").read_text().strip() == source.strip()
    assert not (pytester.path / "ran").exists()


def test_the_same_command_runs_twice_when_the_report_path_is_a_separate_word(
    pytester: pytest.Pytester,
) -> None:
    """``--jitlens-report report.json``: its value is no test file, even once the file exists."""
    pytester.makepyfile(test_mine="def test_one():\n    pass\n")
    for _ in range(2):
        result = pytester.runpytest_inprocess(
            *_plugin_args(), "--jitlens-report", "report.json", "test_mine.py"
        )
        assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert json.loads((pytester.path / "report.json").read_text())["schema_version"]


def test_a_session_budget_that_cannot_count_is_a_usage_error_not_an_internal_one(
    pytester: pytest.Pytester, fork_python
) -> None:
    """A guard that cannot count refuses to run; pytest says why in one line, not INTERNALERROR.
    (A process of its own, the conftest breaks JAX: a fork of the server that imported JAX,
    before the plugin or jitlens, as in a fresh ``pytest``.)"""
    pytester.makeconftest(
        "from jax import monitoring\ndel monitoring.register_scalar_listener  # a JAX without it\n"
    )
    pytester.makepyfile(test_mine="def test_one():\n    open('ran', 'w').close()\n")
    result = runpytest_forked(pytester, fork_python, *_plugin_args(), "--jitlens-max-traces", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--jitlens-max-traces: cannot count traces" in err and "INTERNALERROR" not in err
    assert not (pytester.path / "ran").exists()


#: A compile with no retrace: the same jit called with an array left where JAX put it, then with
#: one committed to the device (``jax.device_put``). JAX compiles again from the trace it has;
#: the body runs once (``RUNS``). Each test makes its own function: JAX's caches are per function.
RECOMPILE = """
import jax
import jax.numpy as jnp
import pytest

RUNS = []


def compile_twice():
    def step(x):
        RUNS.append(1)
        return x + 1

    f = jax.jit(step)
    f(jnp.ones(3))
    f(jax.device_put(jnp.ones(3), jax.devices()[0]))


@pytest.mark.max_traces(1)
def test_a_trace_budget_passes():
    RUNS.clear()
    compile_twice()
    assert len(RUNS) == 1


@pytest.mark.max_compiles(1)
def test_a_compile_budget_fails():
    compile_twice()


@pytest.mark.max_compiles(2)
def test_within_the_compile_budget():
    def other(x):
        return x * 2

    f = jax.jit(other)
    f(jnp.ones(3))
    f(jax.device_put(jnp.ones(3), jax.devices()[0]))


def test_session_budget():
    compile_twice()  # `step`'s 5th and 6th compiles in the session


@pytest.mark.max_compiles("one")
def test_bad_compile_marker():
    pass
"""


def test_the_compile_marker_and_option_count_a_recompile_without_a_retrace(
    pytester: pytest.Pytester,
) -> None:
    """Issue 47: a recompile JAX makes from the trace it has passed every trace budget while the
    table said ``compiles 2``; the ``max_compiles`` marker and ``--jitlens-max-compiles`` count it."""
    pytester.makepyfile(test_recompile=RECOMPILE)
    result = pytester.runpytest_inprocess(
        *_plugin_args(), "-p", "no:xdist", "-p", "no:randomly", "--jitlens-max-compiles=5"
    )
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "jitlens: tracking jitted functions (at most 5 compile(s) per function)",
            "*_ test_a_compile_budget_fails _*",
            "E       jitlens*RecompileError: jitlens: `compile_twice.<locals>.step` was compiled 2 "
            "times, over its budget of 1 (@pytest.mark.max_compiles).",
            "E         compile_twice.<locals>.step (jax.jit) test_recompile.py:*  recompile (call #2)",
            "E           x  sharding",
            "E             uncommitted (default device) -> committed to cpu:0",
            "*fix: Place `x` one way for every call*",
            "*_ test_session_budget _*",
            "E * jitlens*RecompileError: jitlens: `compile_twice.<locals>.step` was compiled 6 "
            "times, over its budget of 5 (--jitlens-max-compiles).",
            "*_ test_bad_compile_marker _*",
            "@pytest.mark.max_compiles needs a budget*",
        ]
    )
