"""``jax.checkpoint`` policies (JAX docs "Gradient checkpointing with jax.checkpoint"): the
step takes the remat policy as a static argument and the loop builds it per call with
``jax.checkpoint_policies.save_only_these_names("hidden")``. The policy is a new object each
time, but JAX's named policies compare equal by their names: one compile, a negative control
(jitlens must name no culprit).

``run(fixed=True)``: the policy built once before the loop.
"""

from functools import partial

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def layer(w, x):
    h = checkpoint_name(jnp.sin(x @ w), "hidden")
    return jnp.sum(jnp.cos(h))


def run(fixed: bool) -> dict:
    traces = [0]

    @partial(jax.jit, static_argnames="policy")
    def grad_step(w, x, policy):
        traces[0] += 1
        return jax.grad(jax.checkpoint(layer, policy=policy))(w, x)

    w = jnp.eye(3)
    x = jnp.ones((2, 3))
    policy = jax.checkpoint_policies.save_only_these_names("hidden")
    out = []
    for _ in range(3):
        if not fixed:
            policy = jax.checkpoint_policies.save_only_these_names("hidden")
        w = w - 0.1 * grad_step(w, x, policy=policy)
        out.append(round(float(jnp.sum(w)), 5))
    return {"truth": traces[0], "out": out, "function": "grad_step"}


if __name__ == "__main__":
    print(run(fixed=False))
