"""A library's transform rebuilt per call and jitted (the dm-haiku pattern, on ``jl_fakelib``, a
package of the tests' own under a ``site-packages`` folder: tested where haiku is not).

``predict`` builds ``f = jl_fakelib.transform(forward)`` and jits ``f.apply`` on every call:
each is a new function, compiled again. jitlens once told the user to redefine the library's
``apply_fn`` "with `f` as parameters"; the fix now moves the user's line that builds it, with
the jit, to module level. ``run(fixed=True)`` applies it: one compile, the same outputs.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "site-packages"))

import jax
import jax.numpy as jnp
import jl_fakelib

T = [0]


def forward(params, x):
    T[0] += 1
    return x @ params["w"]


def predict(params, x):
    f = jl_fakelib.transform(forward)
    return jax.jit(f.apply)(params, x)


def run(fixed: bool) -> dict:
    T[0] = 0
    x = jnp.arange(6.0).reshape(2, 3)
    params = jl_fakelib.transform(forward).init(x)
    if fixed:  # the printed fix: both lines at module level, then `apply_jit(...)`
        f = jl_fakelib.transform(forward)
        apply_jit = jax.jit(f.apply)
        out = [apply_jit(params, x * i).tolist() for i in range(3)]
    else:
        out = [predict(params, x * i).tolist() for i in range(3)]
    return {"truth": T[0], "out": out, "function": "apply"}
