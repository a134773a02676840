"""A library's settings object without ``__eq__``, built in the call to a jitted function that
keeps it static (the ``NUTS(model)`` pattern, on ``jl_fakelib``: a package of the tests' own).

Each ``jl_fakelib.Solver(0.1)`` is a new key. jitlens once told the user to make the library's
class a frozen dataclass; the fix now builds the object once, at module level, and passes it.
``run(fixed=True)`` applies it: one compile, the same outputs.
"""

import functools
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "site-packages"))

import jax
import jax.numpy as jnp
import jl_fakelib

T = [0]


@functools.partial(jax.jit, static_argnums=0)
def descend(solver, x):
    T[0] += 1
    return jl_fakelib.minimise(solver, x)


solver = jl_fakelib.Solver(0.1)  # the printed fix: built once, passed where the call built it


def run(fixed: bool) -> dict:
    T[0] = 0
    x = jnp.arange(3.0)
    out = []
    for _ in range(3):
        x = descend(solver, x) if fixed else descend(jl_fakelib.Solver(0.1), x)
        out.append(x.tolist())
    return {"truth": T[0], "out": out, "function": "descend"}
