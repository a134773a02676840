"""Mimics: an optimizer update over a parameter dict with thousands of small
leaves (per-channel scales of a large model flattened into one dict, or a
``flax.traverse_util.flatten_dict`` of every bias), applied with
``jax.tree.map``: every leaf is its own handful of equations.

Expected from jitlens: the ``jax.tree.map`` line named as where the program's size comes from.
"""

import jax
import jax.numpy as jnp

LEAVES = 1500


def sgd_momentum(p, g, m):
    m = 0.9 * m + g
    return p - 0.01 * m, m


@jax.jit
def update(params, grads, mom):
    out = jax.tree.map(sgd_momentum, params, grads, mom)
    new_p = jax.tree.map(lambda o: o[0], out, is_leaf=lambda o: isinstance(o, tuple))
    new_m = jax.tree.map(lambda o: o[1], out, is_leaf=lambda o: isinstance(o, tuple))
    return new_p, new_m


def main():
    params = {f"layer{i}/scale": jnp.ones((4,)) for i in range(LEAVES)}
    grads = jax.tree.map(lambda p: 0.1 * p, params)
    mom = jax.tree.map(jnp.zeros_like, params)
    p, _ = update(params, grads, mom)
    return jnp.stack(list(p.values()))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
