"""The front-ends users meet beyond jit: jax.pmap, nnx.pmap, linen's nn.jit, jits inside scan/vmap/grad.

Each case is a public report (google/flax#663, #3171, blackjax-devs/blackjax#486, ...),
reduced to a tiny model on one CPU device. jitlens' counts are checked against a
counter inside the traced body, and every fix it prints is applied here and shown
to remove the retrace while keeping the results.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jitlens
from conftest import counted

nn = pytest.importorskip("flax.linen")
nnx = pytest.importorskip("flax.nnx")


def _rows(report: jitlens.Report, kind: str) -> list[jitlens.FunctionReport]:
    return [f for f in report.functions if f.kind == kind]


def _reasons(rows: list[jitlens.FunctionReport]) -> list[jitlens.Reason]:
    return [r for f in rows for e in f.events for r in e.reasons]


def _total(rows: list[jitlens.FunctionReport], field: str) -> int:
    return sum(getattr(f, field) for f in rows)


# ------------------------------------------------------------------ jax.pmap


def test_pmap_rebuilt_per_epoch_is_counted_and_named() -> None:
    """google/flax#663: `jax.pmap(lambda b: eval_step(params, b))` built every epoch."""
    traces = counted()

    def eval_step(params, b):
        traces.tick()
        return (params["w"] * b).sum(-1)

    params = {"w": jnp.arange(3.0)}
    batch = jnp.ones((1, 3))
    with jitlens.track() as t:
        outs = [jax.pmap(lambda b: eval_step(params, b))(batch) for _epoch in range(3)]
    rows = _rows(t.report(), "jax.pmap")
    assert traces.n == 3
    assert (_total(rows, "calls"), _total(rows, "traces")) == (3, 3)
    assert _total(rows, "compiles") == 3
    (reason,) = {r.fix: r for r in _reasons(rows) if r.kind == "new_function"}.values()
    fix = "`p_eval_step = jax.pmap(eval_step, in_axes=(None, 0))`"
    assert fix in reason.fix and "`p_eval_step(params, b)`" in reason.fix

    traces.n = 0
    with jitlens.track() as t:
        p_eval_step = jax.pmap(eval_step, in_axes=(None, 0))  # the fix, as printed
        fixed = [p_eval_step(params, batch) for _epoch in range(3)]
    (row,) = _rows(t.report(), "jax.pmap")
    assert traces.n == 1 and (row.calls, row.traces, row.cache_hits) == (3, 1, 2)
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_pmap_shape_change_names_the_argument() -> None:
    traces = counted()

    def double(b):
        traces.tick()
        return b * 2

    with jitlens.track() as t:
        g = jax.pmap(double)
        g(jnp.ones((1, 3)))
        g(jnp.ones((1, 3)))
        g(jnp.ones((1, 4)))
    row = t.stats(g)
    assert row.kind == "jax.pmap" and row.name == "double"
    assert traces.n == 2 and (row.calls, row.traces, row.cache_hits) == (3, 2, 1)
    (reason,) = row.events[-1].reasons
    assert (reason.kind, reason.path, reason.before, reason.after) == (
        "shape",
        "b",
        "f32[1,3]",
        "f32[1,4]",
    )


