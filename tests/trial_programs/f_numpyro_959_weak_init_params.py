"""pyro-ppl/numpyro#959 (release 0.6.0, "fix compiling issues in ``svi``"): ``SVI.init`` built
its params from Python floats, weakly typed, and ``svi.run``'s jitted body returned strongly
typed float32 params, so the body compiled again on its second step. The maintainer's fix:
"convert weak types like float to float32/float64 to avoid recompiling body_fn"
(``lax.convert_element_type(x, jnp.result_type(x))``). Shrunk: a jitted update of a params
dict initialised from Python floats.

``run(fixed=True)`` applies jitlens' fix: the initial params made float32 arrays.
"""

import jax
import jax.numpy as jnp


def run(fixed: bool) -> dict:
    traces = [0]
    lr = jnp.float32(0.01)  # the optimizer's state: strongly typed

    @jax.jit
    def body_fn(params, x):
        traces[0] += 1
        grads = jax.grad(lambda p: jnp.sum((p["loc"] + p["scale"] * x) ** 2))(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    init = {"loc": 0.5, "scale": 1.0}
    if fixed:
        init = {k: jnp.asarray(v, jnp.float32) for k, v in init.items()}
    params, x, out = init, jnp.arange(3.0), []
    for _ in range(3):
        params = body_fn(params, x)
        out.append(round(float(params["loc"]), 6))
    return {"truth": traces[0], "out": out, "function": "body_fn"}


if __name__ == "__main__":
    print(run(fixed=False))
