"""A jit wrapper re-created per epoch is one function in every view, however many wrappers.

Ground truth: the body's counter (one append per trace) and the loop's own
call numbering (epoch ``k``'s first call is call ``4 k + 1``).
"""

from __future__ import annotations

import re

import jax.numpy as jnp
import pytest
from flax import nnx

import html_dom
import jitlens

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


def _row(text: str, epochs: int) -> tuple[int, int]:
    """The folded row's calls and traces in the text's table."""
    found = re.search(rf"\n train_step \u00d7{epochs} +nnx\.jit +(\d+) +(\d+) ", text)
    assert found, text
    return int(found.group(1)), int(found.group(2))


def _calls(page: html_dom.Node) -> list[tuple[int, str, int]]:
    """(call number, what it did, entry) of every call the HTML timeline marks, in order."""
    timeline = page.find("svg", "timeline")
    out = []
    for mark in timeline.find_all("rect", "mark") + timeline.find_all("circle"):
        tip = re.match(r"call #(\d+): (.+?) \u2192 entry #(\d+)", mark.attrs["data-tip"])
        assert tip, mark.attrs
        out.append((int(tip.group(1)), tip.group(2), int(tip.group(3))))
    return sorted(out)


@pytest.fixture(scope="module")
def reports() -> dict[tuple[int, bool], tuple[jitlens.Report, int]]:
    return {(e, t): _run(e, t) for e, t in [(2, True), (3, True), (3, False)]}


@pytest.mark.parametrize("epochs", [2, 3])
def test_two_or_more_wrappers_are_one_row_and_one_function(reports, epochs: int) -> None:
    report, traced = reports[(epochs, True)]
    text = report.to_text(width=100)
    calls, traces = _row(text, epochs)
    assert calls == epochs * len(EPOCH) and traces == traced == 2 * epochs
    assert text.startswith(f"jitlens: 1 jitted function, {traced} traces")
    assert text.count("\n train_step") == 1 and f"\n train_step \u00d7{epochs} " in text  # one row
    assert f"\n{epochs} wrappers of `train_step` at " in text  # its explanation says where
    page = html_dom.parse(report.to_html())
    assert (
        page.find("svg", "timeline")
        .attrs["data-function"]
        .startswith(f"{epochs} wrappers of `train_step` at ")
    )
    cards = [c.text() for c in page.find_all("div", "card")]
    assert cards[0] == "1jitted function"


@pytest.mark.parametrize("timeline", [True, False])
def test_calls_are_numbered_across_the_wrappers(reports, timeline: bool) -> None:
    report, _ = reports[(3, timeline)]
    page = html_dom.parse(report.to_html())
    traced = [(n, what, entry) for n, what, entry in _calls(page) if "trace" in what]
    assert [n for n, _, _ in traced] == [1, 4, 5, 8, 9, 12]
    # each later epoch's first call, call #5 and call #9: a new wrapper of the full batch's key
    assert [n for n, what, entry in traced if "retrace" in what and entry == 0] == [5, 9]
    (second,) = [a.text() for a in page.find_all("article", "retrace") if "retrace #2 " in a.text()]
    assert "(call #5)" in second and "new_function" in second
    text = report.to_text(width=100)
    assert "(call #1)" not in text.split("retrace #1")[1]  # no later retrace restarts at call #1


def test_the_compiled_entries_of_the_wrappers_are_merged(reports) -> None:
    report, _ = reports[(3, True)]
    truth = [0 if n == 4 else 1 for n in EPOCH] * 3  # two signatures: full and ragged batches
    page = html_dom.parse(report.to_html())
    calls = _calls(page)  # every call's time and entry, across the wrappers
    assert [n for n, _, _ in calls] == list(range(1, 13))
    assert [entry for _, _, entry in calls] == truth
    table = page.find("table", "entries")
    cells = [[c.text() for c in r.find_all("td")][:4] for r in table.find_all("tr", "entry")]
    assert [(c[0], c[2], c[3]) for c in cells] == [("#0", "9", "3"), ("#1", "3", "3")]


def test_wrappers_sharing_one_trace_say_one_trace() -> None:
    # once: "3 wrappers of `f` at ..., 1 traces" (numpyro's sample step rebuilt per run, reused)
    import jax

    def f(x):
        return x + 1

    with jitlens.track() as t:
        for _ in range(3):  # one function: JAX's cache is shared, the first wrapper traces
            jax.jit(f)(jnp.ones(2))
    page = t.report().to_html()  # the folded row's name, as the page shows it
    assert "3 wrappers of `" in page and ', 1 trace"' in page and "1 traces" not in page
