"""Linen-to-NNX migration (flax docs_nnx/guides/linen_to_nnx, randomness guide): one model
seeded with a legacy ``jax.random.PRNGKey(0)`` (``uint32[2]``), another with ``nnx.Rngs(0)``
(a typed key ``key<fry>[]``). ``nnx.Rngs`` wraps a legacy key as a typed one, so the same
``nnx.jit`` step compiles once: a negative control (jitlens must name no culprit).

``run(fixed=True)``: both seeded the same way (``nnx.Rngs(seed)``): one compile.
"""

import jax
import jax.numpy as jnp
from flax import nnx


class Noisy(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.dropout = nnx.Dropout(0.25, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.jit
    def step(model, x):
        traces[0] += 1
        return jnp.sum(model(x))

    x = jnp.ones((2, 3))
    seeds = [nnx.Rngs(0), nnx.Rngs(1) if fixed else nnx.Rngs(jax.random.PRNGKey(1))]
    out = []
    for rngs in seeds:
        model = Noisy(rngs)
        for _ in range(2):
            out.append(round(float(step(model, x)), 4))
    return {"truth": traces[0], "out": out, "function": "step", "same_out": False}


if __name__ == "__main__":
    print(run(fixed=False))
