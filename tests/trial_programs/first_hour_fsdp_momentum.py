"""Flax's FSDP toy example (examples/nnx_toy_examples/10_fsdp_and_optimizer.py) in small, as a
user shrinks it for CPU: an MLP whose parameters carry ``sharding_names``, a momentum optimizer
that copies their metadata, both built under ``nnx.jit`` inside ``jax.set_mesh``, then a train
step called in a loop. The step hands ``w2`` and its momentum back placed ``P('model')`` where
they came in ``P()``: JAX compiles the step again from the trace it has (no retrace), once.

``python first_hour_fsdp_momentum.py [FIX] [guard]``: ``FIX`` a file of lines of code run after the
model is built (the fix jitlens printed), ``guard`` the step under ``jitlens.max_compiles(1)``.
Prints ``TRUTH {json}``: the step's own trace count and the losses.
"""

import json
import os
import pathlib
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
TRACES = [0]


class MLP(nnx.Module):
    def __init__(self, rngs):
        init = nnx.initializers.lecun_normal()
        self.w1 = nnx.Param(init(rngs.params(), (1, 16)), sharding_names=(None, "model"))
        self.w2 = nnx.Param(init(rngs.params(), (16, 1)), sharding_names=(None, "model"))

    def __call__(self, x):
        return nnx.relu(x @ self.w1) @ self.w2


class Momentum(nnx.Variable):
    pass


class SGD(nnx.Pytree):
    def __init__(self, params):
        def zeros(v):
            return Momentum(jnp.zeros_like(v[...]), **v.get_metadata())

        self.params = nnx.data(params)
        self.momentum = nnx.data(
            jax.tree.map(zeros, params, is_leaf=lambda x: isinstance(x, nnx.Variable))
        )

    def update(self, grads):
        def one(p, m, g):
            m[...] = 0.9 * m[...] + 0.1 * g[...]
            p[...] -= 0.05 * m[...]

        jax.tree.map(
            one, self.params, self.momentum, grads, is_leaf=lambda x: isinstance(x, nnx.Variable)
        )


@nnx.jit
def create_model():
    model = MLP(nnx.Rngs(0))
    return model, SGD(nnx.variables(model, nnx.Param))


def train_step(model, optimizer, x, y):
    TRACES[0] += 1

    def loss_fn(model):
        return jnp.mean((y - model(x)) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(grads)
    return loss


def main():
    global model, optimizer
    with jax.set_mesh(mesh):
        model, optimizer = create_model()
    fix = [a for a in sys.argv[1:] if a != "guard"]
    if fix:
        exec(pathlib.Path(fix[0]).read_text(), globals())
    step = nnx.jit(train_step)
    if "guard" in sys.argv:
        import jitlens

        step = jitlens.max_compiles(1)(step)
    xs = np.linspace(-2, 2, 64, dtype=np.float32)[:, None]
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(12):
        idx = rng.choice(len(xs), size=16)
        x, y = jax.device_put((xs[idx], 0.8 * xs[idx] ** 2), NamedSharding(mesh, P("data")))
        losses.append(float(step(model, optimizer, x, y)))
    print("TRUTH " + json.dumps({"traces": TRACES[0], "losses": losses}))


if __name__ == "__main__":
    main()
