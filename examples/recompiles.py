"""Three everyday recompiles in one small training script; run it under jitlens.

    jitlens run --html report.html examples/recompiles.py

* a ragged last batch (shape),
* a model that stores a ``functools.partial`` (every fresh instance recompiles),
* a Python float fed back as the jitted output (weak type).
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.conv = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
        self.pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))  # noqa: JL002
        self.head = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        x = self.pool(nnx.relu(self.conv(x)))
        return self.head(x.reshape(x.shape[0], -1))


@nnx.jit
def predict(model: Net, x: jax.Array) -> jax.Array:
    return model(x)


@jax.jit
def mse(batch: jax.Array) -> jax.Array:
    return jnp.mean(batch**2)


@jax.jit
def accumulate(total: jax.Array, x: jax.Array) -> jax.Array:
    return total + x.sum()


def main() -> None:
    data = np.ones((10, 4), np.float32)
    for start in range(0, 10, 4):  # batches of 4, 4, 2: the last one is ragged
        mse(data[start : start + 4])
    images = jnp.ones((2, 16, 16, 1))
    for seed in range(3):  # a freshly built model per evaluation
        predict(Net(nnx.Rngs(seed)), images)
    total = 0.0  # a Python float: weakly typed; the jitted output is not
    for _ in range(3):
        total = accumulate(total, jnp.ones(3))
    print("done", float(total))


if __name__ == "__main__":
    main()
