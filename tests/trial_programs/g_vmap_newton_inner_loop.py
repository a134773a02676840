"""Mimics: per-example implicit solve (Newton iterations for a root, as in
option-pricing implied volatility or an implicit-layer code), ``jax.vmap``-ed
over a batch, whose Newton iterations are a Python ``for`` in the per-example
function: vmap batches the body, but the trace still unrolls the iterations.

Expected from jitlens: ``unrolled_loop`` naming the ``for`` line inside the vmapped function.
"""

import jax
import jax.numpy as jnp
from jax.scipy.stats import norm

ITERS = 40


def bs_price(sigma, s, k, t):
    d1 = (jnp.log(s / k) + 0.5 * sigma**2 * t) / (sigma * jnp.sqrt(t))
    d2 = d1 - sigma * jnp.sqrt(t)
    return s * norm.cdf(d1) - k * norm.cdf(d2)


def implied_vol(price, s, k, t):
    sigma = 0.3
    for _ in range(ITERS):
        f, vega = jax.value_and_grad(bs_price)(sigma, s, k, t)
        sigma = sigma - (f - price) / (vega + 1e-8)
    return sigma


@jax.jit
def implied_vols(prices, s, k, t):
    return jax.vmap(implied_vol, in_axes=(0, None, 0, None))(prices, s, k, t)


def implied_vol_fixed(price, s, k, t):  # jitlens' advice: jax.lax.fori_loop
    def newton(i, sigma):
        f, vega = jax.value_and_grad(bs_price)(sigma, s, k, t)
        return sigma - (f - price) / (vega + 1e-8)

    return jax.lax.fori_loop(0, ITERS, newton, 0.3)


@jax.jit
def implied_vols_fixed(prices, s, k, t):
    return jax.vmap(implied_vol_fixed, in_axes=(0, None, 0, None))(prices, s, k, t)


def _args():
    ks = jnp.linspace(80.0, 120.0, 64)
    prices = jax.vmap(bs_price, in_axes=(None, None, 0, None))(0.25, 100.0, ks, 1.0)
    return prices, 100.0, ks, 1.0


def main():
    return implied_vols(*_args())


def main_fixed():
    return implied_vols_fixed(*_args())


if __name__ == "__main__":
    print("RESULT", float(main().mean()))
