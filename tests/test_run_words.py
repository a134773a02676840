"""``jitlens run`` as a user runs it, in fresh processes: the words the live log and the exit
summary share, the paths they show, and the exit status a program chooses.

The processes of a test start together and are waited for together (each is a new
interpreter importing jax: seconds).
"""

from __future__ import annotations

import html
import json
import os
import pathlib
import subprocess
import sys

import pytest

#: Shapes padded to buckets (multiples of 16), then served from the cache.
BUCKETS = """
import jax, jax.numpy as jnp

f = jax.jit(lambda x: (x * 2).sum())
for n in (16, 32, 48, 16, 32):
    f(jnp.ones(n))
"""


def _start(args: list[str], cwd: pathlib.Path, *, python: bool = False) -> subprocess.Popen[str]:
    """``jitlens ARGS`` (or, with ``python``, ``python ARGS``: the ground truth) in ``cwd``."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "COLUMNS": "100"}
    env.pop("JITLENS", None)
    return subprocess.Popen(
        [sys.executable, *([] if python else ["-m", "jitlens"]), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(procs: dict[str, subprocess.Popen[str]]) -> dict[str, tuple[int, str, str]]:
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=240)
        out[name] = (proc.returncode, stdout, stderr)
    return out


def test_the_live_log_and_the_summary_say_one_thing_of_buckets_and_paths(
    tmp_path: pathlib.Path,
) -> None:
    """Shapes padded to buckets: the live log said "Keep shapes fixed: pad ..." at the
    retrace that made the set, the summary "a bounded set of buckets" of the same retraces.
    Both now say the summary's words, made once in ``_core/reasons/shape.py``. And a program
    run as ``../prog.py`` (or by an absolute path through ``sub/..``) is shown by its
    normalised path as tracebacks show it: relative to the working folder when below it
    (``prog.py``), else absolute; it was ``/…/sub/../prog.py``. Issue 46 (test_user_paths'):
    a script outside the working folder is named by its absolute path everywhere jitlens
    prints one: the live log, the summary, the JSON report, the HTML page; never ``../``."""
    (tmp_path / "prog.py").write_text(BUCKETS)
    sub = tmp_path / "sub"
    sub.mkdir()
    outputs = ["--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")]
    runs = _finish(
        {
            "up": _start(["run", *outputs, "../prog.py"], sub),
            "absolute": _start(["run", str(sub / ".." / "prog.py")], tmp_path),
        }
    )
    full = str(tmp_path / "prog.py")
    for name, shown in (("up", full), ("absolute", "prog.py")):
        status, _stdout, raw = runs[name]
        assert status == 0, raw
        stderr = " ".join(raw.split())  # (a long absolute path wraps the log's line)
        assert f"(jax.jit) {shown}:6 retrace #2" in stderr, (name, stderr)
        assert f"(defined at {shown}:4)" in stderr, (name, stderr)
        assert "/../" not in stderr and "sub/.." not in stderr, (name, stderr)
    assert "../" not in runs["up"][2], runs["up"][2]
    (fn,) = json.loads((tmp_path / "r.json").read_text())["functions"]
    assert fn["defined_at"] == f"{full}:4", fn["defined_at"]
    assert all(e["call_site"] == f"{full}:6" for e in fn["events"]), fn["events"]
    page = html.unescape((tmp_path / "r.html").read_text())
    assert f"defined at {full}:4" in page and "../prog.py" not in page
    stderr = " ".join(runs["up"][2].split())
    words = (
        "`x` axis 0 took 16, 32, 48 (multiples of 16): a bounded set of buckets, each "
        "compiled once; expected, not lost"
    )
    log, summary = stderr.split("jitlens: 1 jitted function", 1)
    assert words in log.split("retrace #2", 1)[1], log  # said as the set is made
    assert words in summary, summary
    assert "Keep shapes fixed" not in log.split("retrace #2", 1)[1], log


#: A program whose retrace ``--fail-on-retrace`` stops, which catches jitlens' error and goes
#: on, then ends as ``{end}`` says.
CAUGHT = """
import sys
import jax, jax.numpy as jnp

f = jax.jit(lambda x: x + 1)
try:
    f(jnp.ones(2))
    f(jnp.ones(3))
except Exception:
    print("caught", flush=True)
{end}
"""

#: How the program ends: a status it chooses ...
CHOSEN = (
    "raise SystemExit(4)",
    "raise SystemExit('bye')",
    "def stop():\n    try:\n        raise SystemExit(6)\n    finally:\n        print('cleaned up')\n\n\nstop()",
)
#: ... or none: a SystemExit caught, and a ``sys.exit(5)`` in a thread (it ends the thread, not
#: the program), then ``sys.exit()``: the program ends as python ends, with status 0.
NOT_CHOSEN = (
    "import sys, threading\n"
    "try:\n    raise SystemExit(7)\nexcept SystemExit:\n    pass\n"
    "(t := threading.Thread(target=sys.exit, args=(5,))).start() or t.join() or sys.exit()",
)


@pytest.fixture(scope="module")
def statuses(tmp_path_factory) -> tuple[pathlib.Path, dict[str, tuple[int, str, str]]]:
    """Each ending under ``jitlens run --fail-on-retrace`` after the caught RecompileError, and
    alone under python (the ground truth: without jitlens nothing is raised before it)."""
    tmp = tmp_path_factory.mktemp("statuses")
    procs = {}
    for i, end in enumerate(CHOSEN + NOT_CHOSEN):
        (tmp / f"p{i}.py").write_text(CAUGHT.format(end=end))
        (tmp / f"plain{i}.py").write_text(end + "\n")
        procs[end] = _start(["run", "--fail-on-retrace", "--json", f"r{i}.json", f"p{i}.py"], tmp)
        procs["python " + end] = _start([f"plain{i}.py"], tmp, python=True)
    return tmp, _finish(procs)


@pytest.mark.xdist_group("run_words_statuses")  # its module fixture runs once
def test_a_status_the_program_chooses_stands_under_fail_on_retrace(statuses) -> None:
    """A program that caught jitlens' RecompileError and then ended by ``raise
    SystemExit(5)`` (or from inside ``try/finally``) exited 1 under ``--fail-on-retrace``,
    where python exits 5: only ``sys.exit(5)`` was seen. Every way of choosing a status now
    stands as plain python gives it (a message: status 1, the message on stderr); a
    SystemExit the program caught chooses none: the swallowed violation fails it. (Python's
    status is that of the ending alone: without jitlens nothing is raised before it.)"""
    tmp, runs = statuses
    for i, end in enumerate(CHOSEN + NOT_CHOSEN):
        status, stdout, stderr = runs[end]
        python_status, _out, python_stderr = runs["python " + end]
        assert stdout.startswith("caught\n"), (end, stdout, stderr)  # jitlens' RecompileError
        assert json.loads((tmp / f"r{i}.json").read_text())["functions"], end  # the report
        if end in NOT_CHOSEN:
            assert python_status == 0 and status == 1, (end, stderr)
            assert "exiting 1 as --fail-on-retrace asks" in stderr, (end, stderr)
            continue
        assert python_status != 0 and status == python_status, (end, status, stderr)
        assert f"chose its own exit status, {python_status}: it stands" in stderr, (end, stderr)
        assert python_stderr in stderr, (end, python_stderr, stderr)  # "bye", as python says it


@pytest.mark.xdist_group("run_words_statuses")  # its module fixture runs once
def test_a_sys_exit_in_a_thread_chooses_no_status_under_fail_on_retrace(statuses) -> None:
    """(From test_trust_exit.) ``sys.exit(5)`` in a thread ends the thread, not the program;
    its ``sys.exit()`` then is a success, which ``--fail-on-retrace`` fails (the program that
    chooses no status above does both)."""
    tmp, runs = statuses
    (end,) = NOT_CHOSEN
    assert "threading.Thread(target=sys.exit, args=(5,))" in end
    status, stdout, stderr = runs[end]
    assert (runs["python " + end][0], status) == (0, 1), stderr
    assert stdout.startswith("caught\n")
    assert "exiting 1 as --fail-on-retrace asks" in stderr
    assert json.loads((tmp / f"r{len(CHOSEN)}.json").read_text())["functions"]