def test_pmap_static_broadcasted_value_is_named() -> None:
    traces = counted()

    def scale(x, s):
        traces.tick()
        return x * s

    with jitlens.track() as t:
        q = jax.pmap(scale, static_broadcasted_argnums=1)
        outs = [q(jnp.ones((1, 3)), s) for s in (3, 3, 4)]
    row = t.stats(q)
    assert traces.n == 2 and (row.calls, row.traces, row.cache_hits) == (3, 2, 1)
    (reason,) = row.events[-1].reasons
    assert (reason.kind, reason.path, reason.before, reason.after) == (
        "static_value",
        "s",
        "3",
        "4",
    )
    assert "static_broadcasted_argnums" in reason.fix

    traces.n = 0
    with jitlens.track() as t:  # the printed fix: an array argument, not broadcast-static
        q = jax.pmap(scale, in_axes=(0, None))
        fixed = [q(jnp.ones((1, 3)), jnp.asarray(s)) for s in (3, 3, 4)]
    assert traces.n == 1 and t.stats(q).traces == 1
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_pmap_made_before_tracking_is_traced_and_explained() -> None:
    traces = counted()

    def triple(b):
        traces.tick()
        return b * 3

    g = jax.pmap(triple)  # before the tracker: its calls are unknown, its traces are not
    with jitlens.track() as t:
        g(jnp.ones((1, 3)))
        g(jnp.ones((1, 5)))
    (row,) = [f for f in _rows(t.report(), "jax.pmap") if f.name == "triple"]
    assert traces.n == 2 and (row.calls, row.traces, row.cache_hits) == (None, 2, None)
    (reason,) = row.events[-1].reasons
    assert (reason.kind, reason.path, reason.after) == ("shape", "b", "f32[1,5]")


# ------------------------------------------------------------------ nnx.pmap


class _Counter(nnx.Module):
    def __init__(self) -> None:
        self.w = nnx.Param(jnp.arange(3.0)[None])
        self.count = nnx.BatchStat(jnp.zeros((1,)))

    def __call__(self, x: jax.Array) -> jax.Array:
        self.count[...] += 1
        return x * self.w[...]


def _nnx_pmap_run(fixed: bool) -> tuple[int, list[np.ndarray], jitlens.Report]:
    traces = counted()
    with jitlens.track() as t:
        m = _Counter()

        @nnx.pmap(in_axes=(0, 0), out_axes=0, axis_name="batch" if fixed else None)
        def f(m, x):
            traces.tick()
            return m(x)

        if fixed:  # the printed fix
            from jax.sharding import Mesh, NamedSharding
            from jax.sharding import PartitionSpec as P

            s = NamedSharding(Mesh(jax.local_devices()[:1], ("batch",)), P("batch"))
            nnx.update(m, jax.device_put(nnx.state(m), s))
        outs = [np.asarray(f(m, jnp.ones((1, 3)))) for _ in range(3)]
        outs.append(np.asarray(m.count[...]))
    return traces.n, outs, t.report()


def test_nnx_pmap_state_sharded_on_return_is_explained_and_fixed() -> None:
    traces, outs, report = _nnx_pmap_run(fixed=False)
    (row,) = _rows(report, "nnx.pmap")
    assert traces == 2 and (row.calls, row.traces, row.cache_hits) == (3, 2, 1)
    first = row.events[-1].reasons[0]
    assert first.kind == "sharding" and first.path in ("m.count", "m.w")
    assert "NamedSharding" in first.after
    assert "`nnx.update(m, jax.device_put(nnx.state(m), s))`" in first.fix
    assert "axis_name='batch'" in first.fix

    fixed_traces, fixed_outs, fixed_report = _nnx_pmap_run(fixed=True)
    (row,) = _rows(fixed_report, "nnx.pmap")
    assert fixed_traces == 1 and (row.calls, row.traces) == (3, 1)
    for a, b in zip(outs, fixed_outs, strict=True):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ linen nn.jit


#: Runs of `_Dense.__call__`'s body (linen freezes list fields into tuples: a global).
_LINEN_TRACES = counted()


class _Dense(nn.Module):
    n: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        _LINEN_TRACES.tick()
        return nn.Dense(self.n)(x)


_JIT_DENSE = nn.jit(_Dense)


class _Model(nn.Module):
    """google/flax#3171: `nn.jit(nn.Dense)` applied inside `__call__`."""

    n: int
    hoisted: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, training: bool) -> jax.Array:
        layer = _JIT_DENSE if self.hoisted else nn.jit(_Dense)
        x = layer(self.n)(x)
        return nn.Dropout(rate=0.5, deterministic=not training)(x)


