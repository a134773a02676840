"""google-deepmind/optax#1171 "backtracking linesearch huge slow down -- recompiling functions
every run of ``update_fn``?": ``optax.chain(sgd, scale_by_backtracking_linesearch)`` whose
``update`` is called outside jit. The linesearch runs a ``jax.lax.while_loop`` whose
``cond_fn`` / ``body_fn`` are defined inside ``update_fn``: new functions on every call, so
the eager loop traces and compiles again each step (the reporter's diagnosis, confirmed in
the thread; the answer: jit the step that calls ``update``).

``run(fixed=True)`` applies the maintainers' fix, the step that calls ``opt.update`` under
``jax.jit``, and jitlens' fix of the one retrace that remains then: optax's ``init`` makes
``num_linesearch_steps`` from a Python int (weakly typed) and ``update`` returns a typed one,
so the state is typed once after ``init`` (one compile).
"""

import jax
import jax.numpy as jnp
import optax


def f(x):
    return jnp.sum((x - 1.0) ** 2)


def run(fixed: bool) -> dict:
    traces = [0]
    linesearch = optax.scale_by_backtracking_linesearch(max_backtracking_steps=5)
    opt = optax.chain(optax.sgd(1.0), linesearch)

    def step(params, state):
        traces[0] += 1
        value, grad = jax.value_and_grad(f)(params)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=f)
        return optax.apply_updates(params, updates), state

    if fixed:
        step = jax.jit(step)
    params = jnp.zeros(3)
    state, out = opt.init(params), []
    if fixed:
        state = jax.tree.map(
            lambda x: jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x, state
        )
    for _ in range(3):
        params, state = step(params, state)
        out.append(round(float(f(params)), 5))
    # jitted: one trace of `step`. As written `step` is no jitted function (0 traces of its
    # own); JAX's compile log shows optax's eager `while` compiled once per step (3x here),
    # which jitlens does not report yet (test_trial_f.py's xfail)
    return {"truth": traces[0] if fixed else 0, "out": out, "function": "step"}


if __name__ == "__main__":
    print(run(fixed=False))
