"""Equinox's examples/train_rnn (patrick-kidger/equinox, examples/train_rnn.ipynb): a GRU cell
under ``lax.scan`` classifying spirals, ``compute_loss`` under ``eqx.filter_value_and_grad``
and ``make_step(model, x, y, opt_state)`` under ``eqx.filter_jit``, the dataloader yielding
full batches forever; then the accuracy over the whole dataset through the same jitted loss.
Shrunk to 32 sequences of length 8, hidden size 4, 6 steps.

A negative control for ``make_step`` (one compile for every step); ``compute_loss`` on the
whole dataset compiles once (it is jitted once, called once): no retrace, no reason.
"""

import math

import equinox as eqx
import jax
import jax.lax as lax
import jax.numpy as jnp
import jax.random as jrandom
import optax

T = {"make_step": 0, "compute_loss": 0}


def dataloader(arrays, batch_size, *, key):
    dataset_size = arrays[0].shape[0]
    indices = jnp.arange(dataset_size)
    while True:
        perm = jrandom.permutation(key, indices)
        (key,) = jrandom.split(key, 1)
        start, end = 0, batch_size
        while end <= dataset_size:
            batch_perm = perm[start:end]
            yield tuple(array[batch_perm] for array in arrays)
            start, end = end, end + batch_size


def get_data(dataset_size, *, key):
    t = jnp.linspace(0, 2 * math.pi, 8)
    offset = jrandom.uniform(key, (dataset_size, 1), minval=0, maxval=2 * math.pi)
    x1 = jnp.sin(t + offset) / (1 + t)
    x2 = jnp.cos(t + offset) / (1 + t)
    y = jnp.ones((dataset_size, 1))
    half = dataset_size // 2
    x1 = x1.at[:half].multiply(-1)
    y = y.at[:half].set(0)
    return jnp.stack([x1, x2], axis=-1), y


class RNN(eqx.Module):
    hidden_size: int
    cell: eqx.Module
    linear: eqx.nn.Linear
    bias: jax.Array

    def __init__(self, in_size, out_size, hidden_size, *, key):
        ckey, lkey = jrandom.split(key)
        self.hidden_size = hidden_size
        self.cell = eqx.nn.GRUCell(in_size, hidden_size, key=ckey)
        self.linear = eqx.nn.Linear(hidden_size, out_size, use_bias=False, key=lkey)
        self.bias = jnp.zeros(out_size)

    def __call__(self, input):
        hidden = jnp.zeros((self.hidden_size,))

        def f(carry, inp):
            return self.cell(inp, carry), None

        out, _ = lax.scan(f, hidden, input)
        return jax.nn.sigmoid(self.linear(out) + self.bias)


@eqx.filter_value_and_grad
def compute_loss(model, x, y):
    pred_y = jax.vmap(model)(x)
    return -jnp.mean(y * jnp.log(pred_y) + (1 - y) * jnp.log(1 - pred_y))


@eqx.filter_jit
def make_step(model, x, y, opt_state):
    T["make_step"] += 1
    loss, grads = compute_loss(model, x, y)
    updates, opt_state = optim.update(grads, opt_state)
    model = eqx.apply_updates(model, updates)
    return loss, model, opt_state


optim = optax.adam(3e-3)


def run(fixed: bool = False) -> dict:
    T.update(make_step=0, compute_loss=0)
    data_key, loader_key, model_key = jrandom.split(jrandom.PRNGKey(5678), 3)
    xs, ys = get_data(32, key=data_key)
    iter_data = dataloader((xs, ys), 8, key=loader_key)
    model = RNN(in_size=2, out_size=1, hidden_size=4, key=model_key)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    out = []
    for _, (x, y) in zip(range(6), iter_data, strict=False):
        loss, model, opt_state = make_step(model, x, y, opt_state)
        out.append(round(float(loss), 5))

    @eqx.filter_jit
    def final_loss(model, xs, ys):
        T["compute_loss"] += 1
        return compute_loss(model, xs, ys)[0]

    out.append(round(float(final_loss(model, xs, ys)), 5))
    return {
        "truth": {"make_step": T["make_step"], "final_loss": T["compute_loss"]},
        "out": out,
        "functions": ["make_step", "final_loss"],
    }


#: Nothing to apply: the driver runs it once (``trial_c_driver.py``).
NO_FIX = True


if __name__ == "__main__":
    print(run())
