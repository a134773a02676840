"""blackjax's samplers as its docs use them, each built anew per value (a step size, a seed, a
learning rate, a minibatch), run under ``jitlens.track()`` as written, then with jitlens'
printed fix applied; read by tests/test_trial_programs.py (``blackjax_runs``), which ran them
in its worker: here, in a fork of the suite's server under ``fast_compile.py``, their compiles
cost a third of the CPU (issue 48). Prints one ``TRUTH`` JSON line: per scenario, jitlens'
rows and reasons, the program's own counts (body runs, JAX's compiles and cache sizes) and
whether the fixed run's outputs equal the run as written.
"""

import functools
import importlib
import json
import re

import blackjax
import jax
import jax.numpy as jnp
import optax
from jax_compile_log import compiles

import jitlens


def logdensity(x):
    return -0.5 * jnp.sum(x**2)


def _user_rows(t) -> list:
    return [f for f in t.report().functions if not f.internal]


def _reasons(rows) -> list:
    return [r for f in rows for e in f.events for r in e.reasons]


def _reason(r) -> dict:
    return {"path": r.path, "kind": str(r.kind), "message": r.message, "fix": r.fix}


def _equal(a, b, **tolerance) -> bool:
    return all(bool(jnp.allclose(x, y, **tolerance)) for x, y in zip(a, b, strict=True))


def sgld_minibatches() -> dict:
    """blackjax's SGMCMC docs: ``jax.jit(sgld.step)`` over minibatches, the last one smaller."""
    traces = [0]

    def loglik(w, batch):
        traces[0] += 1
        x, y = batch
        return -0.5 * jnp.sum((x @ w - y) ** 2)

    grad_fn = blackjax.sgmcmc.gradients.grad_estimator(lambda w: -0.5 * jnp.sum(w**2), loglik, 9)
    xs, ys = jnp.ones((9, 2)), jnp.ones(9)
    with jitlens.track() as t:
        step = jax.jit(blackjax.sgld(grad_fn).step)
        w = jnp.zeros(2)
        for i in (0, 4, 8):  # minibatches of 4, 4, then 1
            w = step(jax.random.key(i), w, (xs[i : i + 4], ys[i : i + 4]), 1e-3)
    rows = _user_rows(t)
    return {
        "rows": [{"name": f.name, "calls": f.calls, "traces": f.traces} for f in rows],
        "truth": traces[0],
        "reasons": [_reason(r) for r in _reasons(rows)],
    }


def hmc_step_per_step_size() -> dict:
    """``jax.jit(blackjax.hmc(..., step_size=s).step)`` per value; then the fix as printed."""
    bad, jitted = [], []
    with jitlens.track() as t:
        for step_size in (0.1, 0.2):
            hmc = blackjax.hmc(
                logdensity,
                step_size=step_size,
                inverse_mass_matrix=jnp.ones(2),
                num_integration_steps=2,
            )
            jitted.append(jax.jit(hmc.step))
            bad.append(jitted[-1](jax.random.key(0), hmc.init(jnp.ones(2)))[0].position)
    rows = _user_rows(t)  # one per jit wrapper
    reasons = _reasons(rows)
    out = {
        "traces": sum(f.traces for f in rows),
        "compiled": sum(j._cache_size() for j in jitted),
        "reasons": [_reason(r) for r in reasons],
    }
    # the fix applied, as printed: the kernel built once, one jitted step taking step_size
    module, _, factory = re.search(r"`kernel = ([\w.]+)\(\)`", reasons[0].fix)[1].rpartition(".")
    kernel = getattr(importlib.import_module(module), factory)()
    step = jax.jit(
        lambda rng_key, state, step_size: kernel(
            rng_key, state, logdensity, step_size, jnp.ones(2), 2
        )
    )
    state = blackjax.hmc.init(jnp.ones(2), logdensity)
    with jitlens.track() as t:
        fixed = [step(jax.random.key(0), state, s)[0].position for s in (0.1, 0.2)]
    out["fixed"] = {
        "compiled": step._cache_size(),
        "traces": [r.traces for r in _user_rows(t)],
        "same": all(bool((a == b).all()) for a, b in zip(fixed, bad, strict=True)),
    }
    return out


