"""Gumbel-softmax temperature annealing in Flax NNX: the schedule writes a Python float to a
Module attribute each step (``model.blocks[1].temperature = t``). NNX keeps plain Python
attributes in the graphdef (static), so every new temperature compiles ``train_step`` again.

``run(fixed=True)`` applies jitlens' fix: the temperature an ``nnx.Variable`` set with
``[...]`` as printed: one compile, the same losses.
"""

import jax
import jax.numpy as jnp
from flax import nnx


class Block(nnx.Module):
    def __init__(self, rngs, fixed):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.temperature = nnx.Variable(jnp.float32(1.0)) if fixed else 1.0

    def __call__(self, x):
        t = (
            self.temperature[...]
            if isinstance(self.temperature, nnx.Variable)
            else self.temperature
        )
        return jax.nn.softmax(self.linear(x) / t)


class Model(nnx.Module):
    def __init__(self, rngs, fixed):
        self.blocks = nnx.List([Block(rngs, fixed) for _ in range(2)])

    def __call__(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.jit
    def train_step(model, x):
        traces[0] += 1
        return jnp.sum(model(x) ** 2)

    model = Model(nnx.Rngs(0), fixed)
    x = jnp.ones((2, 4))
    out = []
    for step in range(4):
        t = 1.0 / (1 + step)
        if fixed:
            model.blocks[1].temperature[...] = t  # jitlens' fix as printed
        else:
            model.blocks[1].temperature = t
        out.append(round(float(train_step(model, x)), 5))
    return {"truth": traces[0], "out": out, "function": "train_step"}


if __name__ == "__main__":
    print(run(fixed=False))
