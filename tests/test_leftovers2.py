"""Explainer and advice leftovers on programs nobody on the team had run jitlens on
(``tests/leftovers2_program.py``: four programs in one process, each jitted body counting its
own traces). The program runs as a user runs it, ``jitlens run --json``, in a fresh process as
written, then again with jitlens' printed fixes applied (the pytree fix of 1 is taken from
the report and written into the class): the fixes must remove the retraces and keep the
outputs.

1. jax#28418 made to work: a copy of the static object changed each step, or a new instance
   each step: never "reuse one instance" (that is the stale hit jax#28418 reported) but trace
   the numbers that changed (the pytree registration, code for the class) or freeze the class.
2. A training set and a test set evaluated every epoch: two shapes the program needs, each
   called from its own line and reused, are expected (no pad fix, nothing lost); a ragged last
   batch and a growing prefix keep the pad and the preallocation fixes.
3. A step over a dict of 500 small arrays: ``many_leaves`` advice with the measured host time
   per cache hit and the predicted saving (``benchmarks/many_leaves.py`` compares it with the
   saving measured by applying the fix); applied, one array crosses the call.
4. A closure jitted per call over two long-named values: its fix, longer than a message may
   be, is printed whole (fixes were cut at 240 characters: blackjax's kernel fix ended
   "... with them …", see ``test_trial_e.py``).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

import jax
import jax.numpy as jnp
import pytest

import jitlens
from conftest import run_python

PROGRAM = pathlib.Path(__file__).parent / "leftovers2_program.py"

#: One worker runs the module: its two processes run once.
pytestmark = pytest.mark.xdist_group("leftovers2")


def _run(path: pathlib.Path, scenario: str, tmp: pathlib.Path) -> dict:
    report = tmp / f"{scenario}.json"
    env = {"NO_COLOR": "1", "COLUMNS": "100"}
    proc = run_python(
        ["-m", "jitlens", "run", "--json", str(report), str(path), scenario], cwd=tmp, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    data = json.loads(report.read_text())
    rows = {f["qualname"]: f for f in data["functions"] if not f["internal"]}
    every = [(f["qualname"], f) for f in data["functions"] if not f["internal"]]
    return {**out, "rows": rows, "every": every, "report": data, "text": proc.stderr}


def _reasons(row: dict) -> list[dict]:
    return [r for e in row["events"] for r in e["reasons"]]


def _applied(source: str, before: dict) -> str:
    """``source`` with the pytree fix jitlens printed for each class written in: the decorator
    above the class, the methods in its body, and the jit option the fix drops."""
    for cls, fn in (("Scale", "Scale.f"), ("Shift", "Shift.g")):
        fix = _reasons(before["rows"][fn])[0]["fix"]
        head, *methods = fix.split("\n")
        decorator = re.search(r"Put `(@[\w.]+)` above `class " + cls, head).group(1)
        assert "drop `static_argnums=0`" in head, head
        source = source.replace(f"# @@DECORATOR {cls}@@", decorator)
        source = source.replace(f"    # @@METHODS {cls}@@", "\n".join("    " + m for m in methods))
    return source.replace("@partial(jax.jit, static_argnums=0)", "@partial(jax.jit)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("leftovers2")
    before = _run(PROGRAM, "before", tmp)
    fixed = tmp / "fixed_program.py"
    fixed.write_text(_applied(PROGRAM.read_text(), before))
    return {"before": before, "after": _run(fixed, "after", tmp)}


def test_counts_equal_the_programs_own_and_the_fixes_keep_the_outputs(runs: dict) -> None:
    for scenario in ("before", "after"):
        run = runs[scenario]
        for fn, truth in run["truth"].items():
            # a closure jitted per call is one row per wrapper in the JSON: their sum
            rows = [r for n, r in run["every"] if n == fn or n.endswith("." + fn)]
            assert rows and sum(r["traces"] for r in rows) == truth, (scenario, fn, rows)
    assert runs["after"]["out"] == runs["before"]["out"]
    after = runs["after"]["truth"]
    # applied, each fix leaves one trace (the two data sets keep their two compiles)
    assert after == {**{k: 1 for k in after}, "accuracy": 2}, after


def test_a_new_instance_per_step_is_never_told_to_reuse_one(runs: dict) -> None:
    for fn, attr in (("Scale.f", "a"), ("Shift.g", "b")):
        reasons = _reasons(runs["before"]["rows"][fn])
        assert {r["fix_kind"] for r in reasons} == {"no_eq_traced"}, reasons
        fix = reasons[0]["fix"]
        assert "reuse" not in fix, fix
        assert f"differ in `{attr}`: one instance changed in place would keep running" in fix
        assert f"def tree_flatten(self): return (self.{attr},), ()" in fix, fix
    after = runs["after"]["rows"]
    assert all(_reasons(after[fn]) == [] for fn in ("Scale.f", "Shift.g")), after


def test_two_data_sets_each_reused_are_expected_and_changing_shapes_keep_their_fix(
    runs: dict,
) -> None:
    before = runs["before"]
    row = before["rows"]["accuracy"]
    assert (row["traces"], row["compiles"]) == (2, 2)
    # the summary as a user reads it, whole (the exit summary stops at its line budget)
    report = jitlens.Report.from_dict(before["report"])
    text = " ".join(report.to_text(width=100).split())
    assert "`batch[0]` took 2 shapes, each passed from a line of its own and reused" in text
    for shape in ("f32[24,3]", "f32[10,3]"):
        assert re.search(re.escape(shape) + r" at \S*leftovers2_program.py:\d+, 3 calls", text)
    section = text.split("accuracy retraced 1x, 0.00 s lost", 1)[1].split("retraced", 1)[0]
    assert "pad smaller batches" not in section and "expected, not lost" in section, section
    assert report.function("accuracy").seconds_lost == 0.0
    assert report.function("batch_loss").seconds_lost > 0
    # a ragged last batch from one line, and a prefix growing by one: their fixes stay
    (ragged, *_) = _reasons(before["rows"]["batch_loss"])
    assert ragged["fix_kind"] == "shape" and ragged["fix"].startswith("Keep shapes fixed: pad")
    (grow, *_) = _reasons(before["rows"]["next_token"])
    assert grow["fix_kind"] == "growing" and not grow["expected"], grow


def test_thousands_of_leaves_get_measured_advice_and_the_fix_removes_it(runs: dict) -> None:
    advice = {a["kind"]: a for a in runs["before"]["rows"]["sgd"]["advice"]}
    leaves = advice["many_leaves"]
    assert leaves["message"].startswith("501 pytree leaves in every call (`params` 500"), leaves
    assert "on the host per cache hit vs" in leaves["message"], leaves
    assert leaves["estimated_saving_seconds"] > 0, leaves
    assert "`flat, unravel = jax.flatten_util.ravel_pytree(params)`" in leaves["fix"], leaves
    after = runs["after"]["rows"]["sgd"]
    assert "many_leaves" not in {a["kind"] for a in after["advice"]}, after["advice"]


def test_a_fix_longer_than_a_message_is_printed_whole(runs: dict) -> None:
    rows = runs["before"]["rows"]
    (r, *_) = [
        r for n, row in rows.items() if n.endswith("penalised_density") for r in _reasons(row)
    ]
    assert r["fix_kind"] == "closure", r
    assert len(r["fix"]) > 240 and r["fix"].endswith("would freeze their first values."), r
    assert "…" not in r["fix"]
    text = " ".join(runs["before"]["text"].split())
    assert " ".join(r["fix"].split()) in text, text  # on the terminal, wrapped, whole


class Mode:
    def __init__(self, reduce: str) -> None:
        self.reduce = reduce


@dataclasses.dataclass(frozen=True)
class FrozenMode:
    reduce: str


def _reductions(cls: type) -> tuple[object, list[float], int]:
    traces = [0]

    def reduce(x: jax.Array, mode: object) -> jax.Array:
        traces[0] += 1
        return jnp.sum(x) if mode.reduce == "sum" else jnp.max(x)  # type: ignore[attr-defined]

    f = jax.jit(reduce, static_argnums=1)
    out = [float(f(jnp.arange(3.0), cls(r))) for r in ("sum", "max", "sum", "max")]
    return f, out, traces[0]


def test_a_new_configuration_per_call_is_frozen_not_reused() -> None:
    """A class without ``__eq__`` whose instances hold other strings: a frozen dataclass (one
    compile per configuration), never "reuse one instance" (it would keep the first mode)."""
    with jitlens.track() as t:
        f, out, traces = _reductions(Mode)
    fn = t.stats(f)
    assert fn.traces == traces == 4
    reasons = [r for e in fn.events for r in e.reasons]
    assert {r.fix_kind for r in reasons} == {"no_eq_values"}, reasons
    assert "Make `Mode` a frozen dataclass" in reasons[0].fix, reasons[0].fix
    assert "one compile per distinct `reduce`" in reasons[0].fix, reasons[0].fix
    assert "or reuse one instance" not in reasons[0].fix
    with jitlens.track() as t:  # applied: one compile per configuration, the same outputs
        f, fixed, traces = _reductions(FrozenMode)
    assert t.stats(f).traces == traces == 2 and fixed == out
