"""numpyro's examples, tiny and offline: the NUTS example (examples/ar2.py) and the VAE / SVI pattern.

``MCMC.run`` jits its sample loop around the user's model; ``SVI.run`` jits its
step; the VAE example jits the user's own epoch function around ``svi.update``,
and a user's ``jax.jit(svi.update)`` is called with keyword arguments. None of
them retraces but ``SVI.run`` called twice (a step jitted per run): one trace
each, equal to JAX's own events.
"""

import _truth  # (JAX's own trace events: the ground truth)
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

MODEL_RUNS = {"ar2": 0}


def ar2_vectorized(y):
    """examples/ar2.py's vectorized AR(2) model."""
    MODEL_RUNS["ar2"] += 1
    alpha_1 = numpyro.sample("alpha_1", dist.Normal(0.0, 1.0))
    alpha_2 = numpyro.sample("alpha_2", dist.Normal(0.0, 1.0))
    const = numpyro.sample("const", dist.Normal(0.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    mu = const + alpha_1 * y[1:-1] + alpha_2 * y[:-2]
    numpyro.sample("obs", dist.Normal(mu, sigma), obs=y[2:])


y = jnp.asarray(np.random.default_rng(0).normal(size=12))
mcmc = MCMC(NUTS(ar2_vectorized, max_tree_depth=3), num_warmup=5, num_samples=5, progress_bar=False)
mcmc.run(jax.random.PRNGKey(0), y=y)
print("ar2", sorted(mcmc.get_samples()))


def model(x, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0))
    numpyro.sample("obs", dist.Normal(w * x, 1.0), obs=y)


svi = SVI(model, AutoNormal(model), numpyro.optim.Adam(1e-2), Trace_ELBO())
x = jnp.ones(8)
state = svi.init(jax.random.PRNGKey(1), x, y=x)
# SVI.run jits a new step per run: the second run compiles again (same data, same shape)
for _ in range(2):
    svi.run(jax.random.PRNGKey(2), 2, x, y=x, progress_bar=True)
# the fix jitlens prints for it: jit svi.update once and step yourself
update = jax.jit(svi.update)
for _ in range(3):
    state, loss = update(state, x, y=x)


@jax.jit
def epoch_train(svi_state, batches):
    def body_fn(i, val):
        s, total = val
        s, batch_loss = svi.update(s, batches[i], y=batches[i])
        return s, total + batch_loss

    return jax.lax.fori_loop(0, batches.shape[0], body_fn, (svi_state, 0.0))


for _ in range(2):
    state, _loss = epoch_train(state, jnp.ones((2, 8)))
print("svi", sorted(state.optim_state[1][0]))
_truth.report(model_runs=MODEL_RUNS)
