"""Negative control: a small model whose few small weights (a 3-layer 32-wide MLP,
12 KiB) are closed over, and a short Python loop of 4 steps. Compile is well
under half a second: nothing to advise.
"""

import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)
ws = [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(3)]


@jax.jit
def predict(x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return x


def main():
    return jnp.stack([predict(jnp.ones((4, 32)) * i) for i in range(20)])


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
