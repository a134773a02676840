"""Programs jitlens' authors had not seen, run as their users run them.

Each test pins a defect found by running a public example (or a program written to
break jitlens) under ``jitlens run`` and comparing with a counter inside the jitted
body and with plain ``python``. The programs are in ``tests/trial_programs/``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import pathlib
import re
from typing import Any

import pytest

PROGRAMS = pathlib.Path(__file__).parent / "trial_programs"


def _truth(fork_python, program: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """The program's ``TRUTH`` line, run in a fork after ``import jax`` (each program starts
    its own tracking before it imports the library that binds ``jax.jit``), under
    ``fast_compile.py`` (XLA's cheapest compile: the same traces, fixes and outputs)."""
    argv = [str(PROGRAMS / "fast_compile.py"), str(PROGRAMS / program), *args]
    proc = fork_python(argv, cwd=PROGRAMS, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])


@pytest.fixture(scope="module")
def keras_split(fork_python) -> dict:
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed")
    return _truth(fork_python, "keras_validation_split.py", env={"KERAS_BACKEND": "jax"})


@pytest.mark.xdist_group("trial_keras_split")  # its module fixture runs once
def test_keras_validation_split_compiles_the_test_step_twice(keras_split: dict) -> None:
    # 600 samples, validation_split=0.2: 480 train (15 x 32), 120 validation (3 x 32 + 24)
    assert keras_split["before"]["train"]["traces"] == 1
    assert keras_split["before"]["test"]["traces"] == 2
    assert keras_split["before"]["test"]["fix"]


@pytest.mark.xdist_group("trial_keras_split")  # its module fixture runs once
def test_keras_validation_split_fix_removes_the_retrace(keras_split: dict) -> None:
    fix = keras_split["before"]["test"]["fix"]
    assert "validation_split" in fix  # the ragged batch is in the set the split cut off
    # the prescription, as the trial program applies it
    for code in ("`v = int(len(x) * 0.2) // 32 * 32`", "`t = (len(x) - v) // 32 * 32`"):
        assert code in fix, fix
    assert "`fit(x[:t], y[:t], validation_data=(x[t:t + v], y[t:t + v]))`" in fix, fix
    assert keras_split["after"]["train"]["traces"] == 1
    assert keras_split["after"]["test"]["traces"] == 1


@pytest.mark.xdist_group("trial_keras_split")  # its module fixture runs once
def test_keras_validation_data_s_ragged_batch_is_named_and_the_fix_works(keras_split: dict) -> None:
    # the test step's batches of fit(validation_data=...) are cut from validation_data, not x
    before, after = keras_split["data_before"], keras_split["data_after"]
    assert (before["train"]["traces"], before["test"]["traces"]) == (1, 2)
    assert before["test"]["path"] == "validation_data[0]"
    assert "multiple of `batch_size` (32)" in before["test"]["fix"]
    assert "do the same for the validation data" in before["test"]["fix"]
    assert (after["train"]["traces"], after["test"]["traces"]) == (1, 1)


@pytest.mark.xdist_group("trial_keras_split")  # its module fixture runs once
def test_keras_predict_then_predict_on_batch_is_named_and_the_fix_works(keras_split: dict) -> None:
    # once: 'Pass `data` as the same kind of value on every call', a name the user never had
    before, after = keras_split["mixed"]["before"], keras_split["mixed"]["after"]
    assert before["traces"] == 2
    assert before["fix"].startswith("Call one of them on this model: `predict(x, batch_size=B)`")
    assert "or `predict_on_batch(x)` on every batch" in before["fix"]
    assert after["traces"] == 1  # predict_on_batch on every batch
    assert after["outputs"] == before["outputs"]


@pytest.mark.xdist_group("trial_keras_split")  # its module fixture runs once
def test_keras_compile_again_per_learning_rate_is_named_and_the_fix_works(
    keras_split: dict,
) -> None:
    # once: "`keras: Sequential.fit train step` is a new jax.jit object", fixed by
    # `keras_Sequential_fit_train_step_jit = jax.jit(keras: Sequential.fit train step)`
    before, after = keras_split["recompile"]["before"], keras_split["recompile"]["after"]
    assert before["traces"] == before["jax_traces"] == 3
    assert before["path"] == "model.compile"
    assert "`model.compile` ran again" in before["message"]
    assert "set `model.optimizer.learning_rate = lr`" in before["fix"]
    assert "jax.jit(keras" not in before["fix"]
    assert after["traces"] == after["jax_traces"] == 1
    assert after["moved"] == before["moved"] == [True, False, True]  # the rate is in effect


