"""Four programs of jitlens' explainer leftovers in one process (tests/test_leftovers2.py).

``python prog.py before`` runs them as written, ``python prog.py after`` with jitlens'
printed fixes applied (the test writes the pytree fix of 1 into the marked lines). Each
jitted body counts its own traces (the truth); the outputs are printed with them.
"""

import copy
import json
import sys
from functools import partial

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np

FIXED = sys.argv[1:] == ["after"]
TRUTH: dict[str, int] = {}


def count(name):
    TRUTH[name] = TRUTH.get(name, 0) + 1


# 1. jax#28418's class, with a copy changed each step (jitlens' stale-hit fix applied in a
#    loop) and a new instance each step: reusing one instance would be the stale hit.
# @@DECORATOR Scale@@
class Scale:
    def __init__(self, a=1):
        self.a = a

    @partial(jax.jit, static_argnums=0)
    def f(self, x):
        count("Scale.f")
        return x * self.a + 1

    def __hash__(self):
        return hash(self.a)

    # @@METHODS Scale@@


# @@DECORATOR Shift@@
class Shift:
    def __init__(self, b):
        self.b = b

    @partial(jax.jit, static_argnums=0)
    def g(self, x):
        count("Shift.g")
        return x - self.b

    # @@METHODS Shift@@


def copied_each_step():
    obj, out = Scale(), []
    for i in range(4):
        obj = copy.copy(obj)
        obj.a = i
        out.append(float(obj.f(jnp.float32(2.0))))
    return out


def new_each_step():
    return [float(Shift(i % 2).g(jnp.float32(3.0))) for i in range(4)]


# 2. shapes: a training set and a test set evaluated every epoch (two compiles needed),
#    a ragged last batch of every epoch and a growing prefix (shapes that keep changing)
@jax.jit
def accuracy(w, batch):
    count("accuracy")
    x, y = batch
    return jnp.mean((x @ w > 0) == y)


@jax.jit
def batch_loss(w, x, mask=None):
    count("batch_loss")
    err = (x @ w) ** 2
    return jnp.sum(err if mask is None else err * mask)


@jax.jit
def next_token(prefix):
    count("next_token")
    return jnp.sum(prefix) % 7


def train_and_test_sets():
    rng = np.random.RandomState(0)
    w = jnp.asarray(rng.randn(3).astype(np.float32))
    train = rng.randn(24, 3).astype(np.float32), rng.rand(24) > 0.5
    test = rng.randn(10, 3).astype(np.float32), rng.rand(10) > 0.5
    out = []
    for _epoch in range(3):
        w = w * 0.9
        out.append(float(accuracy(w, train)))
        out.append(float(accuracy(w, test)))
    return out


def ragged_last_batch():
    x = np.arange(60, dtype=np.float32).reshape(20, 3) / 60
    w, out = jnp.ones(3), []
    for _epoch in range(3):
        for i in range(0, 20, 8):
            batch = x[i : i + 8]
            if FIXED:  # jitlens' fix: pad to the largest shape and mask the padding
                n = len(batch)
                batch = np.pad(batch, [(0, 8 - n), (0, 0)])
                out.append(round(float(batch_loss(w, batch, np.arange(8) < n)), 4))
            else:
                out.append(round(float(batch_loss(w, batch)), 4))
    return out


def growing_prefix():
    if FIXED:  # jitlens' fix: preallocated at full length, each token written in place
        buf, out = jnp.zeros((1, 4)).at[:, 0].set(1.0), []
        for pos in range(1, 5):
            t = next_token(buf)
            out.append(float(t))
            buf = buf.at[:, pos % 4].set(t) if pos < 4 else buf
        return out
    prefix, out = jnp.ones((1, 1)), []
    for _ in range(4):
        t = next_token(prefix)
        out.append(float(t))
        prefix = jnp.concatenate([prefix, jnp.full((1, 1), t)], axis=1)
    return out


# 3. a step over a dict of 500 small arrays: its cache hits spend their time on the leaves
@jax.jit
def sgd(params, lr):
    count("sgd")
    return jax.tree.map(lambda p: p - lr * jnp.tanh(p), params)


def many_leaves():
    params = {f"layer{i}/scale": jnp.full((4,), 1.0 + i % 7) for i in range(500)}
    if FIXED:  # jitlens' fix: one array, the elementwise update applied to it as it is
        flat, unravel = jax.flatten_util.ravel_pytree(params)
        for _ in range(1000):
            flat = sgd(flat, 0.01)
        params = unravel(flat)
    else:
        for _ in range(1000):
            params = sgd(params, 0.01)
    return [float(v[0]) for v in list(params.values())[:7]]


# 4. a closure jitted per call over two long-named values: a fix longer than a message may be
def smooth(points, step):
    smoothing_bandwidth_per_axis = 0.5 + 0.25 * step
    regularisation_strength = 0.1 * step

    @jax.jit
    def penalised_density(x):
        count("penalised_density")
        return jnp.sum(jnp.exp(-x * smoothing_bandwidth_per_axis)) + regularisation_strength

    return penalised_density(points)


@jax.jit
def penalised_density_fixed(x, smoothing_bandwidth_per_axis, regularisation_strength):
    count("penalised_density_fixed")
    return jnp.sum(jnp.exp(-x * smoothing_bandwidth_per_axis)) + regularisation_strength


def smooth_fixed(points, step):
    smoothing_bandwidth_per_axis = 0.5 + 0.25 * step
    regularisation_strength = 0.1 * step
    return penalised_density_fixed(points, smoothing_bandwidth_per_axis, regularisation_strength)


def closure_per_call():
    points = jnp.linspace(0.0, 1.0, 5)
    run = smooth_fixed if FIXED else smooth
    return [round(float(run(points, s)), 5) for s in range(3)]


if __name__ == "__main__":
    outputs = {
        "copied_each_step": copied_each_step(),
        "new_each_step": new_each_step(),
        "train_and_test_sets": train_and_test_sets(),
        "ragged_last_batch": ragged_last_batch(),
        "growing_prefix": growing_prefix(),
        "many_leaves": many_leaves(),
        "closure_per_call": closure_per_call(),
    }
    print("TRUTH " + json.dumps({"truth": TRUTH, "out": outputs}))
