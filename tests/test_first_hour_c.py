"""The first hour again (round of 2026-12-02): a daily Flax NNX user new to jitlens.

Found by cloning, installing from the registry, reading the site in build order and running
`jitlens` on small programs of one's own. Each test stands for one place where that user
stopped, guessed or got something else than the page said.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import jitlens
from conftest import ROOT

TRAINING_PROGRAM = """\
import jax
import jax.numpy as jnp


@jax.jit
def step(w, x):
    return w - 0.1 * x.mean()


w = jnp.zeros(3)
for _ in range(3):
    w = step(w, jnp.ones((4, 3)))
"""


def test_check_on_your_own_program_points_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`jitlens check train.py`, read from `jitlens --help` as "check my program", answered
    only "it has no callable jit_forward": nothing said that `check` grades an exercise, nor
    which command looks at one's own program."""
    program = tmp_path / "my train.py"
    program.write_text(TRAINING_PROGRAM)
    assert jitlens.main(["check", str(program)]) == 2
    out = capsys.readouterr().out
    assert "no callable jit_forward" in out
    assert f"`jitlens run '{program}'`" in out, out
    assert jitlens.main(["--help"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  check ")]
    assert "exercise" in line and "not your own program" in line


def test_the_multi_host_page_names_the_lines_its_program_has() -> None:
    """docs/howto/tasks/multi-host.md showed `normalize (tests/multiprocess_child.py:67)`;
    the command it gives printed :76 (the child had grown): a reader comparing the two
    wonders which program ran."""
    page = (ROOT / "docs" / "howto" / "tasks" / "multi-host.md").read_text()
    child = (ROOT / "tests" / "multiprocess_child.py").read_text().splitlines()
    cited = re.findall(r"(\w+)\s+\(?tests/multiprocess_child\.py:(\d+)", page)
    assert len(cited) >= 3, cited
    for name, line in cited:
        decorated = child[int(line) - 1 : int(line) + 1]
        assert any(f"def {name}(" in text for text in decorated), (name, line, decorated)


MODEL_FILE = """\
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, width: int = 4) -> None:
        self.fc = nnx.Linear(4, width, rngs=rngs)

    def __call__(self, x):
        return self.fc(x)
"""


def test_auditing_a_module_class_says_how_to_write_the_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`jitlens audit model.py:MLP` (a newcomer's first try: the class, not a factory) said
    "MLP() raised TypeError: MLP.__init__() missing 1 required positional argument: 'rngs'",
    a traceback's words with no way on. The factory it now prints is applied here."""
    path = tmp_path / "model.py"
    path.write_text(MODEL_FILE)
    assert jitlens.main(["audit", f"{path}:MLP"]) == 2
    err = capsys.readouterr().err
    fix = "def make_model(): return MLP(rngs=nnx.Rngs(0))"
    assert "MLP needs arguments (rngs)" in err and f"`{fix}`" in err, err
    path.write_text(MODEL_FILE + "\n\n" + fix + "\n")
    assert jitlens.main(["audit", f"{path}:make_model"]) == 0, capsys.readouterr()
    assert "model: MLP" in capsys.readouterr().out


def test_a_static_number_turned_state_is_told_how_to_set_it_and_the_fix_works() -> None:
    """A softmax temperature annealed per epoch on the model: the fix said "update it through
    `[...]`", which a newcomer could not turn into code; it now writes the assignment with the
    path the call used. The printed statement is applied here, as written."""
    import jax.numpy as jnp
    from flax import nnx

    class Scaled(nnx.Module):
        def __init__(self, temperature, rngs):
            self.fc = nnx.Linear(2, 2, rngs=rngs)
            self.temperature = temperature

        def __call__(self, x):
            scale = self.temperature
            return self.fc(x) / (scale[...] if isinstance(scale, nnx.Variable) else scale)

    traces = []

    @nnx.jit
    def forward(model, x):
        traces.append(1)
        return model(x).sum()

    def anneal(model, set_temperature):
        outs = []
        for epoch in range(3):
            set_temperature(model, 1.0 / (1 + epoch))
            outs.append(float(forward(model, jnp.ones((1, 2)))))
        return outs

    def plain(model, value):
        model.temperature = value

    with jitlens.track() as t:
        before = anneal(Scaled(1.0, nnx.Rngs(0)), plain)
    (reason,) = t.stats(forward).events[1].reasons
    _, fix = reason.message, reason.fix
    assert "`model.temperature[...] = new_value`" in fix, fix
    assert "`self.temperature = nnx.Variable(jnp.asarray(1.0))`" in fix, fix
    assert len(traces) == 3

    def as_printed(model, new_value):
        model.temperature[...] = new_value

    traces.clear()
    after = anneal(Scaled(nnx.Variable(jnp.asarray(1.0)), nnx.Rngs(0)), as_printed)
    assert len(traces) == 1
    assert after == pytest.approx(before, rel=1e-6)


def test_folded_wrappers_say_where_they_are_defined_once() -> None:
    """`nnx.jit(train_step)` re-wrapped per step: the explanation's header read "4 wrappers
    of `train_step` at p.py:7, 1 trace each  retraced 3x, 0.39 s lost   (defined at p.py:7)",
    the place twice, which wrapped a 100-column terminal onto a second line."""
    import jax.numpy as jnp
    from flax import nnx

    def train_step(x):
        return x + 1

    with jitlens.track() as t:
        for _ in range(3):
            nnx.jit(train_step)(jnp.ones(2))
    text = t.report().to_text(width=200)
    (header,) = [line for line in text.splitlines() if line.startswith("3 wrappers of")]
    assert "retraced 2x" in header and "defined at" not in header, header
    assert header.count(".py:") == 1, header
