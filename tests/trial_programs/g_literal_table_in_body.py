"""Mimics: a filter bank / quadrature table written out in the jitted function
itself: ``coeffs = jnp.asarray(np.load(...))``-style, here
``jnp.array(np.random...)`` built inside the body from a NumPy expression
(seen in signal-processing ports where a window table is recomputed in the
function). The array is not captured from a variable: it is created at trace
time and compiled in as a constant.

Expected from jitlens: ``captured_constant``; the advice should point at the line that creates it.
"""

import jax
import jax.numpy as jnp
import numpy as np

N = 3072


@jax.jit
def filter_bank(signal):
    bank = jnp.array(np.cos(np.outer(np.arange(N), np.arange(N)) * np.pi / N), dtype=jnp.float32)
    return bank @ signal


@jax.jit
def filter_bank_fixed(bank, signal):  # the table made once, outside, passed as an argument
    return bank @ signal


def main():
    return filter_bank(jnp.ones((N,)))


def main_fixed():
    bank = np.cos(np.outer(np.arange(N), np.arange(N)) * np.pi / N).astype(np.float32)
    return filter_bank_fixed(bank, jnp.ones((N,)))


if __name__ == "__main__":
    print("RESULT", float(main()[:4].sum()))
