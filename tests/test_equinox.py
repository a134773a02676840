"""``eqx.filter_jit`` as a first-class front-end: rows, counts and reasons in the user's terms.

Every figure is checked against a counter inside the jitted body (ground
truth), and every fix jitlens prints for equinox is applied here and shown to
remove the retrace while keeping the results.
"""

from __future__ import annotations

import functools
import json
import os
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jitlens
from conftest import counted, run_python

pytest_plugins = ["pytester"]

eqx = pytest.importorskip("equinox")
optax = pytest.importorskip("optax")


def _row(report: jitlens.Report, name: str) -> jitlens.FunctionReport:
    (row,) = [f for f in report.functions if f.name == name]
    return row


def _reasons(row: jitlens.FunctionReport) -> list[jitlens.Reason]:
    return [r for e in row.events for r in e.reasons]


# ------------------------------------------------------------------ the issue's program

ISSUE = """
import equinox as eqx, jax, jax.numpy as jnp
T = [0]
{act_def}
class M(eqx.Module):
    lin: eqx.nn.Linear
    act: object
    def __init__(self, key):
        self.lin = eqx.nn.Linear(3, 3, key=key)
        self.act = {act}
    def __call__(self, x):
        return self.act(self.lin(x))
@eqx.filter_jit
def f(m, x):
    T[0] += 1
    return m(x)
outs = [f(M(jax.random.PRNGKey(s)), jnp.ones(3)).tolist() for s in range(3)]
print("TRACES", T[0])
print("OUTS", outs)
"""


def _run_issue(tmp_path, act_def: str, act: str) -> tuple[str, dict]:
    (tmp_path / "prog.py").write_text(textwrap.dedent(ISSUE.format(act_def=act_def, act=act)))
    proc = run_python(["-m", "jitlens", "run", "--json", "r.json", "prog.py"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr, json.loads((tmp_path / "r.json").read_text())


def _track_issue(tmp_path, capsys, act_def: str, act: str) -> tuple[str, dict]:
    """The issue's program as ``__main__`` in this process, under a fresh ``jitlens.track()``:
    what it printed, and the tracker's report as ``jitlens run --json`` writes it."""
    import runpy

    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(ISSUE.format(act_def=act_def, act=act)))
    capsys.readouterr()
    with jitlens.track() as tracker:
        runpy.run_path(str(prog), run_name="__main__")
    return capsys.readouterr().out, tracker.report().to_dict()


@pytest.mark.slow
def test_issue_program_is_explained_and_its_fix_gives_one_trace(tmp_path, capsys):
    """As a user runs it (``jitlens run``); the fixed program in this process, tracked."""
    out, data = _run_issue(tmp_path, "", "lambda z: jax.nn.relu(z)  # a new function per instance")
    assert "TRACES 3" in out
    (f,) = [r for r in data["functions"] if r["name"] == "f"]
    assert (f["kind"], f["calls"], f["traces"], f["internal"]) == ("eqx.filter_jit", 3, 3, False)
    assert f["defined_at"] == "prog.py:13"
    reasons = [r for e in f["events"] for r in e["reasons"]]
    assert {(r["path"], r["kind"]) for r in reasons} == {("m.act", "identity_static")}
    fix = reasons[0]["fix"]
    assert "`def act(...)`" in fix and "`self.act = act`" in fix, fix
    assert "m.act" in out and "identity_static" in out  # the printed report says it too

    # The printed fix, applied: one module-level function stored by every instance.
    before = [line for line in out.splitlines() if line.startswith("OUTS")]
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    out2, data2 = _track_issue(fixed_dir, capsys, "def act(z):\n    return jax.nn.relu(z)", "act")
    assert "TRACES 1" in out2
    (f2,) = [r for r in data2["functions"] if r["name"] == "f"]
    assert (f2["calls"], f2["traces"], f2["cache_hits"]) == (3, 1, 2)
    assert [line for line in out2.splitlines() if line.startswith("OUTS")] == before


@pytest.mark.slow
def test_issue_program_under_the_env_switch(tmp_path):
    (tmp_path / "prog.py").write_text(
        textwrap.dedent(ISSUE.format(act_def="", act="lambda z: jax.nn.relu(z)"))
    )
    report = tmp_path / "r.json"
    proc = run_python(
        ["prog.py"], cwd=tmp_path, env={"JITLENS": "1", "JITLENS_REPORT": str(report)}
    )
    assert proc.returncode == 0, proc.stderr
    assert "TRACES 3" in proc.stdout
    assert proc.stderr.count("jitlens: f (eqx.filter_jit)") == 2  # one log line per retrace
    (f,) = [r for r in json.loads(report.read_text())["functions"] if r["name"] == "f"]
    assert (f["calls"], f["traces"]) == (3, 3)


# ------------------------------------------------------------------ reasons, each with its fix


class Act(eqx.Module):
    lin: eqx.nn.Linear
    act: object

    def __call__(self, x):
        return self.act(self.lin(x))


def _relu(z):
    return jax.nn.relu(z)


def test_module_field_lambda_in_process_and_fix():
    count = counted()

    @eqx.filter_jit
    def f(m, x):
        count.tick()
        return m(x)

    lin = eqx.nn.Linear(3, 3, key=jax.random.PRNGKey(0))
    with jitlens.track() as t:
        outs = [f(Act(lin, lambda z: jax.nn.relu(z)), jnp.ones(3)) for _ in range(3)]
    row = _row(t.report(), "f")
    assert (row.calls, row.traces) == (3, count.n) == (3, 3)
    (r,) = {(r.path, r.kind, r.fix) for r in _reasons(row)}
    assert r[:2] == ("m.act", "identity_static")
    assert "a lambda stored in an eqx.Module field" in _reasons(row)[0].message

    count.n = 0
    with jitlens.track() as t:
        fixed = [f(Act(lin, _relu), jnp.ones(3)) for _ in range(3)]
    assert count.n == 1 and _row(t.report(), "f").cache_hits == 2
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)


