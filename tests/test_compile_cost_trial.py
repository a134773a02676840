"""Where compile time goes, on programs written after public code nobody here had seen
(``tests/trial_programs/g_*.py``): each names the line that makes its program big, the
advice applied to a copy of the program shrinks it as predicted with the same results,
and the negative controls get nothing.

One subprocess runs every program (``trial_g_driver.py``: sizes just above the advice's
thresholds, every compile read): the assertions are on lines, trip counts, equation
counts and advice kinds, never on seconds; the seconds are in
``benchmarks/compile_cost_trial.py``.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest

import jitlens
from conftest import TRIAL_PROGRAMS, run_python
from jitlens._core.advice import Environment, advise
from jitlens._core.advice_cost import LOOP_MIN_ITERATIONS, SCAN_BODY_FACTOR, compile_cost
from jitlens._core.cost import Eqn, find_loops, period
from jitlens._core.kinds import AdviceKind
from jitlens._core.report import FunctionReport

pytestmark = pytest.mark.xdist_group("compile_cost_trial")  # one driver run for the module

#: Program -> (the text of the line its unrolled loop starts on, the trip count the driver sets).
LOOPS = {
    "g_transformer_layers_loop": ('for blk in params["blocks"]:', 8),
    "g_ode_rk4_unrolled": ("for _ in range(STEPS):", 10),
    "g_stack_small_ops": ("cols = jnp.stack([feature(x, k) for k in range(K)]", 12),
    "g_cond_ladder": ("for k in range(REGIMES):", 10),
    "g_vmap_newton_inner_loop": ("for _ in range(ITERS):", 10),
}
#: Program -> the name each captured constant is found under.
CONSTS = {
    "g_numpy_table_closure": ["basis"],
    "g_params_closed_over": [f"weights[{i}][0]" for i in range(4)],
    "g_literal_table_in_body": [""],  # made inside the function: no variable holds it
    "g_big_static_table": [""],  # made from a static tuple while tracing
}
NEGATIVE = ("g_neg_scanned_layers", "g_neg_small_closure")
OTHER = ("g_pytree_many_leaves",)
#: A compile long enough for the advice, whatever this machine's speed (the rules then
#: decide on the program's make-up alone).
SECONDS = 3.0
CACHE_OFF = Environment(run_seconds=60.0, cache_dir=None, cache_enabled=True, min_compile_seconds=1)


@pytest.fixture(scope="module")
def runs() -> dict:
    names = [*LOOPS, *CONSTS, *NEGATIVE, *OTHER]
    proc = run_python([str(TRIAL_PROGRAMS / "trial_g_driver.py"), *names], cwd=TRIAL_PROGRAMS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "JitlensInternalWarning" not in proc.stderr, proc.stderr[-3000:]
    got = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    return {
        name: {ver: (jitlens.Report.from_dict(rep), out) for ver, (rep, out) in versions.items()}
        for name, versions in got.items()
    }


def _fn(report: jitlens.Report) -> FunctionReport:
    (fn,) = [f for f in report.functions if not f.internal]
    return fn


def _line_of(name: str, text: str) -> int:
    lines = (TRIAL_PROGRAMS / f"{name}.py").read_text().splitlines()
    return next(i for i, s in enumerate(lines, 1) if text in s)


def _as_if(fn: FunctionReport, seconds: float) -> FunctionReport:
    """``fn`` with its compiles taking ``seconds``: the rules on the program's make-up alone."""
    events = tuple(
        dataclasses.replace(e, trace_seconds=0.0, lower_seconds=0.0, compile_seconds=seconds)
        for e in fn.events
    )
    return dataclasses.replace(fn, events=events)


@pytest.mark.parametrize("name", list(LOOPS))
def test_the_unrolled_loop_is_named_at_its_line_with_its_trip_count(runs, name):
    text, n = LOOPS[name]
    cost = _fn(runs[name]["before"][0]).events[0].cost
    assert cost is not None
    loop = cost.loops[0]
    assert (pathlib.Path(loop.file).name, loop.line) == (f"{name}.py", _line_of(name, text))
    assert loop.iterations == n
    # the whole body is under the loop: a cond's branches, a vmapped function's own loop
    assert loop.eqns >= 0.9 * cost.eqns


