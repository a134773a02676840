"""Start-up cost of tracking: a ~1 s pure-JAX program under python, `jitlens run` and JITLENS=1.

What the figure covers: the whole process, from the interpreter's start to its
exit, of a program that imports JAX, compiles one function and calls it a fixed
number of times (fixed work, not a fixed wall time: a loop that runs for a fixed
time hides what tracking costs inside it). Under tracking that is jitlens' start-up
hook, its imports when the program imports JAX, the tracked calls (the first 2,000
in the timeline window), the report and the exit summary. ``jitlens run`` also
pays one more interpreter start-up (it checks its options and ``exec``s
``python prog.py``), measured on its own in the last lines.

The three modes run interleaved, round after round (each round in another
order), and each mode is compared with the ``python`` run of its own round
(paired): slow drifts of a shared machine cancel out. Printed per mode: the
median of the paired ratios with their spread (lowest-highest), and the ratio of
the minima, for wall time and for CPU time (user + system, all threads). XLA runs
single-threaded here (``--xla_cpu_multi_thread_eigen=false``): its thread pool's
spinning would otherwise put more noise into CPU time than the 5% to resolve.

Then jitlens' own share, measured inside the tracked process (CPU time of the main
thread, least-disturbed of a few runs): the start-up hook (``JITLENS=1`` .pth
import), the start when the program imports JAX, and the report and summary at
exit, next to the whole main thread's CPU time under plain ``python``. This part
resolves a millisecond on a loaded machine where the end-to-end ratios wander by
a few percent.

``--baseline SRC`` (another jitlens' ``src`` folder, e.g. ``git archive REV src``
unpacked) also measures that version's share, its runs interleaved with this
one's: a change's effect on the start and the exit, side by side on the same
machine at the same load.

Every mode runs from cached bytecode, as an installed package does: the children
get a bytecode folder of their own (``PYTHONPYCACHEPREFIX``), filled by the
warm-up round, even where the environment sets ``PYTHONDONTWRITEBYTECODE`` (an
editable install would otherwise compile jitlens from source at every start).

    python benchmarks/startup.py [--rounds 12] [--steps 3000] [--baseline SRC]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

PROGRAM = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp

    @jax.jit
    def step(w, x):
        return jnp.tanh(x @ w) @ w.T

    w = jnp.ones((64, 64)) * 0.01
    x = jnp.ones((32, 64))
    for _ in range(int(sys.argv[1])):
        x = step(w, x)
    x.block_until_ready()
    """
)

#: Runs the program in this interpreter and writes, at the very end of the process,
#: the main thread's CPU time and (tracked) the CPU time of jitlens' phases.
ACCOUNT = textwrap.dedent(
    """
    import atexit, json, os, sys, time
    phases = {}
    if "jitlens._cli.autostart" in sys.modules:
        from jitlens._cli import autostart

        def timed(name):
            inner = getattr(autostart, name)

            def run(*args):
                start = time.thread_time()
                try:
                    return inner(*args)
                finally:
                    phases[name] = phases.get(name, 0.0) + time.thread_time() - start
                    dump()  # jitlens' exit hook runs after ours (atexit: last in, first out)

            setattr(autostart, name, run)

        timed("_start")
        timed("_finish")

    def dump():
        with open(os.environ["ACCOUNT_OUT"], "w") as out:
            json.dump({"main": time.thread_time(), **phases}, out)

    atexit.register(dump)
    prog = sys.argv[1]
    sys.argv = sys.argv[1:]
    exec(compile(open(prog).read(), prog, "exec"), {"__name__": "__main__"})
    """
)


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, all threads) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _spread(paired: list[float]) -> str:
    return f"{statistics.median(paired):.3f}x [{min(paired):.3f}-{max(paired):.3f}]"


