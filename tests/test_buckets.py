"""Shape sets: deliberate buckets are not lost, raw sizes get buckets (the proposal's rule on
made-up sizes is in test_advice.py)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp

import jitlens
from jitlens import Event, FunctionReport, Reason


def _fn(sizes: list[int], seconds: float = 0.5) -> FunctionReport:
    events = [
        Event(0, "trace", "a.py:9", f"x: f32[{sizes[0]},4]", compile_seconds=seconds, compiled=True)
    ]
    for i, (a, b) in enumerate(itertools.pairwise(sizes), 1):
        r = Reason("shape", "x", "x", f"f32[{a},4]", f"f32[{b},4]", "x changed shape.", "pad x.")
        events.append(Event(i, "retrace", "a.py:9", f"x: f32[{b},4]", (r,),
                            compile_seconds=seconds, compiled=True))  # fmt: skip
    return FunctionReport("f", "f", "jax.jit", "a.py:1", "a.py:9", len(sizes), len(sizes),
                          len(sizes), 0, 0, 0.0, 0.0, seconds * len(sizes), tuple(events))  # fmt: skip


def test_padded_to_multiples_of_16_is_a_choice_not_a_loss() -> None:
    fn = _fn([16, 32, 48])
    assert fn.seconds_lost == 0.0 and fn.bucketed
    report = jitlens.Report(2, "0", "0", "", "cpu", 0, 1, "h", 0.0, 1.0, (fn,))
    text = report.to_text(width=100)
    assert "`x` axis 0 took 16, 32, 48 (multiples of 16)" in text, text
    assert "retrace #" not in text  # said as a choice, not explained as a problem


def test_a_ragged_last_batch_or_raw_sizes_are_still_lost() -> None:
    assert _fn([32, 16]).seconds_lost == 0.5  # two sizes could be a ragged last batch
    assert _fn([13, 17, 21]).seconds_lost == 1.0
    assert _fn([16, 32, 16, 48]).seconds_lost == 1.5  # 16 compiled twice: not served as a bucket


def test_measured_buckets_are_expected_and_the_fix_is_the_proposal() -> None:
    """Against JAX: the bucketed function compiles once per bucket (counter in the body) and
    jitlens says so; the raw one gets buckets that, applied, compile 4 times for 7 sizes."""
    count = {"f": 0, "g": 0}

    @jax.jit
    def f(x):
        count["f"] += 1
        return (x**2).sum()

    @jax.jit
    def g(x):
        count["g"] += 1
        return (x**2).sum()

    sizes = (13, 17, 21, 9, 30, 27, 5)
    with jitlens.track() as t:
        for n in (16, 32, 48, 16, 32):
            f(jnp.ones((n, 2)))
        for n in sizes:
            g(jnp.ones((n, 2)))
    report = t.report()
    assert count == {"f": 3, "g": 7}
    assert report.function("f").seconds_lost == 0.0
    text = report.to_text()
    assert "`x` axis 0 took 16, 32, 48 (multiples of 16)" in text, text
    (advice,) = [a for a in report.function("g").advice if a.kind == "buckets"]
    assert "8, 16, 24, 32" in advice.fix
    count["g"] = 0
    for n in sizes:  # the proposal applied: pad to the bucket, mask the padding
        b = min(b for b in (8, 16, 24, 32) if b >= n)
        g(jnp.pad(jnp.ones((n, 2)), ((0, b - n), (0, 0))))
    assert count["g"] == 4
