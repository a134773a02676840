"""The first hour, fourth trial (issue 47): a sharding recompile with two leaves, a compile
budget, figures that add up.

Found on Flax's FSDP toy example shrunk for CPU (``trial_programs/first_hour_fsdp_momentum.py``):
the step hands a parameter and its momentum back placed otherwise, and JAX compiles it again
from the trace it has. The summary showed the second leaf as a cut after-value with no fix; the
user applied the one fix shown and the step still compiled twice; no trace budget saw it; the
HTML left the hits after it untied. Each test is one of those, checked against the program's
own counter.
"""

from __future__ import annotations

import json
import pathlib
import re
import textwrap
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import html_dom
import jitlens
from conftest import run_python
from test_sharding_subprocess import device_env

PROGRAM = pathlib.Path(__file__).parent / "trial_programs" / "first_hour_fsdp_momentum.py"
#: Runs a script in a fork with ``--devices N`` host CPU devices (a fork cannot take XLA_FLAGS).
FAST_COMPILE = PROGRAM.parent / "fast_compile.py"
PLACED = "-> NamedSharding(mesh('data': 2, 'model': 4), P('model'))"
CODE = (
    "model.w2.set_value(jax.device_put(model.w2.get_value(), NamedSharding(mesh, P('model'))))",
    "optimizer.momentum['w2'].set_value(jax.device_put(optimizer.momentum['w2'].get_value(), "
    "NamedSharding(mesh, P('model'))))",
)

pytestmark = pytest.mark.xdist_group("first_hour_e_fsdp")  # its module fixture runs once


def _truth(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.split("TRUTH ", 1)[1].splitlines()[0])