def build(step_size):
    return blackjax.hmc(logdensity, step_size, jnp.ones(2), num_integration_steps=2)


def loop(rng_key, kernel, initial_state):
    def one_step(state, key):
        state, _ = kernel(key, state)
        return state, state.position

    return jax.lax.scan(one_step, initial_state, jax.random.split(rng_key, 3))[1]


def static_kernel_per_step_size() -> dict:
    """The quickstart's ``inference_loop(rng_key, kernel, ...)``, ``kernel`` static, given
    ``hmc.step`` built per step size; then the fix: the step built inside the jitted loop."""
    bad = []
    with jitlens.track() as t:
        inference_loop = functools.partial(jax.jit, static_argnums=1)(loop)
        for step_size in (0.1, 0.2):
            hmc = build(step_size)
            bad.append(inference_loop(jax.random.key(0), hmc.step, hmc.init(jnp.ones(2))))
    out = {
        "compiled": inference_loop._cache_size(),
        "reasons": [_reason(r) for r in _reasons(t.report().functions)],
    }

    @jax.jit
    def fixed_loop(rng_key, step_size, initial_state):
        return loop(rng_key, build(step_size).step, initial_state)

    state = build(0.1).init(jnp.ones(2))
    fixed = [fixed_loop(jax.random.key(0), s, state) for s in (0.1, 0.2)]
    out["fixed"] = {"compiled": fixed_loop._cache_size(), "same": _equal(fixed, bad)}
    return out


def warmup_per_seed() -> dict:
    """``window_adaptation(...).run`` per seed; then warmup built once, its run jitted once."""

    def adapt(seed):
        warmup = blackjax.window_adaptation(blackjax.hmc, logdensity, num_integration_steps=2)
        (_, params), _ = warmup.run(jax.random.key(seed), jnp.ones(2), num_steps=3)
        return float(params["step_size"])

    with jitlens.track() as t, compiles() as compiled:
        bad = [adapt(seed) for seed in range(2)]
    rows = _user_rows(t)
    out = {
        "traces": sum(f.traces for f in rows),
        "jax_compiles": compiled.count("scan"),
        "reasons": [_reason(r) for r in _reasons(rows)],
        "bad": bad,
    }
    warmup = blackjax.window_adaptation(blackjax.hmc, logdensity, num_integration_steps=2)
    run_jit = jax.jit(warmup.run, static_argnames=("num_steps",))
    fixed = [
        float(run_jit(jax.random.key(seed), jnp.ones(2), num_steps=3)[0][1]["step_size"])
        for seed in range(2)
    ]
    out["fixed"] = {"compiled": run_jit._cache_size(), "out": fixed}
    return out


def vi_per_learning_rate() -> dict:
    """Meanfield VI over an optax optimizer per learning rate (no lower-level builder in the
    closure); then the fix: the learning rate an argument, the step built under jit."""
    bad = []
    with jitlens.track() as t:
        for lr in (0.1, 0.2):
            vi = blackjax.meanfield_vi(logdensity, optax.sgd(lr), num_samples=2)
            bad.append(jax.jit(vi.step)(jax.random.key(0), vi.init(jnp.ones(2)))[0].mu)
    out = {"reasons": [_reason(r) for r in _reasons(t.report().functions)]}

    def one_step(key, state, lr):
        return blackjax.meanfield_vi(logdensity, optax.sgd(lr), num_samples=2).step(key, state)

    step = jax.jit(one_step)
    state = blackjax.meanfield_vi(logdensity, optax.sgd(0.1), num_samples=2).init(jnp.ones(2))
    fixed = [step(jax.random.key(0), state, lr)[0].mu for lr in (0.1, 0.2)]
    out["fixed"] = {"compiled": step._cache_size(), "same": _equal(fixed, bad)}
    return out


SCENARIOS = (
    sgld_minibatches,
    hmc_step_per_step_size,
    static_kernel_per_step_size,
    warmup_per_seed,
    vi_per_learning_rate,
)

if __name__ == "__main__":
    print("TRUTH " + json.dumps({s.__name__: s() for s in SCENARIOS}))
