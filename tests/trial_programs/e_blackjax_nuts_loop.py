"""blackjax's README quickstart (blackjax-devs/blackjax, README.md "Quickstart"):
``nuts = blackjax.nuts(logdensity_fn, step_size, inverse_mass_matrix)``, ``initial_state =
nuts.init(initial_position)``, ``step = jax.jit(nuts.step)`` and a Python loop of ``rng_key,
sample_key = jax.random.split(rng_key)`` and ``state, _ = step(sample_key, state)``; then the
step size tuned by hand, a new kernel per step size in a sweep, the jitted step built again for
each (a new function object: the same code compiled again). Shrunk to a 2-d Gaussian, 5
steps per step size.

``run(fixed=True)`` applies jitlens' fix: ``kernel = blackjax.mcmc.nuts.build_kernel()`` built
once and one jitted function of the program's own taking ``step_size`` and
``inverse_mass_matrix`` as arguments: one compile for both step sizes, the same samples.
"""

import blackjax
import jax
import jax.numpy as jnp
import jax.scipy.stats as stats

T = [0]


def logdensity_fn(x):
    T[0] += 1  # at trace time only, and by init (eagerly)
    return jnp.sum(stats.norm.logpdf(x["loc"], 0.0, 1.0))


def run(fixed: bool = False) -> dict:
    inverse_mass_matrix = jnp.array([1.0, 1.0])
    out, traces = [], 0
    for step_size in (1e-1, 3e-1):
        nuts = blackjax.nuts(logdensity_fn, step_size, inverse_mass_matrix)
        state = nuts.init({"loc": jnp.ones(2)})
        step = jax.jit(nuts.step) if not fixed else None
        rng_key = jax.random.key(0)
        before = T[0]
        for _ in range(5):
            rng_key, sample_key = jax.random.split(rng_key)
            if fixed:
                state, _ = fixed_step(sample_key, state, step_size, inverse_mass_matrix)
            else:
                state, _ = step(sample_key, state)
        traces += T[0] > before  # the log density ran: the step was traced
        out.append([round(float(v), 4) for v in state.position["loc"]])
    return {"truth": int(traces), "out": out, "function": "step_fn" if not fixed else "fixed_step"}


kernel = blackjax.mcmc.nuts.build_kernel()


@jax.jit
def fixed_step(rng_key, state, step_size, inverse_mass_matrix):
    return kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix)


if __name__ == "__main__":
    print(run())
