"""dm-haiku: ``hk.transform`` rebuilt and jitted on every call (a held-out report's pattern:
``f = hk.transform(forward)`` then ``jax.jit(f.apply)(params, None, x)`` inside ``predict``).

Each call jits a new ``apply`` closure, compiled again. jitlens once told the user to
redefine Haiku's internal ``apply_fn`` "with `f` as parameters": Haiku's code, not the
user's. The fix now moves the user's two lines to module level. ``run(fixed=True)`` applies
it: one compile, the same outputs.
"""

import haiku as hk
import jax
import jax.numpy as jnp

LIBRARIES = ("haiku",)
T = [0]


def forward(x):
    T[0] += 1
    return hk.Linear(2, w_init=hk.initializers.Constant(0.5))(x)


def predict(params, x):
    f = hk.transform(forward)
    return jax.jit(f.apply)(params, None, x)


def run(fixed: bool) -> dict:
    x = jnp.arange(6.0).reshape(2, 3)
    params = hk.transform(forward).init(jax.random.key(0), x)
    T[0] = 0
    if fixed:  # the printed fix: both lines at module level, then `apply_jit(...)`
        f = hk.transform(forward)
        apply_jit = jax.jit(f.apply)
        out = [apply_jit(params, None, x * i).tolist() for i in range(3)]
    else:
        out = [predict(params, x * i).tolist() for i in range(3)]
    return {"truth": T[0], "out": out, "function": "apply"}
