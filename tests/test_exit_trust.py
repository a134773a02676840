"""How a tracked program ends when it does not reach Python's exit: signals, ``os._exit``, exec.

Each ending is run under plain ``python`` and under ``JITLENS=1`` (some under
``jitlens run`` too), all at once in fresh processes: the exit status and stdout
must be Python's, and the report must hold what the program's own counters
(inside the jitted body, and at each call) say it ran, with a line saying how it
ended. Before this file, none of these endings left a report under ``JITLENS=1``
(SIGTERM and SIGHUP were handled under ``jitlens run`` only), and an
``os._exit`` (in the program, a thread, a signal handler or an ``atexit`` hook of
the program's, which runs before jitlens') or an ``os.execv`` lost it everywhere.
"""

from __future__ import annotations

import json
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import run_python

pytestmark = pytest.mark.xdist_group("exit_trust")

PROG = """
import atexit, os, signal, sys, threading, time

mode = sys.argv[1]
T, C = [0], [0]

def truth():
    print("TRUTH", T[0], C[0], flush=True)

def own(signum, frame):  # the program's own SIGTERM handler: its last words, then os._exit
    call(4)
    truth()
    os._exit(7)

def checkpoint(signum, frame):  # saves, then dies of the signal as if unhandled
    truth()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)

def chain(signum, frame):  # a library's handler: its own work, then the one it replaced
    print("graceful", flush=True)
    if callable(previous):  # SIG_DFL under python: not called
        previous(signum, frame)
    STOP.append(signum)

STOP, previous = [], None
if mode == "own-before":  # installed before jitlens starts (at `import jax`)
    signal.signal(signal.SIGTERM, own)

import jax, jax.numpy as jnp

@jax.jit
def f(x):
    T[0] += 1
    return x + 1

def call(n):
    C[0] += 1
    return f(jnp.ones(n))

call(1); call(2); call(2)
if mode == "own-after":
    signal.signal(signal.SIGTERM, own)
elif mode == "checkpoint":
    signal.signal(signal.SIGTERM, checkpoint)
elif mode == "chain":  # the program ends gracefully through Python's exit
    previous = signal.signal(signal.SIGTERM, chain)
    os.kill(os.getpid(), signal.SIGTERM)
    while not STOP:
        time.sleep(0.01)
    call(8)
    truth()
    sys.exit(3)
if mode in ("SIGTERM", "SIGHUP"):
    truth()
if mode in ("SIGTERM", "SIGHUP", "own-before", "own-after", "checkpoint"):
    os.kill(os.getpid(), getattr(signal, mode if mode.startswith("SIG") else "SIGTERM"))
    time.sleep(60)
elif mode == "atexit-_exit":  # registered after jitlens' hook: runs first, never returns
    atexit.register(lambda: (call(3), truth(), os._exit(4)))
elif mode == "thread-_exit":
    threading.Thread(target=lambda: (call(5), truth(), os._exit(6))).start()
    time.sleep(60)
elif mode == "execv":
    truth()
    os.execv(sys.executable, [sys.executable, "-c", "print('exec ok')"])
"""

#: mode -> (exit status under python, the report's "ended by" words (None: Python's own exit),
#: runners besides python)
ENDINGS = {
    "SIGTERM": (-signal.SIGTERM, "SIGTERM", ("JITLENS=1",)),
    "SIGHUP": (-signal.SIGHUP, "SIGHUP", ("jitlens run",)),
    "own-before": (7, "os._exit(7)", ("JITLENS=1",)),
    "own-after": (7, "os._exit(7)", ("JITLENS=1",)),
    "checkpoint": (-signal.SIGTERM, "SIGTERM", ("JITLENS=1",)),
    "atexit-_exit": (4, "os._exit(4)", ("JITLENS=1",)),
    "thread-_exit": (6, "os._exit(6)", ("JITLENS=1",)),
    "execv": (0, "os.exec*", ("JITLENS=1",)),
    "chain": (3, None, ("jitlens run",)),
}


def _run(tmp_path, mode: str, runner: str) -> tuple[subprocess.CompletedProcess[str], object]:
    report = tmp_path / f"{mode}-{runner.split('=')[0].replace(' ', '-')}.json"
    if runner == "python":
        return run_python(["prog.py", mode], cwd=tmp_path, timeout=180), None
    if runner == "jitlens run":
        command = ["-m", "jitlens", "run", "--json", str(report), "prog.py", mode]
        return run_python(command, cwd=tmp_path, timeout=180), report
    env = {"JITLENS": "1", "JITLENS_REPORT": str(report)}
    return run_python(["prog.py", mode], cwd=tmp_path, env=env, timeout=180), report


def test_each_early_ending_keeps_pythons_status_and_output_and_leaves_the_whole_report(tmp_path):
    (tmp_path / "prog.py").write_text(PROG)
    runs = [(mode, runner) for mode, (*_, rs) in ENDINGS.items() for runner in ("python", *rs)]
    with ThreadPoolExecutor(4) as pool:  # fresh processes, waited on together
        done = dict(zip(runs, pool.map(lambda r: _run(tmp_path, *r), runs), strict=True))
    for (mode, runner), (proc, report) in done.items():
        status, ended_by, _ = ENDINGS[mode]
        plain = done[mode, "python"][0]
        assert proc.returncode == plain.returncode == status, (mode, runner, proc.stderr)
        assert proc.stdout == plain.stdout, (mode, runner)
        if report is None:
            continue
        truth = next(line.split()[1:] for line in proc.stdout.splitlines() if "TRUTH" in line)
        data = json.loads(report.read_text())
        (row,) = data["functions"]
        assert [str(row["traces"]), str(row["calls"])] == truth, (mode, runner)
        said = [w for w in data["warnings"] if w.startswith("the program was ended by")]
        assert len(said) == (ended_by is not None), (mode, said)
        assert (ended_by or "") in "".join(said), (mode, said)
        assert "jitted function" in proc.stderr  # the summary, on the terminal kept at start
    assert done["execv", "python"][0].stdout.endswith("exec ok\n")


CAUGHT = """
import sys
import jax, jax.numpy as jnp
import jitlens

f = jax.jit(lambda x: x + 1)
f(jnp.ones(1))
try:
    f(jnp.ones(2))
except jitlens.RecompileError:
    print("caught", flush=True)
    sys.exit(eval(sys.argv[1]))
"""


def test_a_huge_exit_code_after_a_caught_recompile_error_exits_as_under_python(tmp_path):
    """``sys.exit(2**63)``: python exits 255 (out of a C long long: -1); jitlens exited 1 (it took
    the low 8 bits of the Python int, 0, for a success). ``sys.exit(2**40)`` exits 0 under
    python: a success, so ``--fail-on-retrace`` ends it with 1, as after ``sys.exit(0)``."""
    (tmp_path / "caught.py").write_text(CAUGHT)
    for code, status, said in [
        ("2**63", 255, "chose its own exit status, 255: it stands"),
        ("2**40", 1, "exiting 1 as --fail-on-retrace asks"),
    ]:
        command = ["-m", "jitlens", "run", "--fail-on-retrace", "caught.py", code]
        proc = run_python(command, cwd=tmp_path, timeout=120)
        assert proc.returncode == status, proc.stderr
        assert said in proc.stderr
        assert proc.stdout == "caught\n"
