"""JAX "Control flow and logical operators with JIT" tutorial, run outside jit: a Python loop
calls ``jax.lax.cond`` eagerly with a branch defined inside the loop. JAX caches a branch's
trace by its function object: the module-level ``grow`` traces once, the new ``shrink`` of
every iteration traces (and the cond compiles) again.

``run(fixed=True)`` applies jitlens' fix: ``@jax.jit`` on a function of the program's own
that makes the ``lax.cond`` call: one trace, the same values.
"""

import jax
import jax.numpy as jnp

T = {"grow": 0, "shrink": 0, "step": 0}


def grow(v):
    T["grow"] += 1
    return v * 2


def cond_step(x):
    def shrink(v):
        T["shrink"] += 1
        return v - 1

    return jax.lax.cond(x.sum() < 20, grow, shrink, x)


@jax.jit
def step(x):
    T["step"] += 1
    return cond_step(x)


def run(fixed: bool) -> dict:
    for k in T:
        T[k] = 0
    x = jnp.ones(3)
    out = []
    for _ in range(4):
        x = step(x) if fixed else cond_step(x)
        out.append(float(x[0]))
    functions = ["step"] if fixed else ["grow", "shrink"]
    return {"truth": {k: T[k] for k in functions}, "out": out, "functions": functions}


if __name__ == "__main__":
    print(run(fixed=False))
