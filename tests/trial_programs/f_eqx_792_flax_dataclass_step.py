"""patrick-kidger/equinox#792 "Equivalent of flax's TrainState": a ``flax.struct.dataclass``
``TrainState(model, tx, opt_state, step)`` updated by an ``eqx.filter_jit`` step that returns
``step=self.step + 1``. The reporter: "MUCH slower when we do ``step=self.step + 1``". The
step is a Python int leaf, static under ``filter_jit`` (every non-array is), so each step
compiles again; the maintainer's answer: keep the counter an array.

``run(fixed=True)`` applies jitlens' fix: ``step=jnp.asarray(0)`` in the state.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from flax import struct


@struct.dataclass
class TrainState:
    model: eqx.Module
    tx: optax.GradientTransformation = struct.field(pytree_node=False)
    opt_state: optax.OptState
    step: int

    def apply_gradients(self, grads):
        updates, opt_state = self.tx.update(grads, self.opt_state, self.model)
        model = eqx.apply_updates(self.model, updates)
        return self.replace(model=model, opt_state=opt_state, step=self.step + 1)


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def train_step(state, x):
        traces[0] += 1
        grads = jax.grad(lambda m: jnp.sum(m(x) ** 2))(state.model)
        return state.apply_gradients(grads)

    model = eqx.nn.Linear(2, 2, key=jax.random.key(0))
    tx = optax.sgd(0.1)
    step = jnp.asarray(0) if fixed else 0
    state = TrainState(model, tx, tx.init(eqx.filter(model, eqx.is_array)), step)
    out = []
    for _ in range(4):
        state = train_step(state, jnp.ones(2))
        out.append(round(float(state.model.weight.sum()), 5))
    return {"truth": traces[0], "out": out, "function": "train_step"}


if __name__ == "__main__":
    print(run(fixed=False))