@pytest.mark.parametrize("name", list(LOOPS))
def test_the_loop_advice_comes_first_and_names_the_line(runs, name):
    fn = _as_if(_fn(runs[name]["before"][0]), SECONDS)
    top = advise(fn, None, CACHE_OFF)[0]
    assert top.kind == AdviceKind.UNROLLED_LOOP  # before the cache that saves the same seconds
    assert f"{name}.py:{_line_of(name, LOOPS[name][0])}" in top.fix


@pytest.mark.parametrize("name", list(LOOPS))
def test_the_advised_program_is_as_small_as_predicted_with_the_same_results(runs, name):
    (before, out_before), (after, out_after) = runs[name]["before"], runs[name]["after"]
    cost_before, cost_after = _fn(before).events[0].cost, _fn(after).events[0].cost
    loop = cost_before.loops[0]
    predicted = cost_before.eqns - loop.eqns + SCAN_BODY_FACTOR * loop.body_eqns
    assert cost_after.eqns <= predicted
    assert not [x for x in cost_after.loops if x.iterations >= LOOP_MIN_ITERATIONS]
    assert not compile_cost(_as_if(_fn(after), SECONDS))
    a, b = np.asarray(out_before), np.asarray(out_after)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * np.abs(a).max())


@pytest.mark.parametrize("name", list(CONSTS))
def test_captured_constants_are_read_and_named(runs, name):
    cost = _fn(runs[name]["before"][0]).events[0].cost
    assert cost is not None  # np.shape (a function) is no array: reading must not fail on it
    assert sorted(c.name for c in cost.consts) == sorted(CONSTS[name])
    assert all(c.nbytes >= 2**20 for c in cost.consts)


@pytest.mark.parametrize("name", list(CONSTS))
def test_one_constant_advice_per_variable_or_at_the_line_that_reads_it(runs, name):
    fn = _as_if(_fn(runs[name]["before"][0]), SECONDS)
    (advice,) = [a for a in advise(fn, None, CACHE_OFF) if a.kind == AdviceKind.CAPTURED_CONSTANT]
    root = CONSTS[name][0].partition("[")[0]
    if root:  # the whole list of weights passed at once, by the name the program uses
        assert f"pass `{root}` to `{fn.name.rpartition('.')[2]}`" in advice.fix
    else:
        line = _line_of(name, "return bank @ signal" if "literal" in name else "return t[i]")
        assert f"{name}.py:{line}" in advice.fix and "once, outside `" in advice.fix
        from jitlens._render.svg import program_size_html

        html = program_size_html(_fn(runs[name]["before"][0]).events[0])
        assert f"(read at {name}.py:{line})" in html
    (_, out_before), (after, out_after) = runs[name]["before"], runs[name]["after"]
    assert not _fn(after).events[0].cost.consts
    np.testing.assert_allclose(np.asarray(out_before), np.asarray(out_after), rtol=1e-5)


@pytest.mark.parametrize("name", NEGATIVE)
def test_negative_controls_get_no_compile_advice(runs, name):
    report = runs[name]["before"][0]
    sized = {AdviceKind.UNROLLED_LOOP, AdviceKind.CAPTURED_CONSTANT}
    for fn in report.functions:
        # as measured (a loaded machine may still advise the compile cache), and as if
        # each compile had taken seconds: nothing in the program's make-up to change
        assert not sized & {a.kind for a in fn.advice}
        assert not sized & {a.kind for a in compile_cost(_as_if(fn, SECONDS))}


def test_a_tree_map_over_many_leaves_is_named_at_the_user_line(runs):
    cost = _fn(runs["g_pytree_many_leaves"]["before"][0]).events[0].cost
    top = cost.lines[0]
    line = _line_of("g_pytree_many_leaves", "out = jax.tree.map(sgd_momentum")
    assert (top.line, top.eqns) == (line, cost.eqns)


