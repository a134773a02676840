"""Judgments made on evidence, and figures that count only jitted functions (issues 33, 35).

* raw lengths from a data grid (100, 150, 220; jax-ml/jax#2521) are retraces with time
  lost, not "a bounded set of buckets";
* ``jax.eval_shape`` / ``jax.make_jaxpr`` / ``nnx.eval_shape`` (the NNX checkpoint-restore
  flow) are no jitted functions: no rows, no traces;
* a jitted function under ``jax.hessian`` / ``jax.grad`` compiles its transformed programs
  from one trace: not "retraced 0x … (1 retrace(s))".

The in-process tests use ``jitlens.track()``; one fresh ``jitlens run`` process checks the
same program as a user runs it.
"""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
from flax import nnx

import jitlens
from conftest import run_python


def test_raw_lengths_are_retraces_with_time_lost() -> None:
    traces = [0]

    @jax.jit
    def neg_log_lik(x):
        traces[0] += 1
        return (x**2).sum()

    with jitlens.track() as t:
        for n in (100, 150, 220):
            neg_log_lik(jnp.linspace(0.0, 1.0, n))
    fn = t.stats(neg_log_lik)
    assert fn.traces == traces[0] == 3
    assert not fn.bucketed and fn.retraces == 2 and fn.seconds_lost > 0
    text = t.report().to_text(color=False, width=120)
    assert "bounded set of buckets" not in text and "retraced 2x" in text


def test_shape_only_traces_are_no_jitted_functions() -> None:
    class Tiny(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 3, rngs=rngs)

    with jitlens.track() as t:
        jax.eval_shape(lambda: jnp.ones((3, 4)))
        jax.make_jaxpr(lambda x: x * 2)(jnp.ones(2))
        abstract = nnx.eval_shape(lambda: Tiny(nnx.Rngs(0)))
    assert abstract.linear.kernel.shape == (2, 3)
    assert [f.qualname for f in t.report().functions] == []


def test_a_transformed_compile_is_not_called_a_retrace() -> None:
    traces = [0]

    @jax.jit
    def f(x):
        traces[0] += 1
        return jnp.sin(x).sum()

    with jitlens.track() as t:
        h = jax.hessian(f)
        h(jnp.ones(3))
        h(jnp.ones(3))
    fn = t.stats(f)
    assert fn.traces == traces[0] == 1 and fn.retraces == 0 and fn.seconds_lost == 0
    text = t.report().to_text(color=False, width=200)
    assert "retraced 0x" not in text and "retrace(s)" not in text
    assert fn.compiles > 1  # the transposed program compiles from the one trace: the case here
    assert "more from a cached trace, no retrace" in text
    assert "an equal key compiled again from the cached trace, not a retrace" in " ".join(
        text.split()
    )


PROGRAM = """
import functools
import jax, jax.numpy as jnp
from flax import nnx

@functools.partial(jax.jit, static_argnums=1)
def sample(key, n):
    return jax.random.normal(key, (n,)).mean()

@jax.jit
def f(x):
    return jnp.sin(x).sum()

key = jax.random.key(0)
for n in (10, 20, 10):
    sample(key, n)
jax.hessian(f)(jnp.ones(3))
jax.eval_shape(lambda: jnp.ones((3, 4)))
nnx.eval_shape(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
"""


def test_jitlens_run_says_expected_for_a_shape_static_and_counts_only_jits(tmp_path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(PROGRAM))
    proc = run_python(["-m", "jitlens", "run", "--color", "never", str(script)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "Expected once per value: `n` sets a shape" in out, out
    assert "<lambda>" not in out and "retraced 0x" not in out and "retrace(s)" not in out
    assert "2 jitted functions" in out, out


def test_a_number_used_in_python_only_gets_no_certain_traced_fix() -> None:
    """Programs equal up to literals are not enough: the number itself must be one of them.
    Used only in Python (a branch both values take alike, ``math.sqrt(n)``), it cannot be
    traced, and the fix says so in words; used as itself, the code fix is offered."""
    import functools
    import math

    import pytest

    def branch(x, n):
        return x * 2 if n > 5 else x

    def root(x, n):
        return x * math.sqrt(n)

    def scale(x, n):
        return x * n

    flows = {}
    with jitlens.track() as t:
        for f in (branch, root, scale):
            jitted = functools.partial(jax.jit, static_argnums=1)(f)
            for n in (10, 20):
                jitted(jnp.ones(2), n)
            (reason,) = [r for e in t.stats(jitted).events for r in e.reasons]
            flows[f.__name__] = (reason.flow, reason.fix.startswith("Pass `n` as a traced"))
    assert flows == {
        "branch": ("params", False),
        "root": ("params", False),
        "scale": ("data", True),
    }
    for f in (branch, root):  # the certain fix would have raised
        with pytest.raises(jax.errors.ConcretizationTypeError):
            jax.jit(f)(jnp.ones(2), 10)
    assert float(jax.jit(scale)(jnp.ones(2), 10)[0]) == 10.0  # and for scale it works
