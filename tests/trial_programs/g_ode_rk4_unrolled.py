"""Mimics: a hand-written RK4 integrator of a Lotka-Volterra / SIR model (as in
JAX tutorials on neural ODEs before diffrax) whose time loop is a Python
``for`` over ``range(n_steps)`` inside the jitted solve.

Expected from jitlens: ``unrolled_loop`` naming the ``for`` line, fix ``lax.fori_loop`` / ``lax.scan``.
"""

import jax
import jax.numpy as jnp

STEPS = 24


def vector_field(y, theta):
    prey, pred = y[0], y[1]
    a, b, c, d = theta
    return jnp.stack([a * prey - b * prey * pred, c * prey * pred - d * pred])


@jax.jit
def solve(y0, theta, dt):
    y = y0
    for _ in range(STEPS):
        k1 = vector_field(y, theta)
        k2 = vector_field(y + dt / 2 * k1, theta)
        k3 = vector_field(y + dt / 2 * k2, theta)
        k4 = vector_field(y + dt * k3, theta)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def rk4_step(y, theta, dt):
    k1 = vector_field(y, theta)
    k2 = vector_field(y + dt / 2 * k1, theta)
    k3 = vector_field(y + dt / 2 * k2, theta)
    k4 = vector_field(y + dt * k3, theta)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@jax.jit
def solve_fixed(y0, theta, dt):  # jitlens' advice: jax.lax.fori_loop (only the index changes)
    return jax.lax.fori_loop(0, STEPS, lambda i, y: rk4_step(y, theta, dt), y0)


ARGS = (jnp.array([10.0, 5.0]), jnp.array([1.1, 0.4, 0.1, 0.4]), 0.01)


def main():
    return solve(*ARGS)


def main_fixed():
    return solve_fixed(*ARGS)


if __name__ == "__main__":
    print("RESULT", [float(v) for v in main()])
