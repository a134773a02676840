"""Mimics: a piecewise material / activation law written as a Python
``if``-ladder over regimes and ported to jit by turning each ``if`` into
``lax.cond`` applied in a loop over the regime table (``for k, (lo, f) in
enumerate(REGIMES)``): a chain of conds, each carrying every branch.

Expected from jitlens: the loop line named (``unrolled_loop``).
"""

import jax
import jax.numpy as jnp
from jax import lax

REGIMES = 40


def regime(k):
    def f(x):
        y = x * (1.0 + 0.01 * k)
        y = jnp.tanh(y) + 0.1 * jnp.sin(k * y)
        return y * jnp.exp(-0.001 * k * y * y)

    return f


@jax.jit
def law(x, strain):
    for k in range(REGIMES):
        x = lax.cond(strain > k / REGIMES, regime(k), lambda v: v, x)
    return x


@jax.jit
def law_fixed(x, strain):  # jitlens' advice: jax.lax.fori_loop over k (only the index changes)
    def body(k, x):
        return lax.cond(strain > k / REGIMES, regime(k), lambda v: v, x)

    return lax.fori_loop(0, REGIMES, body, x)


ARGS = (jnp.linspace(-1.0, 1.0, 64), jnp.float32(0.5))


def main():
    return law(*ARGS)


def main_fixed():
    return law_fixed(*ARGS)


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
