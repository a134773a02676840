"""Start-up cost of tracking: a ~1 s pure-JAX program under python, `jitlens run` and JITLENS=1.

Runs the three side by side, round-robin, and prints each mode's minimum wall
time over the rounds and its ratio to plain ``python`` (the goal: within
1.05x), with the CPU time (user + system) next to it: on a loaded machine CPU
time wanders less than wall time. ``jitlens run`` checks its options and
``exec``s ``python prog.py``: it pays one more interpreter start-up than
``python``, which the last lines measure on their own (``python -c pass``, and
the part of it that is ``site`` and the ``.pth`` files of this installation,
``python -S -c pass`` subtracted); ``JITLENS=1`` pays none.

Every mode runs from cached bytecode, as an installed package does: the
children get a bytecode folder of their own (``PYTHONPYCACHEPREFIX``), filled
by the warm-up round, even where the environment sets
``PYTHONDONTWRITEBYTECODE`` (an editable install would otherwise compile
jitlens from source at every start).

    python benchmarks/startup.py [--rounds 8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

PROGRAM = textwrap.dedent(
    """
    import time
    import jax, jax.numpy as jnp

    @jax.jit
    def step(w, x):
        return jnp.tanh(x @ w) @ w.T

    w = jnp.ones((64, 64)) * 0.01
    x = jnp.ones((32, 64))
    start = time.perf_counter()
    while time.perf_counter() - start < 0.6:  # ~1 s with JAX's import
        x = step(w, x)
    x.block_until_ready()
    """
)


def wall(cmd: list[str], env: dict[str, str]) -> float:
    return measure(cmd, env)[0]


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run: CPU time wanders less on a
    loaded machine, where other processes stretch the wall time."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as folder:
        prog = os.path.join(folder, "prog.py")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        base = {**os.environ, "JAX_PLATFORMS": "cpu"}
        base.pop("JITLENS", None)
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")
        modes = {
            "python": ([sys.executable, prog], base),
            "jitlens run": ([sys.executable, "-m", "jitlens", "run", prog], base),
            "JITLENS=1": ([sys.executable, prog], {**base, "JITLENS": "1"}),
        }
        for cmd, env in modes.values():  # warm-up: OS caches, bytecode
            wall(cmd, env)
        bare = min(wall([sys.executable, "-c", "pass"], base) for _ in range(rounds))
        no_site = min(wall([sys.executable, "-S", "-c", "pass"], base) for _ in range(rounds))
        times: dict[str, list[float]] = {m: [] for m in modes}
        cpus: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(rounds):
            for mode, (cmd, env) in modes.items():
                elapsed, cpu = measure(cmd, env)
                times[mode].append(elapsed)
                cpus[mode].append(cpu)
    plain, plain_cpu = min(times["python"]), min(cpus["python"])
    print(f"start-up of a ~1 s pure-JAX program, min of {rounds} rounds (wall, and CPU time)")
    for mode, ts in times.items():
        cpu = min(cpus[mode])
        print(
            f"  {mode:12s} {min(ts):6.3f} s   {min(ts) / plain:5.3f}x"
            f"   cpu {cpu:6.3f} s   {cpu / plain_cpu:5.3f}x"
        )
    print(f"  interpreter start-up (python -c pass): {bare:.3f} s = {bare / plain:.3f} of python's")
    print(
        f"    of which site and the .pth files here (minus python -S -c pass): "
        f"{bare - no_site:.3f} s = {(bare - no_site) / plain:.3f} of python's"
    )
    launcher = min(times["jitlens run"]) - min(times["JITLENS=1"])
    print(f"  jitlens run minus JITLENS=1 (its launcher): {launcher:+.3f} s")


if __name__ == "__main__":
    main()
