"""Flax NNX "Performance considerations" guide: ``nnx.split`` outside and a plain ``jax.jit``
step taking ``graphdef`` as a static argument. The model keeps a Python float (a dropout-like
``noise_scale`` decayed per step) as a plain attribute, so the graphdef changes every step
and the step compiles again.

``run(fixed=True)`` applies jitlens' fix: the scale an ``nnx.Variable``: part of ``state``,
one compile, the same losses.
"""

from functools import partial

import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs, fixed):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.noise_scale = nnx.Variable(jnp.float32(1.0)) if fixed else 1.0

    def __call__(self, x):
        s = self.noise_scale
        return self.linear(x) * (s[...] if isinstance(s, nnx.Variable) else s)


def run(fixed: bool) -> dict:
    traces = [0]

    @partial(jax.jit, static_argnums=0)
    def forward(graphdef, state, x):
        traces[0] += 1
        model = nnx.merge(graphdef, state)
        return jnp.sum(model(x) ** 2)

    model = Model(nnx.Rngs(0), fixed)
    x = jnp.ones((2, 3))
    out = []
    for step in range(3):
        scale = 0.5**step
        if fixed:
            model.noise_scale[...] = scale  # jitlens' fix as printed
        else:
            model.noise_scale = scale
        graphdef, state = nnx.split(model)
        out.append(round(float(forward(graphdef, state, x)), 5))
    return {"truth": traces[0], "out": out, "function": "forward"}


if __name__ == "__main__":
    print(run(fixed=False))
