"""Negative control: the transformer of ``g_transformer_layers_loop.py`` written
the way JAX advises, its stacked blocks applied with ``jax.lax.scan``; plus a small
``lax.fori_loop`` ODE. Compiles are short: jitlens must advise nothing on compile cost.
"""

import jax
import jax.numpy as jnp

D, LAYERS = 64, 24


@jax.jit
def forward(ws, x):
    def body(x, w):
        return x + jax.nn.gelu(x @ w), None

    return jax.lax.scan(body, x, ws)[0]


@jax.jit
def decay(y0):
    return jax.lax.fori_loop(0, 500, lambda i, y: y - 0.01 * y, y0)


def main():
    ws = jnp.ones((LAYERS, D, D)) * 0.01
    return jnp.concatenate([forward(ws, jnp.ones((8, D))).ravel(), decay(jnp.ones(3))])


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
