"""Hit-path cost of tracking: tracked vs untracked calls, measured side by side in one run.

Prints ratios (tracked / untracked per-call time), never absolute claims:
the machines are noisy, so both variants run alternately, round after
round, and the ratio of medians (and of minima) is reported.

    python benchmarks/overhead.py [--rounds 30] [--calls 2000]

Targets (from the tracker issue): <= 1.02x on default ``nnx.jit`` of
``nnx.Linear(3, 4)``, <= 1.10x on a raw ``jax.jit`` of ``x @ W + b``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx

import jitlens


def _per_call(fn: Callable[[], object], calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        out = fn()
    jax.block_until_ready(out)
    return (time.perf_counter() - t) / calls


def compare(
    name: str,
    untracked: Callable[[], object],
    tracked: Callable[[], object],
    tracker: jitlens.Tracker,
    rounds: int,
    calls: int,
) -> tuple[float, float]:
    for f in (untracked, tracked):  # warm up: compile, fill caches
        _per_call(f, 50)
    a, b = [], []
    for r in range(rounds):
        order = ((untracked, a), (tracked, b)) if r % 2 == 0 else ((tracked, b), (untracked, a))
        for fn, acc in order:
            if fn is tracked:
                tracker.start()
                acc.append(_per_call(fn, calls))
                tracker.stop()
            else:
                acc.append(_per_call(fn, calls))
    med = statistics.median(b) / statistics.median(a)
    best = min(b) / min(a)
    print(
        f"{name:34s} untracked {statistics.median(a) * 1e6:8.1f} us/call   "
        f"tracked/untracked: median {med:.3f}x, min {best:.3f}x"
    )
    return med, best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()

    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 3))

    def fwd(m: nnx.Linear, x: jax.Array) -> jax.Array:
        return m(x)

    nnx_fwd = nnx.jit(fwd)  # the same wrapper, tracked or not (its class is patched)
    t = jitlens.track()
    compare(
        "nnx.jit(Linear(3, 4))",
        lambda: nnx_fwd(model, x),
        lambda: nnx_fwd(model, x),
        t,
        args.rounds,
        max(200, args.calls // 10),
    )

    w, b = jnp.ones((3, 4)), jnp.ones((4,))

    def affine(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
        return x @ w + b

    raw = jax.jit(affine)
    with jitlens.track():
        tracked = jax.jit(affine)  # a jitlens TrackedJit around the same jax.jit
    t2 = jitlens.track()
    compare(
        "jax.jit(x @ W + b)",
        lambda: raw(x, w, b),
        lambda: tracked(x, w, b),
        t2,
        args.rounds,
        args.calls,
    )


if __name__ == "__main__":
    main()
