"""Mimics: an inference script that loads trained weights (a list of
``(W, b)`` per layer, here random) and jits ``predict(x)`` closing over them
instead of passing ``params``: every weight is baked into the program as a
constant (JAX's FAQ / "sharp bits" pattern; seen in Stack Overflow
questions about jit being slow for a large MLP).

Expected from jitlens: ``captured_constant`` naming the weights (``weights[i][0]``), fix: pass them.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np

SIZES = [2048, 2048, 2048, 2048, 2048]


def load_weights():  # stands for reading a checkpoint
    rng = np.random.default_rng(0)
    return [
        (rng.standard_normal((m, n)).astype(np.float32) * 0.03, np.zeros(n, np.float32))
        for m, n in itertools.pairwise(SIZES)
    ]


weights = load_weights()


@jax.jit
def predict(x):
    for w, b in weights:
        x = jnp.tanh(x @ w + b)
    return x


@jax.jit
def predict_fixed(weights, x):  # the captured_constant fix: the weights as an argument
    for w, b in weights:
        x = jnp.tanh(x @ w + b)
    return x


def main():
    return predict(jnp.ones((8, SIZES[0])))


def main_fixed():
    return predict_fixed(weights, jnp.ones((8, SIZES[0])))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
