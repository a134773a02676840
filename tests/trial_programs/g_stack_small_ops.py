"""Mimics: feature engineering that builds a design matrix column by column,
``jnp.stack([f(x, k) for k in range(K)])`` (Fourier / polynomial features
in a Gaussian-process or physics-informed code), inside jit: every column is
its own copy of the small op chain.

Expected from jitlens: ``unrolled_loop`` naming the comprehension line, fix ``jax.vmap`` over ``k``.
"""

import jax
import jax.numpy as jnp

K = 160


def feature(x, k):
    w = 0.1 * (k + 1)
    return jnp.sin(w * x) * jnp.exp(-0.01 * k * x**2) + jnp.cos(w * x + k)


@jax.jit
def design_matrix(x):
    cols = jnp.stack([feature(x, k) for k in range(K)], axis=-1)
    return cols.T @ cols


@jax.jit
def design_matrix_fixed(x):  # jitlens' advice: jax.vmap over the independent iterations
    cols = jax.vmap(feature, in_axes=(None, 0), out_axes=-1)(x, jnp.arange(K))
    return cols.T @ cols


def main():
    return design_matrix(jnp.linspace(0.0, 1.0, 256))


def main_fixed():
    return design_matrix_fixed(jnp.linspace(0.0, 1.0, 256))


if __name__ == "__main__":
    print("RESULT", float(jnp.trace(main())))