@pytest.fixture(scope="module")
def fsdp(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The program under ``JITLENS=1`` as a user runs it (8 host devices), its JSON and HTML."""
    out = tmp_path_factory.mktemp("fsdp")
    env = {
        **device_env(8),
        "JITLENS": "1",
        "JITLENS_REPORT": str(out / "r.json"),
        "JITLENS_HTML": str(out / "r.html"),
    }
    env.pop("COLUMNS", None)  # stderr is a pipe: the width is the report's, 100
    proc = run_python([str(PROGRAM)], cwd=out, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {
        "proc": proc,
        "truth": _truth(proc.stdout),
        "report": jitlens.load_report(out / "r.json"),
        "html": (out / "r.html").read_text(),
        "dir": out,
    }


def test_both_leaves_before_after_and_one_fix_live_and_in_the_summary(fsdp: dict) -> None:
    """The live line (as it happens) and the summary at exit show both leaves, ``before ->
    after`` whole, and one fix placing both: the second leaf was cut to its after value."""
    err = fsdp["proc"].stderr
    live, summary = (
        err.split("jitlens: train_step (nnx.jit)", 1)[1],
        err.split("lost to recompiles")[1],
    )
    for text in (live.split("\n\n")[0], summary):
        assert "model.w2, optimizer.momentum['w2']  sharding" in text, text
        assert "NamedSharding(mesh('data': 2, 'model': 4), P())\n" in text, text
        assert PLACED in text
        assert "fix: Place `model.w2` and `optimizer.momentum['w2']` one way" in text
        assert all(code in text for code in CODE), text
    # the live block comes as it happens, before the program's own last line
    assert err.index("jitlens: train_step (nnx.jit)") < fsdp["proc"].stderr.index(
        "lost to recompiles"
    )
    # no line runs on unwrapped (stderr is a pipe: 100 columns), but a line of code to copy
    assert all(len(line) <= 100 for line in err.splitlines() if line.strip() not in CODE)


def test_the_figures_say_what_they_are(fsdp: dict) -> None:
    """No retrace, one recompile: "0 retraces" sat beside "0.93 s lost to retraces"."""
    fn = fsdp["report"].function("train_step")
    assert (fn.traces, fn.compiles, fn.retraces, fn.recompiles) == (1, 2, 0, 1)
    assert fsdp["truth"]["traces"] == fn.traces  # the program's own counter
    assert re.search(
        r"2 jitted functions, 2 traces, \d+\.\d\d s lost to recompiles", fsdp["proc"].stderr
    )
    dom = html_dom.parse(fsdp["html"])
    cards = {c.find("span").text(): c.find("b").text() for c in dom.find_all("div", "card")}
    assert cards["retraces"] == "0" and cards["recompile without a retrace"] == "1"
    assert cards["lost to recompiles"] == f"{fn.seconds_lost:.2f} s"


def test_the_printed_fix_applied_compiles_the_step_once_with_the_same_losses(
    fsdp: dict, tmp_path: pathlib.Path, fork_python
) -> None:
    """The fix as printed (its lines of code, run after the model is built): one compile, the
    same losses, and ``max_compiles(1)`` on the step passes."""
    fn = fsdp["report"].function("train_step")
    (reason, *_) = [r for e in fn.events for r in e.reasons]
    code = reason.fix.split("\n")[1:]
    assert tuple(code) == CODE
    fix = tmp_path / "fix.py"
    fix.write_text("\n".join(code) + "\n")
    # plain python (a fork: its start-up is not tested), 8 host devices as ``device_env(8)``
    argv = [str(FAST_COMPILE), "--devices", "8", str(PROGRAM), str(fix), "guard"]
    proc = fork_python(argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]  # the compile budget of 1 held
    fixed = _truth(proc.stdout)
    assert fixed["traces"] == 1
    np.testing.assert_allclose(fixed["losses"], fsdp["truth"]["losses"], rtol=1e-5)


def test_the_html_ties_every_hit_and_says_what_each_entry_was_compiled_for(fsdp: dict) -> None:
    """198 hits sat in a `?` row; entries showed `traces 1` each and differed by a graph hash."""
    dom = html_dom.parse(fsdp["html"])
    table = dom.find("table", "entries", data_function="train_step")
    rows = table.find_all("tr", "entry")
    assert [r.attrs["data-entry"] for r in rows] == ["0", "1"]  # no row of untied hits
    cells = [[td.text() for td in r.find_all("td", "num")] for r in rows]
    assert cells == [["#0", "1", "1", "1"], ["#1", "11", "0", "1"]]  # calls, traces, compiles
    made = rows[1].find("ul", "made")
    assert [m.text() for m in made.find_all("mark", "path")] == [
        "model.w2",
        "optimizer.momentum['w2']",
    ]
    assert "P('model')" in made.text()
    report = fsdp["report"].function("train_step")
    assert report.call_entries == (0,) + (1,) * 11


# ------------------------------------------------------------------ in-process, one device


def _placed_twice(budget: Any = None) -> tuple[list[int], Any]:
    """An nnx step called with a parameter left where JAX put it, then committed to the device:
    JAX compiles again from the trace it has (no retrace)."""
    runs = [0]

    def forward(model, x):
        runs[0] += 1
        return model(x).sum()

    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    step = nnx.jit(forward)
    if budget is not None:
        step = budget(step)
    step(model, jnp.ones((1, 2)))
    model.kernel[...] = jax.device_put(model.kernel[...], jax.devices()[0])
    step(model, jnp.ones((1, 2)))
    return runs, step


def test_a_compile_budget_stops_a_recompile_a_trace_budget_lets_through() -> None:
    runs, _ = _placed_twice(jitlens.max_traces(1))
    assert runs == [1]  # passed: one trace
    with pytest.raises(jitlens.RecompileError) as raised:
        _placed_twice(jitlens.max_compiles(1))
    text = str(raised.value)
    assert "`_placed_twice.<locals>.forward` was compiled 2 times, over its budget of 1" in text
    assert "recompile (call #2)" in text and "model.kernel  sharding" in text
    assert "uncommitted (default device)\n" in text or "uncommitted (default device) ->" in text
    assert "fix: Place `model.kernel` one way for every call" in text
    # as a block: at most one compile per function inside it
    with pytest.raises(jitlens.RecompileError, match=r"with jitlens\.max_compiles\(1\)"):
        with jitlens.max_compiles(1):
            _placed_twice()
    with jitlens.max_compiles(2):
        runs, _ = _placed_twice()
    assert runs == [1]


def test_hits_of_two_placements_alternating_are_each_tied_to_their_own_entry() -> None:
    """Two placements both compiled, alternating with nothing compiled between: the light
    signature cannot tell their hits apart; the arrays whose placement the keys differ in do."""
    left, committed = jnp.ones(3), jax.device_put(jnp.ones(3), jax.devices()[0])
    truth = [0, 1] + [0, 1] * 12 + [1] * 16
    with jitlens.track(timeline=True) as t:
        f = jax.jit(lambda x: x + 1)
        for entry in truth:
            f(committed if entry else left)
    assert t.report().function("<lambda>").call_entries == tuple(truth)


def test_entries_told_apart_by_no_array_leave_their_hits_unknown() -> None:
    """A model switched between train and eval mode (a static attribute, read by no array):
    the hits after both compiled are unknown (-1, the `?` row), never filed under a guess."""
    model = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
    truth = [0, 1, 0, 1, 0, 1]
    with jitlens.track(timeline=True) as t:
        step = nnx.jit(lambda m, x: m(x))
        for entry in truth:
            model.eval() if entry else model.train()
            step(model, jnp.ones(2))
    got = t.report().function("<lambda>").call_entries
    assert got[:2] == (0, 1) and set(got[2:]) == {-1}, got


def test_an_eager_scan_says_it_ran_outside_any_jit() -> None:
    """Its row's traces read "traced inside another function's trace": no jit was around it."""
    from jax import lax

    def run(xs, scale):
        def body(c, x):
            return c + x * scale, c

        return lax.scan(body, 0.0, xs)

    with jitlens.track() as t:
        for scale in (1.0, 2.0):
            run(jnp.arange(3.0), scale)
    (row,) = [f for f in t.report().functions if f.kind == "lax"]
    assert row.qualname == "lax.scan(body)" and row.traces == 2
    assert {e.signature for e in row.events} == {
        "(run eagerly, outside any jit: lax.scan traced its body for this call)"
    }


def test_long_library_row_names_keep_one_line_at_100_columns() -> None:
    """`keras: Sequential.evaluate test step` wrapped over 2-3 lines, `keras` said twice."""
    import dataclasses

    import report_samples

    report = report_samples.sample_report()
    names = (
        "Sequential.evaluate test step",
        "Sequential.fit train step",
        "Sequential.predict predict step",
    )
    rows = tuple(
        dataclasses.replace(f, qualname=f"keras: {n}", kind="keras", events=f.events[:1])
        for f, n in zip(report.functions, names, strict=False)
    )
    report = dataclasses.replace(report, functions=rows)
    table = report.to_text(width=100).split("\n\n")[0].splitlines()
    rows_shown = table[3 : 3 + len([f for f in report.user_functions()])]
    # one line per row: its name whole, without the kind's prefix, the kind column beside it
    assert sorted(r.split("  ")[0].strip() for r in rows_shown) == sorted(
        f.qualname.removeprefix("keras: ") for f in report.user_functions()
    ), table
    assert all(" keras " in r for r in rows_shown) and all(len(line) <= 100 for line in table)
    # narrower, the kind column gives way first among these, and the names say their library
    narrow = report.to_text(width=80).split("\n\n")[0]
    assert " kind " not in narrow and "keras: Sequential.fit train step" in narrow


# ------------------------------------------------------------------ jitlens audit


#: An example written top to bottom, as Flax's FSDP one is: no main guard, the factory called
#: inside the mesh it needs, then training (here: a file it writes).
SCRIPT = """\
import pathlib

import jax
import jax.numpy as jnp
from flax import nnx

mesh = jax.make_mesh((1, 1), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.w = nnx.Param(jnp.ones((2, 4)), sharding_names=(None, "model"))

    def __call__(self, x):
        return x @ self.w


@nnx.jit
def create_model():
    return MLP(nnx.Rngs(0))


with jax.set_mesh(mesh):
    model = create_model()

for step in range(3):
    pathlib.Path("trained").write_text(str(step))
print(model(jnp.ones((1, 2))))
"""


def test_audit_builds_a_scripts_factory_without_training_inside_the_mesh_it_needs(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "example.py").write_text(SCRIPT)
    assert jitlens.main(["audit", "example.py:create_model", "--width", "100"]) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "trained").exists()  # the training loop did not run
    assert "lines 23, 26, 28: a with block, a for loop, a call" in " ".join(out.split())
    assert '`if __name__ == "__main__":`' in out
    assert "built inside `with jax.set_mesh(mesh):`, as example.py:24 calls create_model()" in out


def test_a_factory_that_needs_a_mesh_is_told_how_to_audit_it_and_that_works(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its error was cut mid-URL (`see https://fl at ...`) and said nothing of the mesh."""
    monkeypatch.chdir(tmp_path)
    bare = SCRIPT.split("with jax.set_mesh")[0]  # no program calling it inside the mesh
    (tmp_path / "bare.py").write_text(bare)
    assert jitlens.main(["audit", "bare.py:create_model"]) == 2
    err = capsys.readouterr().err
    assert "create_model() raised at bare.py:" in err
    assert re.search(r"https://\S+\.html\.?\n", err), err  # the URL whole, nothing after it
    code = err.split("then `jitlens audit FILE.py:make`:\n", 1)[1]
    assert code.splitlines()[0] == "    def make():", err
    (tmp_path / "bare.py").write_text(bare + "\n\n" + textwrap.dedent(code))  # the fix as printed
    assert jitlens.main(["audit", "bare.py:make"]) == 0, capsys.readouterr()