class Stepper(eqx.Module):
    w: jax.Array
    num_steps: int = eqx.field(static=True)


class ArrayStepper(eqx.Module):
    w: jax.Array
    num_steps: jax.Array


def test_static_field_value_and_fix():
    count = counted()

    @eqx.filter_jit
    def run(m, x):
        count.tick()
        return m.w * m.num_steps + x

    with jitlens.track() as t:
        outs = [run(Stepper(jnp.ones(3), n), jnp.ones(3)) for n in (2, 5, 7)]
    row = _row(t.report(), "run")
    assert row.traces == count.n == 3
    reasons = _reasons(row)
    assert {(r.path, r.kind) for r in reasons} == {("m.num_steps", "static_value")}
    assert "eqx.field(static=True)" in reasons[0].message
    assert "drop `static=True`" in reasons[0].fix and "jnp.asarray" in reasons[0].fix

    count.n = 0
    fixed = [run(ArrayStepper(jnp.ones(3), jnp.asarray(n)), jnp.ones(3)) for n in (2, 5, 7)]
    assert count.n == 1
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)


def test_python_scalars_are_static_under_filter_jit_and_fix():
    count = counted()

    @eqx.filter_jit
    def scale(x, lr):
        count.tick()
        return x * lr

    with jitlens.track() as t:
        outs = [scale(jnp.ones(3), lr) for lr in (0.1, 0.2, 0.1, 0.3)]
    row = _row(t.report(), "scale")
    assert (row.calls, row.traces, row.cache_hits) == (4, count.n, 1) == (4, 3, 1)
    reasons = _reasons(row)
    assert {(r.path, r.kind) for r in reasons} == {("lr", "static_value")}
    assert "unlike jax.jit" in reasons[0].message
    assert "`jnp.asarray(lr)`" in reasons[0].fix

    count.n = 0
    fixed = [scale(jnp.ones(3), jnp.asarray(lr)) for lr in (0.1, 0.2, 0.1, 0.3)]
    assert count.n == 1
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)


class Tempered(eqx.Module):
    lin: eqx.nn.Linear
    temperature: float

    def __call__(self, x):
        return jax.nn.softmax(self.lin(x) / self.temperature)


