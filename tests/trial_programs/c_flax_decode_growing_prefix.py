"""A sampling loop as in flax's gemma sampler and examples/lm1b decode, written naively: the
jitted forward runs on the growing prefix, one new shape (one compile) per token.

``run(fixed=True)`` applies jitlens' fix (a decode prefix: preallocate the buffer at full
length, write each step in place, pass the position as an array); the model is causal, so the
tokens match.
"""

import jax.numpy as jnp
from flax import nnx

STEPS = 4


class LM(nnx.Module):
    def __init__(self, rngs):
        self.emb = nnx.Embed(16, 8, rngs=rngs)
        self.out = nnx.Linear(8, 16, rngs=rngs)

    def __call__(self, tokens):
        return self.out(jnp.cumsum(self.emb(tokens), axis=1))  # causal: a prefix sum


def run(fixed: bool) -> dict:
    traces = [0]

    @nnx.jit
    def next_token(model, tokens, pos):
        traces[0] += 1
        logits = model(tokens)
        return jnp.argmax(logits[:, pos], axis=-1)

    model = LM(nnx.Rngs(0))
    prompt = jnp.array([[1, 2]])
    if fixed:
        tokens = jnp.pad(prompt, ((0, 0), (0, STEPS)))
        for i in range(STEPS):
            pos = prompt.shape[1] + i
            t = next_token(model, tokens, jnp.asarray(pos - 1))
            tokens = tokens.at[:, pos].set(t)
    else:
        tokens = prompt
        for _ in range(STEPS):
            t = next_token(model, tokens, -1)
            tokens = jnp.concatenate([tokens, t[:, None]], axis=1)
    return {"truth": traces[0], "out": tokens.tolist(), "function": "next_token"}


if __name__ == "__main__":
    print(run(fixed=False))
