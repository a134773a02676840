"""Wrong: returns the (N, features) output without flattening it.

The values are right, the shape is not: "Numbers" fails with a hint that
``out.reshape(-1)`` would fix it; the method criteria pass.
"""

import jax.numpy as jnp
from flax import nnx


def jit_forward(seed, x, features, num_calls):
    x = jnp.asarray(x, dtype=jnp.float32)
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))

    @nnx.jit
    def fwd(model, x):
        return model(x)

    out = None
    for _ in range(int(num_calls)):
        out = fwd(model, x)
    return out  # should be out.reshape(-1)
