"""Flax NNX MNIST tutorial (google/flax docs_nnx/mnist_tutorial.md): ``train_step(model,
optimizer, metrics, batch)`` and ``eval_step(model, metrics, batch)`` under ``nnx.jit`` with an
``nnx.Optimizer`` and an ``nnx.MultiMetric`` (Accuracy + Average loss) updated in place, reset
between phases. Shrunk to an MLP on random "images"; the test set is batched by hand without
``drop_remainder`` (10 examples in batches of 4): the last batch compiles ``eval_step`` again.

``run(fixed=True)`` applies jitlens' fix, "pad smaller batches to the largest shape (and mask
the padding)": the last batch padded to 4 rows and a mask passed to ``metrics.update`` (nnx's
metrics take ``mask=``): one compile, the same accuracies. Its loss averages the examples, not
the batches' means (the mask needs per-example values): ``same_out`` is False.
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(16, 8, rngs=rngs)
        self.linear2 = nnx.Linear(8, 10, rngs=rngs)

    def __call__(self, x):
        x = x.reshape(x.shape[0], -1)  # flatten
        return self.linear2(nnx.relu(self.linear1(x)))


def loss_fn(model, batch):
    logits = model(batch["image"])
    loss = optax.softmax_cross_entropy_with_integer_labels(
        logits=logits, labels=batch["label"]
    ).mean()
    return loss, logits


T = {"train_step": 0, "eval_step": 0}


@nnx.jit
def train_step(model, optimizer, metrics, batch):
    T["train_step"] += 1
    grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
    (loss, logits), grads = grad_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch["label"])
    optimizer.update(model, grads)


@nnx.jit
def eval_step(model, metrics, batch):
    T["eval_step"] += 1
    if "mask" in batch:  # the fix: padded rows masked out of the metrics
        logits = model(batch["image"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"])
        mask = batch["mask"]
        metrics.update(loss=loss, logits=logits, labels=batch["label"], mask=mask)
        return
    loss, logits = loss_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch["label"])


def padded(batch, size):
    """The fix: ``batch`` padded to ``size`` rows, with a mask of the real ones."""
    n = len(batch["label"])
    out = {k: jnp.pad(v, [(0, size - n)] + [(0, 0)] * (v.ndim - 1)) for k, v in batch.items()}
    return {**out, "mask": jnp.arange(size) < n}


def batches(data, size, drop_remainder):
    n = len(data["label"])
    if drop_remainder:
        n = n // size * size
    for i in range(0, n, size):
        yield {k: v[i : i + size] for k, v in data.items()}


def run(fixed: bool = False) -> dict:
    T.update(train_step=0, eval_step=0)
    k1, k2 = jax.random.split(jax.random.key(0))
    train = {
        "image": jax.random.uniform(k1, (16, 4, 4, 1)),
        "label": jnp.arange(16) % 10,
    }
    test = {"image": jax.random.uniform(k2, (10, 4, 4, 1)), "label": jnp.arange(10) % 10}
    model = MLP(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(0.005, 0.9), wrt=nnx.Param)
    metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
    history = []
    for _epoch in range(2):
        for batch in batches(train, 4, drop_remainder=True):
            train_step(model, optimizer, metrics, batch)
        history.append({k: round(float(v), 5) for k, v in metrics.compute().items()})
        metrics.reset()
        for batch in batches(test, 4, drop_remainder=False):
            eval_step(model, metrics, padded(batch, 4) if fixed else batch)
        history.append({k: round(float(v), 5) for k, v in metrics.compute().items()})
        metrics.reset()
    return {
        "truth": dict(T),
        "out": history,
        "functions": ["train_step", "eval_step"],
        "same_out": False,
    }


if __name__ == "__main__":
    print(run())
