"""jitlens' advice on a small program: `jitlens run examples/advice.py`.

A tiny model stepped thousands of times (its time goes to flax's per-call
graph traversal, not to the compiled program) and a deep unrolled function
that compiles for about a second on every start-up (no persistent cache).
"""

import jax
import jax.numpy as jnp
from flax import nnx


@nnx.jit
def predict(model: nnx.Linear, x: jax.Array) -> jax.Array:
    return model(x)


@jax.jit
def deep(x: jax.Array) -> jax.Array:
    for i in range(80):
        x = jnp.sin(x @ x.T + i) if i % 2 else jnp.cumsum(x, axis=i % 2)
    return x


def main() -> None:
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 3))
    for _ in range(5000):
        predict(model, x)
    deep(jnp.ones((16, 16))).block_until_ready()


if __name__ == "__main__":
    main()
