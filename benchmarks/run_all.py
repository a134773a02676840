"""Every prediction of the advice next to the saving measured by applying it, on the
platform this runs on (CPU, or the accelerator JAX picks), in one process.

    python benchmarks/run_all.py [--platform] [--calls 3000] [--rounds 15] [--only NAME ...]

1. ``--platform``: the rates ``_core/platforms.py`` keeps for this platform, next to the
   same rates measured here: the outputs-ready latency of a program that does nearly
   nothing (what a sampled call's "device" time holds that a loop never waits for), what
   a rolled 16-layer program costs to compile (the floor of a loop's saving), and what a
   captured table costs per MiB against the same table passed as an argument.
2. ``benchmarks/compile_cost.py``: each compile-cost advice, predicted vs measured.
3. ``benchmarks/advisor.py``: each ``dispatch`` advice, predicted vs measured.

One process on purpose: an accelerator is held by one process at a time, and opening it
costs seconds. On the device machine: ``python3 benchmarks/run_all.py --platform``.
Ratios are the figures to read; absolute seconds move with the machine's load.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jitlens
from jitlens._core.platforms import calibration, measured

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import advisor
import compile_cost


def _seconds(fn) -> float:
    with jitlens.track() as t:
        jax.block_until_ready(fn())
    return sum(e.seconds for f in t.report().user_functions() for e in f.events)


def ready_latency(calls: int = 200) -> float:
    """Least return -> outputs-ready time of a jitted ``x + 1`` (inputs ready first)."""
    f = jax.jit(lambda v: v + 1.0)
    x = jax.block_until_ready(jnp.ones((1, 3)))
    jax.block_until_ready(f(x))
    best = float("inf")
    for _ in range(calls):
        y = f(x)
        t = time.perf_counter()
        jax.block_until_ready(y)
        best = min(best, time.perf_counter() - t)
    return best


def rolled_floor(layers: int = 16) -> float:
    """Least trace + lower + compile seconds of a 16-layer ``lax.scan`` (fresh jits)."""
    times = []
    for i in range(3):
        ws, bs = jnp.ones((layers, 128, 128)) * 0.01, jnp.zeros((layers, 128)) + i
        x = jnp.ones((8, 128))

        @jax.jit
        def scanned(x, ws, bs):
            body = lambda c, wb: (compile_cost._layer(c, *wb), None)  # noqa: E731
            return jax.lax.scan(body, x, (ws, bs))[0]

        times.append(_seconds(lambda: scanned(x, ws, bs)))  # noqa: B023
    return min(times)


def constant_rate(sizes: tuple[int, ...] = (2048, 4096)) -> float:
    """Median seconds per MiB a captured table costs over the same table passed."""
    rates = []
    for n in sizes:
        table = np.random.default_rng(n).random((n, n), dtype=np.float32)
        x = jnp.ones((4, n))
        for _ in range(2):

            @jax.jit
            def closed(x):
                return jnp.tanh(x @ table)  # noqa: B023

            @jax.jit
            def passed(x, t):
                return jnp.tanh(x @ t)

            saved = _seconds(lambda: closed(x)) - _seconds(lambda: passed(x, table))  # noqa: B023
            rates.append(saved / (table.nbytes / 2**20))
    return statistics.median(rates)


def platform_rates() -> None:
    platform = jax.default_backend()
    cal = calibration(platform)
    kept = "measured there" if measured(platform) else "not measured: the CPU's"
    print(f"== platform {platform} ({jax.devices()[0].device_kind}); calibration kept: {kept}")
    latency, floor, rate = ready_latency(), rolled_floor(), constant_rate()
    print(
        f"ready latency     kept {cal.ready_latency_seconds * 1e6:7.0f} us   "
        f"measured {latency * 1e6:7.0f} us"
    )
    print(f"rolled floor      kept {cal.scan_floor_seconds:7.2f} s    measured {floor:7.2f} s")
    print(f"constant per MiB  kept {cal.const_seconds_per_mib:7.3f} s    measured {rate:7.3f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--platform", action="store_true", help="measure the platform's rates first")
    p.add_argument("--calls", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--only", action="append", default=None, help="a compile_cost.py program")
    args = p.parse_args(argv)
    jax.block_until_ready(jax.jit(lambda a: a + 1)(1.0))  # the backend's start is no one's
    if args.platform:
        platform_rates()
    print("== compile cost (benchmarks/compile_cost.py)", flush=True)
    ok = compile_cost.main([f"--only={n}" for n in args.only or ()]) == 0
    print("== dispatch (benchmarks/advisor.py)", flush=True)
    advisor.main([f"--calls={args.calls}", f"--rounds={args.rounds}"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
