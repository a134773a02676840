"""Mimics: a Flax NNX sequence model that steps an ``nnx.OptimizedLSTMCell`` over time in
a Python ``for`` loop (as ports of linen/PyTorch RNN code do), trained with
``nnx.value_and_grad`` inside ``nnx.jit``. The trace unrolls every time step, forward
and backward.

Expected from jitlens: ``unrolled_loop`` at the ``for t`` line, a state carried through
steps with a per-step input (not "16 blocks stacked"): ``nnx.scan`` / ``nnx.RNN(cell)``.
"""

import jax
import jax.numpy as jnp
from flax import nnx

T, IN, HID = 24, 8, 32


class Model(nnx.Module):
    def __init__(self, rngs):
        self.cell = nnx.OptimizedLSTMCell(IN, HID, rngs=rngs)
        self.head = nnx.Linear(HID, 1, rngs=rngs)

    def __call__(self, x):
        carry = (jnp.zeros((x.shape[0], HID)), jnp.zeros((x.shape[0], HID)))
        for t in range(x.shape[1]):
            carry, y = self.cell(carry, x[:, t])
        return self.head(y)


class ModelFixed(Model):  # jitlens' advice: the cell over time with nnx.RNN
    def __call__(self, x):
        carry = (jnp.zeros((x.shape[0], HID)), jnp.zeros((x.shape[0], HID)))
        ys = nnx.RNN(self.cell, rngs=False)(x, initial_carry=carry)
        return self.head(ys[:, -1])


@nnx.jit
def train_step(model, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    return nnx.value_and_grad(loss_fn)(model)


def _flat(out):
    value, grads = out
    leaves = jax.tree.leaves(nnx.state(grads))
    return jnp.concatenate([value[None], *(g.ravel() for g in leaves)])


def _data():
    x = jnp.sin(jnp.arange(4 * T * IN, dtype=jnp.float32).reshape(4, T, IN) / 7.0)
    return x, jnp.ones((4, 1))


def main():
    return _flat(train_step(Model(nnx.Rngs(0)), *_data()))


def main_fixed():
    return _flat(train_step(ModelFixed(nnx.Rngs(0)), *_data()))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
