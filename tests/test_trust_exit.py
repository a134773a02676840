"""The end of a program off the happy path: forked children, and the exit status the program chose.

Ground truth is plain ``python`` run side by side: a forked child that returns
runs JAX's exit hooks there (jitlens took them off the ``atexit`` list the child
inherits, to run them after its report); a program that catches the
``RecompileError`` of ``--fail-on-retrace`` and calls ``sys.exit(5)`` exits 5.
"""

from __future__ import annotations

import json
import signal

import pytest

from conftest import run_python

pytestmark = pytest.mark.xdist_group("trust_exit")

FORK = """
import os, signal, sys, time
import jax, jax.numpy as jnp
import jax._src.api as api  # JAX's exit hook `clean_up` calls this module's clear_caches

PARENT = os.getpid()
real = api.clear_caches

def clear_caches():
    print("JAX exit hook in", "parent" if os.getpid() == PARENT else "child", flush=True)
    real()

api.clear_caches = clear_caches
T = [0]

@jax.jit
def f(x):
    T[0] += 1
    return x + 1

for how in ("SIGTERM", "sys.exit"):  # the backend starts in each child, not here
    pid = os.fork()
    if pid == 0:
        print("child SIGTERM default", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
        if how == "SIGTERM":  # as multiprocessing's Pool.terminate() ends its fork workers
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        print("child", how, float(f(jnp.ones(2))[0]), flush=True)
        sys.exit(0)  # Python's exit: its atexit hooks run
    print("waited", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
print("parent", float(f(jnp.ones(3))[0]), "TRUTH", T[0], flush=True)
"""


def test_a_forked_child_ends_as_under_python_and_only_the_parent_reports(tmp_path, fork_python):
    (tmp_path / "forks.py").write_text(FORK)
    # python's answer from a fork of the server that imported JAX (the program reads nothing
    # at start-up; JAX's exit hook is the server's, as it is the interpreter's that imports JAX)
    plain = fork_python(["forks.py"], cwd=tmp_path, timeout=120)
    command = ["-W", "ignore", "-m", "jitlens", "run", "--json", "r.json", "forks.py"]
    tracked = run_python(command, cwd=tmp_path, timeout=120)
    assert plain.returncode == tracked.returncode == 0, tracked.stderr
    assert plain.stdout.count("JAX exit hook in child") == 1
    assert sorted(tracked.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    (row,) = json.loads((tmp_path / "r.json").read_text())["functions"]
    assert row["traces"] == 1 and "TRUTH 1" in tracked.stdout  # the parent's own, once
    assert tracked.stderr.count("jitted function") == 1  # one summary: the children write none
    assert "waited -15" in tracked.stdout  # died of SIGTERM, as under python


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
    eval(sys.argv[1])
print("went on")
"""


@pytest.mark.parametrize(
    ("how", "status", "said"),
    [
        ("sys.exit(5)", 5, "chose its own exit status, 5: it stands"),
        ("exit(3)", 3, "chose its own exit status, 3: it stands"),  # a script's builtin exit()
        # (sys.exit(5) in a thread, which ends the thread, not the program, then sys.exit(): a
        # success, failed by --fail-on-retrace: test_run_words' program that chooses no status)
    ],
)
def test_the_exit_status_the_program_chose_wins_over_fail_on_retrace(tmp_path, how, status, said):
    (tmp_path / "caught.py").write_text(CAUGHT)
    command = ["-m", "jitlens", "run", "--fail-on-retrace", "--json", "r.json", "caught.py", how]
    proc = run_python(command, cwd=tmp_path, timeout=120)
    assert proc.returncode == status, proc.stderr
    assert proc.stdout.startswith("caught\n")
    assert said in proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["functions"]


CLOSED = """
import sys
import jax, jax.numpy as jnp
f = jax.jit(lambda x: x + 1)
f(jnp.ones(1)); f(jnp.ones(2))
print("not shown", file=sys.stderr if sys.stdout is None else sys.stdout)
"""


def test_a_program_started_with_stdout_closed_runs_and_gets_its_summary(tmp_path):
    """``python prog.py >&-``: sys.stdout is None; jitlens run flushed it, the summary asked it
    whether it is a terminal (the same failure as a program that calls sys.stdout.close())."""
    import os
    import subprocess
    import sys

    (tmp_path / "closed.py").write_text(CLOSED)
    outs = []
    for args in (["closed.py"], ["-m", "jitlens", "run", "closed.py"]):
        outs.append(
            subprocess.run(
                ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, *args],  # descriptor 1 closed
                cwd=tmp_path,
                env={**os.environ, "JAX_PLATFORMS": "cpu"},
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
            )
        )
    plain, tracked = outs
    assert plain.returncode == tracked.returncode == 0, tracked.stderr
    assert plain.stderr == "not shown\n"
    assert "not shown\n" in tracked.stderr
    assert "jitlens: 1 jitted function, 2 traces" in tracked.stderr
    assert "Traceback" not in tracked.stderr and "could not render" not in tracked.stderr


INTERRUPT = """
import os, signal, sys
import jax, jax.numpy as jnp

if "--in-the-program" in sys.argv:  # the program writes its report at its exit
    import jitlens._render.html as html

    def ctrl_c(report):  # fault injection: the user's Ctrl-C lands while the page is written
        raise KeyboardInterrupt

    html.render_html = ctrl_c
f = jax.jit(lambda x: x + 1)
f(jnp.ones(2)); f(jnp.ones(3))
print("done", flush=True)
if "--killed" in sys.argv:  # nobody writes at its exit: jitlens run does, from the journal
    os.kill(os.getpid(), signal.SIGKILL)
"""

#: ``jitlens run`` in this process, where a Ctrl-C lands while it writes the HTML page (fault
#: injection: the page's renderer raises it), once the JSON is out.
INTERRUPTED_PARENT = """
import sys
import jitlens._render.html as html

def ctrl_c(report):
    raise KeyboardInterrupt

html.render_html = ctrl_c
sys.argv = ["-c", "run", "--json", "r.json", "--html", "r.html", "intr.py", sys.argv[1]]
from jitlens._cli.main import main  # (as the console script: the program's parent)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("where", "status"), [("--in-the-program", 0), ("--killed", -signal.SIGKILL)]
)
def test_ctrl_c_while_the_report_is_written_stops_it_with_one_line_and_keeps_the_status(
    tmp_path, where, status
):
    """Where the program writes its report at its exit, and where jitlens run writes it from
    the journal (the program was killed): the writing stops at the Ctrl-C with one line, the
    JSON already written stays, nobody writes the rest, and the status is the program's."""
    (tmp_path / "intr.py").write_text(INTERRUPT)
    proc = run_python(["-c", INTERRUPTED_PARENT, where], cwd=tmp_path, timeout=120)
    assert proc.returncode == status, proc.stderr  # the program's own status
    assert proc.stdout == "done\n"
    assert proc.stderr.count("jitlens: interrupted (Ctrl-C) while writing the report") == 1
    assert "Traceback" not in proc.stderr and "jitlens/" not in proc.stderr  # no jitlens traceback
    assert "could not make its report" not in proc.stderr and "wrote" not in proc.stderr
    assert not (tmp_path / "r.html").exists()
    assert [f["traces"] for f in json.loads((tmp_path / "r.json").read_text())["functions"]] == [2]
