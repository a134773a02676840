"""numpyro's getting-started example (pyro-ppl/numpyro, README / docs "Eight schools", and
examples/*.py): ``MCMC(NUTS(model), num_warmup=..., num_samples=...)`` and ``mcmc.run(key,
data)``, run again on new data of another size (a second data set, the same model). Shrunk to
a normal model with unknown mean, 20 warmup + 20 samples, 8 then 12 observations.

numpyro traces the model several times per ``run`` (an initial-parameters search, the
potential's gradient, the sample loop), so the truth counted is the runs that traced it: 2 (jax's own compile events agree: the second run compiles the loop again, 0.9 s,
even on data of the same shape and with ``jit_model_args=True``).

jitlens once said "Draw what you need in one `run` (a larger `num_samples`, or `num_chains`)
instead of calling `run` again": no draw from the first data set serves the second. Nothing
to fix: the compile is the new data set's.
"""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

T = [0]


def model(y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    if isinstance(mu, jax.core.Tracer):  # a trace of the model
        T[0] += 1
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.0))
    numpyro.sample("obs", dist.Normal(mu, sigma), obs=y)


def run(fixed: bool = False) -> dict:
    mcmc = MCMC(NUTS(model), num_warmup=20, num_samples=20, progress_bar=False)
    out, traced = [], 0
    for i, n in enumerate((8, 12)):
        y = 1.5 + jax.random.normal(jax.random.key(i), (n,))
        before = T[0]
        mcmc.run(jax.random.key(10 + i), y=y)
        traced += T[0] > before
        out.append(round(float(jnp.mean(mcmc.get_samples()["mu"])), 4))
    return {"truth": {"NUTS": int(traced)}, "out": out, "functions": ["NUTS"]}


#: Nothing to apply: the driver runs it once (``trial_c_driver.py``).
NO_FIX = True


if __name__ == "__main__":
    print(run())
