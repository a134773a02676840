"""JAX "Buffer donation" docs: a state updated with ``jax.jit(..., donate_argnums=0)``, first
fed a NumPy array (as a data loader returns it), then its own output. The NumPy array and the
jax.Array have the same shape and dtype: no retrace (a negative control: jitlens must name no
culprit).
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


def run(fixed: bool) -> dict:
    traces = [0]

    @partial(jax.jit, donate_argnums=0)
    def update(state, g):
        traces[0] += 1
        return state - 0.1 * g

    state = np.zeros(4, np.float32)
    g = jnp.ones(4)
    for _ in range(3):
        state = update(state, g)
    return {"truth": traces[0], "out": [round(float(v), 5) for v in state], "function": "update"}


if __name__ == "__main__":
    print(run(fixed=False))
