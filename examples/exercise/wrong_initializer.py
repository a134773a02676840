"""Wrong: replaces the default kernel initialiser with zeros, so every output is the bias (zeros).

The method is right (one nnx.jit wrapper, num_calls calls, one trace); only
"Numbers" fails, and the report recognises the mistake: the output is what a
zero kernel gives.
"""

import jax.numpy as jnp
from flax import nnx


def jit_forward(seed, x, features, num_calls):
    x = jnp.asarray(x, dtype=jnp.float32)
    model = nnx.Linear(
        x.shape[-1],
        int(features),
        kernel_init=nnx.initializers.zeros_init(),  # the page says: keep the defaults
        rngs=nnx.Rngs(int(seed)),
    )

    @nnx.jit
    def fwd(model, x):
        return model(x)

    out = None
    for _ in range(int(num_calls)):
        out = fwd(model, x)
    return out.reshape(-1)
