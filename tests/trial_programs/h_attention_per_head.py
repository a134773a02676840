"""Mimics: "attention from scratch" code that computes multi-head attention one head at
a time (a Python loop over heads slicing ``q``, ``k``, ``v``, then ``jnp.concatenate``),
trained with ``jax.value_and_grad`` under ``jax.jit``. The trace unrolls every head,
forward and backward.

Expected from jitlens: ``unrolled_loop`` at the loop over heads, independent iterations:
``jax.vmap`` over the heads.
"""

import jax
import jax.numpy as jnp

HEADS, DH, T = 16, 8, 32


def init(key):
    d = HEADS * DH
    ks = jax.random.split(key, 4)
    return {n: jax.random.normal(k, (d, d)) / jnp.sqrt(d) for n, k in zip("qkvo", ks, strict=True)}


def attention(p, x):
    q, k, v = x @ p["q"], x @ p["k"], x @ p["v"]
    heads = []
    for h in range(HEADS):
        s = slice(h * DH, (h + 1) * DH)
        a = jax.nn.softmax(q[:, s] @ k[:, s].T / jnp.sqrt(DH), axis=-1)
        heads.append(a @ v[:, s])
    return jnp.concatenate(heads, axis=-1) @ p["o"]


def one_head(q, k, v):
    return jax.nn.softmax(q @ k.T / jnp.sqrt(DH), axis=-1) @ v


def attention_fixed(p, x):  # jitlens' advice: one head as a function, jax.vmap over heads
    q, k, v = ((x @ p[n]).reshape(T, HEADS, DH) for n in "qkv")
    out = jax.vmap(one_head, in_axes=1, out_axes=1)(q, k, v)
    return out.reshape(T, HEADS * DH) @ p["o"]


def _step(attend):
    @jax.jit
    def train_step(p, x, y):
        return jax.value_and_grad(lambda p: jnp.mean((attend(p, x) - y) ** 2))(p)

    return train_step


train_step, train_step_fixed = _step(attention), _step(attention_fixed)


def _flat(out):
    value, grads = out
    return jnp.concatenate([value[None], *(g.ravel() for g in jax.tree.leaves(grads))])


def _data():
    d = HEADS * DH
    x = jnp.cos(jnp.arange(T * d, dtype=jnp.float32).reshape(T, d) / 11.0)
    return init(jax.random.key(0)), x, jnp.zeros((T, d))


def main():
    return _flat(train_step(*_data()))


def main_fixed():
    return _flat(train_step_fixed(*_data()))


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
