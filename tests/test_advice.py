"""Every advice kind: its rule on made-up figures, its measurements on real calls, its fields.

No timed assertions: the rules are pinned with fixed figures; on real calls only
the presence and sign of advice is checked, on programs whose split between
host and device is lopsided by orders of magnitude. ``benchmarks/advisor.py`` and
``benchmarks/compile_cost.py`` check the estimates against measured savings.

The one test module that calls the rules themselves (tests/test_public_api.py lists why):
no program gives chosen timings, cache states or compile costs, so each rule is pinned
on figures made up here: dispatch, the compile cache, entries, bucket sets (and shapes each
reused from a line of its own), the fast path, many leaves per call,
the persistent cache's notes, and the compile cost (issue 34: the data collected from a long
compile, with ``COST_MIN_SECONDS`` lowered so that tiny real programs are read).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jitlens
from conftest import TRIAL_PROGRAMS
from jitlens import Advice, Event, FunctionReport, JitlensInternalWarning
from jitlens._core import advice as rules
from jitlens._core import advice_cost as cost_rules
from jitlens._core import buckets
from jitlens._core.advice import Environment, advise, bucketing, dispatch, fast_path
from jitlens._core.advice_cost import LOOP_MIN_ITERATIONS, SCAN_BODY_FACTOR, compile_cost
from jitlens._core.cost import (
    CompileCost,
    ConstCost,
    Eqn,
    LineCost,
    LoopCost,
    SourceLoop,
    enclosing_loop,
    find_loops,
    period,
    source_loops,
)
from jitlens._core.kinds import AdviceKind
from jitlens._core.pcache import diagnose
from jitlens._core.platforms import calibration
from jitlens._core.runinfo import PersistentCache, RunInfo
from jitlens._track import cost as track_cost
from report_samples import sized_report

ENV = rules.Environment(
    run_seconds=2.0, cache_dir=None, cache_enabled=True, min_compile_seconds=1.0
)


def _fn(calls: int = 1000, hits: int = 999, events: tuple[Event, ...] = ()) -> FunctionReport:
    return FunctionReport(
        "step", "step", "nnx.jit", "train.py:3", "train.py:9", calls, 1, 1, hits, 0, 0.0, 0.0,
        0.0, events=events,
    )  # fmt: skip


def _sample(host: float, device: float, graph: float | None = 100e-6) -> rules.DispatchSample:
    return rules.DispatchSample(7, host, device, graph, ("model",), ("x",))


def _compile(seconds: float, call: int = 0, hit: bool = False) -> Event:
    return Event(call, "trace", "train.py:9", "", compile_seconds=seconds, compiled=True,
                 persistent_cache_hit=hit)  # fmt: skip


# ------------------------------------------------------------------ rules


def test_dispatch_bound_function_gets_cached_partial_with_its_own_names():
    a = rules.dispatch(_fn(), _sample(300e-6, 5e-6), ENV)
    assert a is not None and a.kind == "dispatch"
    assert a.estimated_saving_seconds == pytest.approx(999 * 170e-6)
    assert "`step_cached = nnx.cached_partial(step, model)`" in a.fix
    assert "`step_cached(x)`" in a.fix and "graph=False" in a.fix and "jax.jit" in a.fix
    assert "300 us on the host per cache hit vs 5 us" in a.message


def test_saving_is_capped_by_the_overlap_with_the_compiled_program():
    # host 300 us, device 250 us: removing 170 us of host leaves the device as the floor
    s = _sample(300e-6, 250e-6)
    assert rules.cached_partial_saving(s) == pytest.approx(50e-6)
    assert rules.cached_partial_saving(_sample(300e-6, 5e-3)) == 0.0


@pytest.mark.parametrize(
    ("fn", "sample", "why"),
    [
        (_fn(), _sample(2e-3, 3e-3), "device-bound: the host part hides behind the computation"),
        (_fn(), _sample(20e-3, 0.0), "real work per call: 170 us of 20 ms is below 10%"),
        (_fn(calls=100, hits=99), _sample(300e-6, 5e-6), "saving below DISPATCH_MIN_SECONDS"),
        (_fn(), _sample(300e-6, 5e-6, graph=None), "no leading graph argument to cache"),
        (_fn(), None, "nothing sampled (not a default-mode nnx.jit)"),
    ],
)
def test_no_dispatch_advice_when_nothing_is_worth_changing(fn, sample, why):
    assert rules.dispatch(fn, sample, ENV) is None, why


def test_dispatch_below_the_share_of_a_long_run_is_not_advised():
    long_run = rules.Environment(100.0, None, True, 1.0)
    assert rules.dispatch(_fn(), _sample(300e-6, 5e-6), long_run) is None


def test_compile_cache_off_names_the_exact_settings():
    a = rules.compile_cache(_fn(events=(_compile(0.7),)), ENV)
    assert a is not None and a.estimated_saving_seconds == pytest.approx(0.7)
    assert 'jax.config.update("jax_compilation_cache_dir"' in a.fix
    # the threshold it sets is the same for every run of a program (issue 47: it followed this
    # run's compile times, 0.5 one run and 0.2 the next of the same program)
    assert 'jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)' in a.fix
    for seconds in (0.6, 1.3, 2.5, 7.0):
        again = rules.compile_cache(_fn(events=(_compile(seconds),)), ENV)
        assert again is not None and again.fix == a.fix


def test_the_run_gets_one_compile_cache_hint_for_all_its_functions():
    """One setting serves every function: said once for the run, not once per function."""
    from jitlens._core.runinfo import PersistentCache

    a = _fn(events=(_compile(0.7),))
    b = FunctionReport(**{**_fn().__dict__, "qualname": "eval_step", "events": (_compile(0.4),)})
    a = FunctionReport(**{**a.__dict__, "advice": (rules.compile_cache(a, ENV),)})
    off = PersistentCache(dir=None, enabled=True, min_compile_time_secs=1.0)
    advice, names = rules.run_advice([a, b], off)
    assert names == ("step", "eval_step")  # eval_step's 0.4 s alone was not worth a hint
    assert advice.estimated_saving_seconds == pytest.approx(1.1)  # both functions' compiles
    assert advice.message.startswith("compiled 2x (step and eval_step) for 1.10 s")
    assert advice.fix == a.advice[0].fix
    # the rendered report says it once, for the whole run
    run = jitlens.Report(2, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, (a, b))
    text = run.to_text(width=100)
    assert text.count("persistent compilation cache, saves") == 1


def test_compile_cache_on_and_written_or_hit_gives_no_advice():
    on = rules.Environment(2.0, "/cache", True, 1.0)
    assert rules.compile_cache(_fn(events=(_compile(3.0),)), on) is None
    assert rules.compile_cache(_fn(events=(_compile(3.0, hit=True),)), ENV) is None


def test_compile_cache_on_but_below_its_threshold():
    on = rules.Environment(2.0, "/cache", True, 1.0)
    a = rules.compile_cache(_fn(events=(_compile(0.4), _compile(0.3, 5))), on)
    assert a is not None and a.estimated_saving_seconds == pytest.approx(0.7)
    assert a.fix == 'jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)'
    assert "min_compile_time_secs=1" in a.message


def test_entries_warns_while_they_still_grow():
    growing = tuple(_compile(0.1, call) for call in range(0, 1000, 100))
    a = rules.entries(_fn(events=growing))
    assert a is not None and "10 compiled entries, 5 of them" in a.message
    early = tuple(_compile(0.1, call) for call in range(10))
    assert rules.entries(_fn(events=early)) is None


def test_advise_orders_disable_jit_first_then_by_saving():
    fn = _fn(events=(_compile(0.7),))
    found = rules.advise(fn, _sample(300e-6, 5e-6), ENV, eager_calls=3)
    assert [a.kind for a in found] == ["disable_jit", "compile_cache", "dispatch"]
    assert found[0].estimated_saving_seconds is None


# ------------------------------------------------------------------ bucket sets (buckets)


def test_bucketing_proposes_sizes_from_the_recorded_signatures() -> None:
    advice = bucketing(sized_report([13, 17, 21, 9, 30, 27, 5]))
    assert advice is not None and advice.kind == "buckets"
    assert "7 sizes on axis 0" in advice.message
    assert "up to one of 8, 16, 24, 32" in advice.fix and "4 compiles instead of 7" in advice.fix
    assert "~20% padding" in advice.fix
    assert advice.estimated_saving_seconds == 1.5  # 3 compiles of 0.5 s fewer


def test_no_proposal_that_saves_a_single_compile() -> None:
    assert bucketing(sized_report([1, 2, 3, 4])) is None  # 1, 2, 4 would save one


def test_no_bucket_proposal_for_sizes_that_are_buckets_already() -> None:
    fn = sized_report([16, 32, 48])
    assert [(s.path, s.axis, s.distinct) for s in buckets.bucketed(fn.events)] == [
        ("x", 0, (16, 32, 48))
    ]
    assert bucketing(fn) is None  # nothing to propose: they are buckets already


def test_a_bucket_step_is_a_power_of_two_of_at_least_8() -> None:
    assert buckets.bucket_step((100, 150, 220)) is None  # a data grid's lengths share 10
    assert buckets.bucket_step((16, 32, 48)) == 16
    assert buckets.bucket_step((128, 256, 512)) == 128
    assert buckets.bucket_step((24, 40, 56)) == 8


# ------------------------------------------------------------------ the fast path (fast_path)


def test_the_fast_path_rule_needs_a_saving_or_enough_calls():
    fn = FunctionReport("f", "f", "jax.jit", "a.py:1", "a.py:2", 100, 1, 1, 99, 0, 0, 0, 0)
    fn = fn.__class__(**{**fn.__dict__, "python_dispatch_calls": 99})
    fn = fn.__class__(**{**fn.__dict__, "python_dispatch_cause": "host_callback"})
    assert fast_path(fn, (5, 200e-6)).estimated_saving_seconds == pytest.approx(99 * 194e-6)
    assert fast_path(fn, (5, 7e-6)) is None  # saves ~0.1 ms in all: nothing worth changing
    untimed = fast_path(fn, None)
    assert untimed is not None and untimed.estimated_saving_seconds is None
    few = fn.__class__(**{**fn.__dict__, "python_dispatch_calls": 3})
    assert fast_path(few, None) is None


# ------------------------------------------------------------------ the persistent cache's notes


def _pc(**kw: Any) -> RunInfo:
    base = dict(dir="c", enabled=True, min_compile_time_secs=1.0, min_entry_size_bytes=0)
    base.update(requests=2, hits=0, writes=0, compiles=2, longest_compile_seconds=0.05)
    base.update(dir_exists=True, dir_writable=True, entries=0, used=True, checked=True)
    base.update(kw)
    return RunInfo(persistent_cache=PersistentCache(**base))


def test_diagnose_names_each_condition() -> None:
    assert [n.setting for n in diagnose(_pc())] == ["jax_persistent_cache_min_compile_time_secs"]
    assert [n.kind for n in diagnose(_pc(dir_writable=False))] == ["read_only"]
    assert [n.kind for n in diagnose(_pc(), process_index=1)] == ["not_process_0"]
    assert diagnose(_pc(entries=3), process_index=1) == ()  # a shared folder process 0 filled
    assert diagnose(_pc(requests=0, used=None)) == ()  # no record of JAX's decision: no claim
    assert [n.kind for n in diagnose(_pc(requests=0, used=False))] == ["too_late"]
    assert [n.kind for n in diagnose(_pc(enabled=False))] == ["disabled"]
    assert [n.kind for n in diagnose(_pc(writes=2, entries_written=()))] == ["rejected"]
    assert [n.kind for n in diagnose(_pc(min_compile_time_secs=0.0, writes=2, entries=4,
                                         entries_before=2, entries_written=("a", "b")))] == [
        "no_hits"
    ]  # fmt: skip
    assert diagnose(_pc(hits=1)) == ()
    assert diagnose(_pc(dir=None)) == ()
    assert diagnose(_pc(requests=None)) == ()  # not counted: no evidence, no note
    everything_too_small = _pc(min_compile_time_secs=0.0, min_entry_size_bytes=10**9, compiles=3)
    assert [n.kind for n in diagnose(everything_too_small)] == ["min_entry_size"]


def test_a_remote_cache_folder_is_unknown_not_read_only() -> None:
    from jitlens._track.runinfo import _folder  # what the run section reads of a folder

    assert _folder("gs://bucket/jax-cache", 0.0, ()) == {}
    assert diagnose(_pc(dir="gs://bucket/jax-cache", dir_writable=None, dir_exists=None))[
        0
    ].kind == ("min_compile_time")


# ------------------------------------------------------------------ report data


def test_advice_round_trips_and_version_1_reads_without_it():
    fn = FunctionReport(**{**_fn().__dict__, "advice": (Advice("dispatch", "m", "f", 0.25),)})
    report = jitlens.Report(2, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, (fn,))
    back = jitlens.Report.from_dict(json.loads(report.to_json()))
    assert back.functions[0].advice == fn.advice
    old = json.loads(report.to_json())
    old["schema_version"] = 1
    del old["functions"][0]["advice"]
    assert jitlens.Report.from_dict(old).functions[0].advice == ()
    bad = json.loads(report.to_json())
    bad["functions"][0]["advice"][0]["kind"] = "magic"
    with pytest.raises(jitlens.ReportError, match="advice"):
        jitlens.Report.from_dict(bad)


def test_text_and_html_show_the_advice():
    a = (Advice("dispatch", "slow host", "use cached_partial", 0.25), Advice("entries", "m", "f"))
    fn = FunctionReport(**{**_fn().__dict__, "advice": a})
    report = jitlens.Report(2, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, (fn,))
    text = report.to_text(width=100)
    section = text[text.index("advice:") :].splitlines()
    assert section[1:] == [  # every advice with its kind in words and its fix, none bare
        "  step  host time per call, saves ~0.25 s: slow host",
        "    fix: use cached_partial",
        "  step  compiled entries still piling up: m",
        "    fix: f",
    ]
    page = report.to_html()
    assert 'data-advice="dispatch"' in page and "saves ~0.25 s" in page
    assert "saving not measurable" in page


# ------------------------------------------------------------------ on real calls


def _fwd(model, x):
    return model(x)


def test_tiny_model_called_thousands_of_times_gets_dispatch_advice(monkeypatch):
    # the share of the run's wall time (tested above on a long run) falls under its bar on a
    # loaded machine, where the loop's wall time stretches and the sampled call's does not
    monkeypatch.setattr(rules, "DISPATCH_MIN_RUN_SHARE", 0.0)
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 3))
    step = nnx.jit(_fwd)
    with jitlens.track() as t:
        for _ in range(3000):
            step(model, x)
    s = t.stats(step)
    # (a loaded machine may also compile slowly enough for compile_cache advice)
    (dispatch,) = [a for a in s.advice if a.kind == "dispatch"]
    assert dispatch.estimated_saving_seconds > 0
    assert "nnx.cached_partial(_fwd, model)" in dispatch.fix


def test_heavy_compute_gets_no_dispatch_advice():
    class Heavy(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.full((512, 512), 1 / 512))

        def __call__(self, x):
            for _ in range(6):
                x = jnp.tanh(x @ self.w)
            return x

    model, x = Heavy(), jnp.ones((512, 512))
    step = nnx.jit(_fwd)
    with jitlens.track() as t:
        for _ in range(13):
            step(model, x)
    assert [a for a in t.stats(step).advice if a.kind == "dispatch"] == []


def test_disable_jit_is_advised():
    f = jax.jit(lambda x: x + 1)
    with jitlens.track() as t:
        g = jax.jit(lambda x: x * 2)
        with jax.disable_jit():
            for _ in range(3):
                g(jnp.ones(2))
        f(jnp.ones(2))
    assert [a.kind for a in t.stats(g).advice] == ["disable_jit"]


def test_advice_failure_never_reaches_the_program(monkeypatch):
    from jitlens._track import advisor

    def boom(*a, **k):
        raise RuntimeError("advisor bug")

    monkeypatch.setattr(advisor, "advise", boom)
    with pytest.warns(JitlensInternalWarning, match="advising"):
        with jitlens.track() as t:
            step = nnx.jit(_fwd)
            step(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), jnp.ones((1, 3)))
        report = t.report()
    assert report.functions[0].advice == ()


SLOW = """
import sys, jax, jax.numpy as jnp, jitlens
if len(sys.argv) > 1:
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(sys.argv[2]))

