"""jax's examples/hmm_em.py: ``EM`` with the step count traced (one compile for any count)
and ``sample`` with ``length`` static, called for two lengths: its second compile is one the
program needs (a static that sets a shape), and jitlens says so, in words that fit a length:
once "1 expected (a mode's first compile, ...)", though no mode changed.
"""

from functools import partial

import jax.numpy as np
from jax import grad, jit, lax, random
from jax.scipy.special import logsumexp

T = {"EM": 0, "sample": 0}


def log_normalizer(params, seq):
    log_pi, log_A, log_B = params

    def marginalize(log_alpha, obs):
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, obs]
        return log_alpha, None

    log_alpha, _ = lax.scan(marginalize, log_pi, seq)
    return logsumexp(log_alpha)


@jit
def EM(params, seq, num_steps):
    T["EM"] += 1

    def update(i, params):
        moments = grad(log_normalizer)(params, seq)
        return [np.log(x / x.sum(-1, keepdims=True)) for x in moments]

    return lax.fori_loop(0, num_steps, update, params)


@partial(jit, static_argnums=(2,))
def sample(key, params, length):
    T["sample"] += 1
    log_pi, log_A, log_B = params

    def sample_one(state, key):
        k1, k2 = random.split(key)
        obs = random.categorical(k1, log_B[state])
        return random.categorical(k2, log_A[state]), obs

    k1, k2 = random.split(key)
    _, seq = lax.scan(sample_one, random.categorical(k1, log_pi), random.split(k2, length))
    return seq


def run(fixed: bool = False) -> dict:
    T.update(EM=0, sample=0)
    keys = [random.key(i) for i in range(3)]
    params = [random.normal(keys[0], (3,)), random.normal(keys[1], (3, 3))]
    params.append(random.normal(keys[2], (3, 3)))
    seq = np.array([0, 1, 2, 1, 0, 2, 2, 1])
    for steps in (5, 10):
        new_params = EM(params, seq, steps)
    out = [sample(random.key(7), new_params, n).tolist() for n in (4, 8, 4)]
    return {"truth": dict(T), "out": out, "functions": ["EM", "sample"]}


if __name__ == "__main__":
    print(run())
