"""optax#577 (learning rate baked into the compiled step; workaround ``inject_hyperparams``)
with an ``nnx.Optimizer``: the epoch loop sets the injected learning rate to a Python float
(``optimizer.opt_state.hyperparams['learning_rate'].value = lr``). The first epoch runs with
the ``f32[]`` optax created; each Python float is a weak-typed ``f32[]``: one more compile.

``run(fixed=True)`` applies jitlens' fix as printed (``...[...] = jnp.asarray(lr, jnp.float32)``):
one compile, the same losses.
"""

import jax.numpy as jnp
import optax
from flax import nnx


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.jit
    def train_step(model, optimizer, x, y):
        traces[0] += 1

        def loss_fn(m):
            return jnp.mean((m(x) - y) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(
        model, optax.inject_hyperparams(optax.sgd)(learning_rate=0.1), wrt=nnx.Param
    )
    x = jnp.ones((4, 2))
    y = jnp.zeros((4, 1))
    out = []
    for epoch in range(3):
        if epoch:
            lr = 0.1 / (1 + epoch)
            if fixed:  # jitlens' fix as printed
                optimizer.opt_state.hyperparams["learning_rate"][...] = jnp.asarray(lr, jnp.float32)
            else:
                optimizer.opt_state.hyperparams["learning_rate"].value = lr
        out.append(round(float(train_step(model, optimizer, x, y)), 5))
    return {"truth": traces[0], "out": out, "function": "train_step"}


if __name__ == "__main__":
    print(run(fixed=False))
