"""A linen ``TrainState`` rebuilt every epoch, as in flax's linen examples run per config.

``TrainState.create(apply_fn=MLP().apply, tx=optax.adam(1e-3), ...)`` inside the epoch loop:
``apply_fn`` and ``tx`` are static fields of the state (``pytree_node=False``), compared by
identity, so ``jax.jit(train_step)`` compiles again every epoch. jitlens once told the user
to store ``type(obj).apply`` (which drops the module: ``apply_fn(variables, x)`` breaks) and
called the rebuilt optimizer "expected"; ``run("fixed")`` applies its fixes as printed
(build the module and the optax transform once, before the loop), ``run("sweep_fixed")`` its
sweep (``optax.inject_hyperparams``, the learning rate set as a float32 array).
"""

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state

import jitlens


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(4)(x)))


X, Y = jnp.ones((4, 3)), jnp.ones((4, 1))
PARAMS = MLP().init(jax.random.key(0), X)["params"]
RATES = (1e-3, 1e-2, 1e-3)


def run(mode: str) -> dict:
    traces = [0]

    @jax.jit
    def train_step(state, x, y):
        traces[0] += 1

        def loss_fn(p):
            return jnp.mean((state.apply_fn({"params": p}, x) - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    model, tx = MLP(), optax.adam(1e-3)  # the fix: built once, before the loop
    sweep_tx = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)
    losses = []
    with jitlens.track() as t:
        for lr in RATES:
            if mode == "bad":
                state = train_state.TrainState.create(
                    apply_fn=MLP().apply, params=PARAMS, tx=optax.adam(1e-3)
                )
            elif mode == "fixed":
                state = train_state.TrainState.create(apply_fn=model.apply, params=PARAMS, tx=tx)
            elif mode == "sweep_bad":
                state = train_state.TrainState.create(
                    apply_fn=model.apply, params=PARAMS, tx=optax.adam(lr)
                )
            else:  # sweep_fixed
                state = train_state.TrainState.create(
                    apply_fn=model.apply, params=PARAMS, tx=sweep_tx
                )
                state.opt_state.hyperparams["learning_rate"] = jnp.float32(lr)
            for _ in range(2):
                state, loss = train_step(state, X, Y)
            losses.append(float(loss))
    (row,) = [f for f in t.report().functions if f.name == "train_step"]
    reasons = {r.path: r for e in row.events for r in e.reasons}
    return {
        "traces": traces[0],
        "reported": row.traces,
        "paths": sorted(reasons),
        "fixes": {p: r.fix for p, r in reasons.items()},
        "messages": {p: r.message for p, r in reasons.items()},
        "kinds": {p: str(r.fix_kind) for p, r in reasons.items()},
        "shown": {p: f"{r.before} -> {r.after}" for p, r in reasons.items()},
        "losses": losses,
    }


if __name__ == "__main__":
    print(run("bad"))
