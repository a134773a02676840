"""Wrong: calls the compiled function once, whatever num_calls says.

The output is the same (the calls are identical), so only "Calls repeated"
fails, on every case with num_calls > 1.
"""

import jax.numpy as jnp
from flax import nnx


def jit_forward(seed, x, features, num_calls):
    x = jnp.asarray(x, dtype=jnp.float32)
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))

    @nnx.jit
    def fwd(model, x):
        return model(x)

    return fwd(model, x).reshape(-1)  # num_calls ignored
