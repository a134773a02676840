"""patrick-kidger/diffrax#466 "Accelerate ODE solver": ``run_diffrax(..., {'method':
Dopri5(), 'atol': 1e-5, 'rtol': 1e-5})`` under ``eqx.filter_jit`` compiles again for every
new tolerance. The maintainer (lockwo): expected: Python floats are static under
``filter_jit``; pass the tolerances as JAX arrays to compile once. Shrunk without diffrax: an
explicit Euler loop whose step size is set by ``atol``, the options dict as in the report.

``run(fixed=True)`` applies jitlens' fix: ``jnp.asarray`` for the float tolerances.
"""

import equinox as eqx
import jax.numpy as jnp


class Euler(eqx.Module):
    def step(self, f, y, dt):
        return y + dt * f(y)


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def run_solver(y0, options):
        traces[0] += 1
        dt = jnp.sqrt(options["atol"] + options["rtol"])
        y = y0
        for _ in range(5):
            y = options["method"].step(lambda u: -u, y, dt)
        return y

    y0, out = jnp.ones(3), []
    for tol in (1e-5, 1e-5, 1e-4, 1e-3):
        atol = jnp.asarray(tol) if fixed else tol
        rtol = jnp.asarray(tol) if fixed else tol
        y = run_solver(y0, {"method": Euler(), "atol": atol, "rtol": rtol})
        out.append(round(float(y.sum()), 5))
    return {"truth": traces[0], "out": out, "function": "run_solver"}


if __name__ == "__main__":
    print(run(fixed=False))