def _linen_run(hoisted: bool) -> tuple[int, list[np.ndarray], jitlens.Report]:
    _LINEN_TRACES.n = 0
    m = _Model(3, hoisted)
    x = jnp.ones((2, 4))
    with jitlens.track() as t:
        v = m.init(jax.random.key(0), x, False)
        outs = [
            np.asarray(m.apply(v, x, True, rngs={"dropout": jax.random.key(i)})) for i in range(3)
        ]
    return _LINEN_TRACES.n, outs, t.report()


def test_linen_jit_inside_call_is_counted_and_named() -> None:
    traces, outs, report = _linen_run(hoisted=False)
    rows = _rows(report, "nn.jit")
    assert traces == 4
    assert (_total(rows, "calls"), _total(rows, "traces"), _total(rows, "compiles")) == (4, 4, 4)
    assert {f.name for f in rows} == {"_Dense"}
    reasons = [r for r in _reasons(rows) if r.kind == "new_function"]
    assert reasons and all(r.path == "_Dense" for r in reasons)
    assert "`Jit_Dense = nn.jit(_Dense)`" in reasons[-1].fix
    assert "`_Model.__call__`" in reasons[-1].fix
    assert "this very key" in reasons[-1].message  # applies 2 and 3 match apply 1's key
    assert not [r for r in _reasons(rows) if "module_ref" in r.path]

    fixed_traces, fixed_outs, fixed_report = _linen_run(hoisted=True)  # the printed fix
    (row,) = _rows(fixed_report, "nn.jit")
    assert fixed_traces == 2 and (row.calls, row.traces, row.cache_hits) == (4, 2, 2)
    (mode,) = row.events[-1].reasons
    assert mode.path == "mutable" and mode.fix.startswith("Expected once per mode.")
    for a, b in zip(outs, fixed_outs, strict=True):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ jits under other transformations


def test_jit_called_inside_scan_explains_a_shape_change() -> None:
    traces = counted()
    with jitlens.track() as t:

        @jax.jit
        def step(c):
            traces.tick()
            return c * 2

        def run(x):
            return jax.lax.scan(lambda c, _: (step(c), None), x, None, length=2)[0]

        run(jnp.ones(3))
        run(jnp.ones(4))
    row = t.stats(step)
    assert traces.n == 2 and row.traces == 2
    assert row.events[-1].signature == "c: f32[4]"
    (reason,) = row.events[-1].reasons
    assert (reason.kind, reason.path, reason.before, reason.after) == (
        "shape",
        "c",
        "f32[3]",
        "f32[4]",
    )
    assert "lax.scan" in reason.message


@pytest.mark.parametrize(("folder", "factor"), [("jax", 2), ("project", 3)])
def test_the_transformation_is_named_from_the_users_frame_in_a_folder_named_jax(
    tmp_path, folder, factor
) -> None:
    """A user's file under a ``jax/`` folder is the user's: the reason names the
    transformation the user's own line called (grad), not one further out (vmap)."""
    source = (
        f"step = jax.jit(lambda c: c * {factor})\n"  # one code object per case
        "def run(x):\n"
        "    return jax.vmap(lambda r: jax.grad(lambda y: step(y).sum())(r))(x)\n"
    )
    scope = {"jax": jax}
    with jitlens.track() as t:
        exec(compile(source, str(tmp_path / folder / "prog.py"), "exec"), scope)
        scope["run"](jnp.ones((2, 3)))
        scope["run"](jnp.ones((2, 4)))
    step = scope["step"]
    messages = [r.message for e in t.stats(step).events for r in e.reasons]
    assert len(messages) == 1 and "traced inside jax.grad" in messages[0], messages


def _kernel(x):
    _SCAN_TRACES.tick()
    return x * 0.5


_SCAN_TRACES = counted()
_ONE_STEP = jax.jit(lambda c, _: (_kernel(c), c))  # the printed fix: made once


