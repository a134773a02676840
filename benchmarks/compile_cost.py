"""Is the compile-cost advice honest? Predicted vs measured saving, side by side.

Each program comes twice: as written (a Python loop the trace unrolls, a
captured NumPy table, ``fori_loop(..., unroll=True)``) and as jitlens' advice
says to write it (``lax.scan``, Flax's scan over layers, the table passed as
an argument, ``jax.vmap``, a rolled loop). For each, in the same process:

1. run the program as written under ``jitlens.track()`` and read the advice:
   the line or name it points at and ``estimated_saving_seconds``;
2. run the fixed program under ``jitlens.track()``: it must get no such advice;
3. measured saving = trace + lower + compile seconds before - after (JAX's own
   monitoring durations, as jitlens reports them); print predicted, measured
   and their ratio (the target: 0.5x-2x on every program).

Small controls (a few layers) and the fixed programs must get no advice.
The cost of reading each program (``Event.cost.collect_seconds``) is printed
next to its compile time.

    python benchmarks/compile_cost.py [--scale 1.0] [--only NAME ...]

``--scale`` multiplies the sizes (layers, steps, batch); on a loaded machine
absolute times drift, the ratio is the figure to read.
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import jitlens
from jitlens._core.advice_cost import COST_MIN_SECONDS

KINDS = ("unrolled_loop", "captured_constant", "compile_bound")
D = 128


def _layer(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    h = jax.nn.gelu(x @ w + b)
    h = h / (1e-6 + jnp.sqrt(jnp.mean(h * h, axis=-1, keepdims=True)))
    return x + h


# ----------------------------------------------------------------- 1. layers in a Python loop


def mlp_programs(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    ws = jnp.ones((n, D, D)) * 0.01
    bs = jnp.zeros((n, D))
    x = jnp.ones((8, D))

    @jax.jit
    def forward_loop(x, ws, bs):
        for i in range(n):
            x = _layer(x, ws[i], bs[i])
        return x

    @jax.jit
    def forward_scan(x, ws, bs):
        def body(c, wb):
            return _layer(c, *wb), None

        return jax.lax.scan(body, x, (ws, bs))[0]

    return lambda: forward_loop(x, ws, bs), lambda: forward_scan(x, ws, bs)


# ----------------------------------------------------------------- 2. NNX blocks in an nnx.List


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.linear = nnx.Linear(D, D, rngs=rngs)
        self.norm = nnx.LayerNorm(D, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return x + jax.nn.gelu(self.norm(self.linear(x)))


class ListModel(nnx.Module):
    def __init__(self, n: int, rngs: nnx.Rngs) -> None:
        self.blocks = nnx.List([Block(rngs) for _ in range(n)])

    def __call__(self, x: jax.Array) -> jax.Array:
        for block in self.blocks:
            x = block(x)
        return x


class ScanModel(nnx.Module):
    def __init__(self, n: int, rngs: nnx.Rngs) -> None:
        @nnx.vmap(in_axes=0, out_axes=0)
        def create(rngs: nnx.Rngs) -> Block:
            return Block(rngs)

        self.blocks = create(rngs.split(n))

    def __call__(self, x: jax.Array) -> jax.Array:
        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def apply(block: Block, x: jax.Array) -> jax.Array:
            return block(x)

        return apply(self.blocks, x)


def nnx_programs(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    listed, stacked = ListModel(n, nnx.Rngs(0)), ScanModel(n, nnx.Rngs(0))
    x = jnp.ones((8, D))

    @nnx.jit
    def forward_list(model, x):
        return model(x)

    @nnx.jit
    def forward_stacked(model, x):
        return model(x)

    return lambda: forward_list(listed, x), lambda: forward_stacked(stacked, x)


def sequential_programs(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The loop is Flax's own (``nnx.Sequential.__call__``); the advice names the user's call."""
    rngs = nnx.Rngs(0)
    seq = nnx.Sequential(*[Block(rngs) for _ in range(n)])
    stacked = ScanModel(n, nnx.Rngs(0))
    x = jnp.ones((8, D))

    @nnx.jit
    def forward_sequential(model, x):
        return model(x)

    @nnx.jit
    def forward_stacked(model, x):
        return model(x)

    return lambda: forward_sequential(seq, x), lambda: forward_stacked(stacked, x)


# ----------------------------------------------------------------- 3. a captured NumPy table


