"""Mimics: an N-body / Hamiltonian Monte Carlo leapfrog integrator written with Equinox,
stepping 64 times in a Python ``for`` loop inside ``eqx.filter_jit`` (the step count is
a Python int). The trace unrolls every step. There are no layers: the loop carries the
positions and velocities through time.

Expected from jitlens: ``unrolled_loop`` at the ``for`` line, a carried state:
``jax.lax.fori_loop`` (not "build the 64 layers stacked with ``eqx.filter_vmap``").
"""

import equinox as eqx
import jax
import jax.numpy as jnp

STEPS, BODIES = 64, 16


class Gravity(eqx.Module):
    masses: jax.Array
    softening: float = 0.1

    def accel(self, x):
        d = x[None, :, :] - x[:, None, :]
        r2 = jnp.sum(d**2, axis=-1) + self.softening**2
        return jnp.sum(self.masses[None, :, None] * d / r2[..., None] ** 1.5, axis=1)


def leapfrog(model, x, v, dt):
    v = v + 0.5 * dt * model.accel(x)
    x = x + dt * v
    return x, v + 0.5 * dt * model.accel(x)


@eqx.filter_jit
def simulate(model, x, v, dt):
    for _ in range(STEPS):
        x, v = leapfrog(model, x, v, dt)
    return x, v


@eqx.filter_jit
def simulate_fixed(model, x, v, dt):  # jitlens' advice: the steps under jax.lax.fori_loop
    return jax.lax.fori_loop(0, STEPS, lambda i, s: leapfrog(model, *s, dt), (x, v))


def _data():
    k1, k2 = jax.random.split(jax.random.key(0))
    model = Gravity(jnp.linspace(0.5, 1.5, BODIES))
    return model, jax.random.normal(k1, (BODIES, 3)), 0.1 * jax.random.normal(k2, (BODIES, 3))


def main():
    return jnp.concatenate([a.ravel() for a in simulate(*_data(), 1e-3)])


def main_fixed():
    return jnp.concatenate([a.ravel() for a in simulate_fixed(*_data(), 1e-3)])


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