def test_a_number_field_set_per_step_gets_a_field_fix_that_works():
    # once: "`jnp.asarray(model.temperature)` at the call", for a field set by eqx.tree_at
    count = counted()

    @eqx.filter_jit
    def forward(model, x):
        count.tick()
        return model(x)

    def anneal(model, wrap):
        outs = []
        for t in (1.0, 0.5, 0.25):
            model = eqx.tree_at(lambda m: m.temperature, model, wrap(t))
            outs.append(forward(model, jnp.ones(3)))
        return outs

    model = Tempered(eqx.nn.Linear(3, 4, key=jax.random.PRNGKey(0)), 1.0)
    with jitlens.track() as t:
        outs = anneal(model, float)
    row = _row(t.report(), "forward")
    assert row.traces == count.n == 3
    r = _reasons(row)[0]
    assert (r.path, r.kind) == ("model.temperature", "static_value")
    written = "jnp.asarray(value, jnp.float32)"
    fix = f"`model = eqx.tree_at(lambda m: m.temperature, model, {written})`"
    assert fix in r.fix and "stop_gradient(self.temperature)" in r.fix
    count.n = 0
    fixed = anneal(model, lambda v: jnp.asarray(v, jnp.float32))  # the fix as printed
    assert count.n == 1
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _opt_step(count):
    @eqx.filter_jit
    def step(params, opt, opt_state):
        count.tick()
        grads = jax.tree_util.tree_map(jnp.ones_like, params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return step


def test_new_optax_optimizer_per_run_and_both_fixes():
    count = counted()
    step = _opt_step(count)
    params = {"w": jnp.ones(3)}
    lrs = (0.1, 0.2, 0.3)
    with jitlens.track() as t:
        outs = []
        for lr in lrs:
            opt = optax.adam(lr)
            outs.append(step(params, opt, opt.init(params))[0]["w"])
    row = _row(t.report(), "step")
    assert row.traces == count.n == 3
    reasons = _reasons(row)
    assert {(r.path, r.kind) for r in reasons} == {("opt", "identity_static")}
    fix = reasons[0].fix
    assert "Build the optimizer once" in fix and "optax.inject_hyperparams" in fix

    # Fix 1: one optimizer object for every run (same hyper-parameter).
    count.n = 0
    opt = optax.adam(0.1)
    for _ in lrs:
        step(params, opt, opt.init(params))
    assert count.n == 1

    # Fix 2, a sweep: one inject_hyperparams optimizer, the rate set in its state.
    count.n = 0
    sweep = optax.inject_hyperparams(optax.adam)(learning_rate=0.1)
    swept = []
    for lr in lrs:
        state = sweep.init(params)
        state.hyperparams["learning_rate"] = jnp.asarray(lr)
        swept.append(step(params, sweep, state)[0]["w"])
    assert count.n == 1
    for a, b in zip(outs, swept, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)


class Net(eqx.Module):
    lin: eqx.nn.Linear

    def __call__(self, x):
        return self.lin(x)


def test_shapes_dtypes_weak_types_and_structure_with_user_paths():
    count = counted()

    @eqx.filter_jit
    def loss(m, batch):
        count.tick()
        y = batch["y"] if batch.get("y") is not None else 0.0
        return jnp.sum(m(batch["x"])) + jnp.sum(y)

    k = jax.random.PRNGKey(0)
    m3, m4 = Net(eqx.nn.Linear(3, 2, key=k)), Net(eqx.nn.Linear(4, 2, key=k))
    calls = [
        (m3, {"x": jnp.ones(3), "y": jnp.ones(2)}),
        (m3, {"x": jnp.ones(3), "y": jnp.ones(5)}),  # batch['y'] shape
        (m3, {"x": jnp.ones(3), "y": jnp.ones(5, jnp.int32)}),  # dtype
        (m3, {"x": jnp.ones(3), "y": jnp.asarray(1.0)}),  # weak f32[]
        (m3, {"x": jnp.ones(3), "y": jnp.ones(())}),  # strong f32[]
        (m3, {"x": jnp.ones(3), "y": None}),  # structure
        (m4, {"x": jnp.ones(4), "y": jnp.ones(2)}),  # parameter shapes
    ]
    with jitlens.track() as t:
        for m, batch in calls:
            loss(m, batch)
    row = _row(t.report(), "loss")
    assert row.traces == count.n == len(calls)
    per_event = [{(r.path, r.kind) for r in e.reasons} for e in row.events[1:]]
    assert ("batch['y']", "shape") in per_event[0]
    assert ("batch['y']", "dtype") in per_event[1]
    assert any(("batch['y']", "weak_type") in s for s in per_event[2:4])
    assert any(p == "batch['y']" and k == "pytree_structure" for p, k in per_event[4])
    assert ("m.lin.weight", "shape") in per_event[5]
    assert ("batch['x']", "shape") in per_event[5]


def test_method_rows_calls_hits_and_bound_arguments():
    count = counted()

    class Model(eqx.Module):
        w: jax.Array

        @eqx.filter_jit
        def step(self, x, scale=1.0):
            count.tick()
            return self.w * x * scale

    m = Model(jnp.ones(3))
    with jitlens.track() as t:
        m.step(jnp.ones(3), 2.0)
        m.step(jnp.ones(3), scale=2.0)  # Signature.bind: the same key as positional
        m.step(jnp.ones(3), 3.0)
    row = _row(t.report(), "step")
    assert (row.kind, row.calls, row.traces, row.cache_hits) == ("eqx.filter_jit", 3, 2, 1)
    assert row.traces == count.n
    assert row.qualname.endswith("Model.step")
    assert {(r.path, r.kind) for r in _reasons(row)} == {("scale", "static_value")}


def test_wrappers_made_before_and_during_tracking_are_one_row_with_exact_counts():
    count = counted()

    def g(x):
        count.tick()
        return x + 1

    before = eqx.filter_jit(g)
    before(jnp.ones(2))  # compiled before tracking
    with jitlens.track() as t:
        before(jnp.ones(2))  # hit
        during = eqx.filter_jit(g)  # another wrapper of g: equinox shares one jit
        during(jnp.ones(2))  # hit
        during(jnp.ones(3))  # trace
        eqx.filter_jit(g)(jnp.ones(3))  # hit
    row = _row(t.report(), "g")
    assert (row.calls, row.traces, row.cache_hits) == (4, 1, 3)
    assert count.n == 2  # one before tracking, one inside
    assert row.defined_at.endswith(f"test_equinox.py:{g.__code__.co_firstlineno}")


def test_filter_jit_of_a_lambda_in_a_loop_is_a_new_function():
    count = counted()

    def body(x):
        count.tick()
        return x * 2

    with jitlens.track() as t:
        for _ in range(3):
            eqx.filter_jit(lambda x: body(x))(jnp.ones(2))
    rows = [f for f in t.report().functions if f.kind == "eqx.filter_jit"]
    assert sum(f.traces for f in rows) == count.n == 3
    reasons = [r for f in rows for r in _reasons(f)]
    assert reasons and all(r.kind == "new_function" for r in reasons)
    assert "eqx.filter_jit" in reasons[0].message and "@eqx.filter_jit" in reasons[0].fix


def test_new_function_fix_applied_gives_one_trace_and_the_same_results():
    """The fix printed for a filter_jit of a lambda per iteration, applied."""
    count = counted()

    def body(x, k):
        count.tick()
        return x * 2 + k

    xs = [jnp.full(2, float(i)) for i in range(3)]
    with jitlens.track() as t:
        outs = [eqx.filter_jit(lambda x: body(x, 1.0))(x) for x in xs]
    (fix,) = {r.fix for f in t.report().functions for r in _reasons(f)}
    assert count.n == 3 and "decorate it once (`@eqx.filter_jit`)" in fix

    count.n = 0
    fwd = eqx.filter_jit(lambda x: body(x, 1.0))  # defined once, called as one object
    with jitlens.track() as t:
        fixed = [fwd(x) for x in xs]
    assert count.n == 1 and not [r for f in t.report().functions for r in _reasons(f)]
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)


