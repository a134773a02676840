"""Mimics: a precomputed NumPy lookup table (a Legendre / spherical-harmonics
basis evaluated on a grid, as in climate or spectral codes) built at import
time and read by a jitted transform through its closure. JAX bakes the whole
table into the program as a constant.

Expected from jitlens: ``captured_constant`` naming ``basis``, fix: pass it as an argument.
"""

import jax
import jax.numpy as jnp
import numpy as np

GRID, MODES = 4096, 4096


def make_transform():
    x = np.linspace(-1.0, 1.0, GRID, dtype=np.float32)
    basis = np.cos(np.outer(np.arange(MODES, dtype=np.float32), np.arccos(x)))

    @jax.jit
    def to_spectral(field):
        return basis @ field

    return to_spectral


@jax.jit
def to_spectral_fixed(basis, field):  # the captured_constant fix: the table as an argument
    return basis @ field


def main():
    return make_transform()(jnp.ones((GRID,)))


def main_fixed():
    x = np.linspace(-1.0, 1.0, GRID, dtype=np.float32)
    basis = np.cos(np.outer(np.arange(MODES, dtype=np.float32), np.arccos(x)))
    return to_spectral_fixed(basis, jnp.ones((GRID,)))


if __name__ == "__main__":
    print("RESULT", float(main()[:4].sum()))
