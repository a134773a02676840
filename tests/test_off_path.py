"""Right answers off the happy path (issue 14): value vs identity, failed calls,
guard-aborted traces, deep trees. Each figure is checked against a counter in the body."""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jitlens
from conftest import counted


class Mode(enum.Enum):
    A = 1
    B = 2


class Cfg:
    """Value equality, default repr."""

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, Cfg) and other.k == self.k

    def __hash__(self):
        return hash(self.k)


class Plain:
    pass


def static_reason(a, b):
    with jitlens.track() as t:
        f = jax.jit(lambda x, s: x, static_argnums=1)
        f(jnp.ones(2), a)
        f(jnp.ones(2), b)
    s = t.stats(f)
    assert s.traces == 2
    return s.events[1].reasons[0]


@pytest.mark.parametrize(
    ("a", "b", "path", "before", "after"),
    [
        (Mode.A, Mode.B, "s", "<Mode.A: 1>", "<Mode.B: 2>"),
        (jax.nn.relu, jax.nn.gelu, "s", "<function relu>", "<function gelu>"),
        (tuple(range(40)), (*range(39), 99), "s[39]", "39", "99"),
        (Cfg(1), Cfg(2), "s.k", "1", "2"),
    ],
    ids=["enum", "module-function", "long-tuple", "value-class"],
)
def test_a_changed_value_is_static_value_and_shows_what_differs(a, b, path, before, after):
    r = static_reason(a, b)
    assert (r.kind, r.path, r.before, r.after) == ("static_value", path, before, after)
    assert "__eq__" not in r.message and "frozen dataclass" not in r.fix


def test_a_long_repr_shows_the_differing_middle():
    a = "x" * 200 + "A" + "y" * 200
    b = "x" * 200 + "B" + "y" * 200
    r = static_reason(a, b)
    assert r.kind == "static_value"
    assert "A" in r.before and "B" in r.after and len(r.before) < 100


@pytest.mark.parametrize(
    ("make", "word"),
    [(Plain, "__eq__"), (lambda: lambda z: z, "lambda")],
    ids=["no-eq-instance", "lambda"],
)
def test_fresh_objects_are_identity_static(make, word):
    r = static_reason(make(), make())
    assert r.kind == "identity_static" and word in r.message


class WithAct(nnx.Module):
    def __init__(self, act):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.act = act

    def __call__(self, x):
        return self.act(self.lin(x))


def test_nnx_activation_swap_is_a_value_and_a_fresh_model_hits():
    @nnx.jit
    def fwd(m, x):
        return m(x)

    x = jnp.ones((1, 2))
    with jitlens.track() as t:
        fwd(WithAct(nnx.relu), x)
        fwd(WithAct(nnx.gelu), x)
        fwd(WithAct(nnx.relu), x)  # a fresh relu model: a cache hit
    s = t.stats(fwd)
    assert (s.traces, s.cache_hits) == (2, 1)
    (r,) = s.events[1].reasons
    assert (r.kind, r.path) == ("static_value", "m.act")
    assert "new object" not in r.message


def test_graphdef_change_names_the_attribute_without_a_bogus_list_reason():
    x = jnp.ones((1, 2))
    gd1, st1 = nnx.split(WithAct(nnx.relu))
    gd2, st2 = nnx.split(WithAct(nnx.gelu))
    with jitlens.track() as t:
        f = jax.jit(lambda gd, st, x: nnx.merge(gd, st)(x), static_argnums=0)
        f(gd1, st1, x)
        f(gd2, st2, x)
        g = jax.jit(lambda gd, st, x: nnx.merge(gd, st)(x))
        g(gd1, st1, x)
        g(gd2, st2, x)
    for fn in (f, g):
        rs = [r for e in t.stats(fn).events for r in e.reasons]
        assert [(r.kind, r.path) for r in rs] == [("static_value", "gd.act")]
        assert "list" not in rs[0].message


# ---------------------------------------------------------------- failed calls


