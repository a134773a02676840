"""Flax's NNX toy example "lifted transforms" (google/flax,
examples/nnx_toy_examples/02_lifted_transforms.py): an MLP with a ``Count`` Variable bumped in
``__call__`` (``self.count.value += 1``), ``train_step`` and ``test_step`` under ``nnx.jit``,
both bound once with ``nnx.cached_partial(train_step, model, optimizer)``; the test step runs
on the whole data set every few steps, then the model is called eagerly once more. Shrunk to
20 points, a hidden size of 4, 6 steps.

A negative control: one compile of each step for the whole run (the count changes value, not
structure; the eager call after the loop changes its value too); the count is the program's
own figure and must read the same under jitlens.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

T = {"train_step": 0, "test_step": 0}


class Linear(nnx.Module):
    def __init__(self, din, dout, *, rngs):
        self.w = nnx.Param(jax.random.uniform(rngs.params(), (din, dout)))
        self.b = nnx.Param(jnp.zeros((dout,)))

    def __call__(self, x):
        return x @ self.w[...] + self.b[...]


class Count(nnx.Variable):
    pass


class MLP(nnx.Module):
    def __init__(self, din, dhidden, dout, *, rngs):
        self.count = Count(jnp.array(0))
        self.linear1 = Linear(din, dhidden, rngs=rngs)
        self.linear2 = Linear(dhidden, dout, rngs=rngs)

    def __call__(self, x):
        self.count[...] += 1
        return self.linear2(jax.nn.relu(self.linear1(x)))


@nnx.jit
def train_step(model, optimizer, batch):
    T["train_step"] += 1
    x, y = batch

    def loss_fn(model):
        return jnp.mean((y - model(x)) ** 2)

    grads = nnx.grad(loss_fn)(model)
    optimizer.update(model, grads)


@nnx.jit
def test_step(model, batch):
    T["test_step"] += 1
    x, y = batch
    return {"loss": jnp.mean((y - model(x)) ** 2)}


def run(fixed: bool = False) -> dict:
    T.update(train_step=0, test_step=0)
    rng = np.random.RandomState(0)
    X = np.linspace(0, 1, 20, dtype=np.float32)[:, None]
    Y = (0.8 * X**2 + 0.1 + rng.normal(0, 0.1, size=X.shape)).astype(np.float32)
    model = MLP(1, 4, 1, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(1e-3), wrt=nnx.Param)
    cached_train_step = nnx.cached_partial(train_step, model, optimizer)
    cached_test_step = nnx.cached_partial(test_step, model)
    out = []
    for step in range(6):
        idx = rng.choice(len(X), size=4)
        cached_train_step((X[idx], Y[idx]))
        if step % 2 == 0:
            out.append(round(float(cached_test_step((X, Y))["loss"]), 5))
    model(X)
    out.append(int(model.count[...]))
    return {"truth": dict(T), "out": out, "functions": ["train_step", "test_step"]}


#: Nothing to apply: the driver runs it once (``trial_c_driver.py``).
NO_FIX = True


if __name__ == "__main__":
    print(run())
