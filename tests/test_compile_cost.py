"""Compile cost (issue 34): the data collected from a long compile, its rules, its rendering.

The rules are pinned with made-up figures; the collection runs on tiny real
programs with ``COST_MIN_SECONDS`` lowered (the test hook: real programs are
read only when their compile took half a second). ``benchmarks/compile_cost.py``
checks the predicted savings against measured ones.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jitlens
from jitlens._core import advice_cost as rules
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
from jitlens._core.report import Event, FunctionReport, _to_jsonable, report_from_dict
from jitlens._render.html import render_html
from jitlens._render.text import render_text
from jitlens._track import cost as track_cost

SOURCE = """\
def f(x, ws):
    y = x + 1
    for w in ws:
        y = layer(y, w)
    return [g(r) for r in y]
"""


def _fn(cost: CompileCost, seconds: float, calls: int = 5, hits: int = 4, kind: str = "jax.jit"):
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


def test_unrolled_loop_rule_names_the_loop_and_predicts_from_equations():
    (a,) = rules.compile_cost(_fn(LOOP_COST, 10.0))
    assert a.kind == "unrolled_loop"
    assert (
        "m.py:3" in a.message
        and "48 repeats of the same ~20" in a.message
        and "jax.lax.scan" in a.fix
    )
    # 1000 equations -> 40 + 3 x 20 = 100: saves 90% of the 10 s
    assert a.estimated_saving_seconds == pytest.approx(9.0)
    (nnx_advice,) = rules.compile_cost(_fn(LOOP_COST, 10.0, kind="nnx.jit"))
    assert "nnx.vmap" in nnx_advice.fix and "nnx.scan" in nnx_advice.fix
    unrolled = CompileCost(1000, (), (LoopCost("m.py", 7, "f", "unrolled scan", 100, 1000, 10),))
    (u,) = rules.compile_cost(_fn(unrolled, 5.0))
    assert "unroll=True" in u.fix and "m.py:7" in u.fix


def test_constant_rule_names_the_variable_and_its_size():
    cost = CompileCost(3, consts=(ConstCost("table", (1500, 1500), "float32", 9_000_000),))
    (a,) = rules.compile_cost(_fn(cost, 1.0))
    assert a.kind == "captured_constant"
    assert "`table` (1500x1500 float32, 8.6 MiB)" in a.message and "pass `table`" in a.fix
    # 8.6 MiB against 3 equations: nearly all of the second above the floor
    mine = rules.CONST_SECONDS_PER_MIB * 9e6 / 2**20
    share = mine / (mine + 3 * rules.EQN_SECONDS)
    assert a.estimated_saving_seconds == pytest.approx((1.0 - rules.CONST_FLOOR_SECONDS) * share)
    # a longer compile: no more than twice the rate's estimate
    (b,) = rules.compile_cost(_fn(cost, 20.0))
    assert b.estimated_saving_seconds == pytest.approx(rules.CONST_MAX_FACTOR * mine)


def test_no_advice_on_short_compiles_small_loops_or_small_constants():
    assert rules.compile_cost(_fn(LOOP_COST, 0.3)) == []  # well under a second
    small = CompileCost(100, (), (LoopCost("m.py", 3, "f", "for", 3, 12, 4),))
    assert rules.compile_cost(_fn(small, 2.0)) == []  # 12% of the program
    short = CompileCost(100, (), (LoopCost("m.py", 3, "f", "for", 4, 100, 25),))
    assert rules.compile_cost(_fn(short, 20.0)) == []  # 4 iterations
    tiny = CompileCost(3, consts=(ConstCost("t", (100, 100), "float32", 40_000),))
    assert rules.compile_cost(_fn(tiny, 2.0)) == []


def test_compile_bound_when_never_reused():
    cost = CompileCost(50)
    (a,) = rules.compile_cost(_fn(cost, 3.0, calls=1, hits=0))
    assert a.kind == "compile_bound" and a.estimated_saving_seconds is None
    assert rules.compile_cost(_fn(cost, 3.0, calls=2, hits=1)) == []


def test_old_reports_load_and_cost_round_trips():
    fn = _fn(LOOP_COST, 10.0)
    data = _to_jsonable(fn.events[0])
    back = report_from_dict(
        {
            "schema_version": 2, "jitlens_version": "0", "jax_version": "0", "flax_version": "",
            "backend": "cpu", "process_index": 0, "process_count": 1, "host": "h",
            "started_at": 0.0, "duration_seconds": 1.0,
            "functions": [{**_to_jsonable(fn), "events": [data, {k: v for k, v in data.items() if k != "cost"}]}],
        }
    )  # fmt: skip
    events = back.functions[0].events
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
    mp.setattr(rules, "COST_MIN_SECONDS", 0.0)
    mp.setattr(rules, "COST_MIN_SAVING_SECONDS", 0.0)
    mp.setattr(rules, "LOOP_MIN_SHARE", 0.0)
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
    assert loop.file.endswith("test_compile_cost.py")
    (a,) = [a for a in fn.advice if a.kind == "unrolled_loop"]
    assert f"test_compile_cost.py:{loop_line}" in a.message
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
    text = render_text(report, color=False, width=200)
    assert "compile cost: what the longest compiles are made of" in text
    assert f"loop at tests/test_compile_cost.py:{_loop.__code__.co_firstlineno + 1} x{N}" in text
    html = render_html(report)
    assert 'class="cost-line"' in html and "Program size" in html
    again = report_from_dict(json.loads(report.to_json()))
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
    assert all((e.cost is None) == (e.seconds < rules.COST_MIN_SECONDS) for e in fn.events)
    assert not [a for a in fn.advice if a.kind in ("unrolled_loop", "captured_constant")]


def test_nnx_blocks_in_a_list_get_flax_scan_over_layers_which_works(monkeypatch):
    """The NNX fix applied: blocks stacked with nnx.vmap, applied with nnx.scan."""
    from flax import nnx

    monkeypatch.setattr(rules, "COST_MIN_SECONDS", 0.0)
    monkeypatch.setattr(rules, "COST_MIN_SAVING_SECONDS", 0.0)

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

    n = rules.LOOP_MIN_ITERATIONS
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
    assert f"test_compile_cost.py:{loop_line}" in advised[0][1].message
    assert np.allclose(a, b, atol=1e-5)


def test_a_malformed_cost_is_refused_with_its_place():
    from jitlens._errors import ReportError

    data = _to_jsonable(LOOP_COST)
    data["loops"][0]["line"] = "three"
    with pytest.raises(ReportError, match=r"cost.loops\[0\].line"):
        from jitlens._core.cost import cost_from_dict

        cost_from_dict(data, "cost")


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
    monkeypatch.setattr(rules, "COST_MIN_SECONDS", 0.0)
    monkeypatch.setattr(rules, "COST_MIN_SAVING_SECONDS", 0.0)
    monkeypatch.setattr(rules, "LOOP_MIN_SHARE", 0.0)

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