@pytest.mark.parametrize("timeline", [False, True])
def test_cache_hits_after_a_call_that_traced_and_raised(timeline):
    fail = [True]
    with jitlens.track(timeline=timeline) as t:

        @jax.jit
        def f(x):
            if fail[0]:
                raise ValueError
            return x + 1

        with pytest.raises(ValueError):
            f(1.0)
        fail[0] = False
        f(1.0)
        f(1.0)
    s = t.stats(f)
    assert (s.calls, s.cache_hits) == (3, 1)


@pytest.mark.parametrize("timeline", [False, True])
def test_an_unhashable_static_error_does_not_eat_a_hit(timeline):
    with jitlens.track(timeline=timeline) as t:
        g = jax.jit(lambda x, s: x, static_argnums=1)
        g(1.0, 1)
        g(1.0, 1)
        with pytest.raises((TypeError, ValueError)):
            g(1.0, [1])
        g(1.0, 1)
    s = t.stats(g)
    assert (s.calls, s.traces, s.cache_hits) == (4, 1, 2)


# ---------------------------------------------------------------- guard-aborted traces


def test_no_retrace_abort_is_not_a_trace():
    body = counted()
    with jitlens.track() as t:

        @jax.jit
        def step(x):
            body.tick()
            return x * 2

        step(jnp.ones(2))
        with jitlens.no_retrace(), pytest.raises(jitlens.RecompileError):
            step(jnp.ones(3))
        step(jnp.ones(3))  # now a real trace, explained against the compiled key
        step(jnp.ones(2))
    s = t.stats(step)
    assert s.traces == body.n == 2
    assert s.cache_hits == 1
    assert [r.kind for e in s.events for r in e.reasons] == ["shape"]


@pytest.mark.parametrize("where", ["above", "below"])
def test_max_traces_abort_is_not_a_trace(where):
    body = counted()

    def fn(x):
        body.tick()
        return x * 2

    with jitlens.track() as t:
        g = (
            jitlens.max_traces(jax.jit(fn), 1)
            if where == "above"
            else jax.jit(jitlens.max_traces(fn, 1))
        )
        g(jnp.ones(2))
        for _ in range(2):
            with pytest.raises(jitlens.RecompileError):
                g(jnp.ones(3))
        g(jnp.ones(2))
    assert t.stats(g).traces == body.n == 1


# ---------------------------------------------------------------- deep trees


def nest(leaf, depth):
    for _ in range(depth):
        leaf = {"a": leaf}
    return leaf


def test_a_leaf_70_levels_down_is_explained_with_its_kind():
    body = counted()
    with jitlens.track() as t:

        @jax.jit
        def f(tree):
            body.tick()
            return jax.tree.map(lambda z: z + 1, tree)

        f(nest(jnp.ones(2), 70))
        f(nest(jnp.ones(3), 70))
        f(nest(jnp.ones(3, jnp.int32), 70))
    s = t.stats(f)
    assert s.traces == body.n == 3
    rs = [r for e in s.events for r in e.reasons]
    assert [r.kind for r in rs] == ["shape", "dtype"]
    assert rs[0].path.startswith("tree['a']['a']") and "(70 levels)" in rs[0].path


# ---------------------------------------------------------------- transforms


def loss(w):
    return (w**2).sum()


def test_jit_of_grad_is_named_after_the_transform():
    with jitlens.track() as t:
        g = jax.jit(jax.grad(loss))
        g(jnp.ones(2))
    assert [f.name for f in t.report().functions] == ["grad(loss)"]


def test_vmap_of_a_jit_explains_the_batch_size():
    body = counted()
    with jitlens.track() as t:

        @jax.jit
        def f(x):
            body.tick()
            return x * 2

        for n in (4, 8, 8):
            jax.vmap(f)(jnp.ones((n, 3)))
    s = t.stats(f)
    assert (body.n, s.compiles) == (1, 2)
    rs = [r for e in s.events for r in e.reasons]
    assert [(r.kind, r.path, r.before, r.after) for r in rs] == [
        ("shape", "x", "f32[4,3]", "f32[8,3]")
    ]
    assert "jax.vmap" in rs[0].message and "batch" in rs[0].message


# ---------------------------------------------------------------- many wrappers, short summary


