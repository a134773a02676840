"""Flax NNX MNIST tutorial pattern (docs_nnx/mnist_tutorial): ``model.train()`` before a step
and ``model.eval()`` before evaluating, but one ``nnx.jit`` function used for both: the
Dropout's ``deterministic`` flag is static, one compile per mode (expected), then cache hits.

``run(fixed=True)``: separate ``train_step``/``eval_step`` functions (the tutorial's layout).
"""

import jax
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


def run(fixed: bool) -> dict:
    traces = {"loss": 0, "eval_loss": 0}

    @nnx.jit
    def loss(model, x):
        traces["loss"] += 1
        return jnp.mean(model(x) ** 2)

    @nnx.jit
    def eval_loss(model, x):
        traces["eval_loss"] += 1
        return jnp.mean(model(x) ** 2)

    model = MLP(nnx.Rngs(0, dropout=1))
    x = jax.random.normal(jax.random.key(2), (8, 3))
    out = []
    for _epoch in range(3):
        model.train()
        a = loss(model, x)
        model.eval()
        b = (eval_loss if fixed else loss)(model, x)
        out += [round(float(a), 5), round(float(b), 5)]
    functions = ["loss", "eval_loss"] if fixed else ["loss"]
    truth = {k: traces[k] for k in functions}
    return {"truth": truth, "out": out, "functions": functions}


if __name__ == "__main__":
    print(run(fixed=False))
