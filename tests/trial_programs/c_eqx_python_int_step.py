"""eqx.filter_jit given the step number as a Python int (LouisDesdoigts/dLux#187; equinox's
FAQ "why is my function recompiling"): every non-array is static, so each step compiles.

``run(fixed=True)`` applies jitlens' fix: ``jnp.asarray(step)`` at the call.
"""

import equinox as eqx
import jax
import jax.numpy as jnp


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def make_step(model, x, step):
        traces[0] += 1
        lr = 0.1 / (1 + step)
        g = jax.grad(lambda m: jnp.sum(m(x) ** 2))(model)
        return jax.tree.map(lambda p, d: p - lr * d, model, g)

    model, x, out = eqx.nn.Linear(2, 2, key=jax.random.key(0)), jnp.ones(2), []
    for step in range(4):
        model = make_step(model, x, jnp.asarray(step) if fixed else step)
        out.append(float(model.weight.sum()))
    return {"truth": traces[0], "out": out, "function": "make_step"}


if __name__ == "__main__":
    print(run(fixed=False))