def test_wrappers_of_the_same_code_fold_into_one_row_and_the_summary_stays_short():
    import dataclasses

    x = jnp.ones(2)
    with jitlens.track() as t:
        for _ in range(4):
            jax.jit(lambda v: v + 1)(x)
    report = t.report()
    (one,) = [f for f in report.functions if f.name == "<lambda>"][:1]
    # 2,000 wrappers, without compiling them: copies of one wrapper's figures
    many = tuple(dataclasses.replace(one, id=i) for i in range(2_000))
    big = dataclasses.replace(report, functions=many)
    text = big.to_text(width=100, max_lines=56)
    flat = " ".join(text.split())
    assert "<lambda> \u00d72000" in flat  # one row for the 2,000 wrappers
    assert flat.startswith("jitlens: 1 jitted function, 2000 traces")  # one code, 2,000 wrappers
    assert len(text.splitlines()) <= 56
    assert len(report.to_text(width=100).splitlines()) < 40


# ---------------------------------------------------------------- stale cached_partial


class ScaledModel(nnx.Module):
    def __init__(self):
        self.linear = nnx.Linear(3, 3, rngs=nnx.Rngs(0))
        self.scale = 1.0  # a static attribute

    def __call__(self, x):
        return self.linear(x) * self.scale


def test_stale_cached_partial_fix_gives_the_new_result():
    @nnx.jit
    def step(model, x):
        return model(x)

    model, x = ScaledModel(), jnp.ones((1, 3))
    with pytest.warns(jitlens.StaleCacheWarning), jitlens.track() as t:
        cached = nnx.cached_partial(step, model)
        y1 = cached(x)
        model.scale = 2.0
        cached(x)  # stale: still scale 1.0
    (hit,) = [h for f in t.report().functions for h in f.stale_hits]
    assert "cached_partial" in hit.fix and "Variable" not in hit.fix
    assert [w.id for w in hit.said] == ["stale", "stale_fix"]  # worded when printed
    # the fix: a new partial after the change (one compile for the new value)
    y2 = nnx.cached_partial(step, model)(x)
    np.testing.assert_allclose(np.asarray(y2), 2 * np.asarray(y1), rtol=1e-6)


# ---------------------------------------------------------------- a static changed in place


class DictScaled(nnx.Module):
    def __init__(self, cfg):
        self.linear = nnx.Linear(3, 1, rngs=nnx.Rngs(0))
        self.cfg = cfg  # a dict attribute: static, compared by equality with itself

    def __call__(self, x):
        return self.linear(x) * self.cfg["scale"]


def _epochs(fix: bool) -> tuple[list[float], list[float], int, jitlens.Report]:
    traces = counted()

    @nnx.jit
    def step(m, x):
        traces.tick()
        return m(x)

    cfg = {"scale": 1.0}
    m, x = DictScaled(cfg), jnp.ones((1, 3))
    jitted, eager = [], []
    with jitlens.track() as t:
        for epoch in range(4):
            if fix:  # the printed fix: a new object instead of a change in place
                m.cfg = {**m.cfg, "scale": 1.0 + epoch}
            else:
                cfg["scale"] = 1.0 + epoch
            jitted.append(float(step(m, x)[0, 0]))
            eager.append(float(m(x)[0, 0]))
    return jitted, eager, traces.n, t.report()


def test_a_static_changed_in_place_is_a_stale_hit_and_its_fix_gives_the_new_result():
    """google/flax-style: a dict attribute changed in place between nnx.jit calls. The key
    holds that very dict, so nnx.jit finds it equal to itself and serves the old compile:
    the results are wrong and nothing retraces. Ground truth: the model run eagerly."""
    with pytest.warns(jitlens.StaleCacheWarning, match="changed in place"):
        jitted, eager, traces, report = _epochs(fix=False)
    assert traces == 1 and jitted[1:] != eager[1:]  # the bug: stale results, no retrace
    (hit,) = [h for f in report.functions for h in f.stale_hits]
    assert (hit.path, hit.call_index) == ("m.cfg", 1)
    assert (hit.before, hit.after) == ("{'scale': 1.0}", "{'scale': 2.0}")
    assert "`m.cfg = {**m.cfg, 'scale': 2.0}`" in hit.fix  # applied below, value by value
    jitted, eager, traces, report = _epochs(fix=True)
    assert jitted == eager and traces == 4  # one compile per value, each result right
    assert not [h for f in report.functions for h in f.stale_hits]


