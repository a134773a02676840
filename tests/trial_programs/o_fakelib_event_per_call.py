"""A library's event object rebuilt per call around the user's condition (the diffrax pattern,
on ``jl_fakelib``: a package of the tests' own under a ``site-packages`` folder).

``step`` builds ``event = jl_fakelib.Event(cond_fn)`` on every call; the jitted ``_step`` holds
its ``cond_fn`` as static data, compared by identity, so each call compiles again. jitlens
once told the user to set ``self.cond_fn`` in ``Event.__init__``, the library's code; the fix
now moves the user's line that builds the event to module level. ``run(fixed=True)`` applies
it: one compile, the same outputs.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "site-packages"))

import jax
import jax.numpy as jnp
import jl_fakelib

T = [0]


@jax.jit
def _step(y, event):
    T[0] += 1
    return jl_fakelib.solve(y, event)


def step(y):
    def cond_fn(v):
        return v > 1.0

    event = jl_fakelib.Event(cond_fn)
    return _step(y, event)


def cond_fn(v):
    return v > 1.0


EVENT = jl_fakelib.Event(cond_fn)  # the printed fix: built once, at module level


def run(fixed: bool) -> dict:
    T[0] = 0
    y = jnp.arange(4.0)
    out = []
    for _ in range(3):
        y = _step(y, EVENT) if fixed else step(y)
        out.append(y.tolist())
    return {"truth": T[0], "out": out, "function": "_step"}
