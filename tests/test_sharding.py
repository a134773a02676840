"""Sharding-caused retraces, explained precisely, on 8 forced host CPU devices (in a subprocess)."""

from __future__ import annotations

import json

import pytest

from test_sharding_subprocess import run_with_devices

SNIPPET = r"""
import json
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
from flax import nnx
import jitlens

def reasons(t, f):
    s = t.stats(f)
    return [[(r.kind, r.path, r.before, r.after) for r in e.reasons] for e in s.events if e.kind != "trace"]

out = {}
mesh = jax.make_mesh((4,), ("data",))
mesh2 = jax.make_mesh((2, 2), ("data", "model"))
x = jnp.ones((8, 4))
with jitlens.track() as t:
    f = jax.jit(lambda x: x * 2)
    f(jax.device_put(x, NamedSharding(mesh, P("data"))))
    f(jax.device_put(x, NamedSharding(mesh, P(None))))
    f(jax.device_put(x, NamedSharding(mesh2, P("data", "model"))))
    f(x)                                   # uncommitted, default device
    f(jax.device_put(x, jax.devices()[1]))  # committed to cpu:1
out["placement"] = reasons(t, f)
s = t.stats(f)
out["placement_counts"] = [s.traces, s.compiles, s.retraces, s.recompiles, s.seconds_lost > 0]
out["placement_text"] = str(t.report())

def g(x):
    return x + 1

with jitlens.track() as t:
    for sh in (NamedSharding(mesh, P("data")), NamedSharding(mesh, P(None))):
        w = jax.jit(g, in_shardings=sh)
        w(x)
    for donate in ((), (0,)):
        w = jax.jit(g, donate_argnums=donate)
        w(jnp.ones(3))
out["wrapper"] = [r for f in t.report().functions for e in f.events for r in [(x.kind, x.path, x.before, x.after) for x in e.reasons]]

model = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
@nnx.jit
def fwd(m, x):
    return m(x)
with jitlens.track() as t:
    fwd(model, x)
    fwd(model, jax.device_put(x, NamedSharding(mesh, P("data"))))
out["nnx"] = reasons(t, fwd)

# Flax's examples/nnx_toy_examples/10_fsdp_and_optimizer.py in small: the step returns a
# parameter placed otherwise than it came in; the printed fix, run as printed, places it first
import re
auto = jax.make_mesh((2, 4), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
class W(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jax.device_put(jnp.ones((8, 4)), NamedSharding(auto, P())))
        self.shared = nnx.data({"w": self.w})  # a second holder of the Variable (an optimizer)
def fsdp(code=None):
    @nnx.jit
    def step(m):
        m.w[...] = jax.lax.with_sharding_constraint(m.w[...] * 0.5, NamedSharding(auto, P("model")))
        return m.w[...].sum()
    m = W()
    if code:
        exec(code, {"jax": jax, "NamedSharding": NamedSharding, "P": P, "mesh": auto, "m": m})
    with jitlens.track() as t:
        sums = [float(step(m)) for _ in range(3)]
    s = t.stats(step)
    return s.compiles, [r.fix for e in s.events for r in e.reasons], sums
compiles, fixes, sums = fsdp()
code = re.search(r"`([^`]*\.set_value\(jax\.device_put\([^`]*\))`", fixes[0]).group(1)
out["fsdp"] = [compiles, fixes, sums, list(fsdp(code))]

# jax's examples/spmd_mnist_classifier_fromscratch.py in small: a step called under
# `jax.set_mesh(mesh)`, then once outside it. Its outputs come back P(None, None) where the
# first input was P(): JAX serves both from one compile, so the mesh is the one difference
explicit = jax.make_mesh((4,), ("data",), axis_types=(jax.sharding.AxisType.Explicit,))
def spmd(fixed):
    traces = [0]
    def body(w, x):
        traces[0] += 1
        return w - 0.1 * (x @ w).sum()
    step = jax.jit(body)
    w = jax.device_put(jnp.ones((4, 4)), NamedSharding(explicit, P()))
    xs = jax.device_put(jnp.ones((8, 4)), NamedSharding(explicit, P("data")))
    with jitlens.track() as t:
        if fixed:  # the printed fix: the mesh entered once around the whole loop
            with jax.set_mesh(explicit):
                for _ in range(3):
                    w = step(w, xs)
                w = step(w, xs)
        else:
            with jax.set_mesh(explicit):
                for _ in range(3):
                    w = step(w, xs)
            w = step(w, xs)
    s = t.stats(step)
    reasons = [(r.kind, r.path, r.fix) for e in s.events for r in e.reasons]
    return traces[0], s.traces, reasons, float(w.sum())
out["spmd"] = [spmd(False), spmd(True)]
print("JSON" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def sharding_out():
    out = run_with_devices(SNIPPET, devices=8, timeout=180)
    line = next(ln for ln in out.splitlines() if ln.startswith("JSON"))
    return json.loads(line[4:])


@pytest.mark.xdist_group("sharding_sharding_out")  # its module fixture runs once
def test_named_sharding_and_placement_changes(sharding_out):
    got = sharding_out["placement"]
    assert got[0] == [
        [
            "sharding",
            "x",
            "NamedSharding(mesh('data': 4), P('data'))",
            "NamedSharding(mesh('data': 4), P())",  # P(None): trailing Nones said nothing
        ]
    ]
    assert got[1][0][0] == "sharding"
    assert "mesh('data': 2, 'model': 2)" in got[1][0][3]
    assert got[2][0][3] == "uncommitted (default device)"
    assert got[3] == [["sharding", "x", "uncommitted (default device)", "committed to cpu:1"]]


@pytest.mark.xdist_group("sharding_sharding_out")  # its module fixture runs once
def test_recompiles_from_a_cached_trace_are_counted_and_worded_as_such(sharding_out):
    """JAX re-lowers a traced function for a new sharding without tracing it again: those
    compiles are explained, counted as time lost, and not called retraces."""
    traces, compiles, retraces, recompiles, lost = sharding_out["placement_counts"]
    assert compiles == 5 and traces + recompiles == compiles and retraces == traces - 1
    assert recompiles >= 1 and lost
    text = sharding_out["placement_text"]
    assert f"retraced {retraces}x and compiled {recompiles}x more from a cached trace" in text
    assert f"x  sharding  (in {retraces + recompiles} recompiles)" in text


@pytest.mark.xdist_group("sharding_sharding_out")  # its module fixture runs once
def test_wrapper_in_shardings_and_donation(sharding_out):
    got = sharding_out["wrapper"]
    kinds = {(k, p) for k, p, _b, _a in got}
    assert ("new_function", "g") in kinds
    assert ("sharding", "jit(in_shardings=...)") in kinds
    # only the donation differs: JAX re-uses the trace and compiles again (a "compile" event)
    assert ("config", "jit(donate_argnums=...)") in kinds


@pytest.mark.xdist_group("sharding_sharding_out")  # its module fixture runs once
def test_nnx_input_sharding(sharding_out):
    assert sharding_out["nnx"][0][0][:2] == ["sharding", "x"]


@pytest.mark.xdist_group("sharding_sharding_out")  # its module fixture runs once
def test_a_step_that_returns_a_parameter_placed_otherwise_gets_a_fix_that_works(sharding_out):
    """The printed placement, run before the loop: one compile instead of two, same sums."""
    compiles, fixes, sums, (fixed_compiles, fixed_fixes, fixed_sums) = sharding_out["fsdp"]
    assert compiles == 2 and len(fixes) == 1, fixes
    # in place (`set_value`): every holder of the Variable (the model, an optimizer) sees it
    placed = "m.shared['w'].set_value(jax.device_put(m.shared['w'].get_value(), "
    placed += "NamedSharding(mesh, P('model'))))`"
    assert f"{placed} (`mesh`: your mesh)" in fixes[0], fixes[0]
    assert fixed_compiles == 1 and not [f for f in fixed_fixes if "device_put" in f], fixed_fixes
    assert fixed_sums == sums


@pytest.mark.xdist_group("sharding_sharding_out")  # its module fixture runs once
def test_a_call_outside_the_mesh_is_named_alone_and_the_fix_works(sharding_out):
    """P() and P(None, None) place alike and JAX compiles once for both: they were listed as
    six sharding differences under the one that mattered, the mesh left before the call."""
    (traces, reported, reasons, total), (f_traces, f_reported, f_reasons, f_total) = sharding_out[
        "spmd"
    ]
    assert traces == reported == 2
    assert [(k, p) for k, p, _ in reasons] == [("config", "abstract_mesh_context_manager")]
    assert "`with jax.set_mesh(mesh):`" in reasons[0][2]
    # the fixed run's one trace is of a new wrapper of the same code (the test's, not the fix's)
    assert f_traces == f_reported == 1 and [k for k, _, _ in f_reasons] in ([], ["new_function"])
    assert f_total == pytest.approx(total)
