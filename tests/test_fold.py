"""A jit wrapper re-created per epoch is one function in every view, however many wrappers.

Ground truth: the body's counter (one append per trace) and the loop's own
call numbering (epoch ``k``'s first call is call ``4 k + 1``).
"""

from __future__ import annotations

import jax.numpy as jnp
import pytest
from flax import nnx

import html_dom
import jitlens
from jitlens._render.html import render_html
from jitlens._render.text import fold_wrappers

#: Batch sizes of one epoch: three full batches, then a ragged one.
EPOCH = [4, 4, 4, 2]


class _Tiny(nnx.Module):
    def __init__(self) -> None:
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))


STEP = """
def train_step(model, x):
    "{run}"  # code of its own (code objects compare by content, not by file)
    TRACED.append(x.shape[0])
    return model.lin(x).sum()
"""


def _run(epochs: int, timeline: bool) -> tuple[jitlens.Report, int]:
    """A training loop of its own code (no earlier wrapper of it in this process)."""
    traced: list[int] = []
    space = {"TRACED": traced}
    run = f"train_{epochs}_{timeline}"
    exec(compile(STEP.format(run=run), f"{run}.py", "exec"), space)
    model = _Tiny()
    kept = []  # each wrapper kept alive: how a dropped one's keys are explained is not tested here
    with jitlens.track(timeline=timeline) as t:
        for _ in range(epochs):
            step = nnx.jit(space["train_step"])  # the trap: a new wrapper every epoch
            kept.append(step)
            for n in EPOCH:
                step(model, jnp.ones((n, 2)))
    return t.report(), len(traced)


@pytest.fixture(scope="module")
def reports() -> dict[tuple[int, bool], tuple[jitlens.Report, int]]:
    return {(e, t): _run(e, t) for e, t in [(2, True), (3, True), (3, False)]}


@pytest.mark.parametrize("epochs", [2, 3])
def test_two_or_more_wrappers_are_one_row_and_one_function(reports, epochs: int) -> None:
    report, traced = reports[(epochs, True)]
    (row,) = fold_wrappers(report.user_functions())
    assert row.qualname.startswith(f"{epochs} wrappers of `train_step` at ")
    assert row.calls == epochs * len(EPOCH) and row.traces == traced == 2 * epochs
    text = report.to_text(width=100)
    assert text.startswith(f"jitlens: 1 jitted function, {traced} traces")
    assert text.count("\n train_step") == 1 and f"\n train_step \u00d7{epochs} " in text  # one row
    assert f"\n{epochs} wrappers of `train_step` at " in text  # its explanation says where
    cards = [c.text() for c in html_dom.parse(render_html(report)).find_all("div", "card")]
    assert cards[0] == "1jitted function"


@pytest.mark.parametrize("timeline", [True, False])
def test_calls_are_numbered_across_the_wrappers(reports, timeline: bool) -> None:
    report, _ = reports[(3, timeline)]
    (row,) = fold_wrappers(report.user_functions())
    new_wrapper = [e for e in row.events if any(r.kind == "new_function" for r in e.reasons)]
    # each later epoch's first call: call #5 and call #9 (call_index 4 and 8)
    assert [e.call_index for e in new_wrapper] == [4, 8]
    text = report.to_text(width=100)
    assert "(call #1)" not in text.split("retrace #1")[1]  # no later retrace restarts at call #1
    assert sorted(e.call_index for e in row.events) == [0, 3, 4, 7, 8, 11]


def test_the_compiled_entries_of_the_wrappers_are_merged(reports) -> None:
    report, _ = reports[(3, True)]
    (row,) = fold_wrappers(report.user_functions())
    truth = [0 if n == 4 else 1 for n in EPOCH] * 3  # two signatures: full and ragged batches
    assert list(row.call_entries) == truth
    assert len(row.call_times) == row.calls == 12
    page = html_dom.parse(render_html(report))
    table = page.find("table", "entries")
    cells = [[c.text() for c in r.find_all("td")][:4] for r in table.find_all("tr", "entry")]
    assert [(c[0], c[2], c[3]) for c in cells] == [("#0", "9", "3"), ("#1", "3", "3")]
