"""optax's lookahead example (google-deepmind/optax,
docs/_collections/examples/lookahead_mnist.ipynb): ``optax.lookahead(optax.adam(...),
sync_period=..., slow_step_size=...)`` over ``optax.LookaheadParams.init_synced(params)``,
one jitted ``train_step(params, opt_state, batch)``, then the slow weights evaluated by a
jitted ``loss`` on a held-out batch of the same shape. Shrunk to a linear model.

A negative control: one compile each, every later call a cache hit.
"""

import jax
import jax.numpy as jnp
import optax

T = {"train_step": 0, "eval_loss": 0}


def loss_fn(params, batch):
    x, y = batch
    return jnp.mean((x @ params["w"] - y) ** 2)


def run(fixed: bool = False) -> dict:
    T.update(train_step=0, eval_loss=0)
    opt = optax.lookahead(optax.adam(0.05), sync_period=2, slow_step_size=0.5)

    @jax.jit
    def train_step(params, opt_state, batch):
        T["train_step"] += 1
        loss, grads = jax.value_and_grad(loss_fn)(params.fast, batch)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    @jax.jit
    def eval_loss(params, batch):
        T["eval_loss"] += 1
        return loss_fn(params, batch)

    x = jax.random.normal(jax.random.key(1), (20, 3))
    y = x @ jnp.array([0.5, 1.0, -1.0])
    params = optax.LookaheadParams.init_synced({"w": jnp.zeros(3)})
    opt_state = opt.init(params)
    out = []
    for _epoch in range(2):
        for i in range(3):
            batch = (x[4 * i : 4 * i + 4], y[4 * i : 4 * i + 4])
            params, opt_state, loss = train_step(params, opt_state, batch)
            out.append(round(float(loss), 5))
        out.append(round(float(eval_loss(params.slow, (x[16:], y[16:]))), 5))
    return {"truth": dict(T), "out": out, "functions": ["train_step", "eval_loss"]}


#: Nothing to apply: the driver runs it once (``trial_c_driver.py``).
NO_FIX = True


if __name__ == "__main__":
    print(run())