@pytest.mark.xdist_group("trial_keras_split")  # its module fixture runs once
def test_keras_named_inputs_get_fixes_that_cut_each_array_of_the_dict(keras_split: dict) -> None:
    # once: "`n = len(x) // 16 * 16`, then `x[:n]`": len of a dict counts its keys
    before, after = keras_split["named"]["before"], keras_split["named"]["after"]
    assert (before["train"]["traces"], before["predict"]["traces"]) == (2, 2)
    assert before["train"]["path"].startswith("x['")
    assert "`x = {k: v[:n] for k, v in x.items()}`, `y = y[:n]`" in before["train"]["fix"]
    assert "`n = -len(next(iter(x.values()))) % 16`" in before["predict"]["fix"]
    assert (after["train"]["traces"], after["predict"]["traces"]) == (1, 1)  # the fixes applied
    assert after["predictions"] == before["predictions"]


def test_keras_steps_under_nnx_jit_are_the_users_rows_and_the_fix_works(fork_python) -> None:
    # KERAS_NNX_ENABLED=true: keras jits its steps with nnx.jit; jitlens once said "no
    # jitted function was called" (the steps were flax-internal rows)
    if importlib.util.find_spec("keras") is None or importlib.util.find_spec("flax") is None:
        pytest.skip("keras and flax are needed")
    truth = _truth(fork_python, "keras_nnx_fit.py")
    before, after = truth["before"], truth["after"]
    assert (before["name"], before["kind"]) == ("keras: Sequential.fit train step", "keras")
    assert before["traces"] == before["compiles"] == before["jax_compiles"] == 2
    assert "multiple of `batch_size` (16)" in before["fix"]
    assert after["traces"] == after["compiles"] == after["jax_compiles"] == 1


def _pmap_retrace() -> list:
    """A jit called at top level, then inside ``jax.pmap``: its second trace's reasons."""
    import jax
    import jax.numpy as jnp

    import jitlens

    traces = [0]
    with jitlens.track() as t:

        @jax.jit
        def inner(w, x):
            traces[0] += 1
            return jnp.tanh(w * x)

        inner(2.0, jnp.ones(3))
        jax.pmap(lambda x: inner(2.0, x))(jnp.ones((1, 3)))
    (row,) = [f for f in t.report().functions if f.name == "inner"]
    assert row.traces == traces[0] == 2
    # the retrace inside pmap (a second run of this helper adds a new-wrapper retrace first)
    retrace = [e for e in row.events if e.kind == "retrace"][-1]
    return list(retrace.reasons)


def test_a_jit_traced_again_inside_pmap_is_said_to_be_inside_pmap() -> None:
    # jax 0.10 runs pmap's body inside pmap's own jit: the enclosing trace is pmap, not a jit
    reasons = _pmap_retrace()
    nested = [r for r in reasons if "traced inside" in r.message]
    assert nested
    assert all("traced inside jax.pmap" in r.message for r in nested)


def test_pmaps_own_axis_env_and_mesh_are_not_blamed_on_the_users_config() -> None:
    reasons = _pmap_retrace()
    blamed = [r for r in reasons if r.kind == "config" and not r.expected]
    assert not blamed, [(r.path, r.fix) for r in blamed]
    assert not any("set_mesh" in r.fix or " at 0x" in r.message for r in reasons)
    assert all("traced inside jax.pmap" in r.message for r in reasons), reasons


