"""Flax NNX "Scan over layers" guide: a stack of blocks built with ``nnx.vmap`` +
``nnx.split_rngs`` and run with ``nnx.scan`` + ``nnx.remat`` inside one ``nnx.jit`` step.
The inner transforms trace once per compile of the step, not once per call; the eval loop's
last batch is smaller (10 examples in batches of 4), which compiles the step again.

``run(fixed=True)`` applies jitlens' fix: the last batch padded to the full batch size (and
its padded rows dropped after): one compile, the same outputs.
"""

import jax.numpy as jnp
from flax import nnx


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)

    def __call__(self, x):
        return nnx.tanh(self.linear(x))


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.split_rngs(splits=4)
    @nnx.vmap(in_axes=0, out_axes=0)
    def make_stack(rngs):
        return Block(rngs)

    @nnx.jit
    def predict(stack, x):
        traces[0] += 1

        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        @nnx.remat
        def body(block, h):
            return block(h)

        return body(stack, x)

    stack = make_stack(nnx.Rngs(0))
    data = jnp.arange(30.0).reshape(10, 3) / 30
    out = []
    for i in range(0, 10, 4):
        batch = data[i : i + 4]
        n = len(batch)
        if fixed and n < 4:
            batch = jnp.pad(batch, ((0, 4 - n), (0, 0)))
        out += [round(float(v), 5) for v in predict(stack, batch)[:n, 0]]
    return {"truth": traces[0], "out": out, "function": "predict"}


if __name__ == "__main__":
    print(run(fixed=False))
