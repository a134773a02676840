"""A loss history kept on a Flax NNX Module (``self.history = []``, appended after each step):
NNX keeps a plain list attribute static, in the graphdef, and ``nnx.jit`` compares the same
list object with itself, so the appends never retrace. The step never reads ``history``:
nothing is stale, and copying the list per step (the fix for a static the step reads) would
compile once per new value.

``run(fixed=True)`` applies jitlens' fix for a value only code outside the jit uses: the
history kept out of the call's arguments (a list of its own): one compile, the same losses,
no warning.
"""

import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 1, rngs=rngs)
        self.history = []

    def __call__(self, x):
        return self.linear(x)


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.jit
    def train_step(model, x):
        traces[0] += 1
        return jnp.mean(model(x) ** 2)

    model = Model(nnx.Rngs(0))
    x = jnp.ones((2, 3))
    history = []
    for _ in range(4):
        loss = round(float(train_step(model, x)), 5)
        (history if fixed else model.history).append(loss)
    out = history if fixed else model.history
    return {"truth": traces[0], "out": out, "function": "train_step"}


if __name__ == "__main__":
    print(run(fixed=False))
