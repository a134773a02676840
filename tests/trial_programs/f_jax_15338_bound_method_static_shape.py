"""jax-ml/jax#15338 "Recompilation of bounded methods": a pytree class ``A`` whose method
``do(key, shape)`` is jitted in the loop as ``jax.jit(a.do, static_argnums=1)``: every
iteration compiles again, while ``jax.jit(do, static_argnums=2)(a, ...)`` on a module-level
function compiles once. The culprit (per #9672, which the report cites): ``jax.jit`` applied
anew to a new bound method object each iteration; jit once, outside the loop.

``run(fixed=True)`` applies jitlens' fix: ``self.do_jit = jax.jit(self.do, static_argnums=1)``
in ``__init__`` (the static shape kept static).
"""

import jax
from jax.tree_util import register_pytree_node_class

TRACES = [0]  # module level, as in the report: the method closes over nothing


@register_pytree_node_class
class A:
    def do(self, key, shape):
        TRACES[0] += 1
        return jax.random.uniform(key, shape)

    def tree_flatten(self):
        return (), {}

    @classmethod
    def tree_unflatten(cls, treedef, leaves):
        return cls(*leaves, **treedef)


@register_pytree_node_class
class AFixed(A):
    def __init__(self):
        self.do_jit = jax.jit(self.do, static_argnums=1)


def run(fixed: bool) -> dict:
    traces = TRACES
    traces[0] = 0

    a, key, out = (AFixed if fixed else A)(), jax.random.key(42), []
    for _ in range(3):
        key, subkey = jax.random.split(key)
        fn = a.do_jit if fixed else jax.jit(a.do, static_argnums=1)
        out.append(round(float(fn(subkey, (2, 3)).sum()), 5))
    return {"truth": traces[0], "out": out, "function": "do"}


if __name__ == "__main__":
    print(run(fixed=False))
