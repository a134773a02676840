"""google/flax#5548: ``nnx.jit`` recompiles every epoch when the optimizer is rebuilt.

The discriminator and its ``nnx.Optimizer`` are rebuilt at the start of every epoch
(same architecture, same hyper-parameters); ``optax.adam(...)`` called again is a new
object that ``nnx.Optimizer`` keeps as a static compared by identity. ``run(fixed=True)``
applies jitlens' fix (lint JL007; the runtime names ``dis_opt.tx`` and says the same): build the optax
optimizer once, before the loop.
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx

import jitlens


class Gen(nnx.Module):
    def __init__(self, rngs):
        self.l = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, z):
        return self.l(z)


class Discriminator(nnx.Module):
    def __init__(self, rngs):
        self.l = nnx.Linear(2, 1, rngs=rngs)

    def __call__(self, x):
        return self.l(x)


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.jit
    def train_one_epoch(gen, dis, dis_opt, rngs):
        traces[0] += 1
        z = jax.random.normal(rngs.noise(), (4, 2))

        def dloss(dis):
            return jnp.mean(dis(gen(z)) ** 2)

        loss, grads = nnx.value_and_grad(dloss)(dis)
        dis_opt.update(dis, grads)
        return loss

    rngs = nnx.Rngs(0, noise=1)
    gen = Gen(rngs)
    tx = optax.adam(1e-3)
    losses = []
    with jitlens.track() as t:
        for _epoch in range(3):
            dis = Discriminator(rngs=rngs)
            dis_opt = nnx.Optimizer(dis, tx if fixed else optax.adam(1e-3), wrt=nnx.Param)
            losses.append(float(train_one_epoch(gen, dis, dis_opt, rngs)))
    (row,) = [f for f in t.report().functions if f.name == "train_one_epoch"]
    paths = sorted({r.path for e in row.events for r in e.reasons})
    fixes = sorted({r.fix for e in row.events for r in e.reasons})
    return {
        "traces": traces[0],
        "reported": row.traces,
        "paths": paths,
        "fixes": fixes,
        "losses": losses,
    }
