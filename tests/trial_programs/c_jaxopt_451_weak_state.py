"""google/jaxopt#451 "weak_type inconsistency causes jit recompilation": a solver whose
``init_state`` holds Python numbers (weakly typed, an int for the step size) while ``update``
returns float32 arrays, fed back: the second ``update`` compiles again.

jitlens' weak-type fix once typed the step size with its *old* dtype
(``jnp.asarray(..., jnp.int32)``), which would still miss the float key, and its dtype fix
offered "write the literal in that type (`1.0`)", a weak float that misses it too.
``run(fixed=True)`` applies the fix printed now: ``jnp.asarray(..., jnp.float32)`` at init.
"""

import jax
import jax.numpy as jnp

T = [0]


def loss(w):
    return jnp.sum((w - 3.0) ** 2)


def init_state(fixed: bool) -> dict:
    if fixed:
        return {"stepsize": jnp.asarray(1, jnp.float32), "value": jnp.asarray(0, jnp.float32)}
    return {"stepsize": 1, "value": 0}


@jax.jit
def update(w, state):
    T[0] += 1
    value, g = jax.value_and_grad(loss)(w)
    stepsize = state["stepsize"] * 0.25
    return w - stepsize * g, {"stepsize": stepsize * 2.0, "value": value}


def run(fixed: bool) -> dict:
    T[0] = 0
    w, state, out = jnp.zeros(2), init_state(fixed), []
    for _ in range(3):
        w, state = update(w, state)
        out.append(float(state["value"]))
    return {"truth": T[0], "out": out, "function": "update"}


if __name__ == "__main__":
    print(run(fixed=False))
