"""Does every printed fix work? Apply it to the program, run it again, count.

A corpus of small programs, each the faulty pattern of a public report or
example (the shared cases of ``tests/cases``, flax/optax/bayesflow issues,
optax's gradient-accumulation example). For each program this runs the faulty
version under ``jitlens.track()``, takes the fix of every retrace's first
reason (the headline), and applies it:

* mechanically where the fix is code: each backticked statement of the fix
  replaces the program's statement with the same target (``self.step = ...``,
  ``self.step[...] += 1`` for ``self.step += 1``), wraps the value the program
  had (``value`` in ``nnx.Variable(jnp.asarray(value, ...))``), or, when it
  reads its own target (``acc = jnp.asarray(acc, ...)``), follows the
  statement it retypes;
* by the case's written rewrite where the fix is prose ("pad smaller batches",
  "call ... in ``__call__``"), after checking the fix printed is that prose.

The fixed program must trace once (a counter in the jitted body is the truth)
and return the same outputs. A fix that says the compiles are expected
("Expected once per optimizer build") is counted apart: nothing to apply, and
the case says the compiles are the program's choice.

    python benchmarks/fix_rate.py [-v]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import re
import sys
import tempfile
import textwrap
import time
import types
from typing import Any

import jax
import numpy as np

import jitlens
from jitlens._core import reasons as M
from jitlens._core import reasons as S
from jitlens._core.reasons import library as L
from jitlens._track.frontends.equinox import words as F

#: ``jl_fakelib``, the tests' own library under a ``site-packages`` folder: the corpus'
#: library-built programs that run where no real library is installed.
FAKELIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
FAKELIB = os.path.normpath(os.path.join(FAKELIB, "site-packages"))

HEADER = """\
import functools
import jax
import jax.numpy as jnp
import optax
from flax import nnx

