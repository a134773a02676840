"""The cost of one scheduled stale check (calls #2, #3, #5, #9, ...) of an nn.jit hit.

The check runs on a cache hit of index 1, 2, 4, 8, ... only; this script times that one
check, ``stale.check_statics`` on the arguments of a real nn.jit hit, for a module holding
a plain config object (the field flax hashes by identity, the one jitlens keeps per
compile), in three cases: the compile's own object, unchanged (the common hit); a new
object holding the same values at the freed one's address, read in full and found equal;
and one with another value, the stale hit (reported once, so later checks skip it). Run it
on two trees to compare them (``git archive <rev> src | tar -x -C /tmp/before``)::

    python benchmarks/stale_check.py                      # this checkout
    PYTHONPATH=/tmp/before/src python benchmarks/stale_check.py

Prints microseconds per check (median of 5 rounds of 2,000 checks).
"""

from __future__ import annotations

import statistics
import time
import warnings

import flax.linen as nn
import jax.numpy as jnp

import jitlens
from jitlens._track import stale


class Cfg:
    def __init__(self, scale):
        self.scale = scale
        self.names = [f"layer{i}" for i in range(8)]


class Scaled(nn.Module):
    cfg: Cfg

    @nn.compact
    def __call__(self, x):
        return x * self.cfg.scale


def captured_hit(cfg):
    """``(rec, n, args, kwargs)`` of the first scheduled check of an nn.jit hit on ``cfg``."""
    seen = []
    real = stale.check_statics

    def keep(rec, n, args, kwargs):
        # the module flax made for the call, kept alive (its fingerprint holds a weak reference)
        seen.append((rec, n, args, kwargs, args[0][1].module))
        return real(rec, n, args, kwargs)

    stale.check_statics = keep
    try:
        jit_scaled, x = nn.jit(Scaled), jnp.ones(2)
        for _ in range(2):
            jit_scaled(cfg).apply({}, x)
    finally:
        stale.check_statics = real
    return seen[0]


def per_check(rec, n, args, kwargs, rounds=5, calls=2_000):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            stale.check_statics(rec, n, args, kwargs)
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times) * 1e6


def main():
    warnings.simplefilter("ignore")
    with jitlens.track():
        cfg = Cfg(1.0)
        rec, n, args, kwargs, module = captured_hit(cfg)
        print(f"{jitlens.__file__}")
        print(f"  same object, unchanged      {per_check(rec, n, args, kwargs):8.1f} µs per check")
        for label, scale in (
            ("new object, equal values ", 1.0),
            ("new object, stale value  ", 2.0),
        ):
            other = Cfg(scale)  # (at another address: what the check reads is the same)
            object.__getattribute__(module, "__dict__")["cfg"] = other
            us = per_check(rec, n, args, kwargs)
            print(f"  {label}   {us:8.1f} µs per check")
            object.__getattribute__(module, "__dict__")["cfg"] = cfg


if __name__ == "__main__":
    main()
