"""numpyro: a ``NUTS(model)`` kernel built in the call to a jitted function that keeps it static.

``NUTS`` has no ``__eq__``: each new kernel is a new key, compiled again. jitlens once told the
user to make ``NUTS`` a frozen dataclass (numpyro's class); the fix now builds the kernel once,
at module level, and passes it. ``run(fixed=True)`` applies it: one compile, the same outputs.
"""

import functools

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import NUTS

LIBRARIES = ("numpyro",)
T = [0]


def model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


@functools.partial(jax.jit, static_argnums=1)
def potential(key, kernel, y):
    T[0] += 1
    state = kernel.init(key, 0, None, (y,), {})
    return state.potential_energy


kernel = NUTS(model)  # the printed fix: built once, passed where the call built it


def run(fixed: bool) -> dict:
    T[0] = 0
    out = []
    for i in range(3):
        y = jnp.ones(3) * i
        if fixed:
            out.append(round(float(potential(jax.random.key(0), kernel, y)), 4))
        else:
            out.append(round(float(potential(jax.random.key(0), NUTS(model), y)), 4))
    return {"truth": T[0], "out": out, "function": "potential"}