def test_fresh_jit_scanned_per_call_names_the_wrapper() -> None:
    """blackjax-devs/blackjax#486: a new jitted `one_step` scanned by every inference loop."""

    def inference_loop(x, n):
        one_step = jax.jit(lambda c, _: (_kernel(c), c))
        return jax.lax.scan(one_step, x, None, length=n)

    _SCAN_TRACES.n = 0
    with jitlens.track() as t:
        outs = [inference_loop(jnp.ones(3), 4) for _ in range(3)]
    rows = _rows(t.report(), "jax.jit")
    assert _SCAN_TRACES.n == 3
    assert (_total(rows, "calls"), _total(rows, "traces"), _total(rows, "compiles")) == (3, 3, 3)
    lost = sum(e.seconds for f in rows for e in f.events if e.kind == "retrace")
    assert lost > 0
    reasons = [r for r in _reasons(rows) if r.kind == "new_function"]
    assert len(reasons) == 2 and all(r.path == "one_step" for r in reasons)
    assert "traced inside lax.scan" in reasons[-1].message
    assert reasons[-1].fix.startswith("Create `one_step` once")

    def fixed_loop(x, n):
        return jax.lax.scan(_ONE_STEP, x, None, length=n)

    _SCAN_TRACES.n = 0
    with jitlens.track() as t:
        fixed = [fixed_loop(jnp.ones(3), 4) for _ in range(3)]
    assert _SCAN_TRACES.n == 1
    assert t.stats(_ONE_STEP).traces == 1
    for a, b in zip(outs, fixed, strict=True):
        jax.tree.map(np.testing.assert_array_equal, a, b)


def test_jit_under_vmap_and_grad_is_explained() -> None:
    energy_traces, loss_traces = counted(), counted()
    with jitlens.track() as t:

        @jax.jit
        def energy(x):
            energy_traces.tick()
            return (x**2).sum()

        @jax.jit
        def loss(x):
            loss_traces.tick()
            return (x**2).sum()

        jax.vmap(energy)(jnp.ones((2, 3)))
        jax.vmap(energy)(jnp.ones((2, 4)))
        jax.grad(loss)(jnp.ones(3))
        jax.grad(loss)(jnp.ones(5))
    vmapped, grad = t.stats(energy), t.stats(loss)
    assert (energy_traces.n, loss_traces.n) == (2, 2) == (vmapped.traces, grad.traces)
    assert (vmapped.calls, vmapped.compiles) == (2, 2)  # eager vmap compiles the batched jit
    (reason,) = vmapped.events[1].reasons
    assert (reason.kind, reason.path, reason.after) == ("shape", "x", "f32[2,4]")
    assert "jax.vmap" in reason.message and vmapped.events[1].compile_seconds > 0
    (retrace,) = [e for e in grad.events if e.kind == "retrace"]
    assert (retrace.reasons[0].kind, retrace.reasons[0].after) == ("shape", "f32[5]")
    assert "traced inside jax.grad" in retrace.reasons[0].message


EQX_UNDER_VMAP = """
import jax, jax.numpy as jnp, jitlens
T = [0]
with jitlens.track() as t:
    import equinox as eqx  # imported after tracking began, as under `jitlens run`

    @eqx.filter_jit
    def f(x):
        T[0] += 1
        return x * 2

    jax.vmap(f)(jnp.ones((2, 3)))
    jax.grad(lambda x: f(x).sum())(jnp.ones(4))
(row,) = [r for r in t.report().functions if r.kind == "eqx.filter_jit"]
(retrace,) = [e for e in row.events if e.kind == "retrace"]
print("TRACES", T[0], row.traces, row.calls)
print("REASON", retrace.reasons[0].kind, retrace.reasons[0].path, retrace.reasons[0].after)
print("WHERE", "jax.grad" in retrace.reasons[0].message)
"""


def test_eqx_filter_jit_called_only_under_vmap_and_grad_is_counted(fork_python) -> None:
    pytest.importorskip("equinox")
    out = fork_python(["-c", EQX_UNDER_VMAP])  # a process of its own, after `import jax`
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "TRACES 2 2 2" in lines
    assert "REASON shape x f32[4]" in lines and "WHERE True" in lines


# ------------------------------------------------------------------ two devices, one subprocess

