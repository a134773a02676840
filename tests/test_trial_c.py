"""Trial C: public programs nobody on the team had run jitlens on, shrunk to CPU toys that keep
their recompile pattern (sources in each program's docstring, ``tests/trial_programs/c_*``).

Each program counts its own traces (a counter in the jitted body: the truth jitlens' counts
must equal) and returns its outputs. ``trial_c_driver.py`` runs them all as written in one
fresh process and all with jitlens' printed fix applied in another: the fix must remove the
retraces and keep the outputs.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import trial_runs

#: One worker runs the module: its drivers (every program, before and after its fix) run once.
pytestmark = pytest.mark.xdist_group("trial_c")

PROGRAMS = pathlib.Path(__file__).parent / "trial_programs"
NAMES = sorted(p.stem for p in PROGRAMS.glob("c_*.py"))


@pytest.fixture(scope="module")
def trial(fork_python) -> dict:
    return trial_runs(NAMES, ("equinox", "optax", "flax", "keras"), fork_python)


def _reasons(run: dict, fn: str) -> list[dict]:
    return run["rows"][fn]["reasons"]


@pytest.mark.parametrize("program", NAMES)
def test_counts_equal_the_programs_own_and_the_fix_keeps_its_outputs(
    trial: dict, program: str
) -> None:
    for scenario in ("before", "after"):
        run = trial[scenario][program]
        for fn, truth in run["truth"].items():
            assert run["rows"][fn]["traces"] == truth, (scenario, fn, run["rows"][fn])
    before, after = trial["before"][program], trial["after"][program]
    if before["same_out"]:  # else the fix changes what it computes by design (its docstring)
        assert after["out"] == before["out"]
    for fn, row in after["rows"].items():  # applied, the fix leaves no avoidable retrace
        assert row["lost"] == 0.0, (fn, row)
        assert all(r["expected"] for r in row["reasons"]), (fn, row["reasons"])


def test_a_keyword_call_after_a_positional_one_is_named(trial: dict) -> None:
    # jax-ml/jax#523, #595
    (r,) = _reasons(trial["before"]["c_jax_523_keyword_then_positional"], "update")
    assert (r["path"], r["kind"], r["before"], r["after"]) == (
        "lr", "signature", "positional", "keyword"
    )  # fmt: skip
    assert r["message"].startswith("argument `lr` was passed by keyword, before by position;")
    assert r["fix"].startswith("Pass `lr` the same way on every call")
    assert trial["after"]["c_jax_523_keyword_then_positional"]["truth"] == {"update": 1}


def test_an_int_step_given_to_filter_jit_is_named_per_value(trial: dict) -> None:
    reasons = _reasons(trial["before"]["c_eqx_python_int_step"], "make_step")
    assert [(r["path"], r["before"], r["after"]) for r in reasons] == [
        ("step", "0", "1"), ("step", "1", "2"), ("step", "2", "3")
    ]  # fmt: skip
    assert "`jnp.asarray(step)` at the call" in reasons[0]["fix"]


def test_inference_mode_s_compile_is_expected_and_nothing_lost(trial: dict) -> None:
    run = trial["before"]["c_eqx_stateful_inference_mode"]
    (r,) = _reasons(run, "evaluate")
    assert (r["path"], r["before"], r["after"], r["expected"]) == (
        "model.norm.inference", "False", "True", True
    )  # fmt: skip
    assert run["rows"]["evaluate"]["lost"] == 0.0


def test_a_growing_decode_prefix_is_named_per_length(trial: dict) -> None:
    reasons = _reasons(trial["before"]["c_flax_decode_growing_prefix"], "next_token")
    assert [(r["path"], r["kind"], r["after"]) for r in reasons] == [
        ("tokens", "shape", f"i32[1,{n}]") for n in (3, 4, 5)
    ]
    # the decode loop's fix (run(fixed) applies it); once only "pad to the largest shape"
    fix = reasons[0]["fix"]
    assert fix.startswith("`tokens` grows by one on axis 1 per call (a decode prefix)"), fix
    assert "`tokens.at[:, pos].set(t)`" in fix and "`jnp.asarray(pos)`" in fix, fix


def test_an_optimizer_passed_as_a_static_argument_gets_a_fix_in_the_programs_names(
    trial: dict,
) -> None:
    # once: "... set `optimizer.opt_state.hyperparams['learning_rate'] = jnp.float32(lr)`":
    # an nnx.Optimizer this program does not have (optax's meta-learning example)
    reasons = _reasons(trial["before"]["c_optax_meta_learning_rate"], "inner_step")
    assert [r["path"] for r in reasons] == ["opt", "opt"]
    fix = reasons[0]["fix"]
    assert "`opt = optax.inject_hyperparams(optax.sgd)(learning_rate=1e-3)` once" in fix, fix
    assert "`opt_state.hyperparams['learning_rate'] = jnp.float32(lr)`" in fix, fix
    assert "the state `opt.init(...)` returns" in fix and "optimizer." not in fix, fix


def test_kernel_lsq_s_rebuilt_jits_get_fixes_in_the_programs_names(trial: dict) -> None:
    # once: "pass ... 1 positional value(s) as arguments" and "`def step_fn(...)`"
    run = trial["before"]["c_jax_kernel_lsq_sweep"]
    gram = _reasons(run, "gram")
    assert [r["kind"] for r in gram] == ["new_function"] * 2
    # once: "pass `kernel` as arguments (list them in static_argnames if they must stay static)"
    fix = gram[0]["fix"]
    assert fix.startswith("Jit `gram` once with `kernel` static (a function cannot be traced)"), fix
    assert "`gram_jit = jax.jit(gram, static_argnames='kernel')`" in fix, fix  # as run(fixed)
    for fn in ("update", "predict"):
        fix = _reasons(run, fn)[0]["fix"]
        assert f"`def {fn}(...)` at module level, or `{fn}_jit = jax.jit(...)`" in fix, fix
        assert "step_fn" not in fix


def test_a_static_length_s_second_value_is_expected_in_fitting_words(trial: dict) -> None:
    # jax's hmm_em: once "1 expected (a mode's first compile, ...)" for a static length
    run = trial["before"]["c_jax_hmm_em"]
    (r,) = _reasons(run, "sample")
    assert (r["path"], r["before"], r["after"], r["expected"]) == ("length", "4", "8", True)
    assert _reasons(run, "EM") == []  # fori_loop's count is traced: one compile
    text = " ".join(run["text"].split())
    assert "1 expected (a first compile the program needs, not counted)" in text, text
    assert "mode" not in text


def test_python_int_steps_to_jax_jit_are_no_retrace(trial: dict) -> None:
    # jax's differentially_private_sgd: next(itercount) is traced (weakly typed)
    run = trial["before"]["c_jax_dpsgd"]
    assert run["rows"]["private_update"]["traces"] == 1
    assert _reasons(run, "private_update") == []


@pytest.mark.xdist_group("as_a_user")  # no fixture: a group of its own, as_a_user_trial_c
def test_as_a_user_runs_it_the_output_and_exit_status_are_the_programs(
    fork_python,
) -> None:
    """``python prog.py``, ``jitlens run prog.py`` and ``JITLENS=1 python prog.py``: the same
    stdout and exit status; jitlens' words on stderr, the fix in the program's names."""
    prog = str(PROGRAMS / "c_optax_meta_learning_rate.py")
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("JITLENS", None)
    # plain python: what the program prints and returns (a fork: its start-up is not tested)
    plain = fork_python([prog], env={"NO_COLOR": "1", "COLUMNS": "200"})
    cli = [sys.executable, "-m", "jitlens", "run", prog]
    under = subprocess.run(cli, capture_output=True, text=True, env=env)
    auto = subprocess.run(
        [sys.executable, prog], capture_output=True, text=True, env={**env, "JITLENS": "1"}
    )
    assert plain.returncode == under.returncode == auto.returncode == 0, under.stderr[-2000:]
    assert plain.stdout == under.stdout == auto.stdout
    for proc in (under, auto):
        text = " ".join(proc.stderr.split())
        assert "inner_step retraced 2x" in text, text
        assert "`opt = optax.inject_hyperparams(optax.sgd)(learning_rate=1e-3)`" in text, text


LATE = """
import json, sys
from jax import jit  # bound before tracking starts, as in a notebook's first cell
import jitlens
sys.path.insert(0, ".")
import c_jax_kernel_lsq_sweep as prog
with jitlens.track() as t:
    got = prog.run(False)
