"""equinox's examples/stateful.ipynb: a BatchNorm model evaluated each epoch in training mode
and through ``eqx.nn.inference_mode``: one compile per mode, expected (nothing lost).

``run(fixed=True)`` applies jitlens' advice (the inference model built once, outside the
loop): still one compile per mode, the same values.
"""

import equinox as eqx
import jax
import jax.numpy as jnp


class Model(eqx.Module):
    linear: eqx.nn.Linear
    norm: eqx.nn.BatchNorm

    def __init__(self, key):
        self.linear = eqx.nn.Linear(3, 4, key=key)
        self.norm = eqx.nn.BatchNorm(4, axis_name="batch", mode="batch")

    def __call__(self, x, state):
        return self.norm(self.linear(x), state)


def run(fixed: bool) -> dict:
    traces = [0]

    @eqx.filter_jit
    def evaluate(model, state, xs):
        traces[0] += 1
        batched = jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))
        out, state = batched(xs, state)
        return jnp.mean(out**2), state

    model, state = eqx.nn.make_with_state(Model)(jax.random.key(0))
    xs = jax.random.normal(jax.random.key(1), (8, 3))
    inference = eqx.nn.inference_mode(model)
    out = []
    for _epoch in range(3):
        v, state = evaluate(model, state, xs)
        if not fixed:
            inference = eqx.nn.inference_mode(model)
        w, _ = evaluate(inference, state, xs)
        out += [float(v), float(w)]
    return {"truth": traces[0], "out": out, "function": "evaluate"}


if __name__ == "__main__":
    print(run(fixed=False))
