"""blackjax: NUTS rebuilt with new ``step_size`` / ``inverse_mass_matrix`` (adapted values, one
set per run), its ``step`` closed over by a ``one_step`` jitted anew inside the
``inference_loop`` that runs ``lax.scan`` (blackjax's quickstart loop, a held-out report's
pattern).

Each run builds a new kernel, so a new ``one_step``: compiled again. jitlens once said to
create ``one_step`` once outside the function that runs ``lax.scan``, which would freeze the
first kernel. The fix names the values and blackjax's own builder: ``kernel =
blackjax.mcmc.nuts.build_kernel()`` once, ``step_size`` and ``inverse_mass_matrix`` passed
as arguments of ``inference_loop``, jitted once. ``run(fixed=True)`` applies it: one
compile, the same samples.
"""

import functools

import blackjax
import jax
import jax.numpy as jnp
import jax.scipy.stats as stats

LIBRARIES = ("blackjax",)
T = [0]


def logdensity(x):
    return jnp.sum(stats.norm.logpdf(x["loc"], 0.0, 1.0))


def inference_loop(rng_key, kernel, initial_state, num_samples):
    @jax.jit
    def one_step(state, rng_key):
        T[0] += 1
        state, _ = kernel(rng_key, state)
        return state, state

    keys = jax.random.split(rng_key, num_samples)
    _, states = jax.lax.scan(one_step, initial_state, keys)
    return states


kernel = blackjax.mcmc.nuts.build_kernel()  # the printed fix


@functools.partial(jax.jit, static_argnames=("num_samples",))
def fixed_loop(rng_key, initial_state, num_samples, step_size, imm):
    @jax.jit
    def one_step(state, rng_key):
        T[0] += 1
        state, _ = kernel(rng_key, state, logdensity, step_size, imm)
        return state, state

    keys = jax.random.split(rng_key, num_samples)
    _, states = jax.lax.scan(one_step, initial_state, keys)
    return states


def run(fixed: bool) -> dict:
    T[0] = 0
    out = []
    for i, step_size in enumerate((0.1, 0.3)):
        imm = jnp.array([1.0, 1.0]) * (i + 1)
        nuts = blackjax.nuts(logdensity, step_size, imm)
        state = nuts.init({"loc": jnp.ones(2)})
        if fixed:
            states = fixed_loop(jax.random.key(0), state, 3, step_size, imm)
        else:
            states = inference_loop(jax.random.key(0), nuts.step, state, 3)
        out.append([round(float(v), 4) for v in states.position["loc"].ravel()])
    return {"truth": T[0], "out": out, "function": "one_step"}
