"""Start-up cost of tracking counted in CPU instructions: ``startup.py``'s program, whole.

``startup.py`` times a ~1 s pure-JAX program (import JAX, compile one function, call
it 3,000 times) under ``python``, ``jitlens run`` and ``JITLENS=1``; on a shared 2-core
machine its ratios wander by more than the 5% they are meant to resolve. This script
runs the same program once per mode under valgrind's callgrind, which counts the
instructions each thread executes whatever the load, and prints each mode's count as a
ratio to ``python``'s, measured side by side in one run:

- ``JITLENS=1``: the program's process, all its threads (jitlens' start-up hook, its
  start when the program imports JAX, the tracked calls, the report and the summary).
- ``jitlens run``: the parent (an interpreter start-up that reads the options, starts
  ``python prog.py``, waits for it, and writes the summary from its journal) plus the
  program's process.
- ``python -c pass``, for scale: the interpreter start-up alone, which the launcher
  cannot be below.

Threads are counted apiece (``--separate-threads``) and then summed, with the main
thread's share shown on its own. The same build has counted 11,569M and 11,971M
instructions for ``JITLENS=1`` in two runs, and once 440M more in XLA's threads alone:
a thread that spins while it waits for another counts its spinning, and under valgrind
(one thread at a time) how long it spins depends on the scheduling. So each mode runs
``--repeat`` times, interleaved with the others, and its least count is kept. Children
the program starts have other pids and are not counted. Every mode runs from cached
bytecode, as an installed package does (``PYTHONPYCACHEPREFIX``, filled by warm-up
runs).

``--baseline SRC`` (another jitlens' ``src`` folder, e.g. ``git archive REV src``
unpacked) counts that version's two tracked modes in the same run.

    python benchmarks/startup_instructions.py [--steps 3000] [--baseline SRC]

Needs ``valgrind`` on ``PATH``. Takes about 20 minutes on 2 idle cores with the default 3
runs per mode (two at a time; the program runs ~50x slower under callgrind).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from startup import PROGRAM

_TOTAL = re.compile(r"^(?:summary|totals):\s+(\d+)", re.M)


def _count(cmd: list[str], env: dict[str, str], prefix: str, processes: int = 1) -> tuple[int, int]:
    """(all threads, main thread) instructions of the first ``processes`` processes ``cmd``
    starts (``jitlens run``: its own, then the program's).

    Callgrind follows the processes started (``--trace-children=yes``), each in files of its
    pid. Children the program starts (a background self-check) have later pids and are left
    out."""
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            "--trace-children=yes",
            f"--callgrind-out-file={prefix}.%p",
            *cmd,
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    by_pid: dict[int, dict[int, int]] = {}
    for path in glob.glob(prefix + ".*"):
        pid, _, thread = path.rsplit(".", 1)[1].partition("-")
        with open(path) as f:
            match = _TOTAL.search(f.read())
        if match:
            by_pid.setdefault(int(pid), {})[int(thread or 1)] = int(match.group(1))
    counted = [by_pid[pid] for pid in sorted(by_pid)[:processes]]
    return sum(sum(t.values()) for t in counted), sum(t.get(1, 0) for t in counted)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--baseline", metavar="SRC", help="another jitlens' src folder")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode; the least is kept")
    opts = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind on PATH")
    with tempfile.TemporaryDirectory() as folder:
        prog = os.path.join(folder, "prog.py")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        base = {**os.environ, "JAX_PLATFORMS": "cpu"}
        for name in ("JITLENS", "PYTHONDONTWRITEBYTECODE"):
            base.pop(name, None)
        base["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")
        base["XLA_FLAGS"] = (
            base.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
        ).strip()
        steps = str(opts.steps)
        versions = {"": base}
        if opts.baseline:
            old = os.path.abspath(opts.baseline)
            versions["baseline "] = {
                **base,
                "PYTHONPATH": old,
                "PYTHONPYCACHEPREFIX": os.path.join(folder, "pycache-baseline"),
            }
        modes: dict[str, tuple[list[str], dict[str, str], int]] = {
            "python": ([sys.executable, prog, steps], base, 1),
            "python -c pass": ([sys.executable, "-c", "pass"], base, 1),
        }
        for label, env in versions.items():
            modes[f"{label}JITLENS=1"] = ([sys.executable, prog, steps], {**env, "JITLENS": "1"}, 1)
            run = [sys.executable, "-m", "jitlens", "run", prog, steps]
            modes[f"{label}jitlens run"] = (run, env, 2)  # its own process, then the program's
            modes[f"{label}jitlens run (parent)"] = (run, env, 1)
        for env in versions.values():  # warm-up: bytecode, OS caches, the self-check
            for _ in range(2):
                subprocess.run([sys.executable, prog, "10"], env=env, capture_output=True)
                subprocess.run(
                    [sys.executable, prog, "10"], env={**env, "JITLENS": "1"}, capture_output=True
                )
                subprocess.run(
                    [sys.executable, "-m", "jitlens", "run", prog, "10"],
                    env=env,
                    capture_output=True,
                )

        def one(item: tuple[int, str]) -> tuple[str, tuple[int, int]]:
            i, mode = item  # i: each run its own files
            cmd, env, processes = modes[mode]
            return mode, _count(cmd, env, os.path.join(folder, f"cg{i}"), processes)

        runs = [mode for _ in range(opts.repeat) for mode in modes]  # interleaved
        counts: dict[str, tuple[int, int]] = {}
        with ThreadPoolExecutor(max_workers=2) as pool:
            for mode, count in pool.map(one, enumerate(runs)):
                counts[mode] = min(counts.get(mode, count), count)

    plain_all, plain_main = counts["python"]
    print(
        f"a pure-JAX program, {opts.steps} calls of one jitted function, counted by callgrind "
        f"(instructions, all threads; main thread alone; least of {opts.repeat} runs per mode)"
    )
    print(
        f"  python                 {plain_all / 1e6:10,.1f}M  (main thread {plain_main / 1e6:,.1f}M)"
    )
    bare = counts["python -c pass"][0]
    print(f"  python -c pass         {bare / 1e6:10,.1f}M  (an interpreter start-up)")
    for label in versions:
        j1, j1_main = counts[f"{label}JITLENS=1"]
        run, run_main = counts[f"{label}jitlens run"]
        parent = counts[f"{label}jitlens run (parent)"][0]
        print(
            f"  {label}JITLENS=1{'':{13 - len(label)}}{j1 / 1e6:10,.1f}M  "
            f"{j1 / plain_all:.3f}x  (main thread {j1_main / plain_main:.3f}x)"
        )
        print(
            f"  {label}jitlens run{'':{11 - len(label)}}{run / 1e6:10,.1f}M  {run / plain_all:.3f}x  "
            f"(its parent about {parent / 1e6:,.1f}M; main threads "
            f"{run_main / plain_main:.3f}x)"
        )


if __name__ == "__main__":
    main()
