"""optax#353: ``@partial(jax.jit, static_argnames=("optimizer",))`` and ``train()`` called
three times, each building ``optax.adam(1e-2)`` anew: optax transformations compare by
identity, so each ``train()`` compiles ``train_step`` again although the optimizer is "the
same".

``run(fixed=True)`` applies jitlens' fix: the optimizer built once at module level.
"""

from functools import partial

import jax
import jax.numpy as jnp
import optax

TRACES = [0]


@partial(jax.jit, static_argnames=("optimizer",))
def train_step(optimizer, params, opt_state):
    TRACES[0] += 1
    grads = jax.tree.map(jnp.ones_like, params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


OPTIMIZER = optax.adam(1e-2)


def train(fixed):
    optimizer = OPTIMIZER if fixed else optax.adam(1e-2)
    params = {"foo": jnp.zeros((3, 3))}
    opt_state = optimizer.init(params)
    for _ in range(2):
        params, opt_state = train_step(optimizer, params, opt_state)
    return float(params["foo"][0, 0])


def run(fixed: bool) -> dict:
    TRACES[0] = 0
    out = [round(train(fixed), 6) for _ in range(3)]
    return {"truth": TRACES[0], "out": out, "function": "train_step"}


if __name__ == "__main__":
    print(run(fixed=False))
