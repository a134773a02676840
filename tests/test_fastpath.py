"""Issue 24: cache hits served by JAX's Python dispatch instead of its C++ fast path (the
rule's thresholds on made-up figures are in test_advice.py)."""

from __future__ import annotations

import json

import jax.numpy as jnp
import pytest
from flax import nnx

import jitlens

CALLS = 150
# one worker runs the module: its fixture compiles once
pytestmark = pytest.mark.xdist_group("fastpath")


def _noop(value: object) -> None:
    return None


@pytest.fixture(scope="module")
def report():
    bodies = {"with_callback": 0, "plain": 0, "ordered": 0, "nnx_callback": 0}

    def with_callback(x):
        bodies["with_callback"] += 1
        jax.debug.callback(_noop, x)
        return x * 2

    def plain(x):
        bodies["plain"] += 1
        return x * 2

    def ordered(x):
        bodies["ordered"] += 1
        jax.experimental.io_callback(_noop, None, x, ordered=True)
        return x + 1

    def nnx_callback(model, x):
        bodies["nnx_callback"] += 1
        jax.debug.callback(_noop, x)
        return model(x)

    import jax.experimental

    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 3))
    with jitlens.track() as t:
        fns = [jax.jit(with_callback), jax.jit(plain), jax.jit(ordered)]
        step = nnx.jit(nnx_callback)
        for _ in range(CALLS):
            for f in fns:
                f(x)
            step(model, x)
    jax.effects_barrier()
    assert set(bodies.values()) == {1}  # one trace each: every later call was a cache hit
    return t.report()


def test_a_host_callback_misses_the_fast_path_and_a_plain_jit_does_not(report):
    cb = report.function("with_callback")
    assert (cb.calls, cb.cache_hits) == (CALLS, CALLS - 1)
    assert cb.python_dispatch_calls == CALLS - 1
    assert cb.python_dispatch_cause == "host_callback"
    (advice,) = [a for a in cb.advice if a.kind == "fast_path"]
    assert "ran JAX's Python dispatch, not its C++ fast path" in advice.message
    assert "jax.debug.callback" in advice.fix
    assert advice.estimated_saving_seconds > 0

    plain = report.function("plain")
    assert (plain.cache_hits, plain.python_dispatch_calls, plain.python_dispatch_cause) == (
        CALLS - 1,
        0,
        "",
    )
    assert not [a for a in plain.advice if a.kind == "fast_path"]


def test_the_cause_is_named_for_ordered_effects_and_inside_nnx_jit(report):
    ordered = report.function("ordered")
    assert (ordered.python_dispatch_calls, ordered.python_dispatch_cause) == (
        CALLS - 1,
        "ordered_effect",
    )
    assert "ordered=False" in next(a for a in ordered.advice if a.kind == "fast_path").fix
    step = report.function("nnx_callback")
    assert (step.python_dispatch_calls, step.python_dispatch_cause) == (CALLS - 1, "host_callback")


def test_the_count_is_in_the_text_and_survives_json(report):
    text = " ".join(str(report).split())  # unwrapped
    assert "with_callback calls off JAX's fast path, saves ~" in text
    assert f"{CALLS - 1} of its cache hits ran JAX's Python dispatch" in text
    again = jitlens.Report.from_dict(json.loads(report.to_json()))
    assert again.function("with_callback").python_dispatch_calls == CALLS - 1
    assert again.function("with_callback").python_dispatch_cause == "host_callback"
    old = json.loads(report.to_json())
    for fn in old["functions"]:  # a report written before this field: unknown, not 0
        del fn["python_dispatch_calls"]
    assert jitlens.Report.from_dict(old).function("plain").python_dispatch_calls is None
