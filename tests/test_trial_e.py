"""Trial E: public example programs of many libraries (Flax NNX, Equinox, optax, jax's
examples, numpyro, keras 3, blackjax) nobody on the team had run jitlens on, shrunk to CPU toys
that keep their structure and the recompile they hit, or none (negative controls). Sources in
each program's docstring, ``tests/trial_programs/e_*``.

Each program counts its own traces (the truth jitlens' counts must equal) and returns its
outputs; ``trial_runs`` runs them all as written in one process (a fork of the suite's server,
under ``fast_compile.py``: XLA's cheapest compile) and all with jitlens' printed fix applied in
another: the fix must remove the retraces and keep the outputs.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
from trial_programs.fast_compile import FLAGS

from conftest import FAST_XLA, check_trial_counts, trial_runs

PROGRAMS = pathlib.Path(__file__).parent / "trial_programs"
NAMES = sorted(p.stem for p in PROGRAMS.glob("e_*.py"))
#: ``fast_compile.py``'s flags, for a fresh interpreter (a fork is run under the script).
FAST_XLA_FLAGS = " ".join([os.environ.get("XLA_FLAGS", ""), FAST_XLA, *FLAGS]).strip()

#: One worker runs the module: its drivers run once.
pytestmark = pytest.mark.xdist_group("trial_e")


def fast(fork_python):
    """``fork_python`` that runs each script under ``fast_compile.py`` (XLA's cheapest
    compile: the programs' traces, culprits, fixes and rounded outputs are the same)."""

    def run(args: list[str], **kwargs: object):
        return fork_python([str(PROGRAMS / "fast_compile.py"), *args], **kwargs)

    return run


@pytest.fixture(scope="module")
def trial(fork_python) -> dict:
    return trial_runs(
        NAMES, ("equinox", "optax", "flax", "keras", "numpyro", "blackjax"), fast(fork_python)
    )


def _reasons(run: dict, fn: str) -> list[dict]:
    return run["rows"][fn]["reasons"]


@pytest.mark.parametrize("program", NAMES)
def test_counts_equal_the_programs_own_and_the_fix_keeps_its_outputs(
    trial: dict, program: str
) -> None:
    check_trial_counts(trial, program)


def test_evaluate_s_ragged_batch_gets_a_fix_that_keeps_the_reported_loss(trial: dict) -> None:
    # once fit's fix: "pad `x` and `y` up to a multiple (with `sample_weight` 0 on the
    # padding)": applied, evaluate's mse went 0.6213 -> 0.3883 (keras divides by the padded
    # count); run(fixed) applies the divisor batch size printed now: the same loss
    run = trial["before"]["e_keras_predict_batch_sizes"]
    (r, _) = _reasons(run, "evaluate test step")
    assert (r["path"], r["before"], r["after"]) == ("x", "f32[16,4]", "f32[4,4]")
    assert "`evaluate(x, y, batch_size=10)`" in r["fix"], r["fix"]
    assert "the number of samples (20)" in r["fix"], r["fix"]
    assert "with `sample_weight` 0 on the padding" not in r["fix"], r["fix"]
    assert trial["after"]["e_keras_predict_batch_sizes"]["out"][0] == run["out"][0]


def test_a_run_on_a_second_data_set_is_a_compile_the_program_needs(trial: dict) -> None:
    # once: "Draw what you need in one `run` (a larger `num_samples`, or `num_chains`) instead
    # of calling `run` again": no draw from the first data set serves the second
    run = trial["before"]["e_numpyro_nuts_new_data"]
    (r,) = _reasons(run, "NUTS")
    assert r["message"].startswith("`MCMC.run` ran on new data (`y` f32[8] -> f32[12])"), r
    assert r["fix"].startswith("Expected once per data set: nothing to fix."), r["fix"]
    assert r["expected"] and run["rows"]["NUTS"]["lost"] == 0.0, r


def test_a_variable_the_model_sets_and_one_step_pops_gets_the_pop_fix(trial: dict) -> None:
    # flax's NNX VAE: the encoder sets `self.kl_loss = Loss(...)`, train_step pops it, forward
    # leaves it. Once: "Create `model.encoder.kl_loss` in `__init__` ... and only update its
    # values": applied, the call after train_step's pop raised AttributeError
    (r,) = _reasons(trial["before"]["e_nnx_vae_sown_loss"], "train_step")
    assert (r["path"], r["kind"], r["before"], r["after"]) == (
        "model.encoder.kl_loss", "graph_structure", "absent", "Loss"
    )  # fmt: skip
    assert r["fix"].startswith("Pop `model.encoder.kl_loss` before each jitted function"), r
    assert "`nnx.pop(model, Loss)`" in r["fix"], r["fix"]
    assert trial["after"]["e_nnx_vae_sown_loss"]["truth"] == {"train_step": 1, "forward": 1}


@pytest.mark.xdist_group("as_a_user")  # no fixture: a group of its own, as_a_user_trial_e
def test_as_a_user_runs_it_the_output_and_exit_status_are_the_programs(
    fork_python,
) -> None:
    """``python prog.py``, ``jitlens run prog.py`` and ``JITLENS=1 python prog.py``: the same
    stdout and exit status; jitlens' words on stderr, the pop fix in the program's names."""
    prog = str(PROGRAMS / "e_nnx_vae_sown_loss.py")
    # all three with XLA's cheapest compile (the same flags: the same numbers printed)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "NO_COLOR": "1", "COLUMNS": "200"}
    env.update(XLA_FLAGS=FAST_XLA_FLAGS)
    env.pop("JITLENS", None)
    # plain python: what the program prints and returns (a fork: its start-up is not tested)
    plain = fast(fork_python)([prog], env={"NO_COLOR": "1", "COLUMNS": "200"})
    cli = [sys.executable, "-m", "jitlens", "run", prog]
    under = subprocess.run(cli, capture_output=True, text=True, env=env)
    auto = subprocess.run(
        [sys.executable, prog], capture_output=True, text=True, env={**env, "JITLENS": "1"}
    )
    assert plain.returncode == under.returncode == auto.returncode == 0, under.stderr[-2000:]
    assert plain.stdout == under.stdout == auto.stdout
    for proc in (under, auto):
        text = " ".join(proc.stderr.split())
        assert "train_step retraced 1x" in text, text
        assert "model.encoder.kl_loss graph_structure" in text, text
        assert "(`nnx.pop(model, Loss)`" in text, text


def test_blackjax_s_kernel_fix_is_printed_whole(trial: dict) -> None:
    # once cut at 240 characters on the terminal and in the JSON: "... does what `nuts.step`
    # does (blackjax/base.py:203) with them …" (run(fixed) applies it whole)
    (r,) = _reasons(trial["before"]["e_blackjax_nuts_loop"], "step_fn")
    assert r["fix"].endswith("pass `inverse_mass_matrix`, `step_size` on every call."), r
    assert "…" not in r["fix"], r["fix"]
