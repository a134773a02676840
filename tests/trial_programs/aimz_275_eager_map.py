"""markean/aimz#275: eager forward sampling recompiles on every call.

``sample_forward`` runs ``lax.map`` outside jit over ``one``, a closure made on every
call, so JAX traces and compiles the map again each time. ``sample_forward_fixed``
applies the fix of lint JL008: the same function under ``@jax.jit``.
"""

import jax
import jax.numpy as jnp

TRACES = {"bad": 0, "fixed": 0}


def sample_forward(scale):
    def one(k):
        TRACES["bad"] += 1
        return jnp.sin(k) * scale

    return jax.lax.map(one, jnp.arange(3.0))


@jax.jit
def sample_forward_fixed(scale):
    def one(k):
        TRACES["fixed"] += 1
        return jnp.sin(k) * scale

    return jax.lax.map(one, jnp.arange(3.0))


def run() -> dict:
    bad = [float(sample_forward(1.0 + i).sum()) for i in range(3)]
    fixed = [float(sample_forward_fixed(1.0 + i).sum()) for i in range(3)]
    return {"traces": dict(TRACES), "bad": bad, "fixed": fixed}