TRACES = [0]
"""


@dataclasses.dataclass(frozen=True)
class Case:
    """A faulty program (``run()`` returns its outputs; jitted bodies bump ``TRACES[0]``)."""

    name: str
    origin: str
    source: str
    #: The fix template the headline must come from (``messages*`` constant name).
    template: str
    #: ``(old, new)`` text replacements that apply a prose fix; ``None``: apply it mechanically.
    rewrite: tuple[tuple[str, str], ...] | None = None
    #: The compiles are the program's choice: the fix must say "Expected", nothing is applied.
    expected: bool = False


@dataclasses.dataclass(frozen=True)
class Outcome:
    case: str
    template: str
    how: str  # mechanical | rewrite | expected | wrong-template | not-applied
    traces_before: int
    traces_after: int | None
    same_outputs: bool
    fix: str
    #: What the fix tells the user to edit that is not defined in the program's own file (a
    #: library's function or class: ``foreign_edits``): must be empty.
    foreign: tuple[str, ...] = ()

    @property
    def works(self) -> bool:
        if self.foreign:
            return False
        if self.how == "expected":
            return True
        ok = self.how in ("mechanical", "rewrite")
        return ok and self.traces_after == 1 and self.same_outputs


def _case(name: str, origin: str, template: str, source: str, **kw: Any) -> Case:
    return Case(name, origin, HEADER + textwrap.dedent(source), template, **kw)


CASES: tuple[Case, ...] = (
    _case(
        "step counter on a module",
        "bayesflow-org/bayesflow#223; tests/cases/06",
        "COUNTER_FIX",
        """
        class Model(nnx.Module):
            def __init__(self):
                self.linear = nnx.Linear(3, 3, rngs=nnx.Rngs(0))
                self.step = 0

            def __call__(self, x):
                self.step += 1
                return self.linear(x) * self.step

        @nnx.jit
        def train_step(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            model = Model()
            return [train_step(model, jnp.ones((2, 3))) for _ in range(4)]
        """,
    ),
    _case(
        "weakly typed metric Variable",
        "hand-written NNX metric, `nnx.Variable(0.0)`",
        "VAR_WEAK_FIX",
        """
        class Total(nnx.Module):
            def __init__(self):
                self.total = nnx.Variable(0.0)

            def update(self, x):
                self.total[...] = self.total[...] + x.sum()

        @nnx.jit
        def update(metric, x):
            TRACES[0] += 1
            metric.update(x)

        def run():
            metric = Total()
            for i in range(3):
                update(metric, jnp.full((2,), float(i)))
            return metric.total[...]
        """,
    ),
    _case(
        "Python scalar carry fed back",
        "tests/cases/15 (jax#4016-style loop carry)",
        "WEAK_FIX",
        """
        @jax.jit
        def accumulate(acc, x):
            TRACES[0] += 1
            return acc + x.sum()

        def run():
            acc = 0.0
            for i in range(3):
                acc = accumulate(acc, jnp.full((2,), float(i)))
            return acc
        """,
    ),
    _case(
        "num_heads used as a shape, models rebuilt",
        "google/flax#3863",
        "SIZE_FIX",
        """
        class Attention(nnx.Module):
            def __init__(self, num_heads):
                self.num_heads = num_heads

            def __call__(self, x):
                return x.reshape(self.num_heads, -1).sum(0)

        @nnx.jit
        def forward(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            return [forward(Attention(h), jnp.ones(8)) for h in (2, 4)]
        """,
        expected=True,
    ),
    _case(
        "functools.partial stored on a module",
        "flax discussion 'When does recreating a model trigger nnx.jit recompilation?'; cases/01",
        "PARTIAL_GRAPH_FIX",
        """
        class CNN(nnx.Module):
            def __init__(self):
                self.linear = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
                self.avg_pool = functools.partial(nnx.avg_pool, window_shape=(2,), strides=(2,))

            def __call__(self, x):
                return self.avg_pool(self.linear(x)[..., None])

        @nnx.jit
        def forward(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            return [forward(CNN(), jnp.ones((2, 4))) for _ in range(2)]
        """,
        rewrite=(
            (
                "        self.avg_pool = functools.partial(nnx.avg_pool, window_shape=(2,), "
                "strides=(2,))\n",
                "",
            ),
            (
                "self.avg_pool(self.linear(x)[..., None])",
                "nnx.avg_pool(self.linear(x)[..., None], window_shape=(2,), strides=(2,))",
            ),
        ),
    ),
    _case(
        "ragged last batch",
        "tests/cases/17",
        "SHAPE_FIX",
        """
        @jax.jit
        def loss(x):
            TRACES[0] += 1
            return (x**2).sum()

        def run():
            data = jnp.arange(20.0).reshape(10, 2)
            return [loss(data[i : i + 4]) for i in range(0, 10, 4)]
        """,
        rewrite=(
            ("def loss(x):", "def loss(x, mask):"),
            ("return (x**2).sum()", "return ((x**2) * mask[:, None]).sum()"),
            (
                "return [loss(data[i : i + 4]) for i in range(0, 10, 4)]",
                "return [loss(jnp.pad(data[i : i + 4], ((0, 4 - len(data[i : i + 4])), (0, 0))),"
                " (jnp.arange(4) < len(data[i : i + 4])).astype(data.dtype))"
                " for i in range(0, 10, 4)]",
            ),
        ),
    ),
    _case(
        "int then float argument",
        "tests/cases/18",
        "DTYPE_FIX",
        """
        @jax.jit
        def scale(x, decay):
            TRACES[0] += 1
            return x * decay

        def run():
            return [scale(jnp.ones(2), jnp.asarray(d)) for d in (1, 0.5)]
        """,
        rewrite=(("jnp.asarray(d)", "jnp.asarray(d, jnp.float32)"),),
    ),
    _case(
        "static argument that changes every call",
        "tests/cases/19",
        "STATIC_ARG_FIX",
        """
        @functools.partial(jax.jit, static_argnames="temperature")
        def softmax_t(logits, temperature):
            TRACES[0] += 1
            return jax.nn.softmax(logits / temperature)

        def run():
            return [softmax_t(jnp.ones(4), temperature=1.0 / (s + 1)) for s in range(3)]
        """,
        rewrite=(('@functools.partial(jax.jit, static_argnames="temperature")', "@jax.jit"),),
    ),
    _case(
        "jax.jit(lambda) in a loop",
        "tests/cases/21",
        "NEW_LAMBDA_FIX",
        """
        def run():
            outs = []
            for i in range(3):
                f = jax.jit(lambda x: (TRACES.__setitem__(0, TRACES[0] + 1), x * 2)[1])
                outs.append(f(jnp.full((2,), float(i))))
            return outs
        """,
        rewrite=(
            (
                "    outs = []\n",
                "    outs = []\n    step_fn_jit = jax.jit("
                "lambda x: (TRACES.__setitem__(0, TRACES[0] + 1), x * 2)[1])\n",
            ),
            (
                "        f = jax.jit(lambda x: (TRACES.__setitem__(0, TRACES[0] + 1), x * 2)[1])\n",
                "        f = step_fn_jit\n",
            ),
        ),
    ),
    _case(
        "optional mask: None, then an array",
        "tests/cases/24",
        "NONE_FIX",
        """
        @jax.jit
        def masked_mean(x, mask):
            TRACES[0] += 1
            if mask is None:
                return x.mean()
            return (x * mask).sum() / mask.sum()

        def run():
            x = jnp.arange(4.0)
            return [masked_mean(x, m) for m in (None, jnp.ones(4), None)]
        """,
        rewrite=(("for m in (None, jnp.ones(4), None)", "for m in (jnp.ones(4),) * 3"),),
    ),
    _case(
        "nnx.jit re-wrapped inside the loop",
        "tests/cases/30",
        "NEW_FUNCTION_FIX",
        """
        def train_step(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            model = nnx.Linear(3, 3, rngs=nnx.Rngs(0))
            return [nnx.jit(train_step)(model, jnp.ones((1, 3))) for _ in range(3)]
        """,
        rewrite=(
            ("def run():\n", "train_step_jit = nnx.jit(train_step)\n\n\ndef run():\n"),
            ("nnx.jit(train_step)(model", "train_step_jit(model"),
        ),
    ),
    _case(
        "sow intermediates never popped",
        "tests/cases/09",
        "SOW_FIX",
        """
        class Model(nnx.Module):
            def __init__(self):
                self.linear = nnx.Linear(3, 3, rngs=nnx.Rngs(0))

            def __call__(self, x):
                y = self.linear(x)
                self.sow(nnx.Intermediate, "hidden", y)
                return y

        @nnx.jit
        def step(model, x):
            TRACES[0] += 1
            y = model(x)
            return y

        def run():
            model = Model()
            return [step(model, jnp.ones((2, 3))) for _ in range(3)]
        """,
        rewrite=(
            (
                "    y = model(x)\n    return y",
                "    y = model(x)\n    nnx.pop(model, nnx.Intermediate)\n    return y",
            ),
        ),
    ),
    _case(
        "Variable metadata written every step",
        "tests/cases/11",
        "VAR_META_FIX",
        """
        class Model(nnx.Module):
            def __init__(self):
                self.w = nnx.Param(jnp.ones((3,)), last_update=-1)

            def __call__(self, x):
                return x * self.w[...]

        @nnx.jit
        def step(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            model = Model()
            outs = []
            for i in range(3):
                model.w.set_metadata(last_update=i)
                outs.append(step(model, jnp.ones((3,))))
            return outs
        """,
        rewrite=(
            (
                "        self.w = nnx.Param(jnp.ones((3,)), last_update=-1)\n",
                "        self.w = nnx.Param(jnp.ones((3,)))\n"
                "        self.last_update = nnx.Variable(jnp.array(-1))\n",
            ),
            ("model.w.set_metadata(last_update=i)", "model.last_update[...] = i"),
        ),
    ),
    _case(
        "module class defined in a factory",
        "tests/cases/13",
        "CLASS_FIX",
        """
        def make_model(seed):
            class MLP(nnx.Module):
                def __init__(self, rngs):
                    self.l1 = nnx.Linear(3, 4, rngs=rngs)

                def __call__(self, x):
                    return self.l1(x)

            return MLP(nnx.Rngs(seed))

        @nnx.jit
        def forward(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            return [forward(make_model(s), jnp.ones((1, 3))) for s in range(2)]
        """,
        rewrite=(
            (
                "def make_model(seed):\n    class MLP(nnx.Module):\n"
                "        def __init__(self, rngs):\n            self.l1 = nnx.Linear(3, 4, rngs=rngs)\n\n"
                "        def __call__(self, x):\n            return self.l1(x)\n\n",
                "class MLP(nnx.Module):\n    def __init__(self, rngs):\n"
                "        self.l1 = nnx.Linear(3, 4, rngs=rngs)\n\n    def __call__(self, x):\n"
                "        return self.l1(x)\n\n\ndef make_model(seed):\n",
            ),
        ),
    ),
    _case(
        "Python-float learning rate under eqx.filter_jit",
        "equinox FAQ 'my function recompiles'; issue 26's 20-compile trial",
        "eqx.SCALAR_FIX",
        """
        import equinox as eqx

        @eqx.filter_jit
        def sgd_step(w, lr):
            TRACES[0] += 1
            return w - lr * w

        def run():
            w = jnp.ones(3)
            for i in range(3):
                w = sgd_step(w, 0.1 / (i + 1))
            return w
        """,
        rewrite=(("sgd_step(w, 0.1 / (i + 1))", "sgd_step(w, jnp.asarray(0.1 / (i + 1)))"),),
    ),
    _case(
        "gradient accumulation: a new optimizer per fit",
        "optax examples/gradient_accumulation.ipynb",
        "OPTAX_STATE_FIX",
        """
        def build_update_fn(optimizer):
            @jax.jit
            def update(params, opt_state, batch):
                TRACES[0] += 1
                grads = jax.grad(lambda p: ((batch @ p) ** 2).mean())(params)
                updates, opt_state = optimizer.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state

            return update

        def fit(optimizer, params, batches):
            update = build_update_fn(optimizer)
            opt_state = optimizer.init(params)
            for batch in batches:
                params, opt_state = update(params, opt_state, batch)
            return params

        def run():
            data = jnp.ones((9, 2))
            single = fit(optax.sgd(0.1), jnp.ones(2), [data])
            multi = fit(optax.MultiSteps(optax.sgd(0.1), every_k_schedule=3), jnp.ones(2),
                        [data[:3], data[3:6], data[6:]])
            return single, multi
        """,
        expected=True,
    ),
    _case(
        "nnx.Optimizer rebuilt with another optax chain",
        "flax NNX training loop, one sweep run per optimizer",
        "OPTAX_KIND_FIX",
        """
        @nnx.jit
        def train_step(model, optimizer, x):
            TRACES[0] += 1
            grads = nnx.grad(lambda m: (m(x) ** 2).sum())(model)
            optimizer.update(model, grads)

        def run():
            outs = []
            for tx in (optax.sgd(0.1), optax.chain(optax.clip(1.0), optax.adam(1e-3))):
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                train_step(model, nnx.Optimizer(model, tx, wrt=nnx.Param), jnp.ones((2, 2)))
                outs.append(model.kernel[...])
            return outs
        """,
        expected=True,
    ),
    # ---- issue 33: other public reports (Keras, numpyro, Orbax, optax, custom_vjp, configs)
    _case(
        "static sample count sets a shape",
        "jax-ml/jax#648 (`random.randint(key, (N,))` with N static)",
        "STATIC_SHAPE_FIX",
        """
        @functools.partial(jax.jit, static_argnums=1)
        def sample(key, n):
            TRACES[0] += 1
            return jax.random.normal(key, (n,)).mean()

        def run():
            key = jax.random.key(0)
            return [sample(key, n) for n in (10, 20, 10)]
        """,
        expected=True,
    ),
    _case(
        "static slice length",
        "jax-ml/jax#4531 (`sol_x[0:n_rob*nvar]` with static counts)",
        "STATIC_SHAPE_FIX",
        """
        @functools.partial(jax.jit, static_argnames="pos")
        def prefix_mean(x, pos):
            TRACES[0] += 1
            return x[:pos].mean()

        def run():
            x = jnp.arange(10.0)
            return [prefix_mean(x, pos=p) for p in (3, 5, 3)]
        """,
        expected=True,
    ),
    _case(
        "static loop count unrolled",
        "cgiovanetti/LINX#13 (static args 3 vs 4, a Python for loop)",
        "STATIC_SHAPE_FIX",
        """
        @functools.partial(jax.jit, static_argnums=1)
        def li(x, terms):
            TRACES[0] += 1
            out = jnp.zeros_like(x)
            for k in range(1, terms + 1):
                out = out + x**k / k**2
            return out

        def run():
            x = jnp.linspace(0.0, 0.5, 4)
            return [li(x, t) for t in (3, 4)]
        """,
        expected=True,
    ),
    _case(
        "static integer used only as a factor",
        "dfm/tinygp#239 (numpyro model, recompiles on a static number)",
        "STATIC_ARG_FIX",
        """
        @functools.partial(jax.jit, static_argnames="n_points")
        def log_like(y, n_points):
            TRACES[0] += 1
            return -0.5 * (y**2).sum() - n_points * jnp.log(2 * jnp.pi) / 2

        def run():
            y = jnp.ones(5)
            return [log_like(y, n_points=n) for n in (500, 400)]
        """,
        rewrite=(('@functools.partial(jax.jit, static_argnames="n_points")', "@jax.jit"),),
    ),
    _case(
        "static bound passed to a custom_vjp's nondiff_argnums",
        "jax-ml/jax#4617, #12982 (custom_vjp clip_gradient with nondiff lo/hi)",
        "STATIC_RULE_FIX",
        """
        @functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def clip_gradient(lo, hi, x):
            return x

        def clip_fwd(lo, hi, x):
            return x, None

        def clip_bwd(lo, hi, res, g):
            return (jnp.clip(g, lo, hi),)

        clip_gradient.defvjp(clip_fwd, clip_bwd)

        @functools.partial(jax.jit, static_argnames=("lo", "hi"))
        def grad_clipped(x, lo, hi):
            TRACES[0] += 1
            return jax.grad(lambda y: (clip_gradient(lo, hi, y) ** 3).sum())(x)

        def run():
            x = jnp.arange(3.0)
            return [grad_clipped(x, lo=-b, hi=b) for b in (1.0, 2.0, 3.0)]
        """,
        rewrite=(
            ("@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))", "@jax.custom_vjp"),
            ("    return x, None\n", "    return x, (lo, hi)\n"),
            (
                "def clip_bwd(lo, hi, res, g):\n    return (jnp.clip(g, lo, hi),)",
                "def clip_bwd(res, g):\n    lo, hi = res\n    return (None, None, jnp.clip(g, lo, hi))",
            ),
            ('@functools.partial(jax.jit, static_argnames=("lo", "hi"))', "@jax.jit"),
        ),
    ),
    _case(
        "jax.jit(jax.grad(loss)) built per call",
        "pyro-ppl/numpyro#2171 (a fresh closure per MCMC.run); issue 33's grad(_likelihood)",
        "NEW_FUNCTION_FIX",
        """
        def _likelihood(w, x):
            TRACES[0] += 1
            return jnp.sum((x @ w) ** 2)

        def fit(w, x):
            g = jax.jit(jax.grad(_likelihood))
            return g(w, x)

        def run():
            return [fit(jnp.ones(3), jnp.ones((2, 3)) * i) for i in range(3)]
        """,
    ),
    _case(
        "inject_hyperparams learning rate set to a Python float",
        "google-deepmind/optax#577 (inject_hyperparams as the workaround), flax nnx.Optimizer",
        "VAR_ASSIGN_FIX",
        """
        @nnx.jit
        def step(model, opt, x):
            TRACES[0] += 1
            opt.update(model, nnx.grad(lambda m: (m(x) ** 2).sum())(model))

        def run():
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
            opt = nnx.Optimizer(model, tx, wrt=nnx.Param)
            x = jnp.ones((2, 2))
            step(model, opt, x)
            opt.opt_state.hyperparams["learning_rate"].value = 0.05
            step(model, opt, x)
            return model.kernel[...]
        """,
    ),
    _case(
        "solver state with a Python-float step size",
        "google/jaxopt#451 (weak_type inconsistency in solver state)",
        "WEAK_FIX",
        """
        def init_state(params):
            return {"params": params, "stepsize": 1.0}

        @jax.jit
        def update(state, g):
            TRACES[0] += 1
            stepsize = jnp.minimum(state["stepsize"], 1.0 / (1.0 + jnp.abs(g).max()))
            return {"params": state["params"] - stepsize * g, "stepsize": stepsize}

        def run():
            state = init_state(jnp.ones(3))
            for _ in range(3):
                state = update(state, jnp.ones(3))
            return state
        """,
    ),
    _case(
        "enable_x64 context around some calls",
        "jax-ml/jax#5488 (the x64 context manager)",
        "CONFIG_FIX",
        """
        @jax.jit
        def double(x):
            TRACES[0] += 1
            return x * 2

        def run():
            outs = [double(jnp.arange(3.0))]
            with jax.enable_x64(True):
                outs.append(double(jnp.arange(3.0, dtype=jnp.float32)))
            return outs
        """,
        rewrite=(
            (
                "    outs = [double(jnp.arange(3.0))]\n    with jax.enable_x64(True):\n",
                "    outs = []\n    with jax.enable_x64(True):\n"
                "        outs.append(double(jnp.arange(3.0, dtype=jnp.float32)))\n",
            ),
        ),
    ),
    _case(
        "default_matmul_precision context around some calls",
        "jax-ml/jax#9952 (the precision context manager)",
        "CONFIG_FIX",
        """
        @jax.jit
        def project(a, b):
            TRACES[0] += 1
            return a @ b

        def run():
            a = jnp.ones((4, 4))
            outs = [project(a, a)]
            with jax.default_matmul_precision("float32"):
                outs.append(project(a, a))
            return outs
        """,
        rewrite=(
            (
                '    outs = [project(a, a)]\n    with jax.default_matmul_precision("float32"):\n',
                '    outs = []\n    with jax.default_matmul_precision("float32"):\n'
                "        outs.append(project(a, a))\n",
            ),
        ),
    ),
    _case(
        "raw lengths from a data grid",
        "jax-ml/jax#2521 (variably shaped arrays, one compile each)",
        "SHAPE_FIX",
        """
        @jax.jit
        def neg_log_lik(x):
            TRACES[0] += 1
            return (x**2).sum()

        def run():
            return [neg_log_lik(jnp.linspace(0.0, 1.0, n)) for n in (100, 150, 220)]
        """,
        rewrite=(
            ("def neg_log_lik(x):", "def neg_log_lik(x, mask):"),
            ("return (x**2).sum()", "return ((x**2) * mask).sum()"),
            (
                "return [neg_log_lik(jnp.linspace(0.0, 1.0, n)) for n in (100, 150, 220)]",
                "return [neg_log_lik(jnp.pad(jnp.linspace(0.0, 1.0, n), (0, 256 - n)),"
                " (jnp.arange(256) < n).astype(jnp.float32)) for n in (100, 150, 220)]",
            ),
        ),
    ),
    _case(
        "log density bound with functools.partial per run",
        "pyro-ppl/numpyro#441 (MCMC.run on new data recompiles)",
        "NEW_PARTIAL_FIX",
        """
        def log_density(theta, data):
            TRACES[0] += 1
            return -((data - theta) ** 2).sum()

        def run():
            outs = []
            for seed in range(3):
                data = jnp.arange(4.0) + seed
                potential = jax.jit(functools.partial(log_density, data=data))
                outs.append(potential(jnp.zeros(())))
            return outs
        """,
        rewrite=(
            ("def run():\n", "log_density_jit = jax.jit(log_density)\n\n\ndef run():\n"),
            (
                "        potential = jax.jit(functools.partial(log_density, data=data))\n"
                "        outs.append(potential(jnp.zeros(())))",
                "        outs.append(log_density_jit(jnp.zeros(()), data=data))",
            ),
        ),
    ),
    _case(
        "nnx.Optimizer rebuilt per learning rate in a sweep",
        "google-deepmind/optax#577 (a learning-rate sweep recompiles)",
        "OPTAX_FIX",
        """
        @nnx.jit
        def train_step(model, optimizer, x):
            TRACES[0] += 1
            grads = nnx.grad(lambda m: (m(x) ** 2).sum())(model)
            optimizer.update(model, grads)

        def run():
            outs = []
            for lr in (0.1, 0.01):
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
                train_step(model, optimizer, jnp.ones((2, 2)))
                outs.append(model.kernel[...])
            return outs
        """,
        expected=True,
    ),
    _case(
        "nnx.jit static sample count sets a shape",
        "flax NNX sampling with a static num_samples (jax-ml/jax#648 under nnx.jit)",
        "STATIC_SHAPE_FIX",
        """
        @functools.partial(nnx.jit, static_argnames="num_samples")
        def sample_outputs(model, key, num_samples):
            TRACES[0] += 1
            noise = jax.random.normal(key, (num_samples, 2))
            return model(noise).mean()

        def run():
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            key = jax.random.key(0)
            return [sample_outputs(model, key, num_samples=n) for n in (4, 8)]
        """,
        expected=True,
    ),
    _case(
        "eqx.filter_jit Python int sets a shape",
        "equinox FAQ (non-arrays are static under filter_jit) with jax-ml/jax#648's shape",
        "STATIC_SHAPE_FIX",
        """
        import equinox as eqx

        @eqx.filter_jit
        def sample(key, num_samples):
            TRACES[0] += 1
            return jax.random.normal(key, (num_samples,)).mean()

        def run():
            key = jax.random.key(0)
            return [sample(key, n) for n in (8, 16, 8)]
        """,
        expected=True,
    ),
    _case(
        "eqx.Module float field changed per model",
        "equinox FAQ 'my filter_jit recompiles' (a float field is static)",
        "eqx.SCALAR_FIELD_FIX",
        """
        import equinox as eqx

        class Scaled(eqx.Module):
            weight: jax.Array
            scale: float

            def __call__(self, x):
                return self.weight * x * self.scale

        @eqx.filter_jit
        def forward(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            return [forward(Scaled(jnp.ones(3), s), jnp.ones(3)) for s in (0.5, 0.25, 0.125)]
        """,
        rewrite=(("Scaled(jnp.ones(3), s)", "Scaled(jnp.ones(3), jnp.asarray(s))"),),
    ),
    _case(
        "nnx module attribute: a Python-float scale set per epoch",
        "flax discussions (a schedule written into a module attribute)",
        "STATIC_ROLE_FIX",
        """
        class Model(nnx.Module):
            def __init__(self):
                self.linear = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                self.lr = 0.1

            def __call__(self, x):
                return self.linear(x) * self.lr

        @nnx.jit
        def forward(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            model = Model()
            outs = []
            for epoch in range(3):
                model.lr = 0.1 / (epoch + 1)
                outs.append(forward(model, jnp.ones((1, 2))))
            return outs
        """,
        rewrite=(
            ("        self.lr = 0.1\n", "        self.lr = nnx.Variable(jnp.asarray(0.1))\n"),
            ("model.lr = 0.1 / (epoch + 1)", "model.lr[...] = 0.1 / (epoch + 1)"),
        ),
    ),
    _case(
        "Dropout switched by model.train() / model.eval()",
        "flax NNX guide (train/eval modes), keras-team/keras-core#762 (training retraces)",
        "MODE_FIX",
        """
        class Net(nnx.Module):
            def __init__(self):
                self.linear = nnx.Linear(3, 3, rngs=nnx.Rngs(0))
                self.drop = nnx.Dropout(0.5, rngs=nnx.Rngs(1))

            def __call__(self, x):
                return self.drop(self.linear(x))

        @nnx.jit
        def forward(model, x):
            TRACES[0] += 1
            return model(x)

        def run():
            model = Net()
            model.train()
            forward(model, jnp.ones((1, 3)))
            model.eval()
            return forward(model, jnp.ones((1, 3)))
        """,
        expected=True,
    ),
    # ---- issue 46: the changing object is built by a library: the fix edits the user's line
    _case(
        "hk.transform rebuilt and jitted per call",
        "held-out report (dm-haiku): `jax.jit(hk.transform(forward).apply)` inside predict",
        "LIBRARY_OWNED_JIT_FIX",
        """
        import haiku as hk

        def forward(x):
            TRACES[0] += 1
            return hk.Linear(2, w_init=hk.initializers.Constant(0.5))(x)

        def predict(params, x):
            f = hk.transform(forward)
            return jax.jit(f.apply)(params, None, x)

        def run():
            x = jnp.ones((2, 3))
            params = hk.transform(forward).init(jax.random.key(0), x)
            TRACES[0] = 0
            return [predict(params, x * i) for i in range(3)]
        """,
        rewrite=(
            (
                "def predict(params, x):\n    f = hk.transform(forward)\n"
                "    return jax.jit(f.apply)(params, None, x)",
                "f = hk.transform(forward)\napply_jit = jax.jit(f.apply)\n\n"
                "def predict(params, x):\n    return apply_jit(params, None, x)",
            ),
        ),
    ),
    _case(
        "a library's transform rebuilt and jitted per call",
        "the dm-haiku pattern on jl_fakelib (tests/fixtures/site-packages): tested in CI",
        "LIBRARY_OWNED_JIT_FIX",
        f"""
        import sys
        sys.path.insert(0, {FAKELIB!r})
        import jl_fakelib

        def forward(params, x):
            TRACES[0] += 1
            return x @ params["w"]

        def predict(params, x):
            f = jl_fakelib.transform(forward)
            return jax.jit(f.apply)(params, x)

        def run():
            x = jnp.ones((2, 3))
            params = jl_fakelib.transform(forward).init(x)
            return [predict(params, x * i) for i in range(3)]
        """,
        rewrite=(
            (
                "def predict(params, x):\n    f = jl_fakelib.transform(forward)\n"
                "    return jax.jit(f.apply)(params, x)",
                "f = jl_fakelib.transform(forward)\napply_jit = jax.jit(f.apply)\n\n"
                "def predict(params, x):\n    return apply_jit(params, x)",
            ),
        ),
    ),
    _case(
        "a library's event object rebuilt per call",
        "the diffrax pattern on jl_fakelib (tests/fixtures/site-packages): tested in CI",
        "LIBRARY_OWNED_OBJECT_FIX",
        f"""
        import sys
        sys.path.insert(0, {FAKELIB!r})
        import jl_fakelib

        @jax.jit
        def _step(y, event):
            TRACES[0] += 1
            return jl_fakelib.solve(y, event)

        def step(y):
            def cond_fn(v):
                return v > 1.0

            event = jl_fakelib.Event(cond_fn)
            return _step(y, event)

        def run():
            y = jnp.arange(4.0)
            return [y := step(y) for _ in range(3)]
        """,
        rewrite=(
            (
                "def step(y):\n    def cond_fn(v):\n        return v > 1.0\n\n"
                "    event = jl_fakelib.Event(cond_fn)\n",
                "def cond_fn(v):\n    return v > 1.0\n\nevent = jl_fakelib.Event(cond_fn)\n\n"
                "def step(y):\n",
            ),
        ),
    ),
    _case(
        "diffrax.Event rebuilt per call",
        "held-out report (diffrax): an Event around a nested cond_fn, built per solve",
        "LIBRARY_OWNED_OBJECT_FIX",
        """
        import diffrax
        import equinox as eqx

        @eqx.filter_jit
        def _solve(y0, event):
            TRACES[0] += 1
            term = diffrax.ODETerm(lambda t, y, args: -y)
            return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 2.0, 0.5, y0, event=event).ys

        def solve(y0):
            def cond_fn(t, y, args, **kwargs):
                return y[0] < 0.4

            event = diffrax.Event(cond_fn)
            return _solve(y0, event)

        def run():
            return [solve(jnp.ones(2) * (1 + i)) for i in range(3)]
        """,
        rewrite=(
            (
                "def solve(y0):\n    def cond_fn(t, y, args, **kwargs):\n"
                "        return y[0] < 0.4\n\n    event = diffrax.Event(cond_fn)\n",
                "def cond_fn(t, y, args, **kwargs):\n    return y[0] < 0.4\n\n"
                "event = diffrax.Event(cond_fn)\n\ndef solve(y0):\n",
            ),
        ),
    ),
    _case(
        "optx.Newton rebuilt per call with a lambda norm",
        "optimistix: a solver built per call, its norm a new lambda each time",
        "LIBRARY_OWNED_OBJECT_FIX",
        """
        import equinox as eqx
        import optimistix as optx

        @eqx.filter_jit
        def solve(solver, a):
            TRACES[0] += 1
            fn = lambda y, args: y**2 - args
            return optx.root_find(fn, solver, jnp.array(1.0), args=a).value

        def run():
            out = []
            for a in (2.0, 3.0, 5.0):
                solver = optx.Newton(rtol=1e-6, atol=1e-6, norm=lambda x: jnp.max(jnp.abs(x)))
                out.append(solve(solver, jnp.asarray(a)))
            return out
        """,
        rewrite=(
            (
                "        solver = optx.Newton(rtol=1e-6, atol=1e-6, "
                "norm=lambda x: jnp.max(jnp.abs(x)))\n",
                "",
            ),
            (
                "def run():",
                "def norm(x):\n    return jnp.max(jnp.abs(x))\n\n"
                "solver = optx.Newton(rtol=1e-6, atol=1e-6, norm=norm)\n\ndef run():",
            ),
        ),
    ),
    _case(
        "NUTS kernel built in the call to a jit that keeps it static",
        "numpyro: `potential(key, NUTS(model), y)` with the kernel a static argument",
        "LIBRARY_OWNED_OBJECT_FIX",
        """
        import numpyro
        import numpyro.distributions as dist
        from numpyro.infer import NUTS

        def model(y):
            mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

        @functools.partial(jax.jit, static_argnums=1)
        def potential(key, kernel, y):
            TRACES[0] += 1
            return kernel.init(key, 0, None, (y,), {}).potential_energy

        def run():
            return [potential(jax.random.key(0), NUTS(model), jnp.ones(3) * i) for i in range(3)]
        """,
        rewrite=(
            ("def run():", "kernel = NUTS(model)\n\ndef run():"),
            ("potential(jax.random.key(0), NUTS(model),", "potential(jax.random.key(0), kernel,"),
        ),
    ),
    _case(
        "a Keras loss object built in the call to a jit that keeps it static",
        "keras 3 on JAX: `loss(keras.losses.MeanSquaredError(), y, p)`, the loss static",
        "LIBRARY_OWNED_OBJECT_FIX",
        """
        import os

        os.environ.setdefault("KERAS_BACKEND", "jax")
        import keras

        @functools.partial(jax.jit, static_argnums=0)
        def loss(fn, y, p):
            TRACES[0] += 1
            return fn(y, p)

        def run():
            mse = [loss(keras.losses.MeanSquaredError(), jnp.ones(3), jnp.ones(3) * i) for i in range(3)]
            return mse
        """,
        rewrite=(
            ("def run():", "fn = keras.losses.MeanSquaredError()\n\ndef run():"),
            ("loss(keras.losses.MeanSquaredError(),", "loss(fn,"),
        ),
    ),
    _case(
        "NUTS rebuilt with adapted values under a jit made per call in lax.scan",
        "held-out report (blackjax quickstart loop): `one_step` jitted per run around `nuts.step`",
        "LIBRARY_REBUILT_FIX",
        """
        import blackjax
        import jax.scipy.stats as stats

        def logdensity(x):
            return jnp.sum(stats.norm.logpdf(x["loc"], 0.0, 1.0))

        def inference_loop(rng_key, kernel, initial_state, num_samples):
            @jax.jit
            def one_step(state, rng_key):
                TRACES[0] += 1
                state, _ = kernel(rng_key, state)
                return state, state

            keys = jax.random.split(rng_key, num_samples)
            return jax.lax.scan(one_step, initial_state, keys)[1].position["loc"]

        def run():
            out = []
            for i, step_size in enumerate((0.1, 0.3)):
                imm = jnp.array([1.0, 1.0]) * (i + 1)
                nuts = blackjax.nuts(logdensity, step_size, imm)
                state = nuts.init({"loc": jnp.ones(2)})
                out.append(inference_loop(jax.random.key(0), nuts.step, state, 3))
            return out
        """,
        rewrite=(
            (
                "def inference_loop(rng_key, kernel, initial_state, num_samples):",
                "kernel = blackjax.mcmc.nuts.build_kernel()\n\n"
                "@functools.partial(jax.jit, static_argnames=('num_samples',))\n"
                "def inference_loop(rng_key, initial_state, num_samples, step_size, imm):",
            ),
            (
                "state, _ = kernel(rng_key, state)",
                "state, _ = kernel(rng_key, state, logdensity, step_size, imm)",
            ),
            (
                "inference_loop(jax.random.key(0), nuts.step, state, 3)",
                "inference_loop(jax.random.key(0), state, 3, step_size, imm)",
            ),
        ),
    ),
    _case(
        "Keras 3 stateless_call with a static training flag",
        "keras-team/keras-core#762, keras-team/keras#20411 (Keras on JAX retraces)",
        "MODE_FIX",
        """
        import os

        os.environ.setdefault("KERAS_BACKEND", "jax")
        import keras

        model = keras.Sequential(
            [keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dropout(0.5, seed=0)]
        )

        @functools.partial(jax.jit, static_argnames="training")
        def forward(trainable, non_trainable, x, training):
            TRACES[0] += 1
            y, _ = model.stateless_call(trainable, non_trainable, x, training=training)
            return y

        def run():
            tv = [v.value for v in model.trainable_variables]
            ntv = [v.value for v in model.non_trainable_variables]
            forward(tv, ntv, jnp.ones((2, 3)), training=True)
            return forward(tv, ntv, jnp.ones((2, 3)), training=False)
        """,
        expected=True,
    ),
)


# ---------------------------------------------------------------- applying a printed fix


def templates() -> dict[str, str]:
    """Every fix template, by constant name (``eqx.`` for filter_jit's words)."""
    out = {}
    for prefix, mod in (("", M), ("", S), ("", L), ("eqx.", F)):
        for name, value in vars(mod).items():
            if name.endswith("_FIX") and isinstance(value, str):
                out.setdefault(prefix + name, value)
    return out


def made_from(name: str, fix: str) -> bool:
    """Was ``fix`` made from the template ``name``?"""
    parts = re.split(r"\{[^{}]*\}", " ".join(templates()[name].split()))
    return re.search(".*?".join(map(re.escape, parts)), " ".join(fix.split()), re.S) is not None


def _statements(source: str) -> list[ast.stmt]:
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.stmt)]


def _target(node: ast.stmt) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return ast.unparse(node.targets[0])
    if isinstance(node, ast.AugAssign):
        return ast.unparse(node.target)
    return None


def _replace_lines(source: str, node: ast.stmt, text: str, *, after: bool = False) -> str:
    lines = source.splitlines(keepends=True)
    indent = lines[node.lineno - 1][: node.col_offset]
    new = [indent + text + "\n"]
    end = node.end_lineno or node.lineno
    if after:
        return "".join(lines[:end] + new + lines[end:])
    return "".join(lines[: node.lineno - 1] + new + lines[end:])


def _ellipsis_base(target: ast.expr) -> str | None:
    """``X`` of ``X[...]`` (a Variable's value written through ``[...]``), else None."""
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
        return ast.unparse(target.value) if target.slice.value is Ellipsis else None
    return None


def _hoist(source: str, name: str, expr: str) -> str | None:
    """``name = expr`` at module level, before the first top-level statement that builds
    ``expr`` (a fix that says "create it once, at module level"), and ``name`` used there."""
    tree = ast.parse(source)
    for top in tree.body:
        if any(ast.unparse(n) == expr for n in ast.walk(top) if isinstance(n, ast.expr)):
            lines = source.splitlines(keepends=True)
            head = "".join(lines[: top.lineno - 1]) + f"{name} = {expr}\n\n\n"
            rest = "".join(lines[top.lineno - 1 :])
            return head + rest.replace(expr, name)
    return None


def _apply_one(source: str, snippet: str) -> str | None:
    try:
        (stmt,) = ast.parse(snippet).body
    except (SyntaxError, ValueError):
        return None
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
        base = ast.unparse(stmt.target.value)  # `self.step[...] += 1` for `self.step += 1`
        for node in _statements(source):
            if isinstance(node, ast.AugAssign) and _target(node) == base:
                return _replace_lines(source, node, snippet)
        return None
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    target = ast.unparse(stmt.targets[0])
    # `v[...] = ...` for a Variable the program writes as `v.value = ...` or `v[...] = ...`
    base = _ellipsis_base(stmt.targets[0])
    targets = {target} | ({base + ".value", base} if base else set())
    names = {ast.unparse(n) for n in ast.walk(stmt.value) if isinstance(n, ast.expr)}
    for node in _statements(source):
        if not isinstance(node, ast.Assign) or _target(node) not in targets:
            continue
        if "value" in names:  # wrap the value the program had
            had = node.value.args[0] if isinstance(node.value, ast.Call) else node.value
            if isinstance(node.value, ast.Call) and not node.value.args:
                return None
            return _replace_lines(source, node, re.sub(r"\bvalue\b", ast.unparse(had), snippet))
        if target in names:  # `acc = jnp.asarray(acc, ...)`: retype right after it is made
            return _replace_lines(source, node, snippet, after=True)
        return _replace_lines(source, node, snippet)
    if target in names:  # `state['lr'] = jnp.asarray(state['lr'], ...)`: after `state = ...`
        root = next((n.id for n in ast.walk(stmt.targets[0]) if isinstance(n, ast.Name)), None)
        for node in _statements(source):
            if isinstance(node, ast.Assign) and _target(node) == root:
                return _replace_lines(source, node, snippet, after=True)
    if isinstance(stmt.targets[0], ast.Name):  # a new name: "create it once at module level"
        return _hoist(source, target, ast.unparse(stmt.value))
    return None


def apply_fix(source: str, fix: str) -> str | None:
    """``source`` with every backticked statement of ``fix`` applied, or None if none applies."""
    changed = None
    for snippet in re.findall(r"`([^`]+)`", fix):
        new = _apply_one(changed or source, snippet)
        if new is not None:
            changed = new
    return changed


# ---------------------------------------------------------------- what a fix edits

#: A class or function the fix tells the user to change: "in `X.__init__`", "`class X`",
#: "above `class X`", "Make `X` a ...", "Define `X` once" (a name already defined elsewhere).
_EDITED = (
    re.compile(r"`(?:class )?([\w.]+)\.__init__`"),
    re.compile(r"`class ([\w.]+)`"),
    re.compile(r"\bMake `([\w.]+)` a\b"),
    re.compile(r"\b(?:Define|Redefine|define|redefine) `([\w.]+)` once"),
)


def _defined(source: str) -> tuple[set[str], set[str]]:
    """The names ``source`` defines (functions, classes, variables, parameters: not what it
    imports) and the attributes it assigns (``self.x = ...``, class fields)."""
    names: set[str] = set()
    attributes: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                attributes.update(
                    t.id for n in node.body if isinstance(n, ast.AnnAssign)
                    for t in [n.target] if isinstance(t, ast.Name)
                )  # fmt: skip
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            attributes.add(node.attr)
    return names, attributes | names


def foreign_edits(fix: str, source: str) -> tuple[str, ...]:
    """What ``fix`` tells the user to edit that ``source`` (the user's file) does not define:
    a class whose ``__init__`` it changes, a function it redefines, an attribute it sets on
    ``self`` (empty: the fix edits only the user's code)."""
    names, attributes = _defined(source)
    out = []
    for pattern in _EDITED:
        for dotted in pattern.findall(fix):
            head, *rest = dotted.split(".")
            if head not in names or any(part not in attributes for part in rest):
                out.append(dotted)
    if not re.search(r"^\s*class ", source, re.M):  # `self.x = ...` needs a class of the user's
        for code in re.findall(r"`([^`]+)`", fix):
            out += [f"self.{a}" for a in re.findall(r"\bself\.(\w+)\s*=[^=]", code)]
    return tuple(dict.fromkeys(out))


# ---------------------------------------------------------------- running a case


def _execute(source: str, name: str) -> tuple[int, Any, list[jitlens.Reason]]:
    """Run ``source``'s ``run()`` tracked: (ground-truth traces, outputs, headline reasons)."""
    fd, path = tempfile.mkstemp(prefix="fixcase_", suffix=".py")
    with os.fdopen(fd, "w") as fh:
        fh.write(source)
    module = types.ModuleType(f"fixcase_{abs(hash(name))}")
    module.__file__ = path
    sys.modules[module.__name__] = module  # dataclasses (eqx.Module) look their module up
    try:
        ns: dict[str, Any] = module.__dict__
        with jitlens.track() as t:
            exec(compile(source, path, "exec"), ns)  # the corpus is this file's
            outputs = ns["run"]()
        heads = [e.reasons[0] for f in t.report().user_functions() for e in f.events if e.reasons]
        return ns["TRACES"][0], outputs, heads
    finally:
        sys.modules.pop(module.__name__, None)
        os.unlink(path)


def _same(a: Any, b: Any) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.allclose(np.asarray(x), np.asarray(y), rtol=1e-5) for x, y in zip(la, lb, strict=True)
    )


def check(case: Case) -> Outcome:
    """Run ``case``, apply its headline fix, run the fixed program, compare."""
    traces, outputs, heads = _execute(case.source, case.name)
    fixes = list(dict.fromkeys(r.fix for r in heads))
    fix = fixes[0] if fixes else ""
    foreign = tuple(n for f in fixes for n in foreign_edits(f, case.source))
    if not fix or not made_from(case.template, fix):
        return Outcome(case.name, case.template, "wrong-template", traces, None, False, fix)
    if case.expected:
        how = "expected" if fix.startswith("Expected") else "wrong-template"
        return Outcome(case.name, case.template, how, traces, None, True, fix, foreign)
    if case.rewrite is None:
        fixed, how = apply_fix(case.source, fix), "mechanical"
    else:
        fixed, how = case.source, "rewrite"
        for old, new in case.rewrite:
            fixed = fixed.replace(old, new) if old in fixed else None
            if fixed is None:
                break
    if fixed is None:
        return Outcome(case.name, case.template, "not-applied", traces, None, False, fix, foreign)
    after, fixed_outputs, _ = _execute(fixed, case.name + " (fixed)")
    same = _same(outputs, fixed_outputs)
    return Outcome(case.name, case.template, how, traces, after, same, fix, foreign)


#: Libraries some programs of the corpus use that a JAX install may lack (the newest-JAX CI
#: job has none of them): such a program is left out where its library is not installed.
OPTIONAL_LIBRARIES = frozenset({"keras", "numpyro", "blackjax", "haiku", "diffrax", "optimistix"})
#: Of those, the ones the test extra does not install (CI leaves their programs out).
NOT_IN_TEST_EXTRA = frozenset({"haiku", "diffrax", "optimistix"})


def missing_libraries(case: Case) -> set[str]:
    """Top-level modules ``case`` imports that are not installed."""
    import importlib.util

    names = set()
    for node in ast.walk(ast.parse(case.source)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {n for n in names if n != "jl_fakelib" and importlib.util.find_spec(n) is None}


def measure(cases: tuple[Case, ...] = CASES) -> list[Outcome]:
    """Every case whose libraries are installed (``missing_libraries``)."""
    return [check(c) for c in cases if not missing_libraries(c)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="print every fix")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    outcomes = measure()
    left_out = [c.name for c in CASES if missing_libraries(c)]
    if left_out:
        print(f"left out, their libraries not installed: {', '.join(left_out)}\n")
    for o in outcomes:
        after = "-" if o.traces_after is None else o.traces_after
        mark = "ok " if o.works else "BAD"
        print(f"{mark} {o.case:48} {o.how:14} traces {o.traces_before} -> {after}  {o.template}")
        if args.verbose or not o.works:
            print(textwrap.indent(textwrap.fill(o.fix, 96), "      "))
    code = [o for o in outcomes if o.how != "expected"]
    working = sum(o.works for o in code)
    expected = len(outcomes) - len(code)
    print(
        f"\n{working}/{len(code)} printed code fixes remove the retrace and keep the outputs "
        f"({sum(o.how == 'mechanical' for o in code)} applied mechanically); {expected} "
        f"expected compiles said so; corpus of {len(outcomes)} programs, "
        f"{time.perf_counter() - t0:.1f} s"
    )
    return 0 if working == len(code) and all(o.works for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
