"""Mimics: a tabulated equation of state / lookup table passed to a jitted
interpolator as a *static* argument (``static_argnames="table"``, a hashable
tuple of floats, the usual workaround when a NumPy array "is not hashable"):
every value is baked into the program when the body turns it into an array.

Expected from jitlens: ``captured_constant`` at the line that reads the table, fix: pass it
as an ordinary (traced) array argument.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

ROWS = 4_000_000


@partial(jax.jit, static_argnames="table")
def interpolate(x, table):
    t = jnp.asarray(table, dtype=jnp.float32)
    i = jnp.clip((x * (ROWS - 1)).astype(jnp.int32), 0, ROWS - 2)
    return t[i] + (t[i + 1] - t[i]) * (x * (ROWS - 1) - i)


@jax.jit
def interpolate_fixed(x, t):  # the captured_constant fix: the table as a traced argument
    i = jnp.clip((x * (ROWS - 1)).astype(jnp.int32), 0, ROWS - 2)
    return t[i] + (t[i + 1] - t[i]) * (x * (ROWS - 1) - i)


def _table():
    return np.sqrt(np.linspace(0.0, 1.0, ROWS, dtype=np.float32))


def main():
    return interpolate(jnp.linspace(0.0, 1.0, 64), tuple(_table().tolist()))


def main_fixed():
    return interpolate_fixed(jnp.linspace(0.0, 1.0, 64), jnp.asarray(_table()))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
