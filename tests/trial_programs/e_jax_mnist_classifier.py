"""jax's examples/mnist_classifier.py (jax-ml/jax): ``update(i, opt_state, batch)`` jitted with
the step ``next(itercount)`` as a Python int (traced, weakly typed: one compile), and a jitted
``accuracy(params, batch)`` called per epoch on the whole training set and on the test set: two
shapes, two compiles, both needed, then cache hits. Shrunk: stax and optimizers replaced by a
two-layer MLP and momentum written out (jax.example_libraries is gone from newer jax), random
"images", 24 training and 10 test examples.

jitlens calls the test set's compile a retrace (0.2 s lost) with "pad smaller batches to the
largest shape (and mask the padding)". ``run(fixed=True)`` applies it: the test set padded to
the training set's 24 rows and a mask in the batch, ``accuracy`` a masked mean: one compile,
the same accuracies. (On MNIST it would compute 60000 rows for 10000 at every evaluation: the
two compiles are arguably the program's need; see the trial's report.)
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from jax import grad, jit, random

T = {"update": 0, "accuracy": 0}


def predict(params, inputs):
    for w, b in params[:-1]:
        inputs = jnp.maximum(inputs @ w + b, 0)
    w, b = params[-1]
    return jax.nn.log_softmax(inputs @ w + b)


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(preds * targets)


@jit
def accuracy(params, batch):
    T["accuracy"] += 1
    inputs, targets, *mask = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    if mask:  # the fix: padded rows masked out
        return jnp.sum((predicted_class == target_class) * mask[0]) / jnp.sum(mask[0])
    return jnp.mean(predicted_class == target_class)


def padded(images, labels, n):
    """The fix: ``images`` and ``labels`` padded to ``n`` rows, and the mask of the real ones."""
    pad = [(0, n - len(images)), (0, 0)]
    return np.pad(images, pad), np.pad(labels, pad), np.arange(n) < len(images)


def run(fixed: bool = False) -> dict:
    T.update(update=0, accuracy=0)
    rng = np.random.RandomState(0)
    train_images = rng.rand(24, 16).astype(np.float32)
    train_labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 24)]
    test_images = rng.rand(10, 16).astype(np.float32)
    test_labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 10)]
    step_size, mass, batch_size = 0.001, 0.9, 8
    num_batches = 24 // batch_size

    def data_stream():
        r = np.random.RandomState(0)
        while True:
            perm = r.permutation(24)
            for i in range(num_batches):
                idx = perm[i * batch_size : (i + 1) * batch_size]
                yield train_images[idx], train_labels[idx]

    batches = data_stream()
    keys = random.split(random.key(0), 2)
    params = [
        (random.normal(keys[0], (16, 8)) * 0.1, jnp.zeros(8)),
        (random.normal(keys[1], (8, 10)) * 0.1, jnp.zeros(10)),
    ]
    opt_state = (params, jax.tree.map(jnp.zeros_like, params))

    @jit
    def update(i, opt_state, batch):
        T["update"] += 1
        params, velocity = opt_state
        g = grad(loss)(params, batch)
        lr = step_size / (1 + 0.01 * i)
        velocity = jax.tree.map(lambda v, g: mass * v + g, velocity, g)
        params = jax.tree.map(lambda p, v: p - lr * v, params, velocity)
        return params, velocity

    itercount = itertools.count()
    out = []
    for _epoch in range(3):
        for _ in range(num_batches):
            opt_state = update(next(itercount), opt_state, next(batches))
        params = opt_state[0]
        if fixed:
            train_acc = accuracy(params, padded(train_images, train_labels, 24))
            test_acc = accuracy(params, padded(test_images, test_labels, 24))
        else:
            train_acc = accuracy(params, (train_images, train_labels))
            test_acc = accuracy(params, (test_images, test_labels))
        out += [round(float(train_acc), 5), round(float(test_acc), 5)]
    return {"truth": dict(T), "out": out, "functions": ["update", "accuracy"]}


if __name__ == "__main__":
    print(run())