class Box:
    """A plain object: equal only to itself, hashed by identity (as JAX keys it)."""

    def __init__(self, scale):
        self.scale = scale


def _scaled(x, cfg):
    return x * cfg.scale


def _jax_jit_epochs(fix: bool, epochs: int = 4):
    """jax.jit with the object as a static argument, changed in place between calls."""
    traces = counted()

    def step(x, cfg):
        traces.tick()
        return _scaled(x, cfg)

    cfg, x = Box(1.0), jnp.ones(2)
    jitted, eager = [], []
    with jitlens.track() as t:
        g = jax.jit(step, static_argnums=1)
        for epoch in range(epochs):
            if fix:  # the printed fix: a new object, then the change
                cfg = copy.copy(cfg)
            cfg.scale = 1.0 + epoch
            jitted.append(float(g(x, cfg)[0]))
            eager.append(float(_scaled(x, cfg)[0]))
    return jitted, eager, traces.n, t.report()


def _eqx_epochs(fix: bool):
    """eqx.filter_jit of a Module holding the object in a field (non-arrays are static)."""
    eqx = pytest.importorskip("equinox")
    traces = counted()

    class Scaled(eqx.Module):
        w: jax.Array
        cfg: Box

    @eqx.filter_jit
    def step(m, x):
        traces.tick()
        return _scaled(m.w * x, m.cfg)

    m, x = Scaled(jnp.ones(2), Box(1.0)), jnp.ones(2)
    jitted, eager = [], []
    with jitlens.track() as t:
        for epoch in range(4):
            if fix:  # the printed fix: a new object in the (frozen) module, then the change
                m = eqx.tree_at(lambda m: m.cfg, m, copy.copy(m.cfg))
            m.cfg.scale = 1.0 + epoch
            jitted.append(float(step(m, x)[0]))
            eager.append(float(_scaled(m.w * x, m.cfg)[0]))
    return jitted, eager, traces.n, t.report()


class Scaler:
    """The JAX FAQ's "static self" (jit with methods, strategy 2): no __eq__ of its own;
    ``calc`` is ``@partial(jax.jit, static_argnums=0)``, applied in the test (while tracked)."""

    def __init__(self, scale):
        self.scale = scale


def _calc(self, x):
    return x * self.scale


def _method_epochs(fix: bool):
    """A jitted method whose ``self`` is static, changed in place between calls: the fix is
    written in the caller's name (``c``), not the parameter's (``self = ...`` is no fix)."""
    jitted, eager = [], []
    with jitlens.track() as t:
        Scaler.calc = functools.partial(jax.jit, static_argnums=0)(_calc)  # jitted while tracked
        c, x = Scaler(1.0), jnp.ones(2)
        for epoch in range(4):
            if fix:  # the printed fix: a new object, then the change
                c = copy.copy(c)
            c.scale = 1.0 + epoch
            jitted.append(float(c.calc(x)[0]))
            eager.append(float(x[0] * c.scale))
    (fn,) = [f for f in t.report().functions if f.name.endswith("calc")]
    return jitted, eager, fn.traces, t.report()


class BoxScaled(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(2))
        self.cfg = Box(1.0)  # a plain object attribute: static, equal only to itself


def _nnx_object_epochs(fix: bool):
    traces = counted()

    @nnx.jit
    def step(m, x):
        traces.tick()
        return _scaled(m.w * x, m.cfg)

    m, x = BoxScaled(), jnp.ones(2)
    jitted, eager = [], []
    with jitlens.track() as t:
        for epoch in range(4):
            if fix:  # the printed fix: a new object, then the change
                m.cfg = copy.copy(m.cfg)
            m.cfg.scale = 1.0 + epoch
            jitted.append(float(step(m, x)[0]))
            eager.append(float(_scaled(m.w * x, m.cfg)[0]))
    return jitted, eager, traces.n, t.report()


