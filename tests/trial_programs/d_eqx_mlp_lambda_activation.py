"""equinox MLP with a lambda activation (``eqx.nn.MLP(..., activation=lambda x: ...)``) rebuilt
per hyperparameter trial: the activation is a static field of the model, a new lambda per
model, so ``eqx.filter_jit`` compiles once per trial (equinox#291's bound-method cousin).

``run(fixed=True)`` applies jitlens' fix: the activation a module-level function.
"""

import equinox as eqx
import jax
import jax.numpy as jnp


def leaky(x):
    return jax.nn.leaky_relu(x, 0.1)


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def loss(model, x):
        traces[0] += 1
        return jnp.mean(jax.vmap(model)(x) ** 2)

    x = jnp.ones((4, 2))
    out = []
    for trial in range(3):
        act = leaky if fixed else (lambda x: jax.nn.leaky_relu(x, 0.1))
        model = eqx.nn.MLP(2, 1, 4, 1, activation=act, key=jax.random.key(trial))
        out.append(round(float(loss(model, x)), 5))
    return {"truth": traces[0], "out": out, "function": "loss"}


if __name__ == "__main__":
    print(run(fixed=False))