def _scaled_relu(z, scale):
    return jax.nn.relu(z) * scale


SCALED = functools.partial(_scaled_relu, scale=2.0)


def test_module_partial_fix_applied_gives_one_trace_and_the_same_results():
    """A functools.partial built per instance and stored in a field, then built once."""
    count = counted()

    @eqx.filter_jit
    def f(m, x):
        count.tick()
        return m(x)

    lin = eqx.nn.Linear(3, 3, key=jax.random.PRNGKey(0))
    with jitlens.track() as t:
        outs = [
            f(Act(lin, functools.partial(_scaled_relu, scale=2.0)), jnp.ones(3)) for _ in range(3)
        ]
    (r,) = {(r.path, r.kind, r.fix) for r in _reasons(_row(t.report(), "f"))}
    assert r[:2] == ("m.act", "identity_static")
    assert "functools.partial(_scaled_relu, ...)" in r[2] and "self.act" in r[2]

    count.n = 0
    with jitlens.track() as t:
        fixed = [f(Act(lin, SCALED), jnp.ones(3)) for _ in range(3)]
    assert count.n == 1 and _row(t.report(), "f").cache_hits == 2
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)


def _times(a, x):
    return a * x


def test_eqx_partial_of_a_lambda_per_call_and_fix():
    """A lambda in a library Module (eqx.Partial): the fix builds it from one function."""
    count = counted()

    @eqx.filter_jit
    def h(fn, x):
        count.tick()
        return fn(x)

    scales = [jnp.full(3, float(i)) for i in range(3)]
    with jitlens.track() as t:
        outs = [h(eqx.Partial(lambda a, x: a * x, a), jnp.ones(3)) for a in scales]
    reasons = _reasons(_row(t.report(), "h"))
    assert count.n == 3 and {(r.path, r.kind) for r in reasons} == {("fn.func", "identity_static")}
    assert "`eqx.Partial(func, ...)`" in reasons[0].fix and "__init__" not in reasons[0].fix

    count.n = 0
    fixed = [h(eqx.Partial(_times, a), jnp.ones(3)) for a in scales]
    assert count.n == 1
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)


