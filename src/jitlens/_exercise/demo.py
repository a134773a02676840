"""``jitlens demo``: the seed discussion's CNN, measured and explained, then ``jit_forward``.

The CNN of the Flax discussion "When does recreating a model trigger
nnx.jit recompilation?" stores ``functools.partial(nnx.avg_pool, ...)``; two
freshly built instances go through one ``nnx.jit`` function and it compiles
twice. The fixed model calls ``nnx.avg_pool`` in ``__call__`` and compiles
once. Every count printed here is measured (and checked against a counter
inside the jitted function), never a constant.
"""

from __future__ import annotations

import shutil
import sys
from functools import partial
from typing import Any, TextIO

import jax.numpy as jnp
from flax import nnx

from .._core.kinds import EventKind
from .._core.retrace_text import render_retrace
from .._track.tracker import track

TRACES = {"buggy": 0, "fixed": 0}

HEADER = 'jitlens demo: "When does recreating a model trigger nnx.jit recompilation?"'
VARIANT = "{label}\n  {name}: {calls} calls, traced {traces}x, compiled {compiles}x, {hits} cache hits (counter inside the function: {truth} {traces_word})"
EXERCISE = (
    "jitlens.jit_forward(seed=0.0, x: f32[{n},{d}], features=4.0, num_calls=5.0)\n"
    "  -> output shape {shape}, dtype {dtype}\n  fwd: {calls} calls, traced {traces}x, compiled {compiles}x, {hits} cache hits"
)


class CNN(nnx.Module):
    """The MNIST-tutorial CNN of the discussion, with a partial stored on the module."""

    def __init__(self, *, rngs: nnx.Rngs) -> None:
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))  # noqa: JL002
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        x = nnx.relu(self.linear1(x))
        return self.linear2(x)


class FixedCNN(nnx.Module):
    """The same network calling ``nnx.avg_pool`` with keyword arguments in ``__call__``."""

    def __init__(self, *, rngs: nnx.Rngs) -> None:
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        x = nnx.avg_pool(nnx.relu(self.conv1(x)), window_shape=(2, 2), strides=(2, 2))
        x = nnx.avg_pool(nnx.relu(self.conv2(x)), window_shape=(2, 2), strides=(2, 2))
        x = x.reshape(x.shape[0], -1)
        x = nnx.relu(self.linear1(x))
        return self.linear2(x)


@nnx.jit
def foo_step(model: nnx.Module) -> jnp.ndarray:
    TRACES["buggy"] += 1
    return model(jnp.ones((1, 28, 28, 1)))


@nnx.jit
def fixed_step(model: nnx.Module) -> jnp.ndarray:
    TRACES["fixed"] += 1
    return model(jnp.ones((1, 28, 28, 1)))


def _two_fresh_models(step: Any, cls: type) -> None:
    for _ in range(2):  # a freshly built, identical model each time
        model = cls(rngs=nnx.Rngs(0))
        step(model)
        step(model)


def _width() -> int:
    """The terminal's width (``COLUMNS``), at most 100: the demo is read, not scrolled."""
    return min(shutil.get_terminal_size((100, 24)).columns, 100)


def run_demo(out: TextIO = sys.stdout) -> int:
    """Print the demo; return 0 when the measurements match the ground truth."""
    from .forward import jit_forward

    print(HEADER, file=out)
    ok = True
    with track() as t:
        _two_fresh_models(foo_step, CNN)
        _two_fresh_models(fixed_step, FixedCNN)
        x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
        y = jit_forward(0.0, x, 4.0, 5.0)
    for key, step, label in (
        (
            "buggy",
            foo_step,
            "\n1. CNN storing functools.partial(nnx.avg_pool, ...), two freshly built instances:",
        ),
        (
            "fixed",
            fixed_step,
            "\n2. The fixed CNN (nnx.avg_pool called in __call__), two freshly built instances:",
        ),
    ):
        s = t.stats(step)
        ok &= s.traces == TRACES[key]
        print(
            VARIANT.format(
                label=label,
                name=s.name,
                calls=s.calls,
                traces=s.traces,
                compiles=s.compiles,
                hits=s.cache_hits,
                truth=TRACES[key],
                traces_word="trace" if TRACES[key] == 1 else "traces",
            ),
            file=out,
        )
        for e in s.events:
            if e.kind == EventKind.RETRACE:
                print("  why it compiled again:", file=out)
                text = render_retrace(s, e, width=_width() - 4)
                print("    " + text.replace("\n", "\n    "), file=out)
    fwd = [f for f in t.report().functions if f.name == "fwd"]
    if fwd:
        f = fwd[-1]
        print(
            "\n3. "
            + EXERCISE.format(
                n=x.shape[0],
                d=x.shape[1],
                shape=tuple(y.shape),
                dtype=y.dtype,
                calls=f.calls,
                traces=f.traces,
                compiles="?" if f.compiles is None else f.compiles,
                hits=f.cache_hits,
            ),
            file=out,
        )
        ok &= f.traces == 1
    return 0 if ok else 1
