"""diffrax: a ``diffrax.Event`` rebuilt on every call around a nested ``cond_fn`` and passed to
an ``eqx.filter_jit`` solve (a held-out report's pattern).

``Event`` is an ``eqx.Module`` whose ``cond_fn`` field filter_jit keeps static, compared by
identity: each call compiles again. jitlens once told the user to write ``def _cond_fn(...)``
and set ``self.cond_fn`` in an ``__init__``: both diffrax's. The fix now moves the user's line
``event = diffrax.Event(cond_fn)`` to module level, ``cond_fn`` with it. ``run(fixed=True)``
applies it: one compile, the same outputs.
"""

import diffrax
import equinox as eqx
import jax.numpy as jnp

LIBRARIES = ("diffrax", "equinox")
T = [0]


def decay(t, y, args):
    return -y


@eqx.filter_jit
def _solve(y0, event):
    T[0] += 1
    term = diffrax.ODETerm(decay)
    sol = diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 2.0, 0.5, y0, event=event)
    return sol.ys


def solve(y0):
    def cond_fn(t, y, args, **kwargs):
        return y[0] < 0.4

    event = diffrax.Event(cond_fn)
    return _solve(y0, event)


def cond_fn(t, y, args, **kwargs):
    return y[0] < 0.4


EVENT = diffrax.Event(cond_fn)  # the printed fix: built once, at module level


def run(fixed: bool) -> dict:
    T[0] = 0
    out = []
    for i in range(3):
        y0 = jnp.ones(2) * (1 + i)
        out.append((_solve(y0, EVENT) if fixed else solve(y0)).tolist())
    return {"truth": T[0], "out": out, "function": "_solve"}
