"""``jit_forward``: numbers equal an eager ``nnx.Linear``, bad input is rejected early, ``fwd`` traces once."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import monitoring

import jitlens


@pytest.mark.max_traces(1)  # each jit_forward call's fwd compiles once
@pytest.mark.parametrize(
    "seed, shape, features, num_calls",
    [
        (0.0, (1, 3), 4.0, 1.0),
        (1.0, (2, 1), 1.0, 2.0),
        (7.0, (5, 8), 3.0, 5.0),
        (3.0, (4, 64), 128.0, 3.0),
    ],
)
def test_matches_eager_linear(seed, shape, features, num_calls):
    x = np.random.default_rng(int(seed)).normal(size=shape).astype(np.float32)
    out = jitlens.jit_forward(seed, x, features, num_calls)
    model = nnx.Linear(shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    eager = model(jnp.asarray(x))
    assert out.shape == (shape[0] * int(features),) and out.dtype == jnp.float32
    np.testing.assert_allclose(out, eager.reshape(-1), rtol=1e-5, atol=1e-6)
    # independent of nnx: x @ W + b from the parameters
    ref = x @ np.asarray(model.kernel[...]) + np.asarray(model.bias[...])
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_accepts_ints_numpy_jax_scalars_and_lists():
    a = jitlens.jit_forward(np.float64(2.0), [[1.0, 2.0]], jnp.float32(3.0), np.int64(2))
    b = jitlens.jit_forward(2, jnp.asarray([[1.0, 2.0]]), 3, 2.0)
    np.testing.assert_array_equal(a, b)


GOOD = {"seed": 0.0, "x": np.ones((2, 3), np.float32), "features": 2.0, "num_calls": 1.0}
BAD = [
    ("seed", 1.5, ValueError),
    ("seed", -1.0, ValueError),
    ("seed", math.nan, ValueError),
    ("seed", math.inf, ValueError),
    ("seed", True, TypeError),
    ("seed", "3", TypeError),
    ("seed", float(2**70), ValueError),  # nnx.Rngs: OverflowError deep inside, before
    ("features", 0.0, ValueError),
    ("features", 2.5, ValueError),
    ("features", -math.inf, ValueError),
    ("features", np.ones(2), TypeError),
    ("num_calls", 0.0, ValueError),
    ("num_calls", False, TypeError),
    ("num_calls", None, TypeError),
    ("x", np.ones(3, np.float32), ValueError),
    ("x", np.ones((1, 2, 3), np.float32), ValueError),
    ("x", np.ones((0, 3), np.float32), ValueError),
    ("x", np.ones((2, 0), np.float32), ValueError),
    ("x", np.array([[1.0, np.nan]], np.float32), ValueError),
    ("x", np.array([[1.0, np.inf]], np.float32), ValueError),
    ("x", "abc", TypeError),
    ("x", [[1.0], [2.0, 3.0]], TypeError),
    ("x", np.array([[True]]), TypeError),
]


@pytest.mark.parametrize("name, value, exc", BAD, ids=[f"{n}={v!r}"[:40] for n, v, _ in BAD])
def test_bad_input_named_before_any_jax_work(name, value, exc):
    events = []

    def listener(event, *args, **kw):
        events.append(event)

    monitoring.register_event_duration_secs_listener(listener)
    try:
        with pytest.raises(exc) as info:
            jitlens.jit_forward(**{**GOOD, name: value})
    finally:
        monitoring.unregister_event_duration_listener(listener)
    assert str(info.value).startswith(name), info.value
    assert events == []  # rejected before JAX traced or compiled anything


def test_the_largest_seed_works_and_an_impossible_size_is_named():
    assert jitlens.jit_forward(2**63 - 1, [[1.0, 2.0, 3.0]], 2, 1).shape == (2,)
    with pytest.raises(ValueError, match=r"^features=1000000000000 with D_in=3 and N=1: .* GiB"):
        jitlens.jit_forward(0, [[1.0, 2.0, 3.0]], 1e12, 1)  # JAX's RESOURCE_EXHAUSTED before


@pytest.mark.parametrize("num_calls", [1, 2, 5])
def test_fwd_traced_once_per_call_counted_by_jax_events(num_calls):
    traces = []

    def listener(event, secs, **kw):
        if event == "/jax/core/compile/jaxpr_trace_duration" and kw.get("fun_name") == "fwd":
            traces.append(secs)

    monitoring.register_event_duration_secs_listener(listener)
    try:
        for _ in range(2):
            jitlens.jit_forward(0.0, np.ones((2, 3), np.float32), 4.0, float(num_calls))
    finally:
        monitoring.unregister_event_duration_listener(listener)
    assert len(traces) == 2  # one trace per jit_forward call, whatever num_calls is


@pytest.mark.max_traces(1)
def test_tracker_proves_jit_and_hits():
    with jitlens.track() as t:
        jitlens.jit_forward(0.0, np.ones((3, 2), np.float32), 2.0, 5.0)
    (fwd,) = [f for f in t.report().functions if f.name == "fwd"]
    assert (fwd.kind, fwd.calls, fwd.traces, fwd.cache_hits) == ("nnx.jit", 5, 1, 4)
    assert jax.default_backend() == t.report().backend
