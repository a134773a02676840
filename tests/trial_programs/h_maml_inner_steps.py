"""Mimics: MAML in JAX (the "meta-learning in 50 lines of JAX" sine-regression
tutorials): the inner adaptation steps are a Python ``for`` loop inside the meta-loss,
and ``jax.value_and_grad`` differentiates the meta-loss through all of them. The trace
unrolls the inner steps twice over: forward, and again in the backward pass.

Expected from jitlens: ``unrolled_loop`` at the ``for`` line of ``adapt``, the loop read
under the gradient, walking a state through steps (the parameters): ``jax.lax.fori_loop``.
"""

import jax
import jax.numpy as jnp

STEPS, WIDTH = 24, 40


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return [
        (jax.random.normal(k1, (1, WIDTH)) * 0.5, jnp.zeros(WIDTH)),
        (jax.random.normal(k2, (WIDTH, WIDTH)) * 0.2, jnp.zeros(WIDTH)),
        (jax.random.normal(k3, (WIDTH, 1)) * 0.2, jnp.zeros(1)),
    ]


def net(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, y):
    return jnp.mean((net(params, x) - y) ** 2)


def inner_step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def adapt(params, x, y):
    for _ in range(STEPS):
        params = inner_step(params, x, y)
    return params


@jax.jit
def meta_step(params, xs, ys, xq, yq):
    return jax.value_and_grad(lambda p: loss(adapt(p, xs, ys), xq, yq))(params)


def adapt_fixed(params, x, y):  # jitlens' advice: the steps under jax.lax.fori_loop
    return jax.lax.fori_loop(0, STEPS, lambda i, p: inner_step(p, x, y), params)


@jax.jit
def meta_step_fixed(params, xs, ys, xq, yq):
    return jax.value_and_grad(lambda p: loss(adapt_fixed(p, xs, ys), xq, yq))(params)


def _data():
    x = jnp.linspace(-3, 3, 20)[:, None]
    return init(jax.random.key(0)), x, jnp.sin(x), x + 0.1, jnp.sin(x + 0.1)


def _flat(out):
    value, grads = out
    return jnp.concatenate([value[None], *(g.ravel() for g in jax.tree.leaves(grads))])


def main():
    return _flat(meta_step(*_data()))


def main_fixed():
    return _flat(meta_step_fixed(*_data()))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
