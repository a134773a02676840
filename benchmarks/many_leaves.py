"""The ``many_leaves`` advice's predicted saving next to the measured one.

A ``jax.jit`` step over a dict of many small arrays (an optimizer update of per-channel
scales) spends its cache hits on the host, handling each leaf. jitlens samples a few hits
and predicts what one array (``jax.flatten_util.ravel_pytree``, the printed fix) saves
(``_core/advice_leaves.py``). Here the step runs tracked (jitlens' prediction), then as
written and with the fix applied, untracked, alternating; the measured saving is the
difference of the per-call times (each the least-disturbed chunk of :data:`CHUNK` calls,
as jitlens keeps the least-disturbed sample) times the cache hits jitlens counted. Figures
are medians over rounds.

    python benchmarks/many_leaves.py [--rounds 3] [--calls 200] [--leaves 300 1000 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

import jitlens

#: Calls timed together; the least-disturbed chunk of a loop is its per-call time.
CHUNK = 10


def update(params: dict[str, jax.Array], lr: float) -> dict[str, jax.Array]:
    return jax.tree.map(lambda p: p - lr * jnp.tanh(p), params)


def _per_call(step: Callable[[Any], Any], state: Any, calls: int) -> float:
    best = float("inf")
    for _ in range(max(1, calls // CHUNK)):
        t = time.perf_counter()
        for _ in range(CHUNK):
            state = step(state)
        jax.block_until_ready(state)
        best = min(best, (time.perf_counter() - t) / CHUNK)
    return best


def predicted(params: dict[str, jax.Array], calls: int) -> tuple[float | None, int]:
    """jitlens' predicted saving of the run and the cache hits it counted."""
    with jitlens.track() as t:
        step = jax.jit(update)  # made under tracking: counted from its first call
        p = params
        for _ in range(calls):
            p = step(p, 0.01)
        jax.block_until_ready(p)
    fn = t.stats(step)
    advice = [a for a in fn.advice if a.kind == "many_leaves"]
    saving = advice[0].estimated_saving_seconds if advice else None
    return saving, fn.cache_hits or 0


def measured_per_call(params: dict[str, jax.Array], calls: int) -> tuple[float, float]:
    """Seconds per call as written and with the printed fix: the elementwise update applied
    to the one array ``ravel_pytree`` makes (no ``unravel`` inside: that would slice it back
    into as many small operations, and XLA's compile of 2,000 slices took minutes here)."""
    written = jax.jit(update)
    flat, _unravel = ravel_pytree(params)
    fixed = jax.jit(update)  # the same update: a single array is a pytree of one leaf
    jax.block_until_ready((written(params, 0.01), fixed(flat, 0.01)))  # compiled first
    before = _per_call(lambda p: written(p, 0.01), params, calls)
    after = _per_call(lambda f: fixed(f, 0.01), flat, calls)
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--leaves", type=int, nargs="+", default=[300, 1000, 2000])
    args = parser.parse_args()
    print(f"{'leaves':>6}  {'predicted s':>11}  {'measured s':>10}  {'pred/meas':>9}")
    for n in args.leaves:
        params = {f"layer{i}/scale": jnp.full((4,), 1.0 + i % 7) for i in range(n)}
        preds, meas = [], []
        for _ in range(args.rounds):
            saving, hits = predicted(params, args.calls)
            before, after = measured_per_call(params, args.calls)
            if saving is not None:
                preds.append(saving)
            meas.append((before - after) * hits)
        p = statistics.median(preds) if preds else None
        m = statistics.median(meas)
        ratio = f"{p / m:9.2f}" if p is not None and m > 0 else "        ?"
        shown = f"{p:11.3f}" if p is not None else "  no advice"
        print(f"{n:>6}  {shown}  {m:10.3f}  {ratio}")


if __name__ == "__main__":
    main()
