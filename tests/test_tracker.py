"""The tracker's counts against ground truth: a counter incremented inside each jitted body."""

from __future__ import annotations

import functools
import gc
import inspect
import threading
import weakref

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

import jitlens


class Counter:
    """Ground truth: how many times the Python body of a jitted function ran."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> None:
        self.n += 1


@pytest.fixture(scope="module")
def linear():
    return nnx.Linear(3, 4, rngs=nnx.Rngs(0))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda f: nnx.jit(f), id="default"),
        pytest.param(lambda f: nnx.jit(f, graph=False), id="graph=False"),
        pytest.param(lambda f: nnx.jit(f, graph_updates=False), id="graph_updates=False"),
    ],
)
def test_nnx_jit_modes(linear, make, request):
    if "graph_updates" in request.node.callspec.id and (
        "graph_updates" not in inspect.signature(nnx.jit).parameters
    ):
        pytest.skip("this flax has no nnx.jit(graph_updates=...) (flax 0.12.5)")
    truth = Counter()

    def fwd(model, x):
        truth()
        return model(x)

    with jitlens.track() as t:
        f = make(fwd)
        for n in (1, 1, 2, 1, 2, 2):
            f(linear, jnp.ones((n, 3)))
    s = t.stats(f)
    assert s.traces == truth.n == 2
    assert (s.calls, s.cache_hits, s.compiles) == (6, 4, 2)
    assert s.kind.startswith("nnx.jit")
    assert s.defined_at.startswith("tests/test_tracker.py:") or "test_tracker.py:" in s.defined_at
    assert "test_tracker.py" in s.first_call_site
    retrace = [e for e in s.events if e.kind == "retrace"]
    assert [r.kind for r in retrace[0].reasons] == ["shape"]
    assert retrace[0].reasons[0].path == "x"


def test_nnx_jit_created_before_tracking_is_counted(linear):
    truth = Counter()

    @nnx.jit
    def fwd(model, x):
        truth()
        return model(x)

    fwd(linear, jnp.ones((1, 3)))  # compiled before the tracker opened
    with jitlens.track() as t:
        fwd(linear, jnp.ones((1, 3)))
        fwd(linear, jnp.ones((5, 3)))
    s = t.stats(fwd)
    assert (s.calls, s.traces, s.cache_hits) == (2, 1, 1)
    assert truth.n == 2


def test_cached_partial(linear):
    truth = Counter()

    @nnx.jit
    def step(model, x):
        truth()
        return model(x)

    with jitlens.track() as t:
        cached = nnx.cached_partial(step, linear)
        for _ in range(4):
            cached(jnp.ones((1, 3)))
    s = [f for f in t.report().functions if f.kind == "nnx.cached_partial"]
    assert len(s) == 1
    assert (s[0].calls, s[0].traces, s[0].cache_hits) == (4, truth.n, 3)


def test_jax_jit_statics_and_donation():
    truth = Counter()

    def g(x, scale, *, mode):
        truth()
        return x * scale if mode == "mul" else x + scale

    with jitlens.track() as t:
        f = jax.jit(g, static_argnums=1, static_argnames="mode", donate_argnums=0)
        for scale, mode in ((2, "mul"), (2, "mul"), (3, "mul"), (3, "add")):
            f(jnp.ones(4), scale, mode=mode)
    s = t.stats(f)
    assert (s.calls, s.traces, s.cache_hits) == (4, truth.n, 1)
    kinds = [(r.kind, r.path, r.before, r.after) for e in s.events for r in e.reasons]
    assert kinds == [
        ("static_value", "scale", "2", "3"),
        ("static_value", "mode", "'mul'", "'add'"),
    ]


@pytest.mark.max_traces(1)
def test_aot_lower_compile_is_counted_once():
    truth = Counter()

    def g(x):
        truth()
        return x + 1

    with jitlens.track() as t:
        f = jax.jit(g)
        compiled = f.lower(jnp.ones(3)).compile()
        compiled(jnp.ones(3))
        f(jnp.ones(3))  # served from the caches the AOT path filled
    s = t.stats(f)
    assert s.traces == truth.n == 1
    assert s.compiles == 1
    assert (s.calls, s.cache_hits) == (1, 1)


def test_jax_jit_created_before_tracking_sees_traces_not_calls():
    truth = Counter()
    # the real jax.jit, even if a guard elsewhere in this process keeps the hooks installed
    raw_jit = getattr(jax.jit, "__jitlens_original__", jax.jit)

    @raw_jit
    def early(x):
        truth()
        return x * 2

    with jitlens.track() as t:
        early(jnp.ones(2))
        early(jnp.ones(2))
        early(jnp.ones(3))
    s = t.stats(early)
    assert s.traces == truth.n == 2
    assert s.calls is None and s.cache_hits is None
    assert [r.kind for e in s.events for r in e.reasons] == ["shape"]


def test_function_created_in_loop_is_one_record_per_wrapper(linear):
    truth = Counter()

    def step(model, x):
        truth()
        return model(x)

    with jitlens.track() as t:
        for _ in range(3):
            nnx.jit(step)(linear, jnp.ones((1, 3)))
    recs = [f for f in t.report().functions if f.name == "step"]
    assert len(recs) == 3 and sum(f.traces for f in recs) == truth.n == 3
    assert [e.reasons[0].kind for f in recs[1:] for e in f.events] == [
        "new_function",
        "new_function",
    ]


def test_internal_functions_filtered_unless_asked():
    with jitlens.track() as t:
        nnx.Linear(2, 2, rngs=nnx.Rngs(1))  # eager init runs jax's own jitted helpers
    assert t.report().functions == ()
    with jitlens.track(include_internal=True) as t2:
        nnx.Linear(7, 9, rngs=nnx.Rngs(2))  # new shapes: the helpers trace again
    internal = t2.report().functions
    assert internal and all(f.internal for f in internal)
    assert not any(
        "site-packages" in f.first_call_site for f in internal if f.first_call_site != "?"
    )


def test_two_threads_all_calls_counted():
    truth = Counter()
    lock = threading.Lock()

    def g(x):
        with lock:
            truth()
        return x * 2

    with jitlens.track() as t:
        f = jax.jit(g)
        f(jnp.ones(2))

        def work(n):
            for _ in range(200):
                f(jnp.ones(n))

        threads = [threading.Thread(target=work, args=(n,)) for n in (2, 3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    s = t.stats(f)
    assert s.calls == 401
    assert s.traces == truth.n == 2
    assert s.cache_hits == 399


def test_results_exceptions_and_passthrough_after_exit():
    def g(x):
        if x.shape[0] == 0:
            raise ValueError("empty input")
        return x * 3

    # a guard elsewhere may keep the hooks installed: then jax.jit stays patched after
    outermost = getattr(jax.jit, "__jitlens_original__", None) is None
    with jitlens.track():
        f = jax.jit(g)
        assert jnp.array_equal(f(jnp.arange(3.0)), jnp.arange(3.0) * 3)
        with pytest.raises(ValueError, match="empty input"):
            f(jnp.ones(0))
    # The wrapper created while tracking keeps working (untracked) afterwards.
    assert jnp.array_equal(f(jnp.arange(3.0)), jnp.arange(3.0) * 3)
    if outermost:
        assert getattr(jax.jit, "__jitlens_original__", None) is None  # jax.jit restored


def test_nested_trackers_see_their_own_window():
    f = None
    with jitlens.track() as outer:
        f = jax.jit(lambda x: x - 1)
        f(jnp.ones(2))
        with jitlens.track() as inner:
            f(jnp.ones(2))
            f(jnp.ones(5))
        f(jnp.ones(5))
    assert (inner.stats(f).calls, inner.stats(f).traces) == (2, 1)
    assert (outer.stats(f).calls, outer.stats(f).traces) == (4, 2)


@pytest.mark.max_traces(1)
def test_no_strong_references_to_models():
    """50 freshly built 4M-parameter models through a tracked loop are all freed."""

    @nnx.jit
    def fwd(model, x):
        return model(x)

    refs = []
    with jitlens.track() as t:
        for seed in range(50):
            # zeros: what is built is 16 MB of parameters, not a random stream to compute
            model = nnx.Linear(2000, 2000, kernel_init=nnx.initializers.zeros, rngs=nnx.Rngs(seed))
            fwd(model, jnp.ones((1, 2000)))
            refs.append(weakref.ref(model))
            del model
    gc.collect()
    assert sum(r() is not None for r in refs) == 0
    big = [a for a in jax.live_arrays() if a.size >= 2000 * 2000]
    assert big == []
    assert t.stats(fwd).traces == 1


def test_partial_static_is_held_weakly():
    """Identity-compared statics in remembered keys do not keep their objects alive."""

    def g(x, fn):
        return fn(x)

    f = jax.jit(g, static_argnums=1)
    with jitlens.track():
        p = functools.partial(jnp.add, 1.0)
        ref = weakref.ref(p)
        f(jnp.ones(2), p)
        del p
    jax.clear_caches()  # JAX's own caches hold statics too; jitlens must not
    gc.collect()
    assert ref() is None


def test_traces_inside_other_traces_are_counted(linear):
    """jit inside jit, and grad of a jit: JAX emits no event, the body runs all the same."""
    truth = {"inner": 0, "ni": 0}

    def inner_fn(x):
        truth["inner"] += 1
        return x * 2

    def ni_fn(m, x):
        truth["ni"] += 1
        return m(x)

    with jitlens.track() as t:
        inner = jax.jit(inner_fn)
        outer = jax.jit(lambda x: inner(x) + 1)
        for n in (2, 3, 4):
            outer(jnp.ones(n))
        for n in (5, 6):
            jax.grad(lambda x: inner(x).sum())(jnp.ones(n))
        ni = nnx.jit(ni_fn)
        no = nnx.jit(lambda m, x: ni(m, x) + 1)
        no(linear, jnp.ones((1, 3)))
        no(linear, jnp.ones((4, 3)))
    assert t.stats(inner).traces == truth["inner"] == 5
    assert t.stats(ni).traces == truth["ni"] == 2
    assert t.stats(ni).cache_hits == 0  # inlined calls are neither hits nor misses


def test_make_jaxpr_of_a_tracked_jit_is_the_same_function():
    def g(x):
        return x * 2

    with jitlens.track() as t:
        f = jax.jit(g)
        jax.make_jaxpr(f)(jnp.ones(4))
        f(jnp.ones(3))
    recs = [r for r in t.report().functions if r.name == "g"]
    assert len(recs) == 1
    assert not any(r.kind == "new_function" for e in recs[0].events for r in e.reasons)


def test_a_failed_trace_is_not_remembered_as_compiled():
    def g(x):
        if x.shape[0] == 4:
            raise ValueError("four")
        return x + 1

    with jitlens.track() as t:
        f = jax.jit(g)
        f(jnp.ones(3))
        for _ in range(2):
            with pytest.raises(ValueError):
                f(jnp.ones(4))
    kinds = [r.kind for e in t.stats(f).events for r in e.reasons]
    assert kinds == ["shape", "shape"]  # not "cache_cleared" for the retry
