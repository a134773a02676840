"""Negative control, mimics: multi-scale image features (a Laplacian / Gaussian pyramid
in classic vision code ported to JAX): a Python loop over 8 levels whose image halves at
each level. The same lines run 8 times, but no two levels have the same shapes: no
``scan`` can run them.

Expected from jitlens: no ``unrolled_loop`` advice (the repeats differ in shape).
"""

import jax
import jax.numpy as jnp

LEVELS, SIZE = 8, 512

KERNEL = jnp.outer(jnp.array([1.0, 4.0, 6.0, 4.0, 1.0]), jnp.array([1.0, 4.0, 6.0, 4.0, 1.0])) / 256


def blur(img):
    return jax.scipy.signal.convolve2d(img, KERNEL, mode="same")


@jax.jit
def pyramid_features(img):
    feats = []
    for _ in range(LEVELS):
        smooth = blur(img)
        edges = img - smooth
        feats.append(jnp.stack([jnp.mean(jnp.abs(edges)), jnp.std(smooth)]))
        img = smooth[::2, ::2]
    return jnp.concatenate(feats)


def main():
    return pyramid_features(
        jnp.sin(jnp.arange(SIZE * SIZE, dtype=jnp.float32).reshape(SIZE, SIZE) / 97.0)
    )


if __name__ == "__main__":
    print("RESULT", float(main().sum()))
