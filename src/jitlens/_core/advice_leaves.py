"""The ``many_leaves`` advice: cache hits whose host time goes to thousands of pytree leaves.

A cache hit of a jitted function still costs host time per leaf of its arguments and its
outputs: JAX flattens them, checks each array's type, shape and placement and builds each
output array (linear in the number of leaves: equinox#928; jax#29470 saw the device idle
behind it; vllm-project/tpu-inference#2615 flattens an ``nnx.State`` once for it). A dict of
2,000 small arrays costs milliseconds per call while the compiled program runs in
microseconds. What JAX users do: keep the leaves as one array (``jax.flatten_util.
ravel_pytree`` once: an elementwise update applies to it as it is, and other code unravels
it inside the jitted function), or stack leaves of one shape (a list of per-layer
parameters) along a new axis (``jnp.stack``, then ``lax.scan``).

The figures are measured: a few of the function's own cache hits, sampled by
``_track/advisor.py`` (host: entry to return; device: return to outputs ready) and the
leaves of the call's key per argument. The prediction: with one array the host part is
a plain call (``RAVELED_HOST_SECONDS``) and the compiled program takes as long as it did,
plus slicing and joining where it unravels (``UNRAVEL_SECONDS_PER_LEAF`` per leaf: the
estimate stays on the safe side of an elementwise update, which gets faster), so a call saves
``max(host, device) - max(RAVELED_HOST_SECONDS, device + leaves * UNRAVEL_SECONDS_PER_LEAF)``.
``benchmarks/many_leaves.py`` applies the fix and prints predicted / measured.
"""

from __future__ import annotations

from typing import Any

from .kinds import AdviceKind
from .platforms import calibration
from .report import Advice, FunctionReport

#: Advise from this many leaves in one call's arguments (and sample such a jax.jit's hits).
MANY_LEAVES_MIN = 256
#: What one cache hit with a single array argument costs the host (CPU, jax 0.10.2: 15-45 us
#: measured with the in-jit unravel; ``benchmarks/many_leaves.py``).
RAVELED_HOST_SECONDS = 30e-6
#: What the compiled program adds per leaf to slice the one array into the leaves and join
#: them again (CPU, jax 0.10.2: ~0.2 us per leaf of 4 floats; the benchmark checks it).
UNRAVEL_SECONDS_PER_LEAF = 0.2e-6
#: Advise only when the run saves at least this many seconds, this share of the run, and
#: this share of each call's time: ``advice.dispatch``'s thresholds (kept equal by a test;
#: ``advice`` imports this module, so it cannot import them from there).
MIN_SECONDS = 0.05
MIN_RUN_SHARE = 0.02
MIN_CALL_SHARE = 0.10

MANY_LEAVES_MESSAGE = (
    "{leaves} pytree leaves in every call ({args}): {host} on the host per cache hit vs "
    "{device} for the compiled program (best of {samples} sampled hits); JAX handles each "
    "leaf of the arguments and outputs on every call"
)
MANY_LEAVES_FIX = (
    "keep `{arg}` as one array: `flat, unravel = jax.flatten_util.ravel_pytree({arg})` once, "
    "before the loop, and pass `flat`; an elementwise update (an optimizer step) applies to "
    "`flat` as it is, other code calls `unravel(flat)` inside the jitted function; "
    "`unravel(flat)` after the loop. Leaves of one shape (per-layer parameters): `jnp.stack` "
    "them into one array and `jax.lax.scan` over it"
)


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} us"


def raveled_saving(sample: Any, latency: float = 0.0) -> float:
    """Seconds per call that one array instead of ``sample``'s leaves saves (the module's
    docstring has the model); with asynchronous dispatch a loop runs at ``max(host, device)``,
    the device part less the platform's ready latency (``platforms.Calibration``)."""
    leaves = sum(n for _, n in sample.leaves)
    h, d = sample.host_seconds, max(0.0, sample.device_seconds - latency)
    after = max(RAVELED_HOST_SECONDS, d + leaves * UNRAVEL_SECONDS_PER_LEAF)
    return max(0.0, max(h, d) - after)


def many_leaves(fn: FunctionReport, sample: Any, env: Any) -> Advice | None:
    """``many_leaves`` advice for a function whose sampled hits carried at least
    ``MANY_LEAVES_MIN`` leaves, when the saving passes the thresholds. ``sample`` and ``env``
    are ``advice.DispatchSample`` / ``advice.Environment`` (``sample`` may be None)."""
    if sample is None or not sample.samples or not fn.cache_hits or not sample.leaves:
        return None
    leaves = sum(n for _, n in sample.leaves)
    if leaves < MANY_LEAVES_MIN:
        return None
    latency = calibration(getattr(env, "platform", "")).ready_latency_seconds
    per_call = raveled_saving(sample, latency)
    total = per_call * fn.cache_hits
    call_time = max(sample.host_seconds, sample.device_seconds - latency)
    if (
        total < MIN_SECONDS
        or total < MIN_RUN_SHARE * env.run_seconds
        or per_call < MIN_CALL_SHARE * call_time
    ):
        return None
    ranked = sorted(sample.leaves, key=lambda a: -a[1])
    message = MANY_LEAVES_MESSAGE.format(
        leaves=f"{leaves:,}",
        args=", ".join(f"`{name}` {n:,}" for name, n in ranked[:3] if n),
        host=_duration(sample.host_seconds),
        device=_duration(sample.device_seconds),
        samples=sample.samples,
    )
    fix = MANY_LEAVES_FIX.format(arg=ranked[0][0])
    return Advice(AdviceKind.MANY_LEAVES, message, fix, round(total, 6))
