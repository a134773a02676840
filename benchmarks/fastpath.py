"""The ``fast_path`` advice's predicted saving next to the measured one.

A ``jax.jit`` with a ``jax.debug.callback`` runs JAX's Python dispatch on
every call. jitlens counts those calls, times a few of them, and predicts
what removing the callback saves (``_core/advice.fast_path``). Here the
same loop runs with and without the callback, untracked, alternating round
after round with jitlens' own tracked loop; the measured saving is the
difference of the per-call times (each the least-disturbed chunk of
:data:`CHUNK` calls, as jitlens keeps the least-disturbed sample), times the
calls jitlens counted. Figures are medians over rounds.

    python benchmarks/fastpath.py [--rounds 10] [--calls 500]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

import jitlens


def _noop(value: object) -> None:
    return None


def with_callback(x: jax.Array) -> jax.Array:
    jax.debug.callback(_noop, x)
    return jnp.tanh(x) * 2


def without_callback(x: jax.Array) -> jax.Array:
    return jnp.tanh(x) * 2


#: Calls timed together; the least-disturbed chunk of a loop is its per-call time.
CHUNK = 10


def _per_call(fn: Callable[[jax.Array], jax.Array], x: jax.Array, calls: int) -> float:
    """Seconds per call of ``calls`` calls, from the least-disturbed chunk (a shared machine
    only ever adds time), each chunk ending when its outputs and host callbacks are done."""
    best = float("inf")
    for _ in range(max(1, calls // CHUNK)):
        t = time.perf_counter()
        out = x
        for _ in range(CHUNK):
            out = fn(x)
        jax.block_until_ready(out)
        jax.effects_barrier()
        best = min(best, (time.perf_counter() - t) / CHUNK)
    return best


def predicted_per_call(x: jax.Array, calls: int) -> tuple[float, int, jitlens.FunctionReport]:
    """One tracked loop of a fresh jitted function: jitlens' predicted saving per call."""
    with jitlens.track() as t:
        slow = jax.jit(with_callback)
        _per_call(slow, x, calls)
    fn = t.report().function("with_callback")
    (advice,) = [a for a in fn.advice if a.kind == "fast_path"]
    n = fn.python_dispatch_calls or 0
    return (advice.estimated_saving_seconds or 0.0) / n, n, fn


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--calls", type=int, default=500)
    args = p.parse_args()
    x = jnp.ones((8,))

    with jitlens.track() as t:  # the negative control: no callback, no Python dispatch
        fast = jax.jit(without_callback)
        _per_call(fast, x, args.calls)
    fn_fast = t.report().function("without_callback")

    slow_u, fast_u = jax.jit(with_callback), jax.jit(without_callback)
    _per_call(slow_u, x, 20), _per_call(fast_u, x, 20)  # compile, warm up
    # Round after round, side by side: jitlens' prediction from a tracked loop, then the
    # same loop untracked with and without the callback (the machine's load drifts).
    predicted, slow_t, fast_t = [], [], []
    for r in range(args.rounds):
        per, n, fn_slow = predicted_per_call(x, args.calls)
        predicted.append(per)
        order = ((slow_u, slow_t), (fast_u, fast_t))
        for fn, acc in order if r % 2 == 0 else order[::-1]:
            acc.append(_per_call(fn, x, args.calls))
    measured = [s - f for s, f in zip(slow_t, fast_t, strict=True)]
    pred, meas = statistics.median(predicted), statistics.median(measured)
    print(
        f"python dispatch calls counted: with callback {fn_slow.python_dispatch_calls} "
        f"of {fn_slow.cache_hits} hits ({fn_slow.python_dispatch_cause}), "
        f"without {fn_fast.python_dispatch_calls} of {fn_fast.cache_hits}"
    )
    print(
        f"per call untracked: with callback {statistics.median(slow_t) * 1e6:.1f} us, "
        f"without {statistics.median(fast_t) * 1e6:.1f} us ({args.rounds} rounds)"
    )
    print(
        f"saving per call: predicted {pred * 1e6:.1f} us (median of rounds; min "
        f"{min(predicted) * 1e6:.1f}) | measured {meas * 1e6:.1f} us (min "
        f"{min(measured) * 1e6:.1f}) | over {n} calls: predicted {pred * n:.3f} s, measured "
        f"{meas * n:.3f} s, predicted/measured {pred / meas:.2f}x"
    )


if __name__ == "__main__":
    main()
