"""Mimics: diffrax's README example, an ODE solved inside the user's ``eqx.filter_jit``.
``diffrax.diffeqsolve`` is an ``eqx.filter_jit`` of its own, traced inside the user's
trace: the compile of the user's function used to show ``cost: null``.

Expected from jitlens: the ``solve`` row's compile is read (``cost`` is not null).
"""

import diffrax
import equinox as eqx
import jax.numpy as jnp


def vector_field(t, y, args):
    return -args * y + jnp.sin(t)


@eqx.filter_jit
def solve(y0, k):
    term = diffrax.ODETerm(vector_field)
    sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.05, y0=y0, args=k)
    return sol.ys


def main():
    return solve(jnp.ones(3), 1.0)
