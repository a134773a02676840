"""jax-ml/jax#33043 "Avoid JIT compile time in classes with static fields": a
``jax.tree_util.register_dataclass`` class with ``idx`` marked static
(``field(metadata={"static": True})``) and a jitted ``area(shape)``. A new ``Shape`` with
another ``idx`` compiles ``area`` again, although ``area`` never reads ``idx``: a static
field is part of the treedef, hence of the cache key. The culprit named in the report:
``shape.idx`` (2 -> 3), a static field; keep it a data field if it need not be static.

``run(fixed=True)`` applies jitlens' fix: ``idx`` a data (traced) field.
"""

import dataclasses

import jax
import jax.numpy as jnp


def run(fixed: bool) -> dict:
    traces = [0]
    meta = {} if fixed else {"static": True}

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Shape:
        length: jax.Array
        idx: int = dataclasses.field(default=1, metadata=meta)

    @jax.jit
    def area(shape):
        traces[0] += 1
        return shape.length * shape.length

    out = []
    for idx in (2, 2, 3, 4):
        out.append(float(area(Shape(jnp.asarray(10.0), idx))))
    return {"truth": traces[0], "out": out, "function": "area"}


if __name__ == "__main__":
    print(run(fixed=False))