TWO_DEVICES = """
import jax, jax.numpy as jnp, numpy as np, jitlens
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

T = [0]
def eval_step(params, b):
    T[0] += 1
    return (params["w"] * b).sum(-1)
params = {"w": jnp.arange(3.0)}
batch = jnp.ones((2, 3))
with jitlens.track() as t:
    outs = [jax.pmap(lambda b: eval_step(params, b))(batch) for _ in range(3)]
    p_eval_step = jax.pmap(eval_step, in_axes=(None, 0))
    fixed = [p_eval_step(params, batch) for _ in range(3)]
rows = [f for f in t.report().functions if f.kind == "jax.pmap"]
fix = [r.fix for f in rows for e in f.events for r in e.reasons if r.kind == "new_function"][-1]
print("PMAP", T[0], sum(f.traces for f in rows), sum(f.calls for f in rows), "p_eval_step" in fix)
print("SAME", all(np.array_equal(a, b) for a, b in zip(outs, fixed)))

class Counter(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones((2, 3)))
        self.count = nnx.BatchStat(jnp.zeros((2,)))
    def __call__(self, x):
        self.count[...] += 1
        return x * self.w[...]

def run(fixed):
    T[0] = 0
    with jitlens.track() as t:
        m = Counter()
        @nnx.pmap(in_axes=(0, 0), out_axes=0, axis_name="batch" if fixed else None)
        def f(m, x):
            T[0] += 1
            return m(x)
        if fixed:
            s = NamedSharding(Mesh(jax.local_devices()[:2], ("batch",)), P("batch"))
            nnx.update(m, jax.device_put(nnx.state(m), s))
        outs = [np.asarray(f(m, jnp.ones((2, 3)))) for _ in range(3)] + [np.asarray(m.count[...])]
    (row,) = [r for r in t.report().functions if r.kind == "nnx.pmap"]
    return T[0], row, outs

n, row, outs = run(False)
kinds = sorted({r.kind for e in row.events for r in e.reasons})
print("NNX", n, row.traces, row.calls, kinds)
n, row, fixed = run(True)
print("NNX_FIXED", n, row.traces, all(np.array_equal(a, b) for a, b in zip(outs, fixed)))
"""


def test_pmaps_on_two_devices() -> None:
    """The pmap cases and fixes above, on two forced CPU devices (one subprocess for all)."""
    from test_sharding_subprocess import run_with_devices

    lines = run_with_devices(TWO_DEVICES, devices=2).splitlines()
    assert "PMAP 4 4 6 True" in lines  # 3 lambdas + the fixed one traced once, 6 calls
    assert "SAME True" in lines
    assert "NNX 2 2 3 ['sharding']" in lines
    assert "NNX_FIXED 1 1 True" in lines


_SCALED_TRACES = counted()


class _Scaled(nn.Module):
    scale: float = 1.0

    @nn.compact
    def __call__(self, x: jax.Array, scale: jax.Array | None = None) -> jax.Array:
        _SCALED_TRACES.tick()
        return nn.Dense(2)(x) * (self.scale if scale is None else scale)


_JIT_SCALED = nn.jit(_Scaled)
_JIT_SCALED_FIXED = nn.jit(_Scaled)  # its own compiled cache, for the fixed run


