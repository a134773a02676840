"""A library's own jit, traced first inside another trace and compiled later from that
trace (as ``diffrax.diffeqsolve``'s ``eqx.filter_jit`` is): JAX compiles it with no trace
event of its own. Its program is still read (``cost`` is not null).

Expected from jitlens: the ``solve`` row's compile carries a cost, with the loop at its line.
"""

import jax
import jax.numpy as jnp

STEPS = 8


@jax.jit
def solve(y):
    for _ in range(STEPS):
        y = y + 0.1 * jnp.sin(y)
    return y


def main():
    jax.make_jaxpr(jax.jit(lambda y: solve(y) * 2.0))(jnp.ones(3))  # traced inside a trace
    return solve(jnp.ones(3))  # compiled now, from that trace
