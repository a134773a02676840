"""optax's gradient accumulation guide (google-deepmind/optax,
docs/_collections/examples/gradient_accumulation.ipynb): ``optax.MultiSteps(optax.adam(...),
every_k_schedule=k)`` and one jitted ``fit`` step ``(params, opt_state, batch) -> ...``; the
inner optimizer's update runs only every k-th call (a ``lax.cond`` on the mini-step count kept
in the state). Shrunk to a linear regression, k = 3, 7 steps.

A negative control: the mini-step count is in the state (an int32 array), so every call is a
cache hit after the first compile; jitlens must report one trace and no reason.
"""

import jax
import jax.numpy as jnp
import optax

T = [0]


def loss_fn(params, batch):
    x, y = batch
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


def run(fixed: bool = False) -> dict:
    T[0] = 0
    opt = optax.MultiSteps(optax.adam(0.1), every_k_schedule=3)

    @jax.jit
    def step(params, opt_state, batch):
        T[0] += 1
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    key = jax.random.key(0)
    x = jax.random.normal(key, (21, 3))
    y = x @ jnp.array([1.0, -2.0, 0.5]) + 0.3
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    opt_state = opt.init(params)
    out = []
    for i in range(7):
        batch = (x[3 * i : 3 * i + 3], y[3 * i : 3 * i + 3])
        params, opt_state, loss = step(params, opt_state, batch)
        out.append(round(float(loss), 5))
    return {"truth": T[0], "out": out, "function": "step"}


#: Nothing to apply: the driver runs it once (``trial_c_driver.py``).
NO_FIX = True


if __name__ == "__main__":
    print(run())
