"""Re-initialising a classifier head per fine-tuning stage in Flax NNX with a Linen habit:
``model.head.kernel = jnp.zeros(...)`` assigns a plain array where the ``nnx.Param`` was
(maxencefaldor/cax#2: NNX state lives in Variables, updated through the Variable). The model's
graph changes (Param -> array), so the step compiles again, and the kernel is no Param any
more (an optimizer's ``wrt=nnx.Param`` would skip it).

``run(fixed=True)`` applies jitlens' fix: ``model.head.kernel[...] = jnp.zeros(...)``: one
compile, the same losses, and the kernel stays a Param.
"""

import jax.numpy as jnp
from flax import nnx


class Classifier(nnx.Module):
    def __init__(self, rngs):
        self.body = nnx.Linear(3, 4, rngs=rngs)
        self.head = nnx.Linear(4, 2, rngs=rngs)

    def __call__(self, x):
        return self.head(nnx.relu(self.body(x)))


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.jit
    def loss(model, x):
        traces[0] += 1
        return jnp.mean((model(x) - 1.0) ** 2)

    model = Classifier(nnx.Rngs(0))
    x = jnp.ones((2, 3))
    out = []
    for stage in range(3):
        if stage:  # a new task: start its head from zero
            if fixed:
                model.head.kernel[...] = jnp.zeros((4, 2))  # jitlens' fix as printed
            else:
                model.head.kernel = jnp.zeros((4, 2))
        for _ in range(2):
            out.append(round(float(loss(model, x)), 5))
    out.append(type(model.head.kernel).__name__ == "Param")
    return {"truth": traces[0], "out": out, "function": "loss", "same_out": False}


if __name__ == "__main__":
    print(run(fixed=False))