def slow(x):
    for i in range(400):
        x = jnp.sin(x @ x.T + i) if i % 2 else jnp.cumsum(x, axis=i % 2)
    return x

with jitlens.track() as t:
    f = jax.jit(slow)
    f(jnp.ones((16, 16))).block_until_ready()
print(t.report().to_json())
"""


@pytest.mark.xdist_group("subprocess")
def test_compile_cache_advice_then_hit_with_the_advised_setting(tmp_path, fork_python):
    script = tmp_path / "slow.py"
    script.write_text(SLOW)

    def run(*args: str) -> FunctionReport:  # each run a fresh process after `import jax`
        proc = fork_python([str(script), *args])
        assert proc.returncode == 0, proc.stderr
        return jitlens.Report.from_dict(json.loads(proc.stdout)).function("slow")

    first = run()
    if first.compile_seconds < rules.COMPILE_CACHE_MIN_SECONDS:
        pytest.skip(f"compiled in {first.compile_seconds:.2f} s, below the advice threshold")
    (advice,) = [a for a in first.advice if a.kind == "compile_cache"]
    # issue 34: the same fresh process finds the Python loop the trace unrolled (its data once
    # the compile took 0.5 s; its advice once the predicted saving is worth saying)
    loop_line = SLOW.splitlines().index("    for i in range(400):") + 1
    (cost,) = [e.cost for e in first.events if e.cost is not None]
    (found_loop,) = [lp for lp in cost.loops if lp.line == loop_line]
    assert found_loop.file.endswith("slow.py") and found_loop.iterations >= 40
    loops = [a for a in first.advice if a.kind == "unrolled_loop"]
    if loops:
        assert f"slow.py:{loop_line}" in loops[0].message and "jax.lax.scan" in loops[0].fix
    assert 'jax.config.update("jax_compilation_cache_dir"' in advice.fix
    found = re.search(r'"jax_persistent_cache_min_compile_time_secs", ([0-9.]+)', advice.fix)
    threshold = found.group(1) if found else "1.0"
    cache = str(tmp_path / "cache")
    second = run(cache, threshold)
    # (its 80-step Python loop may still get compile-cost advice, issue 34)
    assert second.persistent_cache_hits == 0
    assert not [a for a in second.advice if a.kind == "compile_cache"]
    third = run(cache, threshold)
    assert third.persistent_cache_hits == 1 and third.advice == ()


def test_the_seconds_figures_say_what_they_add_up() -> None:
    """compile s, lost s and a compile-cache saving differ by design: each says what it is."""
    cache = Advice("compile_cache", "compiled 1x for 0.40 s with the cache off", "set a dir", 0.4)
    fn = FunctionReport(**{**_fn().__dict__, "advice": (cache,)})
    report = jitlens.Report(2, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, (fn,))
    text = " ".join(report.to_text(width=100).split())
    assert "compile s = lowering + compiling; lost s = seconds spent compiling again" in text
    assert (
        "persistent compilation cache, saves ~0.40 s of compiling in the next run: compiled 1x"
        in text
    )
    page = report.to_html()
    assert "saves ~0.40 s of compiling in the next run" in page
    assert '<th title="compiling again: the retraces&#x27; and the recompiles&#x27; tracing' in page


# ------------------------------------------------------------------ compile cost (issue 34)


SOURCE = """\
def f(x, ws):
    y = x + 1
    for w in ws:
        y = layer(y, w)
    return [g(r) for r in y]
