"""How jitlens' cost grows with the work: curves over two orders of magnitude, and their growth.

Each axis is measured at three sizes, a factor of ten apart, in one run; where a program
runs, the same program untracked (``plain``) and under ``jitlens.track()``, side by side.
Each curve's growth exponent is the slope of log cost against log size (1: linear, 0:
flat, 2: quadratic): jitlens' should be the program's, or below.

- ``calls``: one ``jax.jit`` called N times (one compile).
- ``functions``: N ``jax.jit`` functions, each called twice (N compiles).
- ``retraces``: one function compiled N times, a new shape each call: each retrace is
  explained against the live keys (at most 64).
- ``leaves``: a dict argument of N arrays whose every shape changes 4 times.
- ``report``: ``str(report)`` of N functions built as data, every name short and one name
  wider than the terminal (rich laid it all out then: 78 s at 10,000).
- ``processes``: ``jitlens merge`` of N process reports built as data, three functions each,
  two processes retracing where the others do not and one report missing: CPU seconds and
  the bytes of the HTML page (``--html``).
- ``explain``: one retrace of a dict of N leaves whose every shape changed, explained against
  64 live keys (keys described from NumPy arrays: no compile; each earlier key's digest was
  made when its own retrace was explained, and is not counted again).

CPU seconds are the process's (``time.process_time``: every thread, XLA's compiles too), the
least of ``--repeat`` runs. ``--quick`` stops each axis at its middle size.

    python benchmarks/scale.py [--axes calls functions ...] [--repeat 1] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

import jitlens
from jitlens import SCHEMA_VERSION, Event, FunctionReport, Reason, Report

SIZES: dict[str, tuple[int, int, int]] = {
    "calls": (300, 3_000, 30_000),
    "functions": (3, 30, 300),
    "retraces": (2, 20, 200),
    "leaves": (10, 100, 1_000),
    "report": (100, 1_000, 10_000),
    "processes": (10, 100, 1_000),
    "explain": (50, 500, 5_000),
}


@contextlib.contextmanager
def _tracked(on: bool) -> Iterator[None]:
    if not on:
        yield
        return
    with jitlens.track(), warnings.catch_warnings():
        warnings.simplefilter("ignore", jitlens.RunawayRecompileWarning)  # the point here
        yield


def _cpu(run: Callable[[], Any], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.process_time()
        run()
        best = min(best, time.process_time() - t)
    return best


#: A number no earlier run's programs hold: each run compiles programs of its own (JAX keeps
#: compiled programs in memory by their text; a plain run would otherwise pay for both).
RUNS = itertools.count(2)


def calls(n: int, on: bool) -> None:
    import jax
    import jax.numpy as jnp

    run = next(RUNS)
    f = jax.jit(lambda x: x + run)  # a fresh function: one compile per run
    x = jnp.ones(4)
    with _tracked(on):
        for _ in range(n):
            x = f(x)
        jax.block_until_ready(x)


def functions(n: int, on: bool) -> None:
    import jax
    import jax.numpy as jnp

    x, run = jnp.ones(4), next(RUNS)
    with _tracked(on):
        for i in range(n):
            f = jax.jit(lambda x, i=i: x * i + run)  # noqa: JL001 - a new function each: the curve
            jax.block_until_ready(f(f(x)))


def retraces(n: int, on: bool) -> None:
    import jax

    run = next(RUNS)
    f = jax.jit(lambda x: x * run)
    with _tracked(on):
        for i in range(n):
            jax.block_until_ready(f(np.ones(i + 1, np.float32)))  # no jnp.ones compile per shape


def leaves(n: int, on: bool) -> None:
    import jax

    run = next(RUNS)
    f = jax.jit(lambda d: jax.tree.map(lambda v: v * run, d))
    with _tracked(on):
        for size in range(1, 5):
            jax.block_until_ready(f({f"k{i}": np.ones(size, np.float32) for i in range(n)}))


def _function(i: int, name: str) -> FunctionReport:
    shape = Reason("shape", "x", "x", "f32[4]", "f32[5]", "x changed shape.", "pad x.")
    events = (
        Event(0, "trace", "a.py:9", "x: f32[4]", compile_seconds=0.1, compiled=True),
        Event(1, "retrace", "a.py:9", "x: f32[5]", (shape,), compile_seconds=0.1, compiled=True),
    )
    return FunctionReport(name, name, "jax.jit", "a.py:1", "a.py:9", 2, 2, 2, 0, 0, 0.0, 0.0, 0.2,
                          events, id=i + 1)  # fmt: skip


def _report(functions: Sequence[FunctionReport], index: int = 0, count: int = 1) -> Report:
    return Report(SCHEMA_VERSION, "0.1.0", "0.10.2", "0.12.8", "cpu", index, count, f"host-{index}",
                  1.7e9, 2.0, tuple(functions))  # fmt: skip


def report(n: int, wide: bool) -> None:
    names = [f"mod.fn_{i}" for i in range(n)]
    if wide:
        names[0] += "_" + "x" * 200
    str(_report([_function(i, q) for i, q in enumerate(names)]))


def _processes(n: int) -> list[Report]:
    shape = Reason("shape", "batch", "batch", "f32[8,3]", "f32[12,3]", "shape.", "pad the batch.")
    out = []
    for p in range(n):
        if p == n // 3:
            continue  # a missing peer
        events = [Event(0, "trace", "t.py:40", "batch: f32[8,3]", compiled=True)]
        if p in (7, n // 2):
            events.append(Event(1, "retrace", "t.py:40", "batch: f32[12,3]", (shape,), entry=1))
        step = dataclasses.replace(_function(0, "train_step"), events=tuple(events),
                                   traces=len(events), compiles=len(events), calls=3)  # fmt: skip
        rest = [dataclasses.replace(_function(i, q), events=step.events[:1], traces=1, compiles=1)
                for i, q in ((1, "evaluate"), (2, "log_metrics"))]  # fmt: skip
        out.append(_report([step, *rest], p, n))
    return out


def processes(n: int) -> int:
    """Merge ``n`` reports and write the page; the page's bytes."""
    merged = jitlens.merge_reports(_processes(n))
    merged.to_text(width=100)
    return len(merged.to_html().encode())


