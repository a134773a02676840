"""jax-ml/jax#9672 "JIT always recompiles bound methods": ``jax.jit(x.f)(...)`` written inside
the loop. Each ``x.f`` is a new bound-method object and each ``jax.jit`` a new wrapper, so
every iteration traces and compiles again. The maintainers' answer (tomhennigan): jit once,
e.g. ``self.f = jax.jit(self.f)`` in the constructor, and call that.

``run(fixed=True)`` applies jitlens' fix: ``self.f_jit = jax.jit(self.f)`` in ``__init__``.
"""

import jax
import jax.numpy as jnp

TRACES = [0]  # module level, as in the report: the method closes over nothing


class Scaler:
    def __init__(self, k):
        self.k = k

    def f(self, a):
        TRACES[0] += 1
        return jnp.sum(a * self.k)


class ScalerFixed(Scaler):
    def __init__(self, k):
        super().__init__(k)
        self.f_jit = jax.jit(self.f)


def run(fixed: bool) -> dict:
    traces = TRACES
    traces[0] = 0

    x, a, out = (ScalerFixed if fixed else Scaler)(2.0), jnp.arange(3.0), []
    for _ in range(3):
        out.append(float(x.f_jit(a) if fixed else jax.jit(x.f)(a)))
    return {"truth": traces[0], "out": out, "function": "f"}


if __name__ == "__main__":
    print(run(fixed=False))