def _hook_import_ms(env: dict[str, str]) -> float:
    """Wall ms of the start-up hook's import (``-X importtime``, JITLENS=1, nothing else)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"],
        env={**env, "JITLENS": "1"},
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    for line in out.splitlines():
        if line.rstrip().endswith("| jitlens._cli.autostart") or line.rstrip().endswith(
            "|   jitlens._cli.autostart"
        ):
            return int(line.split("|")[1]) / 1000
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--accounting-runs", type=int, default=5)
    parser.add_argument("--baseline", metavar="SRC", help="another jitlens' src folder")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        prog = os.path.join(folder, "prog.py")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        account = os.path.join(folder, "account.py")
        with open(account, "w") as f:
            f.write(ACCOUNT)
        base = {**os.environ, "JAX_PLATFORMS": "cpu"}
        base.pop("JITLENS", None)
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")
        base["XLA_FLAGS"] = (
            base.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
        ).strip()
        steps = str(opts.steps)
        modes = {
            "python": ([sys.executable, prog, steps], base),
            "jitlens run": ([sys.executable, "-m", "jitlens", "run", prog, steps], base),
            "JITLENS=1": ([sys.executable, prog, steps], {**base, "JITLENS": "1"}),
        }
        names = list(modes)
        for cmd, env in modes.values():  # warm-up: OS caches, bytecode
            measure(cmd, env)
        walls: dict[str, list[float]] = {m: [] for m in modes}
        cpus: dict[str, list[float]] = {m: [] for m in modes}
        for r in range(opts.rounds):
            for mode in names[r % 3 :] + names[: r % 3]:  # each round in another order
                elapsed, cpu = measure(*modes[mode])
                walls[mode].append(elapsed)
                cpus[mode].append(cpu)
        bare = [measure([sys.executable, "-c", "pass"], base)[0] for _ in range(opts.rounds)]
        no_site = [
            measure([sys.executable, "-S", "-c", "pass"], base)[0] for _ in range(opts.rounds)
        ]

        accounts: dict[str, list[dict[str, float]]] = {"python": [], "JITLENS=1": []}
        tracked_modes = [("python", {}), ("JITLENS=1", {"JITLENS": "1"})]
        if opts.baseline:
            accounts["baseline"] = []
            src = os.path.abspath(opts.baseline)
            tracked_modes.append(("baseline", {"JITLENS": "1", "PYTHONPATH": src}))
            env = {**base, **tracked_modes[-1][1], "ACCOUNT_OUT": os.devnull}
            subprocess.run([sys.executable, account, prog, steps], env=env, capture_output=True)
        out = os.path.join(folder, "account.json")
        for _ in range(opts.accounting_runs):
            for mode, extra in tracked_modes:
                env = {**base, **extra, "ACCOUNT_OUT": out}
                subprocess.run(
                    [sys.executable, account, prog, steps], env=env, check=True, capture_output=True
                )
                with open(out) as f:
                    accounts[mode].append(json.load(f))
        hook = min(_hook_import_ms(base) for _ in range(opts.accounting_runs))

    plain_wall, plain_cpu = walls["python"], cpus["python"]
    print(
        f"a pure-JAX program, {opts.steps} calls of one jitted function, {opts.rounds} "
        f"interleaved rounds: python {statistics.median(plain_wall):.3f} s wall "
        f"(min {min(plain_wall):.3f}), {statistics.median(plain_cpu):.3f} s CPU"
    )
    print(
        "  mode          wall: paired median [spread]   min/min   CPU: paired median [spread]   min/min"
    )
    for mode in names[1:]:
        pw = [a / b for a, b in zip(walls[mode], plain_wall, strict=True)]
        pc = [a / b for a, b in zip(cpus[mode], plain_cpu, strict=True)]
        print(
            f"  {mode:12s}  {_spread(pw):28s}  {min(walls[mode]) / min(plain_wall):.3f}x"
            f"    {_spread(pc):28s}  {min(cpus[mode]) / min(plain_cpu):.3f}x"
        )
    main_cpu = min(a["main"] for a in accounts["python"])
    tracked = accounts["JITLENS=1"]
    tracked_cpu = min(a["main"] for a in tracked)
    start = min(a.get("_start", float("nan")) for a in tracked)
    finish = min(a.get("_finish", float("nan")) for a in tracked)
    spread = {
        mode: f"{min(a['main'] for a in runs) * 1e3:.0f}-{max(a['main'] for a in runs) * 1e3:.0f}"
        for mode, runs in accounts.items()
    }
    print(
        f"main-thread CPU of the whole process, least-disturbed of {opts.accounting_runs} runs: "
        f"python {main_cpu * 1e3:.0f} ms, JITLENS=1 {tracked_cpu * 1e3:.0f} ms: "
        f"{tracked_cpu / main_cpu:.3f}x (runs spread over {spread['python']} and "
        f"{spread['JITLENS=1']} ms: the phases below resolve more)"
    )
    print(
        f"  of which jitlens' start when the program imports JAX {start * 1e3:.1f} ms, "
        f"its report and summary at exit {finish * 1e3:.1f} ms; the start-up hook's import "
        f"{hook:.1f} ms wall (most of it modules JAX imports anyway: typing, threading)"
    )
    if opts.baseline:
        old = accounts["baseline"]
        print(
            f"  baseline {opts.baseline}, interleaved: main thread "
            f"{min(a['main'] for a in old) * 1e3:.0f} ms, start "
            f"{min(a.get('_start', float('nan')) for a in old) * 1e3:.1f} ms, exit "
            f"{min(a.get('_finish', float('nan')) for a in old) * 1e3:.1f} ms"
        )
    print(
        f"  interpreter start-up (python -c pass): {min(bare):.3f} s = "
        f"{min(bare) / min(plain_wall):.3f} of python's"
    )
    print(
        f"    of which site and the .pth files here (minus python -S -c pass): "
        f"{min(bare) - min(no_site):.3f} s = {(min(bare) - min(no_site)) / min(plain_wall):.3f} of python's"
    )
    launcher = statistics.median(
        a - b for a, b in zip(walls["jitlens run"], walls["JITLENS=1"], strict=True)
    )
    print(f"  jitlens run minus JITLENS=1 (its launcher), paired median: {launcher:+.3f} s")


if __name__ == "__main__":
    main()