def test_a_donating_wrapper_of_the_same_function_is_a_jit_option_not_an_eviction():
    """filter_jit(f) and filter_jit(f, donate="all") share equinox's jax.jit, not its entries."""
    count = counted()

    def f(x):
        count.tick()
        return x * 2

    with jitlens.track() as t:
        for _ in range(2):
            eqx.filter_jit(f)(jnp.ones(3))
        donating = eqx.filter_jit(f, donate="all")
        for _ in range(2):
            donating(jnp.ones(3))
        eqx.filter_jit(f, donate="all-except-first")(jnp.ones(3))
    row = _row(t.report(), "f")
    assert (row.calls, row.traces, row.cache_hits) == (5, count.n, 2) == (5, 3, 2)
    reasons = _reasons(row)
    assert [(r.kind, r.path, r.before, r.after) for r in reasons[:1]] == [
        ("config", "jit(donate=...)", "default", "'all'")
    ]
    assert all(r.kind != "cache_cleared" for r in reasons)


class Activated(eqx.Module):
    lin: eqx.nn.Linear
    act: object

    def __init__(self, key, act=None):
        self.lin = eqx.nn.Linear(3, 3, key=key)
        self.act = act if act is not None else (lambda z: jax.nn.relu(z))

    def __call__(self, x):
        COUNT["module"] += 1
        return self.act(self.lin(x))


COUNT = {"module": 0}


def test_a_module_jitted_as_the_function_is_one_row_with_its_fields_named_and_fixed():
    """eqx.filter_jit(model)(x) per fresh model: the culprit is a field of the model
    (`self.act`), not "a new function"; applying the fix gives one trace, same results.
    An eqx.nn layer jitted directly is the user's row, and its changed size is named."""
    keys = [jax.random.PRNGKey(s) for s in range(3)]
    COUNT["module"] = 0
    with jitlens.track() as t:
        outs = [eqx.filter_jit(Activated(k))(jnp.ones(3)) for k in keys]
        for n in (4, 5):
            eqx.filter_jit(eqx.nn.Linear(3, n, key=keys[0]))(jnp.ones(3))
    report = t.report()
    (row,) = [f for f in report.functions if f.qualname == "Activated.__call__"]
    assert (row.calls, row.traces) == (3, COUNT["module"]) == (3, 3)
    (fix,) = {r.fix for r in _reasons(row)}
    assert {(r.path, r.kind) for r in _reasons(row)} == {("self.act", "identity_static")}
    assert "`self.act = act` in `__init__`" in fix
    (lin,) = [f for f in report.functions if f.qualname == "Linear.__call__"]
    assert (lin.calls, lin.traces) == (2, 2) and not lin.internal
    assert ("self.out_features", "static_value") in {(r.path, r.kind) for r in _reasons(lin)}

    COUNT["module"] = 0
    fixed = [eqx.filter_jit(Activated(k, _relu))(jnp.ones(3)) for k in keys]
    assert COUNT["module"] == 1
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)


def test_partials_of_one_function_are_rows_of_their_own():
    count = counted()

    def g(a, x):
        count.tick()
        return a * x

    with jitlens.track() as t:
        for a in (2.0, 3.0):
            eqx.filter_jit(functools.partial(g, a))(jnp.ones(2))
    rows = [f for f in t.report().functions if f.kind == "eqx.filter_jit"]
    assert sum(f.traces for f in rows) == count.n == 2
    assert {f.name for f in rows} == {"g"}


