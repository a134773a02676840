"""Which compiled entry each call went to (``call_entries``), against ground truth.

The truth is the order in which the jitted body first saw each signature (a
list appended to inside the body): entry ``k`` is the k-th distinct signature
traced, and every call of that signature went to it. A call jitlens cannot tie
to an entry is ``-1`` (unknown), never another entry's number.
"""

from __future__ import annotations

import json
import textwrap

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import jitlens
from conftest import run_python

eqx = pytest.importorskip("equinox")

#: Batch sizes of the issue's trial: alternating shapes, then a ragged last batch.
ALTERNATING = [3, 4, 4, 3, 4, 4]
RAGGED_EPOCHS = [4, 4, 4, 2] * 3


def _expected(signatures: list[object], traced: list[object]) -> list[int]:
    """The entry of each call: the index of its signature among the traced ones."""
    return [traced.index(s) for s in signatures]


def _row(report: jitlens.Report, name: str) -> jitlens.FunctionReport:
    (row,) = [f for f in report.functions if f.name == name]
    return row


class _Tiny(nnx.Module):
    def __init__(self) -> None:
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.lin(x)


def _train_step(traced: list[object]):
    def train_step(model, optimizer, batch):
        traced.append(batch["x"].shape[0])

        def loss(m):
            return ((m(batch["x"]) - batch["y"]) ** 2).mean()

        value, grads = nnx.value_and_grad(loss)(model)
        optimizer.update(model, grads)
        return value

    return train_step


@pytest.mark.parametrize("sizes", [ALTERNATING, RAGGED_EPOCHS], ids=["alternating", "ragged"])
def test_an_nnx_optimizer_step_with_a_batch_dict(sizes: list[int]) -> None:
    traced: list[object] = []
    model = _Tiny()
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    step = nnx.jit(_train_step(traced))
    with jitlens.track(timeline=True) as t:
        for n in sizes:
            step(model, optimizer, {"x": jnp.ones((n, 2)), "y": jnp.zeros((n, 2))})
    row = _row(t.report(), "train_step")
    assert list(row.call_entries) == _expected(sizes, traced)
    assert len(traced) == len(set(sizes))


def test_keyword_arguments_and_cached_partial() -> None:
    traced: list[object] = []

    @nnx.jit
    def step(model, x):
        traced.append(x.shape[0])
        return model(x).sum()

    model = _Tiny()
    with jitlens.track(timeline=True) as t:
        cached = nnx.cached_partial(step, model)
        for n in ALTERNATING:
            cached(x=jnp.ones((n, 2)))
    row = _row(t.report(), "step")
    assert list(row.call_entries) == _expected(ALTERNATING, traced)


def test_one_light_signature_for_two_entries_is_unknown_not_wrong() -> None:
    """A Module's static attribute the cheap signature cannot see: hits are -1."""
    traced: list[object] = []

    class Flagged(nnx.Module):
        def __init__(self) -> None:
            self.flag = False

    @nnx.jit
    def step(model, x):
        traced.append(model.flag)
        return x * 2 if model.flag else x

    model = Flagged()
    flags = [False, True, False, True]
    with jitlens.track(timeline=True) as t:
        for flag in flags:
            model.flag = flag
            step(model, jnp.ones(2))
    row = _row(t.report(), "step")
    truth = _expected(flags, traced)
    assert row.call_entries[:2] == tuple(truth[:2])  # the two misses, tied by their traces
    assert row.call_entries[2:] == (-1, -1)


def test_filter_jit_static_floats_and_a_call_inside_another_jit() -> None:
    traced: list[object] = []

    @eqx.filter_jit
    def scale(x, lr):
        traced.append(lr)
        return x * lr

    @jax.jit
    def outer(x):
        return scale(x, 0.5) + 1

    values = [0.1, 0.2, 0.1, 0.2]
    with jitlens.track(timeline=True) as t:
        for lr in values:
            scale(jnp.ones(2), lr)
        outer(jnp.ones(2))
    row = _row(t.report(), "scale")
    assert row.calls == len(row.call_times) == len(values) + 1
    # the call inside `outer` was inlined into outer's entry: none of its own
    assert list(row.call_entries) == [*_expected(values, traced), -1]
    assert [e.call_index for e in row.events][: len(set(values))] == [0, 1]


SCRIPT = """
import equinox as eqx, jax.numpy as jnp
TRACED = []
@eqx.filter_jit
def scale(x, lr):
    TRACED.append(lr)
    return x * lr
for lr in [0.1, 0.2, 0.1, 0.1]:
    scale(jnp.ones(2), lr)
print("TRACED", TRACED)
"""


def test_filter_jit_imported_after_tracking_started_keeps_its_first_call(tmp_path) -> None:
    """`jitlens run` starts before the program imports equinox: call #1 is on the timeline."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / "r.json"
    done = run_python(["-m", "jitlens", "run", "--json", str(out), str(script)])
    assert done.returncode == 0, done.stderr
    assert "TRACED [0.1, 0.2]" in done.stdout
    (row,) = [f for f in json.loads(out.read_text())["functions"] if f["name"] == "scale"]
    assert row["calls"] == len(row["call_times"]) == 4
    assert row["call_entries"] == [0, 1, 0, 0]
    assert [e["call_index"] for e in row["events"]] == [0, 1]


def test_a_model_built_anew_each_epoch_is_its_own_entry() -> None:
    """The seed's CNN: a partial stored on the model makes each new model a new entry."""
    import functools

    traced: list[object] = []

    class Pooled(nnx.Module):
        def __init__(self) -> None:
            self.pool = functools.partial(jnp.multiply, 2.0)

    @nnx.jit
    def step(model, x):
        traced.append(id(model))
        return model.pool(x)

    with jitlens.track(timeline=True) as t:
        for _ in range(3):
            model = Pooled()  # the last one is freed: its address may be the next one's
            for _ in range(3):
                step(model, jnp.ones(2))
    row = _row(t.report(), "step")
    assert len(traced) == 3
    assert list(row.call_entries) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_calls_past_the_first_ones_keep_their_entries_in_the_timeline_window() -> None:
    """The window's lean path (past the advisor's first calls): a hit of a jit holding one
    executable goes to it with no signature built; a new shape, alternating shapes and a
    call that raises still file every call under the right entry, or -1."""
    traced: list[object] = []
    sizes = [3] * 40 + [4] + [3, 4] * 5 + [3] * 5
    with jitlens.track(timeline=True) as t:

        @jax.jit
        def f(x):
            traced.append(getattr(x, "shape", [None])[0])
            return x * 2  # None * 2 raises

        outs = [f(jnp.ones(n)) for n in sizes]
        with pytest.raises(TypeError):
            f(None)
        outs.append(f(jnp.ones(3)))
    row = _row(t.report(), "f")
    sizes.append(3)
    assert traced[:2] == [3, 4] and len(traced) == row.traces == 3  # the third body raised
    assert (row.calls, row.cache_hits) == (len(sizes) + 1, len(sizes) - 2)
    assert len(row.call_times) == len(row.call_entries) == row.calls
    entries = list(row.call_entries)
    assert entries[:-2] == _expected(sizes[:-1], traced) and entries[-1] == 0
    assert entries[-2] == -1  # the call that raised compiled nothing
    assert all(float(o[0]) == 2.0 for o in outs)