fixes = [r.fix for f in t.report().functions if f.name == "gram" for e in f.events for r in e.reasons]
print("TRUTH " + json.dumps({"truth": got["truth"]["gram"], "fixes": fixes}))
"""


def test_a_partial_jitted_before_tracking_started_keeps_what_it_binds_in_the_fix(
    fork_python,
) -> None:
    # `from jax import jit` then `jitlens.track()`: jax.jit is seen through JAX's monitoring
    # only; the row kept `gram` alone and the fix said `gram_jit = jax.jit(gram)`, which
    # drops `kernel` (jax's examples/kernel_lsq.py). A fork of the server that imported JAX
    # (not jitlens): `jit` is bound before jitlens is imported, as in a fresh process.
    proc = fork_python(["-c", LATE], cwd=PROGRAMS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    assert got["truth"] == 3 and len(got["fixes"]) == 2, got
    for fix in got["fixes"]:
        assert fix.startswith("Jit `gram` once with `kernel` static"), fix
        assert "jax.jit(gram)" not in fix


def test_a_static_self_rebuilt_per_call_gets_the_frozen_dataclass_fix(trial: dict) -> None:
    # JAX's FAQ, "How to use jit with methods?", strategy 2
    reasons = _reasons(trial["before"]["c_jax_faq_static_self"], "calc")
    assert [(r["path"], r["kind"]) for r in reasons] == [("self", "identity_static")] * 2
    assert "`CustomClass` defines no `__eq__`" in reasons[0]["message"]
    assert reasons[0]["fix"].startswith("Make `CustomClass` a frozen dataclass")


def test_a_custom_train_step_s_ragged_batch_gets_a_fix_without_validation_data(
    trial: dict,
) -> None:
    # keras.io "Customizing what happens in fit() with JAX": no validation data in this fit
    run = trial["before"]["c_keras_custom_train_step"]
    reasons = _reasons(run, "fit train step")
    assert [(r["path"], r["before"], r["after"]) for r in reasons] == [
        ("x", "f32[32,4]", "f32[4,4]"), ("y", "f32[32,1]", "f32[4,1]")
    ]  # fmt: skip
    fix = reasons[0]["fix"]
    assert "multiple of `batch_size` (32)" in fix and "`n = len(x) // 32 * 32`" in fix, fix
    assert "validation" not in fix, fix


def test_a_python_number_in_a_solver_state_gets_fixes_that_match_the_fed_back_output(
    trial: dict,
) -> None:
    # google/jaxopt#451: init_state's Python 0 against update's float32 output; once typed
    # `jnp.int32` (the old dtype) and offered "write the literal in that type (`1.0`)"
    by_kind = {
        (r["path"], r["kind"]): r
        for r in _reasons(trial["before"]["c_jaxopt_451_weak_state"], "update")
    }
    # the Python 0 against the float32 output: one change, said once (once a dtype reason too)
    assert ("state['value']", "dtype") not in by_kind, by_kind
    value = by_kind[("state['value']", "weak_type")]
    assert (value["before"], value["after"]) == ("i32[]{weak}", "f32[]")
    weak = value["fix"]
    assert "`state['value'] = jnp.asarray(state['value'], jnp.float32)`" in weak, weak
    # weak on both sides (`1` -> `1 * 0.25`): a float literal is the same key, offered
    stepsize = by_kind[("state['stepsize']", "dtype")]
    assert stepsize["after"] == "f32[]{weak}" and "(`1.0`, not `1`)" in stepsize["fix"]