def test_linen_jit_field_change_names_the_field() -> None:
    x = jnp.ones((1, 3))
    _SCALED_TRACES.n = 0
    with jitlens.track() as t:
        v = _JIT_SCALED(1.0).init(jax.random.key(0), x)
        outs = [np.asarray(_JIT_SCALED(s).apply(v, x)) for s in (1.0, 2.0, 3.0)]
    (row,) = _rows(t.report(), "nn.jit")
    assert _SCALED_TRACES.n == 4 and (row.calls, row.traces) == (4, 4)
    changed = [e.reasons[0] for e in row.events[2:]]
    assert [(r.path, r.before, r.after) for r in changed] == [
        ("_Scaled.scale", "1.0", "2.0"),
        ("_Scaled.scale", "2.0", "3.0"),
    ]
    assert "pass it to `_Scaled.__call__` as an array argument" in changed[0].fix

    _SCALED_TRACES.n = 0
    with jitlens.track() as t:  # the printed fix: the value is an array argument
        v = _JIT_SCALED_FIXED().init(jax.random.key(0), x)
        fixed = [
            np.asarray(_JIT_SCALED_FIXED().apply(v, x, jnp.asarray(s))) for s in (1.0, 2.0, 3.0)
        ]
    (row,) = _rows(t.report(), "nn.jit")
    assert _SCALED_TRACES.n == 2 and row.traces == 2  # init and apply, once each
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _jax_compile_log():
    """tests/trial_programs/jax_compile_log.py: JAX's own count of its compiles."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent / "trial_programs" / "jax_compile_log.py"
    spec = importlib.util.spec_from_file_location("jax_compile_log", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compiles


def test_eager_scan_over_new_lengths_counts_the_compiles_jax_makes() -> None:
    """lax.scan / fori_loop outside jit over 3 lengths: JAX traces the body once (its trace
    is cached) and compiles the scan 3 times; the row says 3 compiles, as JAX's log does.
    The printed fix (pad to one length, mask the padding) then compiles once, same sums."""
    compiles = _jax_compile_log()
    traces = counted()

    def add(c, x):
        traces.tick()
        return c + x, None

    def add_masked(c, xm):
        traces.tick()
        x, keep = xm
        return c + jnp.where(keep, x, 0.0), None

    def count(i, c):
        return c + i

    lengths = (3, 4, 5)
    with jitlens.track() as t, compiles() as names:
        sums = [float(jax.lax.scan(add, 0.0, jnp.arange(n, dtype=jnp.float32))[0]) for n in lengths]
        counts = []
        for n in lengths:  # (a loop, not a comprehension: its frame is the caller's)
            counts.append(float(jax.lax.fori_loop(0, n, count, 0.0)))
    rows = {f.name: f for f in t.report().functions}
    assert traces.n == 1 and names.count("scan") == 6  # 3 for lax.scan, 3 for fori_loop
    scan, fori = rows["lax.scan(add)"], rows["lax.fori_loop(count)"]
    assert (scan.traces, scan.compiles) == (1, 3) and (fori.traces, fori.compiles) == (1, 3)
    reasons = [r for e in scan.events for r in e.reasons]
    assert [(r.kind, r.path, r.before, r.after) for r in reasons] == [
        ("shape", "xs", "(3, ...)", "(4, ...)"),
        ("shape", "xs", "(4, ...)", "(5, ...)"),
    ]
    assert "pad smaller batches to the largest shape (and mask the padding)" in reasons[0].fix
    (r, _) = [r for e in fori.events for r in e.reasons]
    assert (r.path, r.before, r.after) == ("upper - lower", "3", "4")
    caller = "test_eager_scan_over_new_lengths_counts_the_compiles_jax_makes"
    assert r.fix.startswith(f"Jit the caller with the bounds traced: `@jax.jit` on `{caller}`")
    assert "the bounds passed as its arguments (not static)" in r.fix

    traces = counted()
    with jitlens.track() as t, compiles() as names:  # the fix: one length, padding masked
        padded = []
        for n in lengths:
            xs = jnp.arange(max(lengths), dtype=jnp.float32)
            keep = jnp.arange(max(lengths)) < n
            padded.append(float(jax.lax.scan(add_masked, 0.0, (xs, keep))[0]))
    (row,) = [f for f in t.report().functions if f.name == "lax.scan(add_masked)"]
    assert padded == sums and names.count("scan") == 1 == row.compiles == traces.n

    @jax.jit  # the fori_loop's fix: a function of one's own, jitted, the bound traced
    def total(n):
        return jax.lax.fori_loop(0, n, count, 0.0)

    with jitlens.track() as t, compiles() as names:
        assert [float(total(n)) for n in lengths] == counts
    (row,) = [f for f in t.report().functions if f.name == "total"]
    assert names == ["total"] and row.compiles == 1
