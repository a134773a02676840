"""patrick-kidger/equinox#1062 "``filter_jit`` cache missing issues when using non-array
variables with an ``equinox`` class" (scarlet2): a Module holding a Python int that the
jitted step changes (``MyModule(x=0)`` -> ``MyModule(x=1)`` ...). ``eqx.filter_jit`` keeps
every non-array leaf static, so each new value compiles the step again. The reporters' fix,
confirmed in the thread: make the changing field an array.

``run(fixed=True)`` applies jitlens' fix as printed: ``jnp.asarray(value, jnp.int32)`` for the int field.
"""

import equinox as eqx
import jax.numpy as jnp


class MyModule(eqx.Module):
    x: int
    w: jnp.ndarray


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def _step(m):
        traces[0] += 1
        return MyModule(m.x + 1, m.w * 2.0)

    m = MyModule(jnp.asarray(0, jnp.int32) if fixed else 0, jnp.ones(2))
    out = []
    for _ in range(4):
        m = _step(m)
        out.append((int(m.x), float(m.w.sum())))
    return {"truth": traces[0], "out": out, "function": "_step"}


if __name__ == "__main__":
    print(run(fixed=False))
