"""Wrong: right numbers, no JIT. The model is called eagerly, so nothing is compiled as a whole.

`jitlens check` fails "JIT used" (and with it "Calls repeated" and "Cache hits"):
the page's numerical tests cannot tell, the tracker can.
"""

import jax.numpy as jnp
from flax import nnx


def jit_forward(seed, x, features, num_calls):
    x = jnp.asarray(x, dtype=jnp.float32)
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    out = None
    for _ in range(int(num_calls)):
        out = model(x)  # eager: no @nnx.jit function anywhere
    return out.reshape(-1)
