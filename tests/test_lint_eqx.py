"""``jitlens lint`` on Equinox traps (JL101-JL103): the words of each finding, and what each fix is worth.

The positive/negative snippets live in ``lint_eqx_examples`` and run with every
other rule's in ``test_lint.py``; here the messages name equinox's behaviour,
and the fixes the rules print are checked at run time against counters in
the jitted bodies.
"""

from __future__ import annotations

import textwrap

import pytest

from conftest import counted
from jitlens import lint_source, main
from lint_eqx_examples import EQX_RULE_EXAMPLES

eqx = pytest.importorskip("equinox")


def _lint(source: str):
    return lint_source(textwrap.dedent(source), "snippet.py")


def test_messages_name_filter_jit_and_the_users_names():
    by_code = {code: _lint(bad) for code, (bad, _good) in EQX_RULE_EXAMPLES.items()}
    jl101 = by_code["JL101"]
    assert "wraps a lambda" in jl101[1].message and "eqx.filter_jit" in jl101[1].message
    assert any("the function `forward` defined there" in f.message for f in jl101)
    assert "@eqx.filter_jit" in jl101[0].fix
    jl102 = by_code["JL102"]
    assert [f.message.split("`")[3] for f in jl102] == [
        "lr",
        "0.1 / (i + 1)",
        "decayed",
        "lr",  # lr = 0.1 * (1 - i / NUM_STEPS)
        "lr_at(i)",  # def lr_at(i): return 0.1 * 0.5 ** (i // 10)
        "0.5 * (1 + math.cos(math.pi * i / len...",
    ]
    assert "unlike jax.jit" in jl102[0].message
    assert jl102[0].fix.endswith("`jnp.asarray(lr)` (one compile for every value)")
    jl103 = by_code["JL103"]
    assert [f.message.split("`")[1] for f in jl103] == ["MLP.act", "MLP.norm", "MLP.out"]
    assert "`self.act = act`" in jl103[0].fix
    assert "the nested function `squash`" in jl103[2].message


def test_noqa_and_select(tmp_path, capsys):
    bad = EQX_RULE_EXAMPLES["JL103"][0]
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(bad).replace("# <-", "# noqa: JL103", 1))
    assert main(["lint", "--select", "JL103", str(path)]) == 1
    out = capsys.readouterr().out
    found, silenced = out.split("silenced by `# noqa`")
    assert found.count("JL103") == 2 and "MLP.act" not in out  # the finding and its rule
    assert silenced.startswith(" (JL103: ") and silenced.count("JL103") == 1
    assert main(["lint", "--select", "JL101", str(path)]) == 0


def test_the_rules_are_right_about_equinox_at_run_time():
    """JL101/JL102/JL103's bad patterns retrace under eqx.filter_jit; their fixes don't."""
    import functools

    import jax
    import jax.numpy as jnp

    count = counted()

    def body(x, lr):
        count.tick()
        return x * lr

    x = jnp.ones(2)
    for lr in (0.1, 0.2, 0.3):  # JL102's trap
        eqx.filter_jit(body)(x, lr)
    assert count.n == 3
    count.n = 0
    for lr in (0.1, 0.2, 0.3):  # its fix
        eqx.filter_jit(body)(x, jnp.asarray(lr))
    assert count.n == 1

    count.n = 0
    for _ in range(3):  # JL101's trap: a new lambda each time
        eqx.filter_jit(lambda v: body(v, 2.0))(x)
    assert count.n == 3

    leaky = functools.partial(jax.nn.leaky_relu, negative_slope=0.1)

    class M(eqx.Module):
        act: object

        def __init__(self, shared: bool):
            self.act = leaky if shared else functools.partial(jax.nn.leaky_relu, negative_slope=0.1)

    @eqx.filter_jit
    def apply(m, v):
        count.tick()
        return m.act(v)

    count.n = 0
    for _ in range(3):  # JL103's trap
        apply(M(False), x)
    assert count.n == 3
    count.n = 0
    for _ in range(3):  # its fix: one partial built at module level
        apply(M(True), x)
    assert count.n == 1
