"""blackjax's quickstart (docs/examples/quickstart.md), tiny and offline: three samplers.

The quickstart builds an HMC, a NUTS and a MALA sampler and runs each through
an ``inference_loop`` that jits a new ``one_step`` over the sampler's kernel:
three different functions, each compiled once on purpose, not a rebuilt wrapper.
``hmc_kernel = jax.jit(hmc.step)`` is traced inside ``one_step``;
``blackjax.util.run_inference_algorithm`` jits a scan over the user's sampler.
"""

import _truth  # (JAX's own trace events: the ground truth)
import blackjax
import blackjax.util
import jax
import jax.numpy as jnp

BODY_RUNS = {"one_step": 0}


def logdensity(x):
    return -0.5 * jnp.sum(x["loc"] ** 2) - 0.5 * jnp.sum(x["scale"] ** 2)


def inference_loop(rng_key, kernel, initial_state, num_samples):
    @jax.jit
    def one_step(state, rng_key):
        BODY_RUNS["one_step"] += 1
        state, _ = kernel(rng_key, state)
        return state, state

    keys = jax.random.split(rng_key, num_samples)
    _, states = jax.lax.scan(one_step, initial_state, keys)
    return states


position = {"loc": jnp.ones(2), "scale": jnp.ones(2)}
hmc = blackjax.hmc(logdensity, 1e-1, jnp.ones(4), 3)
hmc_kernel = jax.jit(hmc.step)
hmc_states = inference_loop(jax.random.PRNGKey(0), hmc_kernel, hmc.init(position), 5)
nuts = blackjax.nuts(logdensity, 1e-1, jnp.ones(4), max_num_doublings=2)
nuts_states = inference_loop(jax.random.PRNGKey(1), jax.jit(nuts.step), nuts.init(position), 5)
mala = blackjax.mala(logdensity, 1e-1)
mala_states = inference_loop(jax.random.PRNGKey(2), jax.jit(mala.step), mala.init(position), 5)
# blackjax's own loop: a jit blackjax makes around the user's logdensity
_, (ria_states, _info) = blackjax.util.run_inference_algorithm(
    jax.random.PRNGKey(3), hmc, 5, initial_position=position
)
for name, states in (
    ("hmc", hmc_states),
    ("nuts", nuts_states),
    ("mala", mala_states),
    ("run_inference_algorithm", ria_states),
):
    print(name, jax.tree.map(lambda a: a.shape, states.position))
_truth.report(body_runs=BODY_RUNS)