def _keys(n: int, count: int) -> list[Any]:
    from jitlens._core.signature import describe_call

    def f(d: Any) -> None:
        pass

    return [
        describe_call(f, ({f"k{i}": np.ones(r + 1) for i in range(n)},), {}) for r in range(count)
    ]


def digest(key: Any) -> None:
    try:
        from jitlens._core.nearest import digest as digest_of
    except ImportError:  # a jitlens before issue 44 (``--baseline``-style runs): no digests
        return
    digest_of(key)


def explain(keys: list[Any]) -> None:
    from jitlens._core.explain import explain as explain_keys

    explain_keys(keys[-1], keys[:-1])


def _exponent(sizes: Sequence[int], costs: Sequence[float]) -> float:
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(c, 1e-6)) for c in costs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return num / sum((x - mx) ** 2 for x in xs)


def _curve(axis: str, columns: Sequence[str], rows: list[tuple[int, list[float]]]) -> None:
    print(f"\n{axis}")
    print(f"  {'size':>8}" + "".join(f"  {c:>12}" for c in columns))
    for size, costs in rows:
        print(f"  {size:>8}" + "".join(f"  {c:>12.4g}" for c in costs))
    sizes = [s for s, _ in rows]
    growth = [_exponent(sizes, [c[i] for _, c in rows]) for i in range(len(columns))]
    print("  growth  " + "".join(f"  {g:>12.2f}" for g in growth))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--axes", nargs="+", default=list(SIZES), choices=list(SIZES))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="stop each axis at its middle size")
    args = p.parse_args()
    programs = {"calls": calls, "functions": functions, "retraces": retraces, "leaves": leaves}
    print("jitlens' cost against the work: CPU seconds (least of --repeat), growth exponent last")
    for axis in args.axes:
        sizes = SIZES[axis][:2] if args.quick else SIZES[axis]
        rows: list[tuple[int, list[float]]] = []
        if axis in programs:
            program = programs[axis]
            program(1, False)  # JAX's and jitlens' first-use costs, outside the curve
            program(1, True)
            for n in sizes:
                plain = _cpu(lambda n=n, f=program: f(n, False), args.repeat)
                tracked = _cpu(lambda n=n, f=program: f(n, True), args.repeat)
                rows.append((n, [plain, tracked, tracked / plain]))
            _curve(axis, ["plain s", "jitlens s", "ratio"], rows)
        elif axis == "report":
            report(10, True)  # the renderer's imports, outside the curve
            for n in sizes:
                rows.append((n, [_cpu(lambda n=n, w=w: report(n, w), args.repeat)
                                 for w in (False, True)]))  # fmt: skip
            _curve(axis, ["short s", "wide s"], rows)
        elif axis == "processes":
            processes(3)  # the merge's imports, outside the curve
            for n in sizes:
                page: list[int] = []
                cpu = _cpu(lambda n=n, out=page: out.append(processes(n)), args.repeat)
                rows.append((n, [cpu, page[-1] / 1e6]))
            _curve(axis, ["merge s", "html MB"], rows)
        else:
            for n in sizes:
                keys = _keys(n, 65)
                explain(keys[:2])  # the words' first import, outside the curve
                for k in keys[:-1]:  # each made when its own retrace was explained
                    digest(k)
                rows.append((n, [_cpu(lambda k=keys: explain(k), args.repeat)]))
            _curve(axis + " (64 live keys)", ["explain s"], rows)


if __name__ == "__main__":
    main()
