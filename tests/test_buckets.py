"""Shape sets: deliberate buckets are not lost, raw sizes get buckets (the proposal's rule on
made-up sizes is in test_advice.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jitlens
from report_samples import sized_report


def test_padded_to_multiples_of_16_is_a_choice_not_a_loss() -> None:
    fn = sized_report([16, 32, 48])
    assert fn.seconds_lost == 0.0 and fn.bucketed
    report = jitlens.Report(2, "0", "0", "", "cpu", 0, 1, "h", 0.0, 1.0, (fn,))
    text = report.to_text(width=100)
    assert "`x` axis 0 took 16, 32, 48 (multiples of 16)" in text, text
    assert "retrace #" not in text  # said as a choice, not explained as a problem


def test_a_ragged_last_batch_or_raw_sizes_are_still_lost() -> None:
    assert sized_report([32, 16]).seconds_lost == 0.5  # two sizes could be a ragged last batch
    assert sized_report([13, 17, 21]).seconds_lost == 1.0
    assert (
        sized_report([16, 32, 16, 48]).seconds_lost == 1.5
    )  # 16 compiled twice: not served as a bucket


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
