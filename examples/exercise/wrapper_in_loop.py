"""Wrong: applies nnx.jit inside the loop, so every call meets a new function and traces again.

Numbers, "JIT used" and "Calls repeated" pass; "Cache hits" fails on every
case with num_calls > 1, and the report quotes the tracker's reason
(``new_function``) and its fix: create the jitted function once.
"""

import jax.numpy as jnp
from flax import nnx


def forward(model, x):
    return model(x)


def jit_forward(seed, x, features, num_calls):
    x = jnp.asarray(x, dtype=jnp.float32)
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    out = None
    for _ in range(int(num_calls)):
        fwd = nnx.jit(forward)  # noqa: JL001 - the deliberate mistake this example shows
        out = fwd(model, x)
    return out.reshape(-1)
