"""jax's examples/kernel_lsq.py with ``train`` called once per regularization (a sweep): it
jits ``partial(gram, kernel)``, ``minimize`` jits its nested ``update`` and ``train`` returns
``jit(vmap(predict))``, all anew per call, so each compiles again.

jitlens once said "pass 1 positional value(s)" for the partial and told to define
``step_fn``, a name the program does not have. ``run(fixed=True)`` applies the fixes
printed now: ``gram`` jitted once with ``kernel`` static, ``update`` and ``predict`` defined
once at module level with what they read passed as arguments.
"""

from functools import partial

import jax.numpy as np
import numpy.random as npr
from jax import grad, jit, vmap
from jax.example_libraries import optimizers

T = {"gram": 0, "update": 0, "predict": 0}
OPT_INIT, OPT_UPDATE, GET_PARAMS = optimizers.momentum(0.000001, 0.9)


def gram(kernel, xs):
    T["gram"] += 1
    return vmap(lambda x: vmap(lambda y: kernel(x, y))(xs))(xs)


def kernel(x, y):
    return np.dot(x, y)


def objective(v, gram_mat, ys, regularization):
    risk = 0.5 * np.sum((np.dot(gram_mat, v) - ys) ** 2.0)
    return risk + regularization * np.sum(v**2.0)


def minimize(f, x, num_steps=20):
    @jit
    def update(i, opt_state):
        T["update"] += 1
        return OPT_UPDATE(i, grad(f)(GET_PARAMS(opt_state)), opt_state)

    opt_state = OPT_INIT(x)
    for i in range(num_steps):
        opt_state = update(i, opt_state)
    return GET_PARAMS(opt_state)


def train(kernel, xs, ys, regularization=0.01):
    gram_mat = jit(partial(gram, kernel))(xs)
    v = minimize(lambda v: objective(v, gram_mat, ys, regularization), np.zeros(xs.shape[0]))

    def predict(x):
        T["predict"] += 1
        return np.sum(v * vmap(lambda x_: kernel(x, x_))(xs))

    return jit(vmap(predict))


# the fixes applied: each function defined and jitted once, what it read passed to it
gram_jit = jit(gram, static_argnames="kernel")


@jit
def update(i, opt_state, gram_mat, ys, regularization):
    T["update"] += 1
    g = grad(objective)(GET_PARAMS(opt_state), gram_mat, ys, regularization)
    return OPT_UPDATE(i, g, opt_state)


def predict(x, v, xs):
    T["predict"] += 1
    return np.sum(v * vmap(lambda x_: kernel(x, x_))(xs))


predict_jit = jit(vmap(predict, in_axes=(0, None, None)))


def train_fixed(xs, ys, regularization=0.01):
    gram_mat = gram_jit(kernel, xs)
    opt_state = OPT_INIT(np.zeros(xs.shape[0]))
    for i in range(20):
        opt_state = update(i, opt_state, gram_mat, ys, regularization)
    v = GET_PARAMS(opt_state)
    return lambda x: predict_jit(x, v, xs)


def run(fixed: bool) -> dict:
    T.update(gram=0, update=0, predict=0)
    npr.seed(0)
    truth = npr.randn(4)
    xs = npr.randn(10, 4)
    ys = np.dot(xs, truth)
    out = []
    for reg in (0.01, 0.1, 1.0):
        predict_fn = train_fixed(xs, ys, reg) if fixed else train(kernel, xs, ys, reg)
        out.append(float(np.sum((predict_fn(xs) - ys) ** 2.0)))
    return {"truth": dict(T), "out": out, "functions": ["gram", "update", "predict"]}


if __name__ == "__main__":
    print(run(fixed=False))