def table_programs(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    table = np.random.default_rng(0).random((n, n), dtype=np.float32)
    x = jnp.ones((4, n))

    @jax.jit
    def lookup_closed(x):
        return jnp.tanh(x @ table)

    @jax.jit
    def lookup_passed(x, table):
        return jnp.tanh(x @ table)

    return lambda: lookup_closed(x), lambda: lookup_passed(x, table)


# ----------------------------------------------------------------- 4. vmap as a Python loop


def batch_programs(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    w1 = jnp.ones((D, D)) * 0.01
    w2 = jnp.ones((D, D)) * 0.01
    xs = jnp.ones((n, 16, D))

    def one(x):
        h = jnp.tanh(x @ w1)
        h = h / (1e-6 + jnp.linalg.norm(h, axis=-1, keepdims=True))
        return jax.nn.softmax(h @ w2, axis=-1) @ h.T

    @jax.jit
    def per_example(xs):
        return jnp.stack([one(xs[i]) for i in range(xs.shape[0])])

    @jax.jit
    def vmapped(xs):
        return jax.vmap(one)(xs)

    return lambda: per_example(xs), lambda: vmapped(xs)


# ----------------------------------------------------------------- 5. fori_loop(unroll=True)


def fori_programs(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    w = jnp.ones((64, 64)) * 0.01
    x = jnp.ones((8, 64))

    def step(i, c):
        h = jnp.tanh(c @ w + i)
        return c + 0.1 * h / (1.0 + jnp.abs(h).sum(axis=-1, keepdims=True))

    @jax.jit
    def unrolled(x):
        return jax.lax.fori_loop(0, n, step, x, unroll=True)

    @jax.jit
    def rolled(x):
        return jax.lax.fori_loop(0, n, step, x)

    return lambda: unrolled(x), lambda: rolled(x)


# ----------------------------------------------------------------- 6. loops under jax.grad

TRIAL = pathlib.Path(__file__).resolve().parent.parent / "tests" / "trial_programs"


def _trial(name: str, count: str, **sizes: int) -> Callable[[int], Any]:
    """A program of ``tests/trial_programs`` as written and as advised, ``count`` iterations:
    a fresh module each time (its jits are module-level: a control must compile anew)."""

    def build(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
        if str(TRIAL) not in sys.path:
            sys.path.insert(0, str(TRIAL))
        module = importlib.reload(importlib.import_module(name))
        for k, v in {**sizes, count: n}.items():
            setattr(module, k, v)
        return module.main, module.main_fixed

    return build


PROGRAMS: dict[str, tuple[Callable[[int], Any], int, int, str]] = {
    # name: (builder, size as written, size of the small control, advice kind expected)
    "mlp_loop": (mlp_programs, 48, 3, "unrolled_loop"),
    "nnx_list": (nnx_programs, 32, 3, "unrolled_loop"),
    "nnx_sequential": (sequential_programs, 32, 3, "unrolled_loop"),
    # 1500x1500 (the issue's) compiles in 0.3-1.2 s here, around the advice threshold
    "table": (table_programs, 3000, 300, "captured_constant"),
    "vmap_loop": (batch_programs, 48, 3, "unrolled_loop"),
    "fori_unroll": (fori_programs, 150, 4, "unrolled_loop"),
    # issue 45: MAML's inner steps, an NNX LSTM over time, attention head by head, each
    # under value_and_grad (the backward pass half of the program and more)
    "maml_grad": (_trial("h_maml_inner_steps", "STEPS", WIDTH=16), 12, 3, "unrolled_loop"),
    "lstm_grad": (_trial("h_nnx_lstm_over_time", "T", HID=32), 16, 3, "unrolled_loop"),
    "heads_grad": (_trial("h_attention_per_head", "HEADS", DH=8, T=32), 16, 3, "unrolled_loop"),
}


def run_tracked(fn: Callable[[], Any], calls: int = 3) -> tuple[float, float, list[Any], Any]:
    """(jitlens' trace+lower+compile seconds, wall seconds of the first call, advice, cost)."""
    with jitlens.track() as t:
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        wall = time.perf_counter() - t0
        for _ in range(calls - 1):
            jax.block_until_ready(fn())
    report = t.report()
    fns = [f for f in report.user_functions() if f.events]
    seconds = sum(e.seconds for f in fns for e in f.events)
    advice = [a for f in fns for a in f.advice if a.kind in KINDS]
    costs = [e.cost for f in fns for e in f.events if e.cost is not None]
    return seconds, wall, advice, costs[0] if costs else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--only", default=None, choices=sorted(PROGRAMS), action="append")
    args = p.parse_args(argv)
    jax.block_until_ready(jax.jit(lambda a: a + 1)(1.0))  # backend start-up is no one's compile
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}")
    print(
        f"{'program':<14} {'before s':>9} {'after s':>8} {'predicted':>9} {'measured':>9} "
        f"{'ratio':>6} {'read ms':>8}  advice"
    )
    ok = True
    for name, (build, size, small, kind) in PROGRAMS.items():
        if args.only and name not in args.only:
            continue
        n = max(2, int(size * args.scale)) if name != "table" else size
        as_written, fixed = build(n)
        before, _, advice, cost = run_tracked(as_written)
        after, _, fixed_advice, fixed_cost = run_tracked(fixed)
        chosen = [a for a in advice if a.kind == kind]
        if before < COST_MIN_SECONDS and not chosen:
            print(
                f"{name:<14} {before:9.2f}  compiled in under {COST_MIN_SECONDS} s: no advice (right)"
            )
            continue
        predicted = sum(a.estimated_saving_seconds or 0.0 for a in chosen)
        measured = before - after
        ratio = predicted / measured if measured > 0 else float("nan")
        within = bool(chosen) and 0.5 <= ratio <= 2.0 and not fixed_advice
        ok &= within
        read_ms = cost.collect_seconds * 1e3 if cost is not None else float("nan")
        eqns = f"{cost.eqns if cost else '?'} -> {fixed_cost.eqns if fixed_cost else '?'}"
        print(
            f"{name:<14} {before:9.2f} {after:8.2f} {predicted:9.2f} {measured:9.2f} "
            f"{ratio:6.2f} {read_ms:8.1f}  {'ok' if within else 'OFF'}, equations {eqns}"
        )
        for a in chosen:
            print(f"{'':16}{a.message}\n{'':16}fix: {a.fix}")
        if fixed_advice:
            print(f"{'':16}fixed program still advised: {[a.kind for a in fixed_advice]}")
        control, _ = build(small)
        _, _, control_advice, _ = run_tracked(control)
        if control_advice:
            ok = False
            print(f"{'':16}small control ({small}) advised: {[a.kind for a in control_advice]}")
    print(
        "all within 0.5x-2x, no advice on fixed programs and controls" if ok else "OFF: see above"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
