"""jax-ml/jax#523 and #595: a jitted update called by position, then with ``lr=`` by keyword.

JAX keys positional and keyword arguments apart, so the keyword call compiles again.
``run(fixed=True)`` applies jitlens' fix: pass ``lr`` the same way on every call.
"""

import jax
import jax.numpy as jnp


def run(fixed: bool) -> dict:
    traces = [0]

    @jax.jit
    def update(params, x, lr):
        traces[0] += 1
        return params - lr * jnp.mean(x) * params

    p, x, sums = jnp.ones(3), jnp.arange(3.0), []
    for i in range(4):
        p = update(p, x, 0.1) if fixed or i % 2 == 0 else update(p, x, lr=0.1)
        sums.append(float(p.sum()))
    return {"truth": traces[0], "out": sums, "function": "update"}


if __name__ == "__main__":
    print(run(fixed=False))
