"""An NNX parameter resharded between calls over a mesh with explicit axes (``jax.make_mesh``
on jax >= 0.10), so that the new sharding changes the array's type (``float32[8,4@model]``).

jitlens' fix once read ``m.w[...] = jax.device_put(m.w[...], NamedSharding(mesh, P(None,
'model')))``, which raises as printed ("Incompatible types for broadcasting" / a
``ShardingTypeError``) when the type changes. It now sets the Variable in place through
``set_value``, which every holder of the Variable sees. ``run(fixed=True)`` applies it before
the first call: one compile, the same outputs (run with 2 host CPU devices).
"""

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

LIBRARIES = ("flax",)
DEVICES = 2
T = [0]


class Model(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.arange(32.0).reshape(8, 4))

    def __call__(self, x):
        return x @ self.w


@nnx.jit
def forward(m, x):
    T[0] += 1
    return m(x).sum()


def run(fixed: bool) -> dict:
    T[0] = 0
    mesh = jax.make_mesh((1, 2), ("data", "model"))
    m, x = Model(), jnp.ones((2, 8))
    placed = NamedSharding(mesh, P(None, "model"))
    if fixed:  # the printed fix, before the loop
        m.w.set_value(jax.device_put(m.w.get_value(), placed))
    out = [float(forward(m, x))]
    m.w.set_value(jax.device_put(m.w.get_value(), placed))  # the program's own resharding
    out += [float(forward(m, x)) for _ in range(2)]
    return {"truth": T[0], "out": out, "function": "forward", "extra": _extra(mesh, placed)}


def _extra(mesh: jax.sharding.Mesh, placed: NamedSharding) -> dict:
    explicit = "Explicit" in str(getattr(mesh, "axis_types", ""))
    return {"old_fix": _old_fix(placed), "explicit": explicit}


def _old_fix(placed: NamedSharding) -> str:
    """What the fix jitlens once printed does here: ``m.w[...] = jax.device_put(m.w[...], ...)``."""
    m = Model()
    try:
        m.w[...] = jax.device_put(m.w[...], placed)
    except Exception as exc:  # the type changed: float32[8,4@model] is not float32[8,4]
        return type(exc).__name__
    return "ok"