class _JaxCompiles(logging.Handler):
    """JAX's own count of its compiles (``jax.log_compiles``), by the jitted name."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        m = re.match(r"Compiling jit\((\w+)\)", record.getMessage())
        if m:
            self.names.append(m.group(1))


@contextlib.contextmanager
def _jax_compiles():
    import jax

    logger, handler = logging.getLogger("jax"), _JaxCompiles()
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield handler.names
    finally:
        logger.removeHandler(handler)


def test_an_eager_lax_map_over_a_new_closure_per_call_is_reported_and_the_fix_works() -> None:
    """markean/aimz#275: ``lax.map`` outside jit over a closure made per call traces and
    compiles again on every call; jitlens once said "no jitted function was called"."""
    import jax
    import jax.numpy as jnp

    import jitlens

    traces = [0]

    def sample_forward(scale):
        def one(k):
            traces[0] += 1
            return jnp.sin(k) * scale

        return jax.lax.map(one, jnp.arange(3.0))

    with jitlens.track() as t, _jax_compiles() as compiled:
        bad = [float(sample_forward(1.0 + i).sum()) for i in range(3)]
    assert traces[0] == compiled.count("scan") == 3
    (row,) = [f for f in t.report().functions if not f.internal]
    assert (row.name, row.kind) == ("lax.map(one)", "lax")
    assert (row.traces, row.compiles) == (3, 3)
    reasons = [r for e in row.events if e.kind == "retrace" for r in e.reasons]
    assert len(reasons) == 2
    assert "`one` is a new function each time `sample_forward` is called" in reasons[0].message
    fix = reasons[0].fix
    assert fix.startswith("Put `@jax.jit` on `sample_forward` (") and not fix.endswith("…"), fix

    # the fix applied: one trace, one compile, the same numbers
    traces[0] = 0
    fixed_forward = jax.jit(sample_forward)
    with jitlens.track() as t, _jax_compiles() as compiled:
        fixed = [float(fixed_forward(1.0 + i).sum()) for i in range(3)]
    assert traces[0] == len(compiled) == 1
    assert fixed == bad
    rows = [f for f in t.report().functions if not f.internal]
    assert not [e for f in rows for e in f.events if e.kind == "retrace"]


def test_an_eager_lax_cond_over_new_branches_counts_every_compile_and_the_fix_works() -> None:
    """Both branches are traced per call; JAX's compile of ``cond`` is charged once per call
    (it once waited for the next helper's compile and lost the first)."""
    import jax

    import jitlens

    def pick(p, x):
        return jax.lax.cond(p, lambda v: v + 1, lambda v: v - 1, x)

    with jitlens.track() as t, _jax_compiles() as compiled:
        bad = [float(pick(i % 2 == 0, 1.0)) for i in range(3)]
    rows = [f for f in t.report().functions if not f.internal]
    assert sum(f.traces for f in rows) == 6  # two branches, three calls
    assert sum(f.compiles for f in rows) == compiled.count("cond") == 3
    (fix,) = {r.fix for f in rows for e in f.events for r in e.reasons}
    assert fix.startswith("Put `@jax.jit` on `pick` ("), fix
    fixed_pick = jax.jit(pick)  # the fix applied
    with _jax_compiles() as compiled:
        fixed = [float(fixed_pick(i % 2 == 0, 1.0)) for i in range(3)]
    assert compiled.count("pick") == fixed_pick._cache_size() == 1
    assert fixed == bad


def test_an_eager_while_loop_over_a_function_and_an_optimizer_gets_their_static_argnames() -> None:
    """optax's L-BFGS docs example: ``run_opt(params, fun, opt, ...)`` runs ``lax.while_loop``
    outside jit over closures made per call. The fix once said ``@jax.jit`` alone, which
    raises on ``fun`` and ``opt`` (a function and an optax transformation)."""
    import functools

    import jax
    import jax.numpy as jnp
    import optax

    import jitlens

    traces = [0]

    def run_opt(params, fun, opt, max_iter):
        def step(carry):
            traces[0] += 1
            i, p, s = carry
            updates, s = opt.update(jax.grad(fun)(p), s, p)
            return i + 1, optax.apply_updates(p, updates), s

        def continuing(carry):
            return carry[0] < max_iter

        return jax.lax.while_loop(continuing, step, (0, params, opt.init(params)))[1]

    def fun(p):
        return jnp.sum((p - 1.0) ** 2)

    opt = optax.sgd(0.1)
    with jitlens.track() as t:
        bad = [run_opt(jnp.zeros(3), fun, opt, 5) for _ in range(2)]
    rows = [f for f in t.report().functions if f.name == "lax.while_loop(step)"]
    assert sum(f.traces for f in rows) == traces[0] == 2
    (fix,) = {r.fix for f in rows for e in f.events for r in e.reasons}
    code = '`@functools.partial(jax.jit, static_argnames=("fun", "opt"))` on `run_opt`'
    assert fix.startswith("Put " + code), fix
    with pytest.raises(TypeError):  # `@jax.jit` alone: what the fix once said
        jax.jit(run_opt)(jnp.zeros(3), fun, opt, 5)
    fixed_run = functools.partial(jax.jit, static_argnames=("fun", "opt"))(run_opt)
    traces[0] = 0
    with _jax_compiles() as compiled:
        fixed = [fixed_run(jnp.zeros(3), fun, opt, 5) for _ in range(2)]
    assert compiled.count("run_opt") == 1 and traces[0] == 1
    for a, b in zip(bad, fixed, strict=True):
        assert jnp.allclose(a, b)


@pytest.mark.parametrize(
    ("program", "culprit", "rebuilt", "library"),
    [
        ("flax_5548_optimizer_per_epoch.py", "dis_opt.tx", 3, "flax"),
        ("eqx_686_optimizer_per_trial.py", "opt", 2, "equinox"),
    ],
)
def test_an_optimizer_rebuilt_per_loop_is_named_and_the_fix_works(
    program: str, culprit: str, rebuilt: int, library: str, fork_python
) -> None:
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")
    import jitlens

    path = PROGRAMS / program
    found = jitlens.lint_source(path.read_text(), str(path))
    assert [f.code for f in found] == ["JL007"]
    assert "optax.adam(0.0" in found[0].message and "before the loop" in found[0].fix
    runs = _truth(fork_python, "run_modes.py", program, "False", "True")
    bad, fixed = runs["False"], runs["True"]
    assert bad["traces"] == bad["reported"] == rebuilt
    assert bad["paths"] == [culprit]
    if "fixes" in bad:  # google/flax#5548 was told "Expected once per optimizer build"
        assert [f.split(",")[0] for f in bad["fixes"]] == ["Build the optax transform once"]
    assert fixed["traces"] == fixed["reported"] == 1  # the fix applied: one compile
    assert fixed["losses"] == bad["losses"]


def test_a_register_dataclass_meta_field_is_named_by_its_attribute() -> None:
    import dataclasses
    import functools

    import jax
    import jax.numpy as jnp

    import jitlens

    @functools.partial(jax.tree_util.register_dataclass, data_fields=["w"], meta_fields=["mode"])
    @dataclasses.dataclass
    class P:
        w: jax.Array
        mode: str

    with jitlens.track() as t:

        @jax.jit
        def f(p, x):
            return p.w * x if p.mode == "mul" else p.w + x

        f(P(jnp.ones(2), "mul"), jnp.ones(2))
        f(P(jnp.ones(2), "add"), jnp.ones(2))
    (row,) = [r for r in t.report().functions if r.name == "f"]
    (reason,) = [r for e in row.events for r in e.reasons]
    assert (reason.path, reason.before, reason.after) == ("p.mode", "'mul'", "'add'")


def test_the_first_compile_of_a_jit_traced_inside_another_is_not_called_a_recompile() -> None:
    import jax
    import jax.numpy as jnp

    import jitlens

    traces = [0]
    with jitlens.track() as t:

        @jax.jit
        def inner(x):
            traces[0] += 1
            return jnp.tanh(x)

        @jax.jit
        def outer(x):
            return inner(x) * 2

        outer(jnp.ones(3))
        inner(jnp.ones(3))  # first compile of inner: its trace was made inside outer
    (row,) = [f for f in t.report().functions if f.name == "inner"]
    # one trace (inside outer) and one compile of its own (JAX's count of executables)
    assert (row.traces, row.compiles) == (traces[0], inner._cache_size()) == (1, 1)
    text = t.report().to_text(width=100)
    assert "more from a cached trace" not in text and "equal key compiled again" not in text, text
    assert "no retraces: no function compiled again." in text


@pytest.fixture(scope="module")
def blackjax_runs(fork_python) -> dict:
    """``trial_programs/blackjax_rebuilt.py``'s scenarios, each as written and with the fix
    jitlens printed applied, run once in a fork (they ran here, compiled at full cost)."""
    if importlib.util.find_spec("blackjax") is None:
        pytest.skip("blackjax is not installed")
    return _truth(fork_python, "blackjax_rebuilt.py")


@pytest.mark.xdist_group("trial_blackjax")  # its module fixture runs once
def test_a_blackjax_sgld_step_is_named_after_sgld_and_its_ragged_minibatch_counted(
    blackjax_runs: dict,
) -> None:
    """blackjax's SGMCMC docs: ``jax.jit(sgld.step)`` over minibatches, the last one smaller.
    The row was once named ``blackjax: gradients.step_fn`` (the module of the gradient
    estimator sgld's step calls), a name the user never wrote."""
    run = blackjax_runs["sgld_minibatches"]
    (row,) = run["rows"]
    assert row["name"] == "blackjax: sgld.step_fn"
    assert (row["calls"], row["traces"]) == (3, run["truth"]) == (3, 2)
    (r, _) = run["reasons"]
    assert (r["path"], r["kind"]) == ("minibatch[0]", "shape")


@pytest.mark.xdist_group("trial_blackjax")  # its module fixture runs once
def test_a_blackjax_kernel_rebuilt_per_step_size_gets_a_fix_in_blackjax_terms(
    blackjax_runs: dict,
) -> None:
    """``jax.jit(blackjax.hmc(..., step_size=s).step)`` per value: the fix once named
    `blackjax: hmc.step_fn` and `kernel_args`, names the user does not have."""
    run = blackjax_runs["hmc_step_per_step_size"]
    assert run["traces"] == run["compiled"] == 2  # rows: one per jit wrapper
    (reason,) = run["reasons"]
    assert reason["path"] == "hmc.step" and "(here `step_size`)" in reason["message"], reason
    fix = reason["fix"]
    assert "blackjax: " not in fix and "kernel_args" not in fix, fix
    assert "takes `step_size` as argument(s) and does what `hmc.step` does" in fix, fix
    # the fix applied, as printed (`kernel = ...build_kernel()` read from it): the kernel
    # built once, one jitted step taking step_size
    fixed = run["fixed"]
    assert fixed["compiled"] == 1
    assert fixed["traces"] == [1]
    assert fixed["same"]  # the same positions as the kernels built per step size


@pytest.mark.xdist_group("trial_blackjax")  # its module fixture runs once
def test_a_blackjax_step_passed_as_a_static_kernel_per_step_size_and_the_fix_works(
    blackjax_runs: dict,
) -> None:
    """blackjax's quickstart ``inference_loop(rng_key, kernel, ...)`` with ``kernel`` static,
    given ``hmc.step`` built per step size: once 'Define the function once at module level
    (`def step_fn(...)`)', blackjax's inner name."""
    run = blackjax_runs["static_kernel_per_step_size"]
    assert run["compiled"] == 2
    (reason,) = run["reasons"]
    message = reason["message"]
    assert "`kernel` is `hmc.step`" in message and "(here `step_size`)" in message
    assert reason["fix"].startswith(
        "Pass `step_size` to `loop` as argument(s) instead, and build "
    ), reason["fix"]
    # the fix applied: step_size an argument, the step built inside the jitted loop
    assert run["fixed"]["compiled"] == 1
    assert run["fixed"]["same"]  # allclose to the loop run per step size


@pytest.mark.xdist_group("trial_blackjax")  # its module fixture runs once
def test_a_blackjax_warmup_run_per_seed_gets_the_jit_your_call_fix(blackjax_runs: dict) -> None:
    """``window_adaptation(...).run`` per seed: blackjax jits a new function inside every
    ``run``; the fix once told the user to jit blackjax's own closure."""
    run = blackjax_runs["warmup_per_seed"]
    assert run["traces"] == run["jax_compiles"] == 2
    (reason,) = run["reasons"]
    assert reason["path"] == "warmup.run"
    fix = reason["fix"]
    assert "`run_jit = jax.jit(warmup.run, static_argnames=('num_steps',))`" in fix, fix
    # the fix applied: warmup built once, its run jitted once
    assert run["fixed"]["compiled"] == 1
    assert run["fixed"]["out"] == pytest.approx(run["bad"], rel=1e-5)


@pytest.mark.xdist_group("trial_blackjax")  # its module fixture runs once
def test_a_blackjax_vi_step_rebuilt_per_learning_rate_gets_the_build_under_jit_fix(
    blackjax_runs: dict,
) -> None:
    """No lower-level builder in the closure (meanfield VI over an optax optimizer): the fix
    builds the step inside one jitted function of the user's, the value an argument."""
    run = blackjax_runs["vi_per_learning_rate"]
    (reason,) = run["reasons"]
    assert reason["path"] == "vi.step"
    assert reason["fix"].startswith(
        "Jit one function of your own that takes the values you build "
    ), reason["fix"]
    assert "builds `vi.step` inside it with them" in reason["fix"], reason["fix"]
    # the fix applied: the learning rate an argument, the step built under jit
    assert run["fixed"]["compiled"] == 1
    assert run["fixed"]["same"]  # allclose to the steps built per learning rate


def test_an_eager_lax_map_over_a_new_closure_is_linted_and_the_fix_works() -> None:
    import jitlens

    path = PROGRAMS / "aimz_275_eager_map.py"
    source = path.read_text()
    found = jitlens.lint_source(source, str(path))
    assert [(f.code, source.splitlines()[f.line - 1].strip()) for f in found] == [
        ("JL008", "return jax.lax.map(one, jnp.arange(3.0))")
    ]
    fixed_at = source[: source.index("def sample_forward_fixed")].count("\n") + 1
    assert found[0].line < fixed_at  # the jitted twin is not flagged
    assert "`@jax.jit` on `def sample_forward`" in found[0].fix
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.run()
    assert result["traces"] == {"bad": 3, "fixed": 1}  # the fix applied: one trace
    assert result["fixed"] == result["bad"]


def test_the_nested_context_fix_applied_compiles_once() -> None:
    """'call it only inside jax.pmap': the same jit, called twice inside pmap, traces once."""
    import jax
    import jax.numpy as jnp

    import jitlens

    traces = [0]
    with jitlens.track() as t:

        @jax.jit
        def inside(w, x):
            traces[0] += 1
            return jnp.tanh(w * x)

        run = jax.pmap(lambda x: inside(2.0, x))
        outs = [run(jnp.ones((1, 3))) for _ in range(2)]
    (row,) = [f for f in t.report().functions if f.name == "inside"]
    assert row.traces == traces[0] == 1 and not [e for e in row.events if e.reasons]
    assert float(outs[0].sum()) == float(outs[1].sum())


@pytest.fixture(scope="module")
def numpyro_chains(fork_python) -> dict:
    if importlib.util.find_spec("numpyro") is None:
        pytest.skip("numpyro is not installed")
    return _truth(fork_python, "numpyro_chains.py")


@pytest.mark.xdist_group("trial_numpyro_chains")  # its module fixture runs once
def test_numpyro_parallel_chains_compile_is_the_sample_loops(numpyro_chains: dict) -> None:
    # the loop is traced inside numpyro's pmap over chains: pmap's compile is the loop's
    # (the row once said 0 compiles, 0.00 s lost, while each run compiled the pmap again)
    par = numpyro_chains["parallel"]
    assert par["traces"] == par["compiles"] == par["jax_compiles"] == 1, par


@pytest.mark.xdist_group("trial_numpyro_chains")  # its module fixture runs once
def test_numpyro_sequential_chains_get_the_vectorized_fix(numpyro_chains: dict) -> None:
    seq, vec = numpyro_chains["sequential"], numpyro_chains["vectorized"]
    assert seq["traces"] == seq["compiles"] == seq["jax_compiles"] == 2, seq
    # once: '_body_fn  identity_static: <function fori_collect.<locals>._body_fn> at 0x...'
    assert seq["evidence"] == [["MCMC.run", "an earlier build", "a new build"]], seq
    # once: 'draw what you need in one `run`', though the two compiles were in one run
    assert seq["fix"].startswith('Pass `chain_method="vectorized"` to `MCMC`'), seq["fix"]
    # the fix applied: one compile for both chains, the same draws
    assert vec["traces"] == vec["compiles"] == vec["jax_compiles"] == 1, vec
    assert vec["mean"] == pytest.approx(seq["mean"], rel=1e-5)


@pytest.mark.xdist_group("trial_numpyro_chains")  # its module fixture runs once
def test_numpyro_reruns_stepped_with_a_progress_bar_get_the_jit_model_args_fix(
    numpyro_chains: dict,
) -> None:
    # once: "(also with `jit_model_args=True`)" and "draw what you need in one `run`", while
    # with a progress bar (numpyro's default) jit_model_args=True makes the second run free
    before, after = numpyro_chains["rerun"]["before"], numpyro_chains["rerun"]["after"]
    assert before["rows"] == ["numpyro: MCMC sample step (NUTS)"], before
    assert before["traces"] == before["jax_compiles"] == 2, before
    assert "without `jit_model_args=True`" in before["message"]
    assert before["fix"].startswith("Pass `jit_model_args=True` to `MCMC(...)`")
    assert after["traces"] == after["jax_compiles"] == 1, after  # the fix applied
    assert after["mean"] == pytest.approx(before["mean"], rel=1e-5)


@pytest.mark.xdist_group("trial_numpyro_chains")  # its module fixture runs once
def test_numpyro_s_own_state_flipping_weak_type_is_not_blamed_on_the_user(
    numpyro_chains: dict,
) -> None:
    # once: 'Give `val[0].num_steps` one type on every call ... `jnp.asarray(value, jnp.int32)`':
    # `val` is numpyro's loop state, which no user code passes
    before, after = numpyro_chains["hmc"]["before"], numpyro_chains["hmc"]["after"]
    assert before["traces"] == before["jax_compiles"] == 2, before
    assert before["path"] == "val[0].num_steps"
    assert before["fix"].startswith("Nothing in your model causes it. Pass `progress_bar=False`")
    assert after["traces"] == after["jax_compiles"] == 1, after  # the fix applied
    assert after["mean"] == pytest.approx(before["mean"], rel=1e-5)


@pytest.mark.xdist_group("trial_numpyro_chains")  # its module fixture runs once
def test_numpyro_predictive_called_per_key_is_reported_and_the_fix_works(
    numpyro_chains: dict,
) -> None:
    """numpyro's ``Predictive`` maps the model with ``lax.map`` outside jit, over a function
    it builds per call: every call traces the model and compiles again; jitlens once said
    "no jitted function was called"."""
    before, after = numpyro_chains["predictive"]["before"], numpyro_chains["predictive"]["after"]
    assert before["truth"] == before["jax_compiles"] == 3
    (row,) = before["rows"]
    assert row["name"] == "numpyro: Predictive.__call__"
    assert (row["traces"], row["compiles"]) == (3, 3)
    (fix,) = before["fixes"]
    assert fix.startswith("Jit the call once, before the loop: `pred_jit = jax.jit(pred)`"), fix
    # the fix applied
    assert after["truth"] == after["compiled"] == 1
    assert after["out"] == pytest.approx(before["out"])


@pytest.mark.xdist_group("trial_numpyro_chains")  # its module fixture runs once
def test_a_jit_of_svi_update_per_epoch_is_fixed_in_the_users_spelling(
    numpyro_chains: dict,
) -> None:
    # once: 'e.g. numpyro_SVI_update_jit = jax.jit(numpyro: SVI.update) at module level'
    before, after = numpyro_chains["svi"]["before"], numpyro_chains["svi"]["after"]
    assert before["rows"] == ["numpyro: SVI.update"], before
    assert before["traces"] == before["jax_compiles"] == 2, before
    assert before["path"] == "svi.update"
    assert before["message"].startswith("`jax.jit(svi.update)` is a new jax.jit object")
    assert "`update_jit = jax.jit(svi.update)`" in before["fix"], before["fix"]
    assert "numpyro:" not in before["fix"]
    assert after["traces"] == after["jax_compiles"] == 1, after  # the fix applied
    assert after["losses"] == before["losses"]


#: PlasmaControl/DESC#1191's shape: a jitted method with ``self`` static, the object rebuilt
#: per outer iteration, holding arrays; ``{cls}`` is the class as the program writes it.
_PROJECTION_PROGRAM = """
import dataclasses
import jax
import jax.numpy as jnp

TRACES = [0]


{cls}
    def compute(self, x):
        TRACES[0] += 1
        return (self.w * x).sum()


compute = jax.jit(Projection.compute, static_argnums=0)
x = jnp.arange(4.0)
OUT = [float(compute({make}, x)) for _ in range(3)]
"""

_PROJECTIONS = {
    # built from a size: no constructor takes its attributes back
    "class": (
        "class Projection:\n    def __init__(self, n):\n        self.n = n\n"
        "        self.w = jnp.ones(n)\n",
        "Projection(4)",
        "register_pytree_node_class",
    ),
    # built from its attributes: the constructor rebuilds it
    "keyword class": (
        "class Projection:\n    def __init__(self, w, n):\n        self.w, self.n = w, n\n",
        "Projection(jnp.ones(4), 4)",
        "register_pytree_node_class",
    ),
    # a dataclass without __eq__, one field static
    "dataclass": (
        "@dataclasses.dataclass(eq=False)\nclass Projection:\n    n: int\n"
        "    w: jax.Array = dataclasses.field(default_factory=lambda: jnp.ones(4))\n",
        "Projection(4)",
        "register_dataclass(",
    ),
    # a dataclass of arrays only: the decorator alone
    "array dataclass": (
        "@dataclasses.dataclass(eq=False)\nclass Projection:\n    w: jax.Array\n",
        "Projection(jnp.ones(4))",
        "@jax.tree_util.register_dataclass",
    ),
}


def _apply_pytree_fix(source: str, fix: str) -> str:
    """``fix`` applied to ``source`` as it says: the decorator above the class (and the lines
    of code after the ``fix:`` line into its body), or the call after the class; then the
    ``static_argnums=0`` it says to drop, dropped."""
    first, *code = fix.split("\n")
    head = "class Projection:" if "\nclass Projection:" in source else None
    decorator = re.search(r"`(@[\w.]+)`", first)
    if decorator is not None:
        at = source.index("@dataclasses" if "@dataclasses" in source else "class Projection")
        source = f"{source[:at]}{decorator.group(1)}\n{source[at:]}"
    call = re.search(r"After the class: `(.*?)`", first)
    if call is not None:
        source = source.replace(
            "\n    def compute", f"\n\n{call.group(1)}\n\n\nclass _:\n    def compute"
        )
        source = source.replace("Projection.compute", "_.compute")
    if code:
        body = "".join(f"    {line}\n" for line in code)
        source = source.replace(f"{head}\n", f"{head}\n{body}", 1)
    dropped = re.search(r"drop `([^`]*)`", first)
    assert dropped is not None, first
    return source.replace(f", {dropped.group(1)}", "")


@pytest.mark.parametrize("shape", sorted(_PROJECTIONS))
def test_a_static_self_holding_arrays_gets_the_pytree_fix(shape: str) -> None:
    """A static instance holding a jax Array cannot be hashed as a frozen dataclass (jit raises
    TypeError): the fix registers the class as a pytree (arrays traced, the rest static) in
    the shortest form that works for it (the dataclass decorator, a call naming its fields, or
    ``register_pytree_node_class`` with its two methods as a few short lines) and drops the
    static, naming the option written. Applied to the program as printed: one trace."""
    import jitlens

    cls, make, register = _PROJECTIONS[shape]
    source = _PROJECTION_PROGRAM.format(cls=cls, make=make)
    before: dict[str, Any] = {}
    with jitlens.track() as t:
        exec(compile(source, "projection.py", "exec"), before)
    assert before["TRACES"][0] == 3
    fixes = [r.fix for f in t.report().functions for e in f.events for r in e.reasons]
    assert fixes and all("frozen dataclass" not in f for f in fixes), fixes
    assert register in fixes[0] and "drop `static_argnums=0`" in fixes[0], fixes[0]
    assert all(len(line) <= 100 for line in fixes[0].split("\n")[1:]), fixes[0]
    shown = [line.strip() for line in t.report().to_text(width=120).splitlines()]
    assert all(line.strip() in shown for line in fixes[0].split("\n")[1:]), shown
    fixed = _apply_pytree_fix(source, fixes[0])
    after: dict[str, Any] = {}
    exec(compile(fixed, "projection_fixed.py", "exec"), after)
    assert after["TRACES"][0] == 1 and after["OUT"] == before["OUT"], fixed


def test_every_leaf_placed_otherwise_gets_a_fix_for_the_whole_argument() -> None:
    import jax
    import jax.numpy as jnp

    import jitlens

    def run(params: dict, restored) -> tuple[int, list[float], Any]:
        out = []
        with jitlens.track() as t:
            step = jax.jit(lambda p: jax.tree_util.tree_map(lambda v: v * 0.5, p))
            for i in range(2):
                params = step(params if i == 0 else restored(params))
                out.append(float(sum(v.sum() for v in params.values())))
        return step._cache_size(), out, t.report()

    def restore(p: dict) -> dict:  # what a checkpoint restore hands back: committed arrays
        return jax.device_put(p, jax.devices()[0])

    compiles, bad, report = run({"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}, restore)
    assert compiles == 2
    one_leaf = {"w": jnp.ones((2, 2)), "b": jax.device_put(jnp.zeros(2), jax.devices()[0])}
    assert run(one_leaf, restore)[0] == 2  # a fix naming one leaf: compiles again
    fixes = [r.fix for f in report.functions for e in f.events for r in e.reasons]
    codes = [c for f in fixes for c in re.findall(r"`([^`]*= jax\.device_put\([^`]*)`", f)]
    assert codes == ["p = jax.device_put(p, jax.devices()[0])"], fixes  # one fix, the argument
    scope = {"jax": jax, "p": {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}}
    exec(codes[0], scope)  # the printed fix, applied before the loop
    fixed_compiles, fixed, _ = run(scope["p"], restore)
    assert fixed_compiles == 1 and fixed == bad
    from flax import nnx  # an nnx model's Variables keep their in-place fix, one each

    model, forward = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.jit(lambda m, x: m(x))
    with jitlens.track() as t:
        forward(model, jnp.ones(2))
        model.kernel[...], model.bias[...] = restore([model.kernel[...], model.bias[...]])
        forward(model, jnp.ones(2))
    fixes = [r.fix for f in t.report().functions for e in f.events for r in e.reasons]
    assert len(fixes) == 2 and all(".set_value(jax.device_put(m." in f for f in fixes), fixes


def test_a_linen_train_state_rebuilt_per_epoch_gets_fixes_that_work(fork_python) -> None:
    # `TrainState.create(apply_fn=MLP().apply, tx=optax.adam(1e-3))` per epoch: jitlens once
    # said to store `type(obj).apply` (apply_fn(variables, x) then breaks) and called the new
    # optimizer "expected once per optimizer build", with an nnx-only `[...] = lr`
    if importlib.util.find_spec("flax") is None or importlib.util.find_spec("optax") is None:
        pytest.skip("flax and optax are needed")
    modes = ("fixed", "sweep_fixed", "bad", "sweep_bad")  # the fixes applied, then as written
    runs = _truth(fork_python, "run_modes.py", "linen_trainstate_per_epoch.py", *modes)
    fixed, sweep_fixed, bad, sweep_bad = (runs[m] for m in modes)
    assert bad["traces"] == bad["reported"] == 3
    # ... and `train_step` as a new closure when `fixed`'s wrapper of the same code is still
    # remembered (it is weakly held: whether it is depends on when the collector ran)
    assert bad["paths"] in (
        ["state.apply_fn", "state.tx"],
        ["state.apply_fn", "state.tx", "train_step"],
    )
    assert bad["kinds"].pop("train_step", "closure") == "closure"
    assert bad["kinds"] == {"state.apply_fn": "bound_method_arg", "state.tx": "optax_rebuilt"}
    assert "type(obj)" not in bad["fixes"]["state.apply_fn"]
    assert bad["fixes"]["state.apply_fn"].startswith("Build the `MLP` object once, before the loop")
    assert bad["fixes"]["state.tx"].startswith("Build the optax transform once, before the loop")
    assert "per run" not in bad["fixes"]["state.tx"]  # the same hyper-parameters: no sweep
    # the two builds print alike but for their address: say what made them, not a row of closures
    assert "made by chain()> at 0x" in bad["shown"]["state.tx"], bad["shown"]
    assert "<function" not in bad["shown"]["state.tx"]
    assert fixed["traces"] == fixed["reported"] == 1
    assert fixed["losses"] == bad["losses"]
    # a sweep of learning rates: the sweep half of the fix, as printed for a linen state
    assert sweep_bad["traces"] == 3 and sweep_bad["kinds"]["state.tx"] == "optax"
    assert sweep_bad["fixes"]["state.tx"].startswith("Expected once per optimizer build")
    setter = "`state.opt_state.hyperparams['learning_rate'] = jnp.float32(lr)`"
    assert setter in sweep_bad["fixes"]["state.tx"], sweep_bad["fixes"]
    assert sweep_fixed["traces"] == sweep_fixed["reported"] == 1
    assert sweep_fixed["losses"] == pytest.approx(sweep_bad["losses"], rel=1e-5)


def test_a_mode_s_first_compile_says_why_it_is_not_lost() -> None:
    # an eval step called once in train mode, then after model.eval(): "retraced 1x, 0.00 s
    # lost" stood above "retrace #1, 0.43 s" with nothing to say why the seconds were not lost
    import jax.numpy as jnp
    from flax import nnx

    import jitlens

    traces = [0]

    @nnx.jit
    def eval_step(model, x):
        traces[0] += 1
        return model(x).sum()

    model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
    x = jnp.ones((1, 2))
    with jitlens.track() as t:
        eval_step(model, x)
        model.eval()
        eval_step(model, x)
        eval_step(model, x)
    row = t.stats(eval_step)
    assert traces[0] == row.traces == 2 and row.seconds_lost == 0.0
    text = " ".join(str(t.report()).split())  # as one line: the header wraps
    assert (
        "retraced 1x, 0.00 s lost, 1 expected (a first compile the program needs, not counted)"
        in text
    )
