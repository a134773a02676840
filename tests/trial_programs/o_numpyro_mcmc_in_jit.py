"""numpyro: an ``MCMC`` run inside the user's own ``jax.jit`` (a held-out report's pattern).

numpyro's sample loop is a jit of numpyro's, traced inside the user's ``run_chain`` trace: part
of that trace, not a function of its own. jitlens once listed it as a second function (1
trace, 0 compiles): traces read 2 where the program traced once. Nothing to fix.
"""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

LIBRARIES = ("numpyro",)
NO_FIX = True
T = [0]


def model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


@jax.jit
def run_chain(key, y):
    T[0] += 1
    mcmc = MCMC(NUTS(model), num_warmup=5, num_samples=5, progress_bar=False)
    mcmc.run(key, y)
    return mcmc.get_samples()["mu"].mean()


def run(fixed: bool) -> dict:
    T[0] = 0
    y = jnp.ones(3)
    out = [round(float(run_chain(jax.random.key(i), y)), 4) for i in range(2)]
    return {"truth": T[0], "out": out, "function": "run_chain"}
