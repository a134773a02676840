"""The end of a program under ``jitlens run``: late calls, signals while writing, closed stderr,
and the targets python runs (a folder with ``__main__.py``, a zip application)."""

from __future__ import annotations

import json
import signal
import zipfile

import pytest

from conftest import run_python

LATE = """
import atexit, os, threading, time
import jax, jax.numpy as jnp
T, C = [0], [0]

@jax.jit
def f(x):
    T[0] += 1
    return x + 1

def call(n):
    C[0] += 1
    return f(jnp.ones(n))

atexit.register(lambda: print("TRUTH", T[0], C[0], flush=True))  # registered first: runs last
atexit.register(lambda: [call(n) for n in (4, 5, 5)])

def worker():
    time.sleep(0.3)  # outlives the main module
    for n in (6, 6, 7):
        call(n)

threading.Thread(target=worker).start()
call(2)
os.close(2)  # the program closes its stderr: its retraces from here are said in the journal
"""


@pytest.fixture(scope="module")
def late(tmp_path_factory):
    """``jitlens run --json r.json late.py``: its process, and its report."""
    tmp = tmp_path_factory.mktemp("late")
    (tmp / "late.py").write_text(LATE)
    proc = run_python(["-m", "jitlens", "run", "--json", "r.json", "late.py"], cwd=tmp)
    report = tmp / "r.json"
    return proc, json.loads(report.read_text()) if report.exists() else None


@pytest.mark.xdist_group("run_end_late")  # its module fixture runs once
def test_calls_in_atexit_handlers_and_lingering_threads_are_in_the_report(late):
    proc, report = late
    assert proc.returncode == 0, proc.stderr
    truth = next(line.split()[1:] for line in proc.stdout.splitlines() if "TRUTH" in line)
    (f,) = report["functions"]
    assert [str(f["traces"]), str(f["calls"])] == truth == ["5", "7"]


@pytest.mark.xdist_group("run_end_late")  # its module fixture runs once
def test_a_program_that_closes_stderr_keeps_its_exit_status(late):
    """(The program above closes descriptor 2 before its last calls.)"""
    proc, report = late
    assert proc.returncode == 0
    assert report["functions"]


TERM = """
import atexit, os, signal, sys
import jax, jax.numpy as jnp
f = jax.jit(lambda x: x + 1)
f(jnp.ones(2)); f(jnp.ones(3))
if sys.argv[1] == "atexit":  # the program's own exit hook ends it: jitlens' hook never runs
    atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))
else:  # killed while it puts its report in the journal: the frame is cut short
    import jitlens._core.journal as layout
    import jitlens._track.journal as journal

    write = journal._write

    def cut_short(j, frame):
        if frame.get("t") == "final":
            data = layout.encode(frame)
            os.write(j.fd, data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        write(j, frame)

    journal._write = cut_short
"""


@pytest.mark.parametrize(("when", "how"), [("atexit", "SIGTERM"), ("final", "SIGKILL")])
def test_a_program_killed_at_its_exit_still_gets_every_report_built_from_its_journal(
    tmp_path, when, how
):
    (tmp_path / "term.py").write_text(TERM)
    command = ["-m", "jitlens", "run", "--json", "r.json", "--html", "r.html", "term.py", when]
    proc = run_python(command, cwd=tmp_path)
    assert proc.returncode == -getattr(signal, how), proc.stderr  # as without jitlens
    report = json.loads((tmp_path / "r.json").read_text())
    assert [f["traces"] for f in report["functions"]] == [2]
    assert [f["calls"] for f in report["functions"]] == [2]
    assert any(f"ended by {how}" in w for w in report["warnings"]), report["warnings"]
    assert (tmp_path / "r.html").read_text().rstrip().endswith("</html>")
    assert "jitlens: 1 jitted function" in proc.stderr
    assert "jitlens: wrote r.html" in proc.stderr


APP = """
import sys
import jax, jax.numpy as jnp
import helper
print("argv", sys.argv[1:], "path0", sys.path[0].endswith(("app", "app.pyz")))
helper.f(jnp.ones(2)); helper.f(jnp.ones(3))
"""


def test_a_folder_with_main_and_a_zip_app_run_as_with_python(tmp_path, fork_python):
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(APP)
    (app / "helper.py").write_text("import jax\nf = jax.jit(lambda x: x * 2)\n")
    with zipfile.ZipFile(tmp_path / "app.pyz", "w") as zf:
        for name in ("__main__.py", "helper.py"):
            zf.write(app / name, name)
    for target in ("app", "app.pyz"):
        report = tmp_path / f"{target}.json"
        proc = run_python(
            ["-m", "jitlens", "run", "--json", str(report), target, "--", "x"], cwd=tmp_path
        )
        # python's answer from a fork of the server that imported JAX: runpy runs a folder or
        # a zip as python does (its __main__.py, the target first on sys.path)
        plain = fork_python([target, "--", "x"], cwd=tmp_path)
        assert proc.returncode == plain.returncode == 0, proc.stderr
        assert proc.stdout == plain.stdout == "argv ['--', 'x'] path0 True\n"
        assert [f["traces"] for f in json.loads(report.read_text())["functions"]] == [2]