@pytest.mark.filterwarnings("ignore:jitlens. describing a trace failed")
@pytest.mark.filterwarnings("ignore:jitlens. describing a nested trace failed")
def test_results_unchanged_when_jitlens_fails_inside(monkeypatch):
    from jitlens._track.frontends import equinox as eqx_frontend

    def broken(*_args):
        raise RuntimeError("jitlens bug")

    monkeypatch.setattr(eqx_frontend.FRONTEND, "user_args", broken)

    @eqx.filter_jit
    def f(x, y):
        return x * y

    with jitlens.track():
        out = [f(jnp.ones(2), 3.0), f(jnp.ones(3), 3.0)]
    np.testing.assert_allclose(out[1], 3 * np.ones(3))


# ------------------------------------------------------------------ guards


@pytest.mark.slow
def test_max_traces_above_and_below_filter_jit_agree_with_equinox(fork_python):
    # In a process of its own: equinox keeps a filter_jit's function alive for
    # the process (its jit's cache holds it as a static argument), so a guard
    # below it, and the hooks it holds installed, outlive the test. (A fork of the server
    # that imported JAX: the process is what must be thrown away, not its start-up.)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])
    code = "import test_equinox as t; t._guards_on_filter_jit(); print('guards ok')"
    proc = fork_python(["-c", code], cwd=here, env={"PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr
    assert "guards ok" in proc.stdout


def _guards_on_filter_jit():
    below_count, above_count = counted(), counted()

    @eqx.filter_jit
    @jitlens.max_traces(2)
    def below(x):
        below_count.tick()
        return x + 1

    @jitlens.max_traces(2)
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=5)
    def above(x):
        above_count.tick()
        return x + 1

    for n in (1, 2, 2, 1):
        below(jnp.ones(n))
        above(jnp.ones(n))
    assert jitlens.get_num_traces(below) == below_count.n == 2
    assert jitlens.get_num_traces(above) == above_count.n == 2
    assert eqx.debug.get_num_traces(above.__wrapped__) == 2
    with pytest.raises(jitlens.RecompileError, match="above"):
        above(jnp.ones(3))
    with pytest.raises(jitlens.RecompileError):
        below(jnp.ones(3))


def test_get_num_traces_and_no_retrace_on_filter_jit():
    count = counted()

    @eqx.filter_jit
    def f(x, lr):
        count.tick()
        return x * lr

    with jitlens.track():
        f(jnp.ones(2), 0.1)
        f(jnp.ones(2), 0.2)
        assert jitlens.get_num_traces(f) == count.n == 2
        with jitlens.no_retrace():
            f(jnp.ones(2), 0.1)  # a hit
            with pytest.raises(jitlens.RecompileError, match="lr"):
                f(jnp.ones(2), 0.5)


def test_pytest_marker_counts_filter_jit(pytester, fork_python):
    from forked_pytest import runpytest_forked

    pytester.makepyfile(
        """
        import equinox as eqx, jax.numpy as jnp, pytest

        @eqx.filter_jit
        def f(x, lr):
            return x * lr

        @pytest.mark.max_traces(1)
        def test_sweep():
            for lr in (0.1, 0.2):
                f(jnp.ones(2), lr)
        """
    )
    # a fork of the JAX server: no start-up; hypothesis' plugin imports hypothesis at the
    # summary (1.5 CPU s of each pytest process, its modules assertion-rewritten)
    result = runpytest_forked(pytester, fork_python, "-p", "no:hypothesispytest")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lr*"])


# ------------------------------------------------------------------ optional, late import


def test_jitlens_never_imports_equinox_and_tracks_a_late_import(fork_python):
    code = textwrap.dedent(
        """
        import sys, jitlens
        with jitlens.track() as t:
            assert "equinox" not in sys.modules
            import equinox as eqx, jax.numpy as jnp
            T = [0]
            @eqx.filter_jit
            def f(x):
                T[0] += 1
                return x
            for n in (2, 2, 3, 3, 3):
                f(jnp.ones(n))
        (row,) = [r for r in t.report().functions if r.name == "f"]
        print(row.calls, row.traces, row.cache_hits, T[0])
        """
    )
    # a fork of the server that imported JAX only: equinox and jitlens not yet imported
    proc = fork_python(["-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["5", "2", "3", "2"]


# ------------------------------------------------------------------ other shapes of filter_jit


class Scale(eqx.Module):
    w: jax.Array

    def __call__(self, x):
        return self.w * x


def test_nested_callable_module_donation_and_lower_match_ground_truth():
    count: dict[str, int] = {}

    def bump(k):
        count[k] = count.get(k, 0) + 1

    @eqx.filter_jit
    def inner(x):
        bump("inner")
        return x + 1

    @eqx.filter_jit
    def outer(x):
        bump("outer")
        return inner(x) * 2

    @eqx.filter_jit(donate="all")
    def donated(x):
        bump("donated")
        return x + 1

    with jitlens.track() as t:
        for n in (2, 2, 3):
            outer(jnp.ones(n))
            donated(jnp.ones(n))
        module = eqx.filter_jit(Scale(jnp.ones(3)))  # a callable Module as the function
        for n in (3, 3, 1):
            module(jnp.ones(n))
        eqx.filter_jit(lambda x: x * 3).lower(jnp.ones(2))
    report = t.report()
    assert (_row(report, "outer").traces, _row(report, "outer").cache_hits) == (count["outer"], 1)
    assert _row(report, "inner").traces == count["inner"] == 2  # inside outer's traces
    assert _row(report, "donated").traces == count["donated"] == 2
    (row,) = [f for f in report.functions if f.qualname == "Scale.__call__"]
    assert (row.calls, row.traces, row.cache_hits) == (3, 2, 1)
    assert {(r.path, r.kind) for r in _reasons(row)} == {("x", "shape")}


class Dropper(eqx.Module):
    lin: eqx.nn.Linear
    drop: eqx.nn.Dropout

    def __call__(self, x, key=None):
        return self.drop(self.lin(x), key=key)


def test_inference_mode_flip_is_named_as_a_mode_switch():
    count = counted()

    @eqx.filter_jit
    def evaluate(m, x):
        count.tick()
        return m(x, key=jax.random.PRNGKey(0))

    m = Dropper(eqx.nn.Linear(3, 3, key=jax.random.PRNGKey(0)), eqx.nn.Dropout(0.1))
    with jitlens.track() as t:
        evaluate(eqx.nn.inference_mode(m), jnp.ones(3))
        evaluate(
            eqx.nn.inference_mode(m, value=False),
            jnp.ones(3),
        )
    row = _row(t.report(), "evaluate")
    assert row.traces == count.n == 2
    (r,) = _reasons(row)
    assert (r.path, r.kind) == ("m.drop.inference", "static_value")
    assert "each mode compiles once" in r.message and "inference_mode" in r.fix


def test_an_inference_bool_argument_is_a_mode_argument_not_a_field():
    # once: "it is a static field ... build `inference_model = eqx.nn.inference_mode(model)`"
    # for `predict(m, x, key, inference)`, where no field changed (an ensemble's docs example)
    count = counted()

    @eqx.filter_jit
    def predict(m, x, key, inference):
        count.tick()
        return m.drop(m.lin(x), key=key, inference=inference)

    m = Dropper(eqx.nn.Linear(3, 3, key=jax.random.PRNGKey(0)), eqx.nn.Dropout(0.5))
    key = jax.random.PRNGKey(1)
    with jitlens.track() as t:
        outs = [predict(m, jnp.ones(3), key, mode) for mode in (True, False, True, False)]
    row = _row(t.report(), "predict")
    assert row.traces == count.n == 2 and row.cache_hits == 2
    (r,) = _reasons(row)
    assert (r.path, r.kind, r.expected) == ("inference", "static_value", True)
    assert "Python bool argument" in r.message and "field" not in r.message
    assert "inference_mode" not in r.fix and "nothing to fix" in r.fix
    assert jnp.array_equal(outs[0], outs[2]) and not jnp.array_equal(outs[0], outs[1])


def test_probe_lists_the_equinox_pieces_a_release_moved(monkeypatch):
    import equinox._jit as eqx_jit

    from jitlens._compat import equinox_api

    assert equinox_api.missing() == []
    monkeypatch.delattr(eqx_jit, "_call")
    assert equinox_api.missing() == [("equinox._jit._call", equinox_api.EQX_CALLS)]
    # the probe reads them from what equinox_api declares (``_compat/libraries``)
    from jitlens._compat import probe

    found = probe._probe.__wrapped__(True, ("equinox",)).missing
    assert ("equinox._jit._call", equinox_api.EQX_CALLS) in found
    assert "equinox" in probe.installed_versions()


def test_a_layer_built_with_other_arguments_is_named_as_equinox_writes_it_and_fixed():
    """``model.bias`` appears when an eqx.nn.Linear is built with ``use_bias=True``: equinox
    made it (the class written ``eqx.nn.Linear``, as equinox_api declares its layers); the
    fix, the same arguments, compiles once."""
    count = counted()

    def jitted():
        @eqx.filter_jit
        def forward(model, x):
            count.tick()
            return model(x)

        return forward

    def build(use_bias):
        return eqx.nn.Linear(2, 2, use_bias=use_bias, key=jax.random.PRNGKey(0))

    forward = jitted()
    with jitlens.track() as t:
        for use_bias in (False, True):
            forward(build(use_bias), jnp.ones(2))
    row = _row(t.report(), "forward")
    assert row.traces == count.n == 2
    made = [r for r in _reasons(row) if "library_made" in r.facts]
    assert [(r.path, r.kind) for r in made] == [("model.bias", "pytree_structure")]
    assert "build every eqx.nn.Linear with the same arguments" in made[0].fix

    count.n = 0
    forward = jitted()
    with jitlens.track() as t:
        outs = [forward(build(True), jnp.ones(2)) for _ in range(2)]
    assert count.n == 1 and _row(t.report(), "forward").cache_hits == 1
    np.testing.assert_allclose(outs[0], outs[1])


def test_other_static_arguments_are_worded_for_filter_jit():
    count = counted()

    @eqx.filter_jit
    def pick(x, name):
        count.tick()
        return x * 2 if name == "double" else x

    with jitlens.track() as t:
        for name in ("double", "same", "double"):
            pick(jnp.ones(2), name)
    row = _row(t.report(), "pick")
    assert (row.traces, row.cache_hits) == (count.n, 1) == (2, 1)
    (r,) = _reasons(row)
    assert (r.path, r.kind) == ("name", "static_value")
    assert "eqx.filter_jit keeps every non-array value" in r.message
    assert "static_argnums" not in r.fix  # filter_jit has none


@pytest.mark.slow
def test_a_budget_never_passes_when_equinox_moved_its_call_layout(fork_python):
    """An equinox release that changes how filter_jit calls jax.jit must not leave budgets on
    filter_jit functions passing silently: the equinox canary (at the self-check, or when
    equinox is imported after it) sees that traces no longer reach their function."""
    import pathlib

    child = pathlib.Path(__file__).resolve().parent / "fixtures" / "eqx_fault_child.py"
    modes = ["none", "none late", "layout_moved", "layout_moved late"]
    # each mode in a process of its own, forked after `import jax` (jitlens and equinox not
    # yet imported: the child breaks jitlens' equinox accessor first)
    got = {}
    for mode in modes:
        proc = fork_python([str(child), *mode.split()], timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        got[mode] = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    for mode in ("none", "none late"):
        assert got[mode] == "RESULT RecompileError 1 [4.0]"  # the retrace stopped before its body
    for mode in ("layout_moved", "layout_moved late"):
        assert got[mode].startswith("RESULT JitlensError:max_traces:_cannot_count_traces"), got


def test_a_budget_on_one_models_jit_is_not_spent_by_another_instance():
    """Instances of one Module class share a row, not a budget: guarding filter_jit(a) must not
    raise from an unguarded filter_jit(b), and get_num_traces counts each wrapper's own traces."""
    key, x = jax.random.PRNGKey(0), jnp.ones(2)
    a, b = eqx.nn.Linear(2, 3, key=key), eqx.nn.Linear(2, 4, key=key)
    fa, fb = jitlens.max_traces(1)(eqx.filter_jit(a)), eqx.filter_jit(b)
    fa(x)
    fb(x)  # another instance's first trace: not fa's
    fb(x)
    with pytest.raises(jitlens.RecompileError):
        fa(jnp.ones(3))  # fa's own second trace is over its budget
    with jitlens.track():
        ga, gb = eqx.filter_jit(a), eqx.filter_jit(b)
        ga(x)
        gb(x)
        gb(jnp.ones(2))
    assert (jitlens.get_num_traces(ga), jitlens.get_num_traces(gb)) == (1, 1)
