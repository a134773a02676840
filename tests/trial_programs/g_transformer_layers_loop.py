"""Mimics: a minGPT / nanoGPT port to plain JAX whose forward pass walks the
per-layer parameter dicts in a Python ``for`` loop (``for blk in params["blocks"]``),
as in many "transformer from scratch in JAX" notebooks. The trace unrolls
every block: compile time grows with the depth.

Expected from jitlens: ``unrolled_loop`` naming the ``for blk in ...`` line, fix ``jax.lax.scan``.
"""

import jax
import jax.numpy as jnp

D, H, T, LAYERS = 64, 4, 16, 24


def init(key):
    blocks = []
    for k in jax.random.split(key, LAYERS):
        k1, k2, k3 = jax.random.split(k, 3)
        blocks.append(
            {
                "qkv": jax.random.normal(k1, (D, 3 * D)) * 0.02,
                "proj": jax.random.normal(k2, (D, D)) * 0.02,
                "mlp": jax.random.normal(k3, (D, 4 * D)) * 0.02,
                "out": jnp.zeros((4 * D, D)),
                "ln": jnp.ones((D,)),
            }
        )
    return {"blocks": blocks}


def layer_norm(x, g):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return g * (x - mu) / jnp.sqrt(var + 1e-5)


def attention(x, blk):
    q, k, v = jnp.split(x @ blk["qkv"], 3, axis=-1)
    q, k, v = (a.reshape(T, H, D // H).transpose(1, 0, 2) for a in (q, k, v))
    att = jax.nn.softmax(q @ k.transpose(0, 2, 1) / jnp.sqrt(D // H), axis=-1)
    return (att @ v).transpose(1, 0, 2).reshape(T, D) @ blk["proj"]


@jax.jit
def forward(params, x):
    for blk in params["blocks"]:
        x = x + attention(layer_norm(x, blk["ln"]), blk)
        x = x + jax.nn.gelu(layer_norm(x, blk["ln"]) @ blk["mlp"]) @ blk["out"]
    return x


def block(x, blk):
    x = x + attention(layer_norm(x, blk["ln"]), blk)
    return x + jax.nn.gelu(layer_norm(x, blk["ln"]) @ blk["mlp"]) @ blk["out"]


@jax.jit
def forward_fixed(stacked, x):  # jitlens' advice: the loop's body under jax.lax.scan
    return jax.lax.scan(lambda x, blk: (block(x, blk), None), x, stacked)[0]


def main():
    return forward(init(jax.random.key(0)), jnp.ones((T, D)))


def main_fixed():
    blocks = init(jax.random.key(0))["blocks"]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *blocks)
    return forward_fixed(stacked, jnp.ones((T, D)))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
