"""The per-call cost of tracking counted in CPU instructions, which a loaded machine does not move.

``overhead.py`` times calls; on a shared machine its ratios wander by several
percent between runs. This script counts the instructions the calls execute, with
valgrind's callgrind, in one child process per row: the child sets the row up,
switches instrumentation on (``callgrind_control -i on``) and makes its calls
inside one ``map`` over a Python function, and callgrind counts only what runs
inside ``map_next`` (``--toggle-collect``): the calls, nothing of the set-up or
of JAX's import. Counts are per call, as ratios to a raw ``jax.jit`` call (the fresh-wrapper row: to
a fresh raw ``jax.jit`` at the same pace, whose first calls cost JAX more too).

An instruction of Python's interpreter takes longer on average than one of
JAX's C++ dispatch, so a ratio of instructions understates the ratio of times
(here roughly by half); use it to compare versions and rows, and
``overhead.py`` on an idle machine for the time.

    python benchmarks/instructions.py [--calls 4000]

Needs ``valgrind`` (and ``callgrind_control``) on ``PATH``; each row takes about
a minute.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

ROWS = {
    "raw": "raw jax.jit(x @ W + b)",
    "passthrough": "reference: bare Python pass-through",
    "hit": "jax.jit, hit path (past the first calls)",
    "window": "jax.jit, timeline window, every call timed (lean path)",
    "fresh": "jax.jit, timeline window, a fresh wrapper every 2,000 calls",
    "raw_fresh": "raw, a fresh jax.jit every 2,000 calls (the fresh row's base)",
}


def child(row: str, calls: int) -> None:
    """Set one row up, then make ``calls`` calls inside ``map`` (the counted part)."""
    import jax
    import jax.numpy as jnp

    import jitlens
    from jitlens._track import calls as calls_module
    from jitlens._track import hooks
    from jitlens._track.records import MAX_CALL_TIMES

    x, w, b = jnp.ones((1, 3)), jnp.ones((3, 4)), jnp.ones((4,))

    def affine(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
        return x @ w + b

    raw = jax.jit(affine)
    raw(x, w, b)
    if row == "raw":
        call = lambda i: raw(x, w, b)  # noqa: E731
    elif row == "passthrough":

        class PassThrough:
            __slots__ = ("fn",)

            def __init__(self, fn: object) -> None:
                self.fn = fn

            def __call__(self, *a: object, **k: object) -> object:
                return self.fn(*a, **k)  # type: ignore[operator]

        bare = PassThrough(raw)
        call = lambda i: bare(x, w, b)  # noqa: E731
    elif row in ("hit", "window"):
        with jitlens.track(timeline=True):
            one = jax.jit(lambda x, w, b: x @ w + b)
            one(x, w, b)  # its compile, seen
        hooks.MAX_CALL_TIMES = sys.maxsize  # kept in the window for every call
        calls_module.SETTLED_CALLS = sys.maxsize  # ... and timed there, never settled
        jitlens.track(timeline=row == "window").start()
        for _ in range(40):  # past the advisor's first calls
            one(x, w, b)
        call = lambda i: one(x, w, b)  # noqa: E731
    elif row == "raw_fresh":
        plain = [jax.jit(affine) for _ in range(calls // MAX_CALL_TIMES + 1)]
        for made in plain:
            made(x, w, b)
        call = lambda i: plain[i // MAX_CALL_TIMES](x, w, b)  # noqa: E731
    else:  # a fresh wrapper every MAX_CALL_TIMES calls, made (and called once) untracked
        pool = []
        for _ in range(calls // MAX_CALL_TIMES + 1):
            with jitlens.track():
                made = jax.jit(affine)
            made(x, w, b)
            pool.append(made)
        jitlens.track(timeline=True).start()
        call = lambda i: pool[i // MAX_CALL_TIMES](x, w, b)  # noqa: E731
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], capture_output=True)
    list(map(call, range(calls)))


def count(row: str, calls: int) -> float:
    """Instructions per call of ``row``, counted in a child under callgrind."""
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--collect-atstart=no",
            "--toggle-collect=map_next",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            row,
            "--calls",
            str(calls),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"no count for {row}: {out.stderr[-2000:]}")
    return int(found.group(1)) / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--calls", type=int, default=4000)
    p.add_argument("--child", choices=list(ROWS))
    args = p.parse_args()
    if args.child:
        child(args.child, args.calls)
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("needs valgrind and callgrind_control on PATH")
    counts = {row: count(row, args.calls) for row in ROWS}
    base = counts["raw"]
    print(f"instructions per call ({args.calls} calls per row, callgrind)")
    for row, label in ROWS.items():
        against = counts["raw_fresh"] if row == "fresh" else base
        extra = counts[row] - against
        print(f"  {label:62s} {counts[row]:9.0f}  {counts[row] / against:.3f}x  ({extra:+.0f})")


if __name__ == "__main__":
    main()
