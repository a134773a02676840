"""PlasmaControl/DESC#1043 "Remove jit method of objective, directly compile methods": the
maintainer (f0uriest): "every time you call ``factorize_linear_constraints`` you get a new
``project/recover`` function which gets compiled each time, since its a new function each
time". The culprit: ``@jit`` on a closure defined inside the factory, so each call jits a
new function; the fix in the PR: a class whose jitted method is shared by its instances
(``Z``, ``xp`` passed as arguments).

``run(fixed=True)`` applies jitlens' fix: one jitted function at module level, the closed-over
arrays passed as arguments.
"""

import jax
import jax.numpy as jnp


def _project(x, Z, xp):
    _project.traces[0] += 1
    return Z.T @ (x - xp)


def factorize_linear_constraints(Z, xp, fixed):
    if fixed:
        project = jax.jit(_project)
        return lambda x: project(x, Z, xp)

    @jax.jit
    def project(x):
        _project.traces[0] += 1
        return Z.T @ (x - xp)

    return project


def run(fixed: bool) -> dict:
    traces = _project.traces = [0]
    out = []
    for i in range(3):
        Z, xp = jnp.eye(3) * (i + 1), jnp.ones(3)
        project = factorize_linear_constraints(Z, xp, fixed)
        out.append(float(project(jnp.arange(3.0) + 2.0).sum()))
    return {"truth": traces[0], "out": out, "function": "_project" if fixed else "project"}


if __name__ == "__main__":
    print(run(fixed=False))
