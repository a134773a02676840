"""jax-ml/jax#13071 "Double ``jtu.Partial`` results in cache miss": a static argument
``jtu.Partial(g)`` with ``g = jtu.Partial(f)``, built twice. A one-level ``jtu.Partial``
hashes by its function; the outer one holds the inner ``Partial`` object, which hashes by
identity (cgarciae: ``hash(h1) != hash(h2)``), so the second call misses. Culprit: the static
argument ``h`` (a new ``Partial`` wrapping a ``Partial``).

``run(fixed=True)`` applies jitlens' fix: the ``Partial`` built once and reused.
"""

import jax
import jax.numpy as jnp
import jax.tree_util as jtu


def f(x):
    return x + 1.0


def run(fixed: bool) -> dict:
    traces = [0]

    def check(h, x):
        traces[0] += 1
        return h(x)

    check = jax.jit(check, static_argnums=0)
    g = jtu.Partial(f)
    once = jtu.Partial(g)
    out = []
    for _ in range(3):
        h = once if fixed else jtu.Partial(g)
        out.append(float(check(h, jnp.float32(1.0))))
    return {"truth": traces[0], "out": out, "function": "check"}


if __name__ == "__main__":
    print(run(fixed=False))
