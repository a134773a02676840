"""optimistix: an ``optx.Newton`` rebuilt per call with a lambda as its ``norm`` and passed to an
``eqx.filter_jit`` root find.

``Newton`` is an ``eqx.Module``; filter_jit keeps its ``norm`` static, compared by identity: each
new lambda compiles again. The fix must not tell the user to edit ``Newton.__init__``
(optimistix's): it moves the user's line that builds the solver to module level, the lambda a
function there. ``run(fixed=True)`` applies it: one compile, the same outputs.
"""

import equinox as eqx
import jax.numpy as jnp
import optimistix as optx

LIBRARIES = ("optimistix", "equinox")
T = [0]


def fn(y, args):
    return y**2 - args


@eqx.filter_jit
def solve(solver, a):
    T[0] += 1
    return optx.root_find(fn, solver, jnp.array(1.0), args=a).value


def norm(x):
    return jnp.max(jnp.abs(x))


SOLVER = optx.Newton(rtol=1e-6, atol=1e-6, norm=norm)  # the printed fix


def run(fixed: bool) -> dict:
    T[0] = 0
    out = []
    for a in (2.0, 3.0, 5.0):
        if fixed:
            solver = SOLVER
        else:
            solver = optx.Newton(rtol=1e-6, atol=1e-6, norm=lambda x: jnp.max(jnp.abs(x)))
        out.append(round(float(solve(solver, jnp.asarray(a))), 5))
    return {"truth": T[0], "out": out, "function": "solve"}
