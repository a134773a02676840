"""Gaps left by earlier rounds: linen's nn.jit serving a field changed in place, statics too
big to snapshot, the live log's lock, the words for a model grown on purpose, the HTML
report's hits that no compiled entry can be tied to. Ground truth: the eager run, a counter
in the jitted body."""

from __future__ import annotations

import copy
import dataclasses

import jax
import jax.numpy as jnp
import pytest

import jitlens
from conftest import counted


class Box:
    """A plain object: flax hashes it by identity, so its attributes are not in the key."""

    def __init__(self, scale):
        self.scale = scale


@dataclasses.dataclass
class DataBox:
    """The printed fix for nn.jit: a dataclass, whose fields flax's hash walks."""

    scale: float


def _linen_epochs(fix: bool):
    """An nn.jit module holding a plain object in a field, changed in place between applies."""
    nn = pytest.importorskip("flax.linen")
    traces = counted()

    class Scaled(nn.Module):
        cfg: Box

        @nn.compact
        def __call__(self, x):
            traces.tick()
            return self.param("w", nn.initializers.ones, (2,)) * x * self.cfg.scale

    x = jnp.ones(2)
    jitted, eager = [], []
    with jitlens.track() as t:
        m = nn.jit(Scaled)(DataBox(1.0) if fix else Box(1.0))  # the printed fix: a dataclass
        variables = m.init(jax.random.key(0), x)
        for epoch in range(4):
            m.cfg.scale = 1.0 + epoch
            jitted.append(float(m.apply(variables, x)[0]))
            eager.append(float(Scaled(m.cfg).apply(variables, x)[0]))
    return jitted, eager, traces.n, t.report()


def test_a_linen_field_changed_in_place_is_a_stale_hit_and_its_fix_gives_the_new_result():
    """flax keys nn.jit on a hash of the module's fields; a plain object hashes by identity,
    so its change in place keeps the hash and the call runs the old compile (wrong results,
    no retrace). jitlens warns at the next scheduled check with a fix in linen's terms: a
    dataclass, whose fields the hash reads (a copy per change is no fix: flax keeps no
    reference, a new object may reuse a freed one's address and identity hash; it served
    stale results here one run in three)."""
    with pytest.warns(jitlens.StaleCacheWarning, match="noticed at call #3"):
        jitted, eager, traces, report = _linen_epochs(fix=False)
    # init + the first apply (eager applies trace as well: 2 + 4); the bug: stale results
    assert traces == 2 + 4 and jitted[1:] != eager[1:]
    (hit,) = [h for f in report.functions for h in f.stale_hits]
    assert (hit.path, hit.call_index) == ("m.cfg", 2)
    assert (hit.before, hit.after) == ("Box(scale=1.0)", "Box(scale=2.0)")
    assert "nn.jit keys on a hash of the module's fields" in hit.message
    assert "make `Box` a dataclass (`@dataclasses.dataclass`)" in hit.fix
    jitted, eager, traces, report = _linen_epochs(fix=True)  # the fix, applied above
    assert jitted == eager and traces == 1 + 4 + 4  # one compile per value, each right
    assert not [h for f in report.functions for h in f.stale_hits]


class Wide:
    """A plain object whose attribute the jitted code reads is its eighth: past the six a
    static's text shows (and once compared)."""

    def __init__(self, scale):
        for i in range(7):
            setattr(self, f"unused{i}", i)
        self.scale = scale


class OwnRepr(Box):
    def __repr__(self):  # the user's: jitlens never calls it, and so once never compared
        return "OwnRepr()"


def _jax_jit_epochs(make, fix: bool, epochs: int = 3):
    traces = counted()

    def step(x, cfg):
        traces.tick()
        return x * cfg.scale

    cfg, x = make(1.0), jnp.ones(2)
    jitted, eager = [], []
    with jitlens.track() as t:
        g = jax.jit(step, static_argnums=1)
        for epoch in range(epochs):
            if fix:  # the printed fix: a new object, then the change
                cfg = copy.copy(cfg)
            cfg.scale = 1.0 + epoch
            jitted.append(float(g(x, cfg)[0]))
            eager.append(float(x[0] * cfg.scale))
    return jitted, eager, traces.n, t.report()


@pytest.mark.parametrize("make", [Wide, OwnRepr], ids=["eighth-attribute", "own-repr"])
def test_a_change_past_what_a_static_shows_is_a_stale_hit(make):
    with pytest.warns(jitlens.StaleCacheWarning, match="noticed at call #2"):
        jitted, eager, traces, report = _jax_jit_epochs(make, fix=False)
    assert traces == 1 and jitted[1:] != eager[1:]  # the bug under plain JAX
    (hit,) = [h for f in report.functions for h in f.stale_hits]
    assert hit.path == "cfg" and "scale=1.0" in hit.before and "scale=2.0" in hit.after
    assert "`cfg = copy.copy(cfg)` before `cfg.scale = 2.0`" in hit.fix
    jitted, eager, traces, report = _jax_jit_epochs(make, fix=True)
    assert jitted == eager and traces == 3
    assert not [h for f in report.functions for h in f.stale_hits]


class Big(Wide):
    """Holds more than a check reads, the change past what its text shows."""

    def __init__(self, scale):
        self.vocab = {f"w{i}": i for i in range(3_000)}
        super().__init__(scale)