@dataclasses.dataclass
class DataBox:
    """A dataclass: compared by its fields (unhashable, as nnx keeps statics, not JAX)."""

    scale: float


class DataBoxScaled(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(2))
        self.cfg = DataBox(1.0)


def _nnx_dataclass_epochs(fix: bool):
    traces = counted()

    @nnx.jit
    def step(m, x):
        traces.tick()
        return _scaled(m.w * x, m.cfg)

    m, x = DataBoxScaled(), jnp.ones(2)
    jitted, eager = [], []
    with jitlens.track() as t:
        for epoch in range(4):
            if fix:  # the printed fix: a new dataclass with the new value
                m.cfg = dataclasses.replace(m.cfg, scale=1.0 + epoch)
            else:
                m.cfg.scale = 1.0 + epoch
            jitted.append(float(step(m, x)[0]))
            eager.append(float(_scaled(m.w * x, m.cfg)[0]))
    return jitted, eager, traces.n, t.report()


@pytest.mark.parametrize(
    ("epochs", "path", "fix"),
    [
        (_jax_jit_epochs, "cfg", "`cfg = copy.copy(cfg)` before `cfg.scale = 2.0`"),
        (
            _eqx_epochs,
            "m.cfg",
            "`m = eqx.tree_at(lambda m: m.cfg, m, copy.copy(m.cfg))` before `m.cfg.scale = 2.0`",
        ),
        (_nnx_object_epochs, "m.cfg", "`m.cfg = copy.copy(m.cfg)` before `m.cfg.scale = 2.0`"),
        (_nnx_dataclass_epochs, "m.cfg", "`m.cfg = dataclasses.replace(m.cfg, scale=2.0)`"),
        (_method_epochs, "self", "`c = copy.copy(c)` before `c.scale = 2.0`"),
    ],
    ids=[
        "jax.jit-static_argnums",
        "eqx.filter_jit-field",
        "nnx.jit-attribute",
        "nnx.jit-dataclass",
        "jax.jit-static-self",
    ],
)
def test_an_object_changed_in_place_is_a_stale_hit_under_every_jit(epochs, path, fix):
    """An object JAX compares by identity (a static argument of jax.jit, a non-array field
    eqx.filter_jit treats as static, an nnx.Module attribute), changed in place: the key holds that very object,
    JAX finds it equal to itself and serves the old compile. Ground truth: the eager run."""
    with pytest.warns(jitlens.StaleCacheWarning, match="noticed at call #2"):
        jitted, eager, traces, report = epochs(fix=False)
    assert traces == 1 and jitted[1:] != eager[1:]  # the bug under plain JAX: stale, no retrace
    (hit,) = [h for f in report.functions for h in f.stale_hits]
    assert (hit.path, hit.call_index) == (path, 1)
    box = {_nnx_dataclass_epochs: "DataBox", _method_epochs: "Scaler"}.get(epochs, "Box")
    assert (hit.before, hit.after) == (f"{box}(scale=1.0)", f"{box}(scale=2.0)")
    assert fix in hit.fix  # applied in the program above
    jitted, eager, traces, report = epochs(fix=True)
    assert jitted == eager and traces == 4  # one compile per new object, each result right
    assert not [h for f in report.functions for h in f.stale_hits]


def test_a_change_between_checks_is_noticed_at_the_next_scheduled_call():
    """Checks run on calls #2, #3, #5, #9, ...: a change before call #6 is noticed at #9,
    and the warning says so (the price of keeping the walk off the hot loop)."""
    traces = counted()

    def step(x, cfg):
        traces.tick()
        return _scaled(x, cfg)

    cfg, x = Box(1.0), jnp.ones(2)
    with jitlens.track() as t:
        g = jax.jit(step, static_argnums=1)
        for i in range(12):
            if i == 5:
                cfg.scale = 2.0
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                g(x, cfg)
            stale = [w for w in said if issubclass(w.category, jitlens.StaleCacheWarning)]
            assert len(stale) == (i == 8), i
    (hit,) = [h for f in t.report().functions for h in f.stale_hits]
    assert hit.call_index == 8 and "noticed at call #9" in hit.message
    assert traces.n == 1
