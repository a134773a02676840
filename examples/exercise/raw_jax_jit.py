"""Wrong for this exercise: jax.jit around nnx.split / nnx.merge instead of nnx.jit.

This is a supported NNX pattern and gives the right numbers with one trace,
but the exercise asks for nnx.jit with the model as an explicit argument, so
"JIT used" fails while "Calls repeated" and "Cache hits" pass.
"""

import jax
import jax.numpy as jnp
from flax import nnx


def jit_forward(seed, x, features, num_calls):
    x = jnp.asarray(x, dtype=jnp.float32)
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    graphdef, state = nnx.split(model)

    @jax.jit
    def fwd(state, x):
        return nnx.merge(graphdef, state)(x)

    out = None
    for _ in range(int(num_calls)):
        out = fwd(state, x)
    return out.reshape(-1)
