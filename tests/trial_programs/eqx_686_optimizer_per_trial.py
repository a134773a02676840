"""patrick-kidger/equinox#686 "Why is this function recompiling?", the optimizer part.

Each trial builds a new model and a new ``optax.adam(...)`` and passes the optimizer to an
``eqx.filter_jit`` step, which keeps it static and compares it by identity.
``run(fixed=True)`` applies jitlens' fix (lint JL007; the runtime names ``opt``): build
the optax optimizer once, before the loop. (The issue's model also stores a new
``jax.jit`` per instance, a second culprit jitlens names at run time.)
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

import jitlens


def loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def step(model, opt_state, x, y, opt):
        traces[0] += 1
        val, grads = eqx.filter_value_and_grad(loss)(model, x, y)
        updates, opt_state = opt.update(grads, opt_state, model)
        return val, eqx.apply_updates(model, updates), opt_state

    x, y = jnp.linspace(0, 1, 4).reshape(4, 1), jnp.zeros((4, 2))
    tx = optax.adam(1e-2)
    losses = []
    with jitlens.track() as t:
        for _trial in range(2):
            model = eqx.nn.Linear(1, 2, key=jax.random.key(0))
            opt = tx if fixed else optax.adam(1e-2)
            opt_state = opt.init(eqx.filter(model, eqx.is_array))
            for _ in range(2):
                val, model, opt_state = step(model, opt_state, x, y, opt)
                losses.append(float(val))
    (row,) = [f for f in t.report().functions if f.name == "step"]
    paths = sorted({r.path for e in row.events for r in e.reasons})
    return {"traces": traces[0], "reported": row.traces, "paths": paths, "losses": losses}
