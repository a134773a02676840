"""patrick-kidger/diffrax#111 "Unintuitive recompile in the Latent ODE example": ``make_step``
(``eqx.filter_jit``) compiles again at step 39, once, then never. The maintainer: the
dataloader's last batch of an epoch is smaller (10000 samples in batches of 256 leave 16),
a new shape; after that both shapes are cached. The culprit: the batch's leading dimension.
Shrunk: 10 samples in batches of 4, two epochs.

``run(fixed=True)`` applies jitlens' fix: the smaller batch padded to the full size and the
padding masked out of the loss: one shape, one compile, the same losses.
"""

import equinox as eqx
import jax
import jax.numpy as jnp


def dataloader(xs, batch_size, pad):
    """Batches of ``xs`` and their masks (1 for a sample, 0 for padding)."""
    for start in range(0, xs.shape[0], batch_size):
        ys = xs[start : start + batch_size]
        mask = jnp.ones(ys.shape[0])
        if pad and ys.shape[0] < batch_size:
            extra = batch_size - ys.shape[0]
            ys = jnp.concatenate([ys, jnp.zeros((extra, ys.shape[1]))])
            mask = jnp.concatenate([mask, jnp.zeros(extra)])
        yield ys, mask


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def make_step(model, ys, mask):
        traces[0] += 1

        def loss_fn(m):
            per_sample = jnp.mean(jax.vmap(m)(ys) ** 2, axis=1)
            return jnp.sum(mask * per_sample) / jnp.sum(mask)

        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        return loss, jax.tree.map(lambda p, g: p - 0.1 * g, model, grads)

    model = eqx.nn.Linear(3, 2, key=jax.random.key(0))
    xs = jnp.linspace(0.0, 1.0, 30).reshape(10, 3)
    out = []
    for _ in range(2):
        for ys, mask in dataloader(xs, 4, pad=fixed):
            loss, model = make_step(model, ys, mask)
            out.append(round(float(loss), 5))
    return {"truth": traces[0], "out": out, "function": "make_step"}


if __name__ == "__main__":
    print(run(fixed=False))