"""


def _costed(
    cost: CompileCost, seconds: float, calls: int = 5, hits: int = 4, kind: str = "jax.jit"
):
    event = Event(
        0, "trace", "m.py:20", "(x)", trace_seconds=seconds * 0.1, compile_seconds=seconds * 0.9,
        lower_seconds=0.0, compiled=True, cost=cost,
    )  # fmt: skip
    return FunctionReport(
        "f", "f", kind, "m.py:1", "m.py:20", calls, 1, 1, hits, 0, 0.1, 0.0, 0.9, events=(event,)
    )


LOOP_COST = CompileCost(
    1000,
    (LineCost("m.py", 4, "f", 960),),
    (LoopCost("m.py", 3, "f", "for", 48, 960, 20),),
)


def test_period_and_loops_from_source():
    assert period("abcabcabc") == 3
    assert period("abc" * 10 + "X") == 3  # a tail off the pattern
    assert period("abcdef") == 6
    loops = source_loops(SOURCE)
    assert [(s.line, s.kind) for s in loops] == [(3, "for"), (5, "comprehension")]
    assert enclosing_loop(loops, 4, 1).line == 3
    assert enclosing_loop(loops, 2, 1) is None
    assert enclosing_loop(loops, 4, 4) is None  # the loop is outside the frame's function
    body = [
        Eqn("dot", 1, (("m.py", 4, "f", 1, True), ("m.py", 9, "layer", 8, True))),
        Eqn("tanh", 1, (("m.py", 4, "f", 1, True),)),
    ]
    found = find_loops(
        [Eqn("add", 1, (("m.py", 2, "f", 1, True),)), *body * 16],
        lambda file, line, first: enclosing_loop(loops, line, first),
    )
    assert [(x.line, x.kind, x.iterations, x.eqns, x.body_eqns) for x in found] == [
        (3, "for", 16, 32, 2)
    ]


# What a loop walks over, on made-up data flow (issue 45): value ids stand for arrays.
AT = ("m.py", 4, "f", 1, True)


def _walk(iteration, n=8, backward=()):
    """The loop found in ``n`` iterations made by ``iteration(i)`` (a list of Eqns)."""
    eqns = [e for i in range(n) for e in iteration(i)] + list(backward)
    (loop,) = find_loops(eqns, lambda file, line, first: SourceLoop(3, 5, "for"))
    return loop


def _eq(prim, reads, writes, shape=(8, 8), backward=False):
    return Eqn(prim, 1, (AT,), backward, (shape,), tuple((r, 64) for r in reads), writes)


def test_what_a_loop_walks_over_is_read_from_its_data_flow():
    carry = lambda i: 1000 + i  # noqa: E731 - the value iteration i hands to the next
    # layers: each iteration reads parameters of its own and the previous output
    layers = _walk(lambda i: [_eq("dot_general", (carry(i), 10 + i), (carry(i + 1),))])
    assert layers.walk == "layers"
    # stacked: each iteration slices the same array (``ws[i]``)
    stacked = _walk(
        lambda i: [
            _eq("slice", (5,), (200 + i,)),
            _eq("dot_general", (carry(i), 200 + i), (carry(i + 1),)),
        ]
    )
    assert stacked.walk == "stacked"
    # steps: the same weight every step, a small slice of the input per step
    steps = _walk(
        lambda i: [
            _eq("slice", (6,), (300 + i,), shape=(1, 2)),
            _eq("dot_general", (carry(i), 7, 300 + i), (carry(i + 1),)),
        ]
    )
    assert steps.walk == "steps"
    # carry: nothing per step (an integrator)
    assert _walk(lambda i: [_eq("mul", (carry(i), 7), (carry(i + 1),))]).walk == "carry"
    # independent: heads summed up; a sum is no dependence
    heads = _walk(
        lambda i: [
            _eq("slice", (6,), (300 + i,)),
            _eq("tanh", (300 + i,), (400 + i,)),
            _eq("add", (carry(i), 400 + i), (carry(i + 1),)),
        ]
    )
    assert heads.walk == "independent"


def test_repeats_of_another_shape_are_no_loop_and_a_backward_pass_is_searched_apart():
    halving = [_eq("tanh", (i,), (i + 1,), shape=(256 >> i, 256 >> i)) for i in range(8)]
    assert find_loops(halving, lambda file, line, first: SourceLoop(3, 5, "for")) == ()
    # the backward pass records the loop's line again, with its own primitives and more
    # of them: the repeats are the forward pass's, the equations both passes'
    back = [_eq(p, (), (), backward=True) for _ in range(8) for p in ("mul", "add_any", "dot")]
    loop = _walk(lambda i: [_eq("dot_general", (1000 + i, 10 + i), (1001 + i,))], backward=back)
    assert (loop.iterations, loop.eqns, loop.walk) == (8, 32, "layers")


def test_unrolled_loop_rule_names_the_loop_and_predicts_from_equations():
    (a,) = cost_rules.compile_cost(_costed(LOOP_COST, 10.0))
    assert a.kind == "unrolled_loop"
    assert (
        "m.py:3" in a.message
        and "48 repeats of the same ~20" in a.message
        and "jax.lax.scan" in a.fix
    )
    # 1000 equations -> 40 + 3 x 20 = 100: saves 90% of the 10 s
    assert a.estimated_saving_seconds == pytest.approx(9.0)
    (nnx_advice,) = cost_rules.compile_cost(_costed(LOOP_COST, 10.0, kind="nnx.jit"))
    assert "nnx.vmap" in nnx_advice.fix and "nnx.scan" in nnx_advice.fix
    unrolled = CompileCost(1000, (), (LoopCost("m.py", 7, "f", "unrolled scan", 100, 1000, 10),))
    (u,) = cost_rules.compile_cost(_costed(unrolled, 5.0))
    assert "unroll=True" in u.fix and "m.py:7" in u.fix


def test_constant_rule_names_the_variable_and_its_size():
    cost = CompileCost(3, consts=(ConstCost("table", (1500, 1500), "float32", 9_000_000),))
    (a,) = cost_rules.compile_cost(_costed(cost, 1.0))
    assert a.kind == "captured_constant"
    assert "`table` (1500x1500 float32, 8.6 MiB)" in a.message and "pass `table`" in a.fix
    # 8.6 MiB against 3 equations: nearly all of the second above the floor
    cpu = calibration("cpu")
    mine = cpu.const_seconds_per_mib * 9e6 / 2**20
    share = mine / (mine + 3 * cost_rules.EQN_SECONDS)
    assert a.estimated_saving_seconds == pytest.approx((1.0 - cpu.const_floor_seconds) * share)
    # a longer compile: no more than twice the rate's estimate
    (b,) = cost_rules.compile_cost(_costed(cost, 20.0))
    assert b.estimated_saving_seconds == pytest.approx(cpu.const_max_factor * mine)


# ------------------------------------------------------------------ per platform (issue 45)
# The rates measured on each platform (``_core/platforms.py``), fed in as data: CI has no
# accelerator. Figures from ``benchmarks/run_all.py`` on a TPU v5e.


def test_a_captured_table_is_advised_on_cpu_but_not_where_it_saves_nothing():
    """On the TPU a 1500x1500 table compiled as fast passed as an argument (0.40/0.32 s
    captured, 0.49/0.29 s passed), a 2500x2500 one faster captured: below 32 MiB no
    constant is advised there; on the CPU both are."""
    cost = CompileCost(3, consts=(ConstCost("table", (1500, 1500), "float32", 9_000_000),))
    fn = _costed(cost, 1.0)
    assert [a.kind for a in cost_rules.compile_cost(fn, calibration("cpu"))] == [
        "captured_constant"
    ]
    assert cost_rules.compile_cost(fn, calibration("tpu")) == []
    # the 2500x2500 table: 1.13 s captured, 1.46 s passed on the TPU (0.69 / 1.51 s
    # in another run): "saves ~0.82 s" was printed; nothing is now
    mid = CompileCost(3, consts=(ConstCost("table", (2500, 2500), "float32", 25_000_000),))
    assert cost_rules.compile_cost(_costed(mid, 1.13), calibration("tpu")) == []
    assert cost_rules.compile_cost(_costed(mid, 1.13), calibration("cpu")) != []
    # 34 MiB compiled in 1.37 s on the TPU, 0.95 s passed: ~0.41 s predicted (measured 0.42)
    big = CompileCost(3, consts=(ConstCost("table", (3000, 3000), "float32", 36_000_000),))
    (a,) = cost_rules.compile_cost(_costed(big, 1.37), calibration("tpu"))
    assert a.estimated_saving_seconds == pytest.approx(0.012 * 36e6 / 2**20, rel=0.01)


def test_the_rolled_loop_floor_is_the_platforms():
    """A rolled program cost 0.3-1.9 s to compile on the CPU, 0.1-0.3 s on the TPU (a
    16-layer scan: 0.21 s): the same unrolled loop saves more there than the CPU's floor
    would say."""
    fn = _costed(LOOP_COST, 1.0)
    (cpu,) = [a for a in cost_rules.compile_cost(fn, calibration("cpu"))]
    (tpu,) = [a for a in cost_rules.compile_cost(fn, calibration("tpu"))]
    assert cpu.estimated_saving_seconds == pytest.approx(1.0 - 0.4)
    assert tpu.estimated_saving_seconds == pytest.approx(1.0 - 0.2)
    assert calibration("gpu") == calibration("cpu")  # not measured: the CPU's


def test_dispatch_on_an_accelerator_discounts_its_ready_latency():
    """A tiny nnx.jit model on the TPU: 472 us on the host per sampled hit, outputs ready
    390 us after the call returned, one flatten 72 us. The 390 us is mostly the chip
    reporting back, which a loop of calls never waits for: it ran at 544 us per call and
    392 us with cached_partial (the issue's run). On the CPU the same figures would mean
    a program busy for 390 us of each call, and little to save."""
    sample = _sample(472e-6, 390e-6, 72e-6)
    fn = _fn(calls=3000, hits=2999)
    tpu = dispatch(fn, sample, dataclasses.replace(ENV, platform="tpu", run_seconds=3000 * 544e-6))
    assert tpu is not None and tpu.estimated_saving_seconds == pytest.approx(
        2999 * 1.7 * 72e-6, rel=0.01
    )
    cpu = dispatch(fn, sample, dataclasses.replace(ENV, platform="cpu"))
    assert cpu is None or cpu.estimated_saving_seconds < tpu.estimated_saving_seconds


def test_no_advice_on_short_compiles_small_loops_or_small_constants():
    assert cost_rules.compile_cost(_costed(LOOP_COST, 0.3)) == []  # well under a second
    small = CompileCost(100, (), (LoopCost("m.py", 3, "f", "for", 3, 12, 4),))
    assert cost_rules.compile_cost(_costed(small, 2.0)) == []  # 12% of the program
    short = CompileCost(100, (), (LoopCost("m.py", 3, "f", "for", 4, 100, 25),))
    assert cost_rules.compile_cost(_costed(short, 20.0)) == []  # 4 iterations
    tiny = CompileCost(3, consts=(ConstCost("t", (100, 100), "float32", 40_000),))
    assert cost_rules.compile_cost(_costed(tiny, 2.0)) == []


def test_compile_bound_when_never_reused():
    cost = CompileCost(50)
    (a,) = cost_rules.compile_cost(_costed(cost, 3.0, calls=1, hits=0))
    assert a.kind == "compile_bound" and a.estimated_saving_seconds is None
    assert cost_rules.compile_cost(_costed(cost, 3.0, calls=2, hits=1)) == []


def _costed_report(cost: CompileCost) -> dict:
    fn = _costed(cost, 10.0)
    return jitlens.Report(2, "0", "0", "", "cpu", 0, 1, "h", 0.0, 1.0, (fn,)).to_dict()


def test_old_reports_load_and_cost_round_trips():
    data = _costed_report(LOOP_COST)
    (event,) = data["functions"][0]["events"]
    data["functions"][0]["events"] = [event, {k: v for k, v in event.items() if k != "cost"}]
    events = jitlens.Report.from_dict(data).functions[0].events
    assert events[0].cost == LOOP_COST and events[1].cost is None


# ----------------------------------------------------------------- real programs, tiny

N = 12
WS = [jnp.full((8, 8), 0.01 * (i + 1)) for i in range(N)]
STACKED = jnp.stack(WS)
TABLE = np.arange(300 * 300, dtype=np.float32).reshape(300, 300) / 1e5


def _loop(x):
    for w in WS:
        x = jnp.tanh(x @ w + 1.0)
    return x


def _scan(x):
    return jax.lax.scan(lambda c, w: (jnp.tanh(c @ w + 1.0), None), x, STACKED)[0]


def _closed(x):
    return x @ TABLE


def _passed(x, table):
    return x @ table


@pytest.fixture(scope="module")
def costed(request):
    """One tracked run of the four programs, every compile read and advised on."""
    mp = pytest.MonkeyPatch()
    mp.setattr(cost_rules, "COST_MIN_SECONDS", 0.0)
    mp.setattr(cost_rules, "COST_MIN_SAVING_SECONDS", 0.0)
    mp.setattr(cost_rules, "LOOP_MIN_SHARE", 0.0)
    mp.setattr(track_cost, "CONST_MIN_BYTES", 1)
    x, row = jnp.ones((2, 8)), jnp.ones((1, 300))
    try:
        with jitlens.track() as t:
            out = {
                "loop": jax.jit(_loop)(x),
                "scan": jax.jit(_scan)(x),
                "closed": jax.jit(_closed)(row),
                "passed": jax.jit(_passed)(row, TABLE),
            }
        report = t.report()
    finally:
        mp.undo()
    return report, out


def test_collected_loop_names_its_line(costed):
    report, out = costed
    fn = report.function("_loop")
    cost = fn.events[0].cost
    loop_line = _loop.__code__.co_firstlineno + 1
    assert cost is not None and cost.eqns == 3 * N
    (loop,) = cost.loops
    assert (loop.line, loop.kind, loop.iterations, loop.body_eqns) == (loop_line, "for", N, 3)
    assert loop.file.endswith("test_advice.py")
    (a,) = [a for a in fn.advice if a.kind == "unrolled_loop"]
    assert f"test_advice.py:{loop_line}" in a.message
    # the fix applied: the scan version gives the same result and no loop advice
    assert np.allclose(out["loop"], out["scan"], atol=1e-6)
    assert not [a for a in report.function("_scan").advice if a.kind == "unrolled_loop"]
    assert not report.function("_scan").events[0].cost.loops


def test_collected_constant_names_the_variable(costed):
    report, out = costed
    (c,) = report.function("_closed").events[0].cost.consts
    assert (c.name, c.shape, c.dtype, c.nbytes) == ("TABLE", (300, 300), "float32", TABLE.nbytes)
    (a,) = [a for a in report.function("_closed").advice if a.kind == "captured_constant"]
    assert "`TABLE`" in a.message and "pass `TABLE`" in a.fix
    assert np.allclose(out["closed"], out["passed"])
    assert not report.function("_passed").events[0].cost.consts


def test_rendered_in_text_html_and_json(costed):
    report, _ = costed
    text = report.to_text(color=False, width=200)
    assert "compile cost: what the longest compiles are made of" in text
    assert f"loop at tests/test_advice.py:{_loop.__code__.co_firstlineno + 1} x{N}" in text
    html = report.to_html()
    assert 'class="cost-line"' in html and "Program size" in html
    again = jitlens.Report.from_dict(json.loads(report.to_json()))
    assert again.function("_loop").events[0].cost == report.function("_loop").events[0].cost


def _short(x):
    for w in WS[:3]:
        x = jnp.tanh(x @ w)
    return x


def test_short_compiles_are_not_read_and_short_loops_not_advised():
    with jitlens.track() as t:
        jax.jit(_short)(jnp.ones((3, 8)))
    fn = t.report().function("_short")
    # read exactly when trace + lower + compile took COST_MIN_SECONDS (a loaded machine may)
    assert all((e.cost is None) == (e.seconds < cost_rules.COST_MIN_SECONDS) for e in fn.events)
    assert not [a for a in fn.advice if a.kind in ("unrolled_loop", "captured_constant")]


def test_nnx_blocks_in_a_list_get_flax_scan_over_layers_which_works(monkeypatch):
    """The NNX fix applied: blocks stacked with nnx.vmap, applied with nnx.scan."""
    from flax import nnx

    monkeypatch.setattr(cost_rules, "COST_MIN_SECONDS", 0.0)
    monkeypatch.setattr(cost_rules, "COST_MIN_SAVING_SECONDS", 0.0)

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return jnp.tanh(self.linear(x))

    class Listed(nnx.Module):
        def __init__(self, blocks):
            self.blocks = nnx.List(blocks)

        def __call__(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    class Stacked(nnx.Module):
        def __init__(self, n, rngs):
            @nnx.vmap(in_axes=0, out_axes=0)
            def create(rngs):
                return Block(rngs)

            self.blocks = create(rngs.split(n))

        def __call__(self, x):
            @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
            def apply(block, x):
                return block(x)

            return apply(self.blocks, x)

    n = cost_rules.LOOP_MIN_ITERATIONS
    stacked = Stacked(n, nnx.Rngs(0))
    graphdef, state = nnx.split(stacked.blocks)
    listed = Listed(
        [nnx.merge(graphdef, jax.tree.map(lambda a, i=i: a[i], state)) for i in range(n)]
    )
    x = jnp.ones((2, 4))
    with jitlens.track() as t:
        fwd_listed = nnx.jit(lambda model, x: model(x))
        a = fwd_listed(listed, x)
        fwd_stacked = nnx.jit(lambda model, x: model(x))
        b = fwd_stacked(stacked, x)
    report = t.report()
    advised = [(f.name, a) for f in report.functions for a in f.advice if a.kind == "unrolled_loop"]
    assert len(advised) == 1, advised
    assert "nnx.vmap" in advised[0][1].fix and "nnx.scan" in advised[0][1].fix
    loop_line = Listed.__call__.__code__.co_firstlineno + 1
    assert f"test_advice.py:{loop_line}" in advised[0][1].message
    assert np.allclose(a, b, atol=1e-5)


def test_eqx_layers_in_a_list_get_filter_vmap_and_scan_which_works(monkeypatch):
    """The Equinox fix applied (``kinds.STACKED_LAYERS_FIXES`` by row kind): layers built
    stacked with eqx.filter_vmap, applied with jax.lax.scan over eqx.partition-ed arrays."""
    eqx = pytest.importorskip("equinox")
    monkeypatch.setattr(cost_rules, "COST_MIN_SECONDS", 0.0)
    monkeypatch.setattr(cost_rules, "COST_MIN_SAVING_SECONDS", 0.0)
    keys = jax.random.split(jax.random.PRNGKey(0), cost_rules.LOOP_MIN_ITERATIONS)

    @eqx.filter_jit
    def fwd_listed(layers, x):
        for layer in layers:
            x = jnp.tanh(layer(x))
        return x

    @eqx.filter_jit
    def fwd_stacked(layers, x):
        params, static = eqx.partition(layers, eqx.is_array)

        def body(x, p):
            return jnp.tanh(eqx.combine(p, static)(x)), None

        return jax.lax.scan(body, x, params)[0]

    x = jnp.ones(4)
    with jitlens.track() as t:
        a = fwd_listed([eqx.nn.Linear(4, 4, key=k) for k in keys], x)
        b = fwd_stacked(eqx.filter_vmap(lambda k: eqx.nn.Linear(4, 4, key=k))(keys), x)
    report = t.report()
    advised = [(f.name, a) for f in report.functions for a in f.advice if a.kind == "unrolled_loop"]
    assert [name for name, _ in advised] == ["fwd_listed"], advised
    assert "eqx.filter_vmap" in advised[0][1].fix and "eqx.partition" in advised[0][1].fix
    assert np.allclose(a, b, atol=1e-5)


def test_a_malformed_cost_is_refused_with_its_place():
    data = _costed_report(LOOP_COST)
    data["functions"][0]["events"][0]["cost"]["loops"][0]["line"] = "three"
    with pytest.raises(jitlens.ReportError, match=r"events\[0\]\.cost\.loops\[0\]\.line"):
        jitlens.Report.from_dict(data)


def test_a_model_library_loop_is_shown_at_the_users_call():
    """``nnx.Sequential`` / ``eqx.nn.Sequential`` loop in the library: named at the user's line."""
    lib = [SourceLoop(30, 31, "for")]
    eqns = [
        Eqn(p, 1, (("m.py", 7, "f", 5, True), ("seq.py", 31, "Sequential.__call__", 28, False)))
        for p in ("dot", "add", "tanh") * 10
    ]
    (loop,) = find_loops(
        eqns,
        lambda file, line, first: enclosing_loop(lib, line, first) if file == "seq.py" else None,
    )
    assert (loop.file, loop.line, loop.via, loop.iterations) == (
        "m.py",
        7,
        "Sequential.__call__",
        10,
    )


def test_unrolled_scan_names_its_unroll_and_the_fix_rolls_it(monkeypatch):
    """A real ``jax.lax.scan(..., unroll=True)``: the message says how it was unrolled, and
    the printed fix (drop the unroll) applied gives the same numbers and no advice."""
    monkeypatch.setattr(cost_rules, "COST_MIN_SECONDS", 0.0)
    monkeypatch.setattr(cost_rules, "COST_MIN_SAVING_SECONDS", 0.0)
    monkeypatch.setattr(cost_rules, "LOOP_MIN_SHARE", 0.0)

    def body(c, w):
        return jnp.tanh(c @ w + 1.0), None

    def unrolled(x):
        return jax.lax.scan(body, x, STACKED, unroll=True)[0]

    def unrolled_some(x):  # 8 copies of 24 (a small unroll, <= 4, is not advised on)
        return jax.lax.scan(body, x, jnp.concatenate([STACKED, STACKED]), unroll=8)[0]

    def rolled(x):  # the fix applied: `unroll=True` dropped
        return jax.lax.scan(body, x, STACKED)[0]

    x = jnp.ones((2, 8))
    with jitlens.track() as t:
        outs = [jax.jit(f)(x) for f in (unrolled, unrolled_some, rolled)]
    report = t.report()
    (full,) = [a for a in report.function("unrolled").advice if a.kind == "unrolled_loop"]
    assert f"fully ({N} copies of its body: `unroll=True` or `unroll={N}`)" in full.message
    assert full.fix.startswith(f"drop `unroll=True` (or `unroll={N}`)")
    (some,) = [a for a in report.function("unrolled_some").advice if a.kind == "unrolled_loop"]
    assert f"8 times (`unroll=8` over {2 * N} iterations)" in some.message
    assert some.fix.startswith("drop `unroll=8`")
    assert not [a for a in report.function("rolled").advice if a.kind == "unrolled_loop"]
    assert np.allclose(outs[0], outs[2], atol=1e-6)


def test_captured_constant_fix_names_the_function_and_works(costed):
    report, out = costed
    (a,) = [a for a in report.function("_closed").advice if a.kind == "captured_constant"]
    assert "pass `TABLE` to `_closed`" in a.fix and "`_closed(..., TABLE)`" in a.fix
    # applied: `_passed` is `_closed` with TABLE as a parameter
    assert np.allclose(out["closed"], out["passed"])
    assert not report.function("_passed").events[0].cost.consts


# ------------------------------------------------------------------ compile cost on unseen programs
# Where compile time goes, on programs written after public code nobody here had seen
# (``tests/trial_programs/g_*.py``): each names the line that makes its program big, the
# advice applied to a copy of the program shrinks it as predicted with the same results,
# and the negative controls get nothing.
#
# One subprocess runs every program (``trial_g_driver.py``: sizes just above the advice's
# thresholds, every compile read): the assertions are on lines, trip counts, equation
# counts and advice kinds, never on seconds; the seconds are in
# ``benchmarks/compile_cost_trial.py``.

#: The tests that read the one driver run share an xdist worker.
G_TRIAL = pytest.mark.xdist_group("compile_cost_trial")

#: Program -> (the text of the line its unrolled loop starts on, the trip count the driver sets).
LOOPS = {
    "g_transformer_layers_loop": ('for blk in params["blocks"]:', 8),
    "g_ode_rk4_unrolled": ("for _ in range(STEPS):", 10),
    "g_stack_small_ops": ("cols = jnp.stack([feature(x, k) for k in range(K)]", 12),
    "g_cond_ladder": ("for k in range(REGIMES):", 10),
    "g_vmap_newton_inner_loop": ("for _ in range(ITERS):", 10),
}
#: Program -> the name each captured constant is found under.
CONSTS = {
    "g_numpy_table_closure": ["basis"],
    "g_params_closed_over": [f"weights[{i}][0]" for i in range(4)],
    "g_literal_table_in_body": [""],  # made inside the function: no variable holds it
    "g_big_static_table": [""],  # made from a static tuple while tracing
}
NEGATIVE = ("g_neg_scanned_layers", "g_neg_small_closure")
OTHER = ("g_pytree_many_leaves",)
#: A compile long enough for the advice, whatever this machine's speed (the rules then
#: decide on the program's make-up alone).
SECONDS = 3.0
CACHE_OFF = Environment(run_seconds=60.0, cache_dir=None, cache_enabled=True, min_compile_seconds=1)


@pytest.fixture(scope="module")
def g_runs(fork_python) -> dict:
    names = [*LOOPS, *CONSTS, *NEGATIVE, *OTHER]
    proc = fork_python([str(TRIAL_PROGRAMS / "trial_g_driver.py"), *names], cwd=TRIAL_PROGRAMS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "JitlensInternalWarning" not in proc.stderr, proc.stderr[-3000:]
    got = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    return {
        name: {ver: (jitlens.Report.from_dict(rep), out) for ver, (rep, out) in versions.items()}
        for name, versions in got.items()
    }


def _g_fn(report: jitlens.Report) -> FunctionReport:
    (fn,) = [f for f in report.functions if not f.internal]
    return fn


def _line_of(name: str, text: str) -> int:
    lines = (TRIAL_PROGRAMS / f"{name}.py").read_text().splitlines()
    return next(i for i, s in enumerate(lines, 1) if text in s)


def _as_if(fn: FunctionReport, seconds: float) -> FunctionReport:
    """``fn`` with its compiles taking ``seconds``: the rules on the program's make-up alone."""
    events = tuple(
        dataclasses.replace(e, trace_seconds=0.0, lower_seconds=0.0, compile_seconds=seconds)
        for e in fn.events
    )
    return dataclasses.replace(fn, events=events)


@G_TRIAL
@pytest.mark.parametrize("name", list(LOOPS))
def test_the_unrolled_loop_is_named_at_its_line_with_its_trip_count(g_runs, name):
    text, n = LOOPS[name]
    cost = _g_fn(g_runs[name]["before"][0]).events[0].cost
    assert cost is not None
    loop = cost.loops[0]
    assert (pathlib.Path(loop.file).name, loop.line) == (f"{name}.py", _line_of(name, text))
    assert loop.iterations == n
    # the whole body is under the loop: a cond's branches, a vmapped function's own loop
    assert loop.eqns >= 0.9 * cost.eqns


@G_TRIAL
@pytest.mark.parametrize("name", list(LOOPS))
def test_the_loop_advice_comes_first_and_names_the_line(g_runs, name):
    fn = _as_if(_g_fn(g_runs[name]["before"][0]), SECONDS)
    top = advise(fn, None, CACHE_OFF)[0]
    assert top.kind == AdviceKind.UNROLLED_LOOP  # before the cache that saves the same seconds
    assert f"{name}.py:{_line_of(name, LOOPS[name][0])}" in top.fix


@G_TRIAL
@pytest.mark.parametrize("name", list(LOOPS))
def test_the_advised_program_is_as_small_as_predicted_with_the_same_results(g_runs, name):
    (before, out_before), (after, out_after) = g_runs[name]["before"], g_runs[name]["after"]
    cost_before, cost_after = _g_fn(before).events[0].cost, _g_fn(after).events[0].cost
    loop = cost_before.loops[0]
    predicted = cost_before.eqns - loop.eqns + SCAN_BODY_FACTOR * loop.body_eqns
    assert cost_after.eqns <= predicted
    assert not [x for x in cost_after.loops if x.iterations >= LOOP_MIN_ITERATIONS]
    assert not compile_cost(_as_if(_g_fn(after), SECONDS))
    a, b = np.asarray(out_before), np.asarray(out_after)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * np.abs(a).max())


@G_TRIAL
@pytest.mark.parametrize("name", list(CONSTS))
def test_captured_constants_are_read_and_named(g_runs, name):
    cost = _g_fn(g_runs[name]["before"][0]).events[0].cost
    assert cost is not None  # np.shape (a function) is no array: reading must not fail on it
    assert sorted(c.name for c in cost.consts) == sorted(CONSTS[name])
    assert all(c.nbytes >= 2**20 for c in cost.consts)


@G_TRIAL
@pytest.mark.parametrize("name", list(CONSTS))
def test_one_constant_advice_per_variable_or_at_the_line_that_reads_it(g_runs, name):
    fn = _as_if(_g_fn(g_runs[name]["before"][0]), SECONDS)
    (advice,) = [a for a in advise(fn, None, CACHE_OFF) if a.kind == AdviceKind.CAPTURED_CONSTANT]
    root = CONSTS[name][0].partition("[")[0]
    if root:  # the whole list of weights passed at once, by the name the program uses
        assert f"pass `{root}` to `{fn.name.rpartition('.')[2]}`" in advice.fix
    else:
        line = _line_of(name, "return bank @ signal" if "literal" in name else "return t[i]")
        assert f"{name}.py:{line}" in advice.fix and "once, outside `" in advice.fix
        from jitlens._render.svg import program_size_html

        html = program_size_html(_g_fn(g_runs[name]["before"][0]).events[0])
        assert f"(read at {name}.py:{line})" in html
    (_, out_before), (after, out_after) = g_runs[name]["before"], g_runs[name]["after"]
    assert not _g_fn(after).events[0].cost.consts
    np.testing.assert_allclose(np.asarray(out_before), np.asarray(out_after), rtol=1e-5, atol=1e-6)


@G_TRIAL
@pytest.mark.parametrize("name", NEGATIVE)
def test_negative_controls_get_no_compile_advice(g_runs, name):
    report = g_runs[name]["before"][0]
    sized = {AdviceKind.UNROLLED_LOOP, AdviceKind.CAPTURED_CONSTANT}
    for fn in report.functions:
        # as measured (a loaded machine may still advise the compile cache), and as if
        # each compile had taken seconds: nothing in the program's make-up to change
        assert not sized & {a.kind for a in fn.advice}
        assert not sized & {a.kind for a in compile_cost(_as_if(fn, SECONDS))}


@G_TRIAL
def test_a_tree_map_over_many_leaves_is_named_at_the_user_line(g_runs):
    cost = _g_fn(g_runs["g_pytree_many_leaves"]["before"][0]).events[0].cost
    top = cost.lines[0]
    line = _line_of("g_pytree_many_leaves", "out = jax.tree.map(sgd_momentum")
    assert (top.line, top.eqns) == (line, cost.eqns)


def test_period_survives_a_first_iteration_of_another_shape():
    body = ["a", "b", "c", "d", "e"]
    first = ["z", "a", "b", "c", "d", "e", "f"]  # e.g. a carry that starts as a Python float
    seq = first + body * 20
    assert len(seq) // period(seq) == 21


@pytest.mark.parametrize("via", ["cond", "jit"])
def test_a_body_traced_apart_counts_under_the_loop_that_called_it(via):
    """JAX records a ``lax.cond`` branch's (or a nested jit's) traceback from where it traced
    the body; flatten puts the caller's frames back, so the loop around the call sees the
    body's equations."""
    import jax
    from jax import lax

    from jitlens._compat import jaxpr_api
    from jitlens._track.cost import _loop_at

    inner = jax.jit(lambda v: jax.numpy.sin(v) * 2.0)

    def ladder(x):
        for k in range(LOOP_MIN_ITERATIONS):
            if via == "cond":
                x = lax.cond(x.sum() > k, lambda v: jax.numpy.sin(v) * 2.0, lambda v: v, x)
            else:
                x = inner(x) + k
        return x

    closed = jax.make_jaxpr(ladder)(jax.numpy.ones(3))
    flat, _, _ = jaxpr_api.flatten(closed, (), lambda f: True if f == __file__ else None)
    body = [e for e in flat if e.primitive == "sin"]
    assert len(body) == LOOP_MIN_ITERATIONS
    assert all(e.stack and e.stack[0][2].endswith("ladder") for e in body)
    (loop,) = find_loops([Eqn(e.primitive, e.weight, e.stack) for e in flat], _loop_at)
    assert loop.iterations == LOOP_MIN_ITERATIONS and loop.eqns == len(flat)


def test_an_array_built_while_tracing_counts_the_trace_it_took_a_captured_one_does_not():
    from jitlens._core.advice_cost import TRACE_SECONDS_PER_EQN, built_saving
    from jitlens._core.cost import CompileCost, ConstCost
    from jitlens._core.report import Event

    def fn(const: ConstCost) -> FunctionReport:
        cost = CompileCost(28, consts=(const,), const_bytes=const.nbytes)
        event = Event(
            0, "trace", "m.py:20", "(x)", trace_seconds=12.0, lower_seconds=0.5,
            compile_seconds=0.5, compiled=True, cost=cost,
        )  # fmt: skip
        return FunctionReport(
            "f", "f", "jax.jit", "m.py:1", "m.py:20", 5, 1, 1, 4, 0, 12.0, 0.0, 1.0, events=(event,)
        )

    made = ConstCost("", (4_000_000,), "float32", 16_000_000, "m.py", 23)
    (a,) = compile_cost(fn(made))
    excess = 12.0 - TRACE_SECONDS_PER_EQN * 28
    assert built_saving(made.nbytes, fn(made).events[0].cost, 12.0) == pytest.approx(excess)
    assert excess < a.estimated_saving_seconds <= 13.0  # never more than the event's seconds
    assert "m.py:23" in a.message and "building it while tracing" in a.message
    captured = dataclasses.replace(made, name="table")
    (b,) = compile_cost(fn(captured))
    assert b.estimated_saving_seconds < 3.0  # its trace was someone else's Python


def test_the_trip_count_leaves_out_what_follows_the_loop_on_its_line():
    from jitlens._core.cost import trip_count

    body = ["sin", "mul", "add"]
    stacked = ["expand"] * 5 + ["concat"]  # jnp.stack([f(k) for k in range(5)]) on one line
    assert trip_count(body * 5 + stacked) == 5
    # a tail as long as the iterations: jax 0.9.2 expands each of K stacked columns
    assert trip_count(list(range(10)) * 8 + ["expand"] * 8 + ["concat"]) == 8
    assert trip_count(body * 48 + ["sin", "mul"]) == 49  # the last one short of its add
    assert trip_count(body * 48) == 48 and trip_count(list("abcdefgh")) == 1


# ---------------------------------------------------------------- many_leaves (leftovers 2)


def _leafy(host: float, device: float, leaves: int) -> rules.DispatchSample:
    return rules.DispatchSample(7, host, device, None, (), ("params", "lr"),
                                leaves=(("params", leaves), ("lr", 1)))  # fmt: skip


def test_many_leaves_predicts_what_one_array_saves_and_stays_quiet_below_its_bars() -> None:
    from jitlens._core import advice_leaves as L

    fn = _fn(calls=200, hits=199)
    sample = _leafy(host=6e-3, device=0.4e-3, leaves=2000)
    (a,) = [a for a in advise(fn, sample, ENV) if a.kind == "many_leaves"]
    after = max(L.RAVELED_HOST_SECONDS, 0.4e-3 + 2001 * L.UNRAVEL_SECONDS_PER_LEAF)
    assert a.estimated_saving_seconds == pytest.approx((6e-3 - after) * 199, rel=1e-4)
    assert a.message.startswith("2,001 pytree leaves in every call (`params` 2,000, `lr` 1)")
    assert "ravel_pytree(params)" in a.fix
    assert L.many_leaves(fn, _leafy(6e-3, 0.4e-3, L.MANY_LEAVES_MIN - 2), ENV) is None  # few
    assert L.many_leaves(fn, _leafy(0.1e-3, 0.05e-3, 2000), ENV) is None  # a cheap call
    assert L.many_leaves(fn, _leafy(6e-3, 50e-3, 2000), ENV) is None  # the device's time
    assert L.many_leaves(fn, None, ENV) is None
    # its bars are the dispatch advice's (advice imports it: the numbers are kept equal here)
    bars = (L.MIN_SECONDS, L.MIN_RUN_SHARE, L.MIN_CALL_SHARE)
    assert bars == (
        rules.DISPATCH_MIN_SECONDS, rules.DISPATCH_MIN_RUN_SHARE, rules.DISPATCH_MIN_CALL_SHARE
    )  # fmt: skip


def _shape_event(call: int, site: str, entry: int, before: str, after: str) -> Event:
    r = jitlens.Reason("shape", "batch", "batch[0]", before, after, "m", "f", fix_kind="shape")
    return Event(call, "retrace", site, "", (r,), entry=entry, compiled=True)


@pytest.mark.parametrize(
    ("sites", "entries", "reused"),
    [
        (("a.py:5", "a.py:6"), (0, 1, 0, 1, 0, 1), True),  # train and test sets, every epoch
        (("a.py:5", "a.py:5"), (0, 0, 1, 0, 0, 1), False),  # a ragged last batch, one line
        (("a.py:5", "a.py:6"), (0, 1, 0, 0), False),  # the second shape used once
        (("a.py:5", "a.py:6"), (), False),  # no call timeline: unknown, not excused
    ],
)
def test_a_few_shapes_each_from_its_own_line_and_reused_are_expected(
    sites: tuple[str, str], entries: tuple[int, ...], reused: bool
) -> None:
    first = Event(0, "trace", sites[0], "", entry=0, compiled=True)
    retrace = _shape_event(1, sites[1], 1, "f32[24,3]", "f32[10,3]")
    fn = dataclasses.replace(_fn(6, 4), events=(first, retrace), call_entries=entries)
    shared = buckets.reused_shapes(fn)
    assert bool(shared) is reused and fn.bucketed is reused
    if reused:
        assert [(s.shape, s.calls) for s in shared] == [("f32[24,3]", 3), ("f32[10,3]", 3)]
        assert fn.seconds_lost == 0.0


class _Dataset:
    """An object a jitted function closes over: its ``shape`` property loads a file (the
    issue 44 report), its ``__getattribute__`` and ``__getattr__`` count every read."""

    reads: dict[str, int] = {}

    def __init__(self) -> None:
        object.__setattr__(self, "table", np.arange(300_000, dtype=np.float32))  # 1.2 MB

    def __getattribute__(self, name: str) -> Any:
        _Dataset.reads[name] = _Dataset.reads.get(name, 0) + 1
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        _Dataset.reads[f"getattr {name}"] = _Dataset.reads.get(f"getattr {name}", 0) + 1
        raise AttributeError(name)

    @property
    def shape(self) -> tuple[int, ...]:  # (the report's program loaded its dataset here)
        _Dataset.reads["shape property"] = _Dataset.reads.get("shape property", 0) + 1
        return (300_000,)


def test_a_captured_constant_is_named_without_running_the_programs_code(monkeypatch):
    """The compile-cost reading names a captured table through the object holding it, read
    from its ``__dict__``: its ``shape`` property never runs (it loaded a dataset file in the
    report that found it), nor any ``__getattribute__`` / ``__getattr__`` of the object.
    Before: the property ran, ``__array_interface__`` was asked of it and ``__class__`` read
    4 times, and the table was left unnamed."""
    monkeypatch.setattr(cost_rules, "COST_MIN_SECONDS", 0.0)
    holder = _Dataset()

    def sums(x):
        return x + jnp.asarray(object.__getattribute__(holder, "table"))[:3].sum()

    _Dataset.reads.clear()
    with jitlens.track() as t:
        out = jax.jit(sums)(jnp.ones(3))
    assert _Dataset.reads == {}, _Dataset.reads  # (the program reads its table itself)
    ((event,),) = [f.events for f in t.report().functions if f.name == "sums"]
    assert event.cost is not None and [c.name for c in event.cost.consts] == ["holder.table"]
    assert float(out[0]) == 1.0 + 3.0


def test_a_function_s_loops_read_from_its_block_are_the_whole_file_s() -> None:
    """A loop is looked for in the function a frame runs: in a long file (a model library's)
    only that function's block is parsed. Its loops, at every line of every function of a long
    file (NumPy's ``recfunctions``), are the ones the whole file's parse finds; a short file,
    module code and a lambda are read from the whole file."""
    import ast
    import inspect

    from numpy.lib import recfunctions as module

    from jitlens._core.cost import (
        CUT_MIN_LINES,
        enclosing_loop,
        function_loops,
        source_loops,
    )

    source = inspect.getsource(module)
    lines = source.splitlines(True)
    assert len(lines) >= CUT_MIN_LINES
    whole = source_loops(source)
    cut = 0
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        block = function_loops(lines, first)
        assert block is not None, (node.name, first)
        cut += bool(block)
        for line in range(first, node.end_lineno + 1):
            assert enclosing_loop(block, line, first) == enclosing_loop(whole, line, first)
    assert cut >= 5  # functions with loops of their own among them
    assert function_loops(lines, 1) is None  # module code
    short = "def f(x):\n    for _ in range(3):\n        x = x + 1\n    return x\n"
    assert function_loops(short.splitlines(True), 1) is None
    assert function_loops(short.splitlines(True) * CUT_MIN_LINES, 5) is not None
    lam = ["g = lambda xs: [x for x in xs]\n"] * CUT_MIN_LINES
    assert function_loops(lam, 2) is None
