"""optax's meta-learning example, the way it starts before ``inject_hyperparams``: the inner
optimizer rebuilt per outer step with the new learning rate and passed to a ``jax.jit`` step
as a static argument, so every outer step compiles again.

jitlens once told this program to set ``optimizer.opt_state.hyperparams[...]``: an
``nnx.Optimizer`` it does not have. ``run(fixed=True)`` applies the fix printed now: ``opt``
built once through ``optax.inject_hyperparams``, the rate set on the state ``opt.init``
returned.
"""

import functools

import jax
import jax.numpy as jnp
import optax


def loss(p, x):
    return jnp.sum((p * x - 1.0) ** 2)


def run(fixed: bool) -> dict:
    traces = [0]

    @functools.partial(jax.jit, static_argnums=2)
    def inner_step(p, state, opt, x):
        traces[0] += 1
        u, state = opt.update(jax.grad(loss)(p, x), state, p)
        return optax.apply_updates(p, u), state

    p, x, lr, out = jnp.ones(3), jnp.arange(3.0), 0.1, []
    if fixed:
        opt = optax.inject_hyperparams(optax.sgd)(learning_rate=1e-3)
    for _outer in range(3):
        if fixed:
            state = opt.init(p)
            state.hyperparams["learning_rate"] = jnp.float32(lr)
        else:
            opt = optax.sgd(lr)
            state = opt.init(p)
        for _ in range(2):
            p, state = inner_step(p, state, opt, x)
        lr *= 0.5
        out.append(float(loss(p, x)))
    return {"truth": traces[0], "out": out, "function": "inner_step"}


if __name__ == "__main__":
    print(run(fixed=False))