def test_period_survives_a_first_iteration_of_another_shape():
    body = ["a", "b", "c", "d", "e"]
    first = ["z", "a", "b", "c", "d", "e", "f"]  # e.g. a carry that starts as a Python float
    seq = first + body * 20
    assert len(seq) // period(seq) == 21


@pytest.mark.parametrize("via", ["cond", "jit"])
def test_a_body_traced_apart_counts_under_the_loop_that_called_it(via):
    """JAX records a ``lax.cond`` branch's (or a nested jit's) traceback from where it traced
    the body; flatten puts the caller's frames back, so the loop around the call sees the
    body's equations."""
    import jax
    from jax import lax

    from jitlens._compat import jaxpr_api
    from jitlens._track.cost import _loop_at

    inner = jax.jit(lambda v: jax.numpy.sin(v) * 2.0)

    def ladder(x):
        for k in range(LOOP_MIN_ITERATIONS):
            if via == "cond":
                x = lax.cond(x.sum() > k, lambda v: jax.numpy.sin(v) * 2.0, lambda v: v, x)
            else:
                x = inner(x) + k
        return x

    closed = jax.make_jaxpr(ladder)(jax.numpy.ones(3))
    flat, _, _ = jaxpr_api.flatten(closed, (), lambda f: True if f == __file__ else None)
    body = [e for e in flat if e.primitive == "sin"]
    assert len(body) == LOOP_MIN_ITERATIONS
    assert all(e.stack and e.stack[0][2].endswith("ladder") for e in body)
    (loop,) = find_loops([Eqn(e.primitive, e.weight, e.stack) for e in flat], _loop_at)
    assert loop.iterations == LOOP_MIN_ITERATIONS and loop.eqns == len(flat)


def test_an_array_built_while_tracing_counts_the_trace_it_took_a_captured_one_does_not():
    from jitlens._core.advice_cost import TRACE_SECONDS_PER_EQN, built_saving
    from jitlens._core.cost import CompileCost, ConstCost
    from jitlens._core.report import Event

    def fn(const: ConstCost) -> FunctionReport:
        cost = CompileCost(28, consts=(const,), const_bytes=const.nbytes)
        event = Event(
            0, "trace", "m.py:20", "(x)", trace_seconds=12.0, lower_seconds=0.5,
            compile_seconds=0.5, compiled=True, cost=cost,
        )  # fmt: skip
        return FunctionReport(
            "f", "f", "jax.jit", "m.py:1", "m.py:20", 5, 1, 1, 4, 0, 12.0, 0.0, 1.0, events=(event,)
        )

    made = ConstCost("", (4_000_000,), "float32", 16_000_000, "m.py", 23)
    (a,) = compile_cost(fn(made))
    excess = 12.0 - TRACE_SECONDS_PER_EQN * 28
    assert built_saving(made.nbytes, fn(made).events[0].cost, 12.0) == pytest.approx(excess)
    assert excess < a.estimated_saving_seconds <= 13.0  # never more than the event's seconds
    assert "m.py:23" in a.message and "building it while tracing" in a.message
    captured = dataclasses.replace(made, name="table")
    (b,) = compile_cost(fn(captured))
    assert b.estimated_saving_seconds < 3.0  # its trace was someone else's Python


def test_the_trip_count_leaves_out_what_follows_the_loop_on_its_line():
    from jitlens._core.cost import trip_count

    body = ["sin", "mul", "add"]
    stacked = ["expand"] * 5 + ["concat"]  # jnp.stack([f(k) for k in range(5)]) on one line
    assert trip_count(body * 5 + stacked) == 5
    # a tail as long as the iterations: jax 0.9.2 expands each of K stacked columns
    assert trip_count(list(range(10)) * 8 + ["expand"] * 8 + ["concat"]) == 8
    assert trip_count(body * 48 + ["sin", "mul"]) == 49  # the last one short of its add
    assert trip_count(body * 48) == 48 and trip_count(list("abcdefgh")) == 1
