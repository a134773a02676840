"""Trial D: public programs and bug reports nobody on the team had run jitlens on, mostly
Flax NNX, shrunk to CPU toys that keep their recompile pattern (sources in each program's
docstring, ``tests/trial_programs/d_*``).

Each program counts its own traces (a counter in the jitted body: the truth jitlens' counts
must equal) and returns its outputs. ``trial_c_driver.py`` runs them all as written in one
fresh process and all with jitlens' printed fix applied in another: the fix must remove the
retraces and keep the outputs. Programs that never retrace are negative controls: no reason.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import check_trial_counts, trial_runs

PROGRAMS = pathlib.Path(__file__).parent / "trial_programs"
NAMES = sorted(p.stem for p in PROGRAMS.glob("d_*.py"))


#: One worker runs the module: its drivers run once.
pytestmark = pytest.mark.xdist_group("trial_d")


@pytest.fixture(scope="module")
def trial(fork_python) -> dict:
    return trial_runs(NAMES, ("equinox", "optax", "flax"), fork_python)


def _reasons(run: dict, fn: str) -> list[dict]:
    return run["rows"][fn]["reasons"]


@pytest.mark.parametrize("program", NAMES)
def test_counts_equal_the_programs_own_and_the_fix_keeps_its_outputs(
    trial: dict, program: str
) -> None:
    check_trial_counts(trial, program)


def test_a_lambda_given_to_a_library_module_by_keyword_gets_a_keyword_fix(trial: dict) -> None:
    # once: "build every `MLP` from that one object: `MLP(activation, ...)`": eqx.nn.MLP's
    # first parameter is in_size; the program passes `activation=` by keyword
    reasons = _reasons(trial["before"]["d_eqx_mlp_lambda_activation"], "loss")
    assert [(r["path"], r["kind"]) for r in reasons] == [
        ("model.activation", "identity_static")
    ] * 2
    fix = reasons[0]["fix"]
    assert "`eqx.nn.MLP(..., activation=activation)`" in fix, fix
    assert "MLP(activation, ...)" not in fix, fix


@pytest.mark.xdist_group("as_a_user")  # no fixture: a group of its own, as_a_user_trial_d
def test_as_a_user_runs_it_the_output_and_exit_status_are_the_programs(
    fork_python,
) -> None:
    """``python prog.py``, ``jitlens run prog.py`` and ``JITLENS=1 python prog.py``: the same
    stdout and exit status; jitlens' words on stderr name the attribute inside the model."""
    prog = str(PROGRAMS / "d_nnx_float_attr_annealing.py")
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
        assert "train_step retraced 3x" in text, text
        assert "model.blocks[1].temperature static_value (in 3 retraces)" in text, text
        assert "`self.temperature = nnx.Variable(jnp.asarray(1.0))`" in text, text


def test_an_injected_learning_rate_is_named_as_the_program_writes_it(trial: dict) -> None:
    # optax#577's workaround under nnx.Optimizer; once the evidence said
    # `optimizer.opt_state.hyperparams.learning_rate` (a dict key as an attribute: the path
    # did not run) while the fix beside it wrote `...hyperparams['learning_rate']`
    (r,) = _reasons(trial["before"]["d_nnx_inject_hyperparams_float"], "train_step")
    path = "optimizer.opt_state.hyperparams['learning_rate']"
    assert (r["path"], r["kind"], r["before"], r["after"]) == (
        path, "weak_type", "f32[]", "f32[]{weak}"
    )  # fmt: skip
    assert r["message"].startswith(f"`{path}` changed weak type"), r["message"]
    assert f"`{path}[...] = jnp.asarray(value, jnp.float32)`" in r["fix"], r["fix"]


def test_a_log_kept_on_the_model_is_not_said_stale_nor_copied_per_step(trial: dict) -> None:
    # once: "served the compile made for [] (no retrace, stale result)" with the fix
    # `m.history = copy.copy(m.history)`: the step never reads the list, and the copy would
    # compile once per step. jitlens cannot see what the jitted code reads: it says "if".
    before = " ".join(trial["before"]["d_nnx_loss_history_on_model"]["text"].split())
    assert "`model.history` was changed in place after its compile" in before, before
    assert "stale result" not in before, before
    assert "jitted code that reads it still sees [] (stale)" in before, before
    assert "If only code outside the jit uses it (a log), keep it out of the call's" in before
    after = trial["after"]["d_nnx_loss_history_on_model"]["text"]
    assert "stale" not in after, after


def test_an_eager_cond_s_branch_rebuilt_per_iteration_is_named_and_the_caller_jitted(
    trial: dict,
) -> None:
    run = trial["before"]["d_jax_eager_cond_in_loop"]
    assert run["rows"]["grow"]["reasons"] == []  # one function object: traced once
    reasons = _reasons(run, "shrink")
    assert [(r["kind"], r["path"]) for r in reasons] == [("new_function", "lax.cond(shrink)")] * 3
    assert reasons[0]["fix"].startswith("Put `@jax.jit` on `cond_step`"), reasons[0]["fix"]


def test_a_param_replaced_by_an_array_is_the_program_s_assignment_not_the_layer_s(
    trial: dict,
) -> None:
    # once: "Expected once per configuration: nnx.Linear makes `model.head.kernel` from the
    # arguments it is built with, not your code": the program's assignment made it, and the
    # kernel silently stopped being a Param
    (r,) = _reasons(trial["before"]["d_nnx_head_reset_array"], "loss")
    assert (r["path"], r["kind"], r["before"], r["after"]) == (
        "model.head.kernel", "graph_structure", "Param", "f32[4,2]"
    )  # fmt: skip
    assert r["message"].startswith("`model.head.kernel` was a Variable (nnx.Param) and is now")
    assert "`model.head.kernel[...] = new_value`" in r["fix"], r["fix"]
    assert "nnx.Linear makes" not in r["fix"] and not r["expected"], r
    before = trial["before"]["d_nnx_head_reset_array"]["out"]
    after = trial["after"]["d_nnx_head_reset_array"]["out"]
    assert before[-1] is False and after[-1] is True  # the bug: no Param any more; fixed: Param
    assert after[:-1] == before[:-1]
