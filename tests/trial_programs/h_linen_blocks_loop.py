"""Mimics: a Flax linen model whose ``__call__`` builds its residual blocks in a Python
``for`` loop (``for _ in range(n): x = Block()(x)``, as in many linen MLP-Mixer / ResNet
ports), trained with ``jax.value_and_grad(loss)`` under ``jax.jit``: the jit is JAX's,
the layers are linen's.

Expected from jitlens: ``unrolled_loop`` at the ``for`` line, a loop over layers in
linen's terms: ``nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True})``.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp

LAYERS, D = 24, 64


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x + nn.gelu(nn.Dense(D)(nn.LayerNorm()(x)))


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        for _ in range(LAYERS):
            x = Block()(x)
        return x


class ScanBlock(nn.Module):
    @nn.compact
    def __call__(self, x, _):
        return Block()(x), None


class ModelFixed(nn.Module):  # jitlens' advice: the blocks as one nn.scan, params stacked
    @nn.compact
    def __call__(self, x):
        blocks = nn.scan(
            ScanBlock, variable_axes={"params": 0}, split_rngs={"params": True}, length=LAYERS
        )
        return blocks(name="blocks")(x, None)[0]


def _step(model):
    @jax.jit
    def train_step(params, x):
        return jax.value_and_grad(lambda p: jnp.mean(model.apply(p, x) ** 2))(params)

    return train_step


train_step, train_step_fixed = _step(Model()), _step(ModelFixed())


def _data():
    x = jnp.sin(jnp.arange(8 * D, dtype=jnp.float32).reshape(8, D) / 5.0)
    return Model().init(jax.random.key(0), x), x


def stacked(params):
    """The loop's per-block parameters, stacked as ``nn.scan`` keeps them."""
    blocks = [params["params"][f"Block_{i}"] for i in range(LAYERS)]
    return {"params": {"blocks": {"Block_0": jax.tree.map(lambda *p: jnp.stack(p), *blocks)}}}


def _flat(value, grads):
    return jnp.concatenate([value[None], *(g.ravel() for g in jax.tree.leaves(grads))])


def main():
    value, grads = train_step(*_data())
    return _flat(value, stacked(grads))


def main_fixed():
    params, x = _data()
    return _flat(*train_step_fixed(stacked(params), x))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
