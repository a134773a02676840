"""The same batches sharded over a 2-device mesh, then over a mesh of the same devices in the
other order (a mesh built per batch from a device list whose order varies): JAX compiles the
cached trace again, once per device order (run with 2 host CPU devices, ``XLA_FLAGS``).

jitlens once said "an equal key compiled again ... a transformed program ... or an
ahead-of-time compile": no culprit, no fix. The device assignment is now in the key and
named (``x: sharding devices (0, 1) -> (1, 0)``), with its fix: one mesh, built once at module
level. ``run(fixed=True)`` applies it: one compile, the same outputs.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

DEVICES = 2
T = [0]


@jax.jit
def total(x):
    T[0] += 1
    return (x * 2).sum()


def batch(i, order):
    mesh = Mesh(np.array(jax.devices()[:2])[list(order)], ("data",))
    return jax.device_put(jnp.arange(8.0).reshape(4, 2) * i, NamedSharding(mesh, P("data")))


mesh = Mesh(np.array(jax.devices()[:2]), ("data",))  # the printed fix


def run(fixed: bool) -> dict:
    T[0] = 0
    out = []
    for i, order in enumerate([(0, 1), (1, 0), (0, 1), (1, 0)]):
        if fixed:
            x = jax.device_put(jnp.arange(8.0).reshape(4, 2) * i, NamedSharding(mesh, P("data")))
        else:
            x = batch(i, order)
        out.append(float(total(x)))
    compiles = total._cache_size()
    total.clear_cache()
    return {"truth": T[0], "out": out, "function": "total", "extra": {"compiles": compiles}}
