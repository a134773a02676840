"""Mimics: a Haiku model (``hk.transform``) whose forward function applies its residual
blocks in a Python ``for`` loop, trained with ``jax.value_and_grad`` under ``jax.jit``.

Expected from jitlens: ``unrolled_loop`` at the ``for`` line, a loop over layers in
Haiku's terms: ``hk.layer_stack``.
"""

import haiku as hk
import jax
import jax.numpy as jnp

LAYERS, D = 24, 64


class Block(hk.Module):
    def __call__(self, x):
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
        return x + jax.nn.gelu(hk.Linear(D)(h))


def forward(x):
    for _ in range(LAYERS):
        x = Block()(x)
    return x


def forward_fixed(x):  # jitlens' advice: the blocks under hk.layer_stack, params stacked
    return hk.layer_stack(LAYERS)(lambda x: Block()(x))(x)


def _step(fn):
    model = hk.without_apply_rng(hk.transform(fn))

    @jax.jit
    def train_step(params, x):
        return jax.value_and_grad(lambda p: jnp.mean(model.apply(p, x) ** 2))(params)

    return model, train_step


(model, train_step), (model_fixed, train_step_fixed) = _step(forward), _step(forward_fixed)


def _data():
    x = jnp.sin(jnp.arange(8 * D, dtype=jnp.float32).reshape(8, D) / 5.0)
    return model.init(jax.random.key(0), x), x


def stacked(params, x):
    """The loop's per-block parameters, stacked as ``hk.layer_stack`` keeps them."""
    names = ["block"] + [f"block_{i}" for i in range(1, LAYERS)]
    out = {}
    for name in model_fixed.init(jax.random.key(1), x):
        inner = name.rpartition("block")[2]  # "/~/linear"
        mods = [params[n + inner] for n in names]
        out[name] = jax.tree.map(lambda *p: jnp.stack(p), *mods)
    return out


def _flat(value, grads):
    leaves = [grads[k][n] for k in sorted(grads) for n in sorted(grads[k])]
    return jnp.concatenate([value[None], *(g.ravel() for g in leaves)])


def main():
    params, x = _data()
    value, grads = train_step(params, x)
    return _flat(value, stacked(grads, x))


def main_fixed():
    params, x = _data()
    return _flat(*train_step_fixed(stacked(params, x), x))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
