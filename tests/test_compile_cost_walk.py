"""Where compile time goes, II (issue 45): loops under ``jax.grad``, the fix chosen by what
the loop walks over, repeats that change shape, and a library's own jit.

Each program of ``tests/trial_programs/h_*.py`` is modelled on public code: MAML's inner
steps, an NNX LSTM stepped over time and attention computed head by head (all three under
``value_and_grad``), a leapfrog integrator in ``eqx.filter_jit``, linen and Haiku blocks in
a loop under ``jax.jit``, an image pyramid whose levels halve. One forked process runs them
all, as written and with the advised change applied (``trial_h_driver.py``: 4 iterations,
every compile read). Asserted: the loop named at its line with its trip count, what it
walks over, the construct the fix names (in the library the loop's body runs, whichever
jit wraps it), the fixed program's outputs equal, traced once, and smaller; no advice on
the pyramid; a compile with no trace of its own read all the same. Seconds are
``benchmarks/compile_cost.py``'s.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

import jitlens
from conftest import TRIAL_PROGRAMS

#: One worker runs the module: its fixture's subprocess compiles every program once.
pytestmark = pytest.mark.xdist_group("compile_cost_walk")

#: program -> (the loop's line, its iterations, what it walks over, what the fix must name,
#: what it must not name)
CASES = {
    "h_maml_inner_steps": ("for _ in range(STEPS)", 4, "carry", "jax.lax.fori_loop(0, 4", "stack"),
    "h_nnx_lstm_over_time": ("for t in range", 4, "steps", "nnx.RNN(cell)", "blocks"),
    "h_attention_per_head": ("for h in range", 4, "independent", "`jax.vmap`", "scan"),
    "h_eqx_leapfrog": ("for _ in range(STEPS)", 4, "carry", "jax.lax.fori_loop(0, 4", "layers"),
    "h_linen_blocks_loop": (
        "for _ in range(LAYERS)",
        4,
        "layers",
        "nn.scan(Block, variable_axes={'params': 0}",
        "vmap",
    ),
    "h_haiku_blocks_loop": ("for _ in range(LAYERS)", 8, "layers", "hk.layer_stack(8)", "vmap"),
}
#: The loops under a gradient: the forward pass, then the backward pass, both unrolled.
UNDER_GRAD = ("h_maml_inner_steps", "h_nnx_lstm_over_time", "h_attention_per_head")
OPTIONAL = {"h_haiku_blocks_loop": "haiku", "h_diffrax_solve": "diffrax"}
NAMES = [*CASES, "h_neg_image_pyramid", "h_library_jit_nested", "h_diffrax_solve"]


@pytest.fixture(scope="module")
def runs(fork_python) -> dict:
    names = [n for n in NAMES if n not in OPTIONAL or importlib.util.find_spec(OPTIONAL[n])]
    driver = str(TRIAL_PROGRAMS / "trial_h_driver.py")  # a fork: JAX imported, nothing else
    proc = fork_python([driver, *names], cwd=TRIAL_PROGRAMS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "JitlensInternalWarning" not in proc.stderr, proc.stderr[-3000:]
    got = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    return {
        name: {ver: (jitlens.Report.from_dict(rep), out) for ver, (rep, out) in versions.items()}
        for name, versions in got.items()
    }


def _program(runs: dict, name: str) -> dict:
    if name not in runs:
        pytest.skip(f"{OPTIONAL[name]} is not installed")
    return runs[name]


def _costed(report: jitlens.Report) -> tuple[jitlens.FunctionReport, jitlens.Event]:
    """The program's jitted function and its compile that was read."""
    ((fn, event),) = [
        (f, e) for f in report.functions if not f.internal for e in f.events if e.cost is not None
    ]
    return fn, event


def _line_of(name: str, text: str) -> int:
    lines = (TRIAL_PROGRAMS / f"{name}.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_loop_is_named_with_what_it_walks_over_and_the_fix_that_fits(runs, name):
    text, iterations, walk, construct, wrong = CASES[name]
    fn, event = _costed(_program(runs, name)["before"][0])
    loop = event.cost.loops[0]
    assert (loop.line, loop.iterations) == (_line_of(name, text), iterations), loop
    assert loop.walk == walk, loop
    (advice,) = [a for a in fn.advice if a.kind == "unrolled_loop"]
    assert f"{name}.py:{loop.line}" in advice.fix and construct in advice.fix, advice.fix
    assert wrong not in advice.fix, advice.fix


@pytest.mark.parametrize("name", UNDER_GRAD)
def test_a_loop_under_grad_counts_both_passes(runs, name):
    """The backward pass records the loop's lines again: the loop is found from the forward
    pass's repeats, and its equations are both passes' (most of the program)."""
    _, event = _costed(runs[name]["before"][0])
    loop = event.cost.loops[0]
    assert loop.eqns >= 0.8 * event.cost.eqns, (loop, event.cost.eqns)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_fix_applied_keeps_the_results_traces_once_and_shrinks_the_program(runs, name):
    got = _program(runs, name)
    (before, out), (after, fixed_out) = got["before"], got["after"]
    np.testing.assert_allclose(fixed_out, out, rtol=1e-4, atol=1e-6)
    fn, event = _costed(after)
    assert fn.traces == 1 and fn.compiles == 1
    assert not [a for a in fn.advice if a.kind == "unrolled_loop"]
    assert event.cost.eqns < 0.5 * _costed(before)[1].cost.eqns


def test_levels_of_another_shape_are_no_repeats(runs):
    """An image pyramid runs the same lines 8 times, each level half the size of the last:
    no scan can run them, and none is advised."""
    fn, event = _costed(runs["h_neg_image_pyramid"]["before"][0])
    assert not [x for x in event.cost.loops if x.iterations >= 4], event.cost.loops
    assert not [a for a in fn.advice if a.kind == "unrolled_loop"]


def test_a_compile_with_no_trace_of_its_own_is_read(runs):
    """A jit traced inside another trace and compiled later (a library's own jit, as
    ``diffrax.diffeqsolve``'s) has no trace event of its own: its program is read at the
    compile, from the frame JAX compiles it in."""
    report, _ = runs["h_library_jit_nested"]["before"]
    (solve,) = [f for f in report.functions if f.name == "solve"]
    (event,) = [e for e in solve.events if e.compiled]
    assert event.cost is not None
    assert event.cost.loops[0].line == _line_of("h_library_jit_nested", "for _ in range")


def test_a_diffrax_solve_in_the_users_filter_jit_is_read(runs):
    """``diffeqsolve``'s own ``eqx.filter_jit``, traced inside the user's: the issue's
    3.6 s compile that showed ``cost: null``."""
    report, _ = _program(runs, "h_diffrax_solve")["before"]
    (solve,) = [f for f in report.functions if f.name == "solve"]
    (event,) = [e for e in solve.events if e.compiled]
    assert event.cost is not None and event.cost.eqns > 0
