"""jax's examples/differentially_private_sgd.py, shrunk: ``jit(private_update)`` called with
``next(itercount)``, a new Python int each step, and a new PRNG key. A negative control: a
Python int is a weakly typed traced value for jax.jit, one compile serves every step, and
jitlens must report no retrace.
"""

import itertools

import jax.numpy as jnp
from jax import grad, jit, random, vmap

T = [0]


def loss(params, x, y):
    return jnp.mean((x @ params - y) ** 2)


def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
    x, y = batch
    grads = vmap(grad(loss), (None, 0, 0))(params, x[:, None], y[:, None])
    norms = jnp.linalg.norm(grads, axis=-1, keepdims=True)
    grads = grads / jnp.maximum(norms / l2_norm_clip, 1.0)
    noise = noise_multiplier * l2_norm_clip * random.normal(rng, params.shape)
    return (grads.sum(0) + noise) / batch_size


@jit
def private_update(i, params, batch, rng):
    T[0] += 1
    return params - 0.1 / (1 + i) * private_grad(params, batch, rng, 1.0, 1.1, 4)


def run(fixed: bool = False) -> dict:
    T[0] = 0
    itercount, params = itertools.count(), jnp.zeros(2)
    X = random.normal(random.key(1), (16, 2))
    Y = X @ jnp.array([1.0, -1.0])
    for epoch in range(2):
        rngs = random.split(random.fold_in(random.key(0), epoch), 4)
        for b in range(4):
            batch = (X[b * 4 : (b + 1) * 4], Y[b * 4 : (b + 1) * 4])
            params = private_update(next(itercount), params, batch, rngs[b])
    return {"truth": T[0], "out": params.tolist(), "function": "private_update"}


if __name__ == "__main__":
    print(run())