def test_a_static_too_big_to_check_is_said_so_not_claimed_unchanged():
    """The walk is bounded (its cost does not grow with the object): past the bound the
    check says it could not tell, once, and reports no stale hit it has not seen."""
    with pytest.warns(UserWarning, match="could not check `cfg` for a change in place") as said:
        jitted, eager, traces, report = _jax_jit_epochs(Big, fix=False)
    assert traces == 1 and jitted[1:] != eager[1:]
    assert [str(w.message) for w in said].count(str(said[0].message)) == 1
    assert not any(issubclass(w.category, jitlens.StaleCacheWarning) for w in said)
    assert not [h for f in report.functions for h in f.stale_hits]
    assert "assign a new object instead of changing it" in str(said[0].message)
    jitted, eager, traces, report = _jax_jit_epochs(Big, fix=True)  # that advice, applied
    assert jitted == eager and traces == 3


def test_a_log_handler_waiting_on_a_thread_that_retraces_does_not_deadlock():
    """A handler of the ``jitlens`` logger (one forwarding retraces to a dashboard) waits for
    a worker thread whose jitted function retraces at the same time. The worker's retrace is
    folded to DEBUG, which no handler takes: it should pass through. Before, the worker waited
    for the lock the handler's thread held while writing its line: a deadlock (here, the
    handler's wait timing out). The lines still come out numbered in order."""
    import logging
    import threading

    worker_done = threading.Event()
    waited: list[bool] = []
    lines: list[tuple[str, int]] = []
    body = {"f": 0, "g": 0}

    def f(x):
        body["f"] += 1
        return x + 1

    def g(x):
        body["g"] += 1
        return x * 2

    with jitlens.track() as t:
        jf, jg = jax.jit(f), jax.jit(g)

        def worker():
            jg(jnp.ones(6)).block_until_ready()  # g's retrace #5: a DEBUG line
            worker_done.set()

        class Forward(logging.Handler):
            def emit(self, record):
                data = record.jitlens
                name = data["function"].rpartition(".")[2]
                lines.append((name, data.get("retrace")))
                if name == "f" and not waited:
                    threading.Thread(target=worker, daemon=True).start()
                    waited.append(worker_done.wait(timeout=20))

        handler = Forward(level=logging.INFO)
        logger = logging.getLogger("jitlens")
        old_level = logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            for n in range(1, 6):  # g: a first trace and 4 retraces (#4 at INFO)
                jg(jnp.ones(n))
            jf(jnp.ones(1))
            jf(jnp.ones(2))  # f's retrace #1: its line reaches the handler
        finally:
            logger.removeHandler(handler)
            logger.setLevel(old_level)
    assert waited == [True]  # the worker finished while the handler waited: no deadlock
    assert body == {"f": 2, "g": 6} and t.stats(jg).traces == 6
    assert lines == [("g", 1), ("g", 2), ("g", 3), ("g", 4), ("f", 1)]


def test_a_model_grown_on_purpose_is_told_both_cases_and_compiles_once_per_structure():
    """Progressive growing (a layer appended between stages) changes the graph on purpose:
    the fix must not claim it is a mistake. What it says of that case, "one compile per new
    structure", is checked against the body's counter: 3 stages, 2 calls each, 3 traces."""
    from flax import nnx

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs)])

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    traces = counted()

    @nnx.jit
    def step(m, x):
        traces.tick()
        return m(x)

    rngs, x = nnx.Rngs(0), jnp.ones((1, 2))
    m = Net(rngs)
    with jitlens.track() as t:
        for stage in range(3):
            if stage:
                m.layers.append(nnx.Linear(2, 2, rngs=rngs))
            outs = [step(m, x) for _ in range(2)]
            assert float(jnp.abs(outs[1] - m(x)).max()) == 0.0
    s = t.stats(step)
    assert traces.n == s.traces == 3 and s.cache_hits == 3
    (r,) = s.events[1].reasons
    assert (r.kind, r.path) == ("graph_structure", "m.layers[1]")
    assert r.fix.startswith("If the model is grown or pruned on purpose (in stages), this is ")
    assert "expected: one compile per new structure. If not, create `m.layers[1]` in" in r.fix


def test_the_html_row_of_hits_no_entry_can_be_tied_to_says_what_they_are():
    """A model's static changed (a retrace), then calls hit: jitlens files a hit by argument
    shapes, static numbers and model objects, alike for both entries, so the hits go to a
    row of their own. It says they are cache hits of one of the entries above and why the
    entry is not known; its calls are the hits the body's counter did not see traced."""
    from flax import nnx

    import html_dom

    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.scale = 1.0

        def __call__(self, x):
            return self.w * x * self.scale

    traces = counted()

    @nnx.jit
    def step(m, x):
        traces.tick()
        return m(x)

    m, x = M(), jnp.ones(2)
    with jitlens.track(timeline=True) as t:
        for scale in (1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0):
            m.scale = scale
            assert float(step(m, x)[0]) == scale  # (a float attribute: a retrace, no stale hit)
    report = t.report()
    assert traces.n == t.stats(step).traces == 2
    dom = html_dom.parse(report.to_html())
    (table,) = [
        tb for tb in dom.find_all("table", "entries") if tb.attrs["data-function"].endswith("step")
    ]
    rows = {r.attrs["data-entry"]: r for r in table.find_all("tr", "entry")}
    assert set(rows) == {"0", "1", "-1"}
    dots = {k: len(r.find_all("circle", "dot")) for k, r in rows.items()}
    assert sum(dots.values()) == 7 and dots["-1"] == 7 - 3  # not traced, not tied: hits
    assert len(rows["-1"].find_all("circle", "dot hit")) == dots["-1"]
    words = rows["-1"].find("td", "unknown").text()
    assert words.startswith("cache hits served by one of the entries above; jitlens could not")
    assert "a model's static attribute" in words and "?" not in words
