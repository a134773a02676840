"""Programs written to break jitlens, third round (the first two: ``test_hostile_programs.py``
and ``test_hostile_programs2.py``), each compared with plain ``python`` as ground truth.

Stdout, exit status and the program's own files must be what ``python`` gives, and
jitlens' counts must equal the counters in the jitted bodies. JAX's start-up costs
seconds, so one program holds several moves and runs once per mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jitlens import main
from report_samples import sample_report

pytestmark = pytest.mark.xdist_group("hostile_programs")

#: Starts ``python ARGS`` with the environment ``ENV`` (JSON) in the working folder ``FOLDER``,
#: removed before the interpreter starts: ``python -c IN_A_REMOVED_FOLDER FOLDER ENV ARGS``.
IN_A_REMOVED_FOLDER = (
    "import json, os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
    "os.execve(sys.executable, [sys.executable, *sys.argv[3:]], json.loads(sys.argv[2]))"
)


def _python(args: list[str], tmp_path, removed: str, **env: str) -> subprocess.CompletedProcess:
    """``python ARGS`` started in the folder ``tmp_path / removed``, removed before it starts."""
    folder = tmp_path / removed
    folder.mkdir()
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    full = {k: v for k, v in full.items() if not k.startswith("PYTEST_XDIST")}
    launcher = {k: v for k, v in full.items() if not k.startswith("JITLENS")}
    return subprocess.run(
        [sys.executable, "-c", IN_A_REMOVED_FOLDER, str(folder), json.dumps(full), *args],
        env=launcher,
        capture_output=True,
        text=True,
        timeout=240,
    )


#: Uses jitlens' API before it imports jax; started in a removed folder, removes the next one
#: it works in; starts a Python child running CHILD (``import jax`` where JITLENS_CHILDREN=1
#: tracks it; a child jitlens leaves alone, that imports jax, is test_run_as_python's); puts a
#: folder where jitlens writes its HTML report; and replaces sys.stderr with its own log file
#: before it exits.
PROGRAM = """
import os, subprocess, sys, tempfile
from jitlens import max_traces  # jitlens' API before jax: this import of jitlens imports jax
import jax, jax.numpy as jnp
html, log, report, child = sys.argv[1:]
T = [0]

@max_traces(5)
@jax.jit
def f(x):
    T[0] += 1
    return x + 1

f(jnp.ones(1))
gone = tempfile.mkdtemp()
os.chdir(gone)
os.rmdir(gone)
f(jnp.ones(2)); f(jnp.ones(2))
done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
print("child", done.returncode, repr(done.stdout), "report there", os.path.exists(report))
os.makedirs(html)
sys.stderr = open(log, "w")
print("TRUTH", T[0])
"""


@pytest.mark.slow
def test_a_removed_working_folder_a_tracked_child_and_the_programs_own_stderr(tmp_path):
    """Four breaks of one program. (0) ``from jitlens import max_traces`` before ``import
    jax`` (or ``JITLENS=1 pytest --jitlens-report``): jitlens' own modules imported jax, the
    start-up hook started tracking inside that import, failed on its half-imported modules
    (``could not start tracking (ImportError: ... partially initialized module ...)``) and
    wrote no summary, no report. (1) Started in a working folder since removed, or removing
    the one it works in (``os.chdir(tmp); os.rmdir(tmp)``): ``os.getcwd()`` raised in
    jitlens' path words at each trace, it "stepped aside" and counted 1 trace of 2, and
    ``jitlens run`` died of a FileNotFoundError traceback before the program ran. (2) A
    child tracked by ``JITLENS_CHILDREN=1`` wrote its own report over ``JITLENS_REPORT``, the
    parent's file. (3) A report file jitlens could not write was said on ``sys.stderr`` at
    exit: the program's own log file by then."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    prog = str(tmp_path / "prog.py")
    out = {}
    for mode in ("python", "run", "env"):
        html, log, report = (str(tmp_path / f"{mode}.{ext}") for ext in ("html", "log", "json"))
        args = [prog, html, log, report, "import jax" if mode == "env" else "pass"]
        if mode == "python":
            out[mode] = _python(args, tmp_path, mode)
        elif mode == "run":
            jitlens = ["-m", "jitlens", "run", "--json", report, "--html", html]
            out[mode] = _python([*jitlens, *args], tmp_path, mode)
        else:
            paths = {"JITLENS_REPORT": report, "JITLENS_HTML": html}
            out[mode] = _python(args, tmp_path, mode, JITLENS="1", JITLENS_CHILDREN="1", **paths)
    plain = out["python"]
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.endswith("report there False\nTRUTH 2\n"), plain.stdout
    for mode in ("run", "env"):
        proc = out[mode]
        assert (proc.returncode, proc.stdout) == (0, plain.stdout), (mode, proc.stderr[-3000:])
        assert "stepped aside" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert "could not start" not in proc.stderr, proc.stderr
        (row,) = json.loads((tmp_path / f"{mode}.json").read_text())["functions"]
        assert (row["calls"], row["traces"], row["cache_hits"]) == (3, 2, 1), (mode, row)
        assert f"jitlens: cannot write {tmp_path / mode}.html: Is a directory" in proc.stderr
        assert (tmp_path / f"{mode}.log").read_text() == "", mode  # the program's own file
        assert f"jitlens: wrote {tmp_path / mode}.json" in proc.stderr, proc.stderr


NO_JAX = "print('ran')\n"


def test_a_relative_report_path_in_a_removed_folder_and_bad_settings_are_named(tmp_path):
    """A relative report path where the working folder was removed names no folder: said in
    one line before the program runs, as any report path that cannot be written (``jitlens
    run`` died of a traceback; ``JITLENS=1`` said ``JITLENS_RUN is not jitlens run's``, a
    variable nobody set). A bad ``JITLENS_INCLUDE_INTERNAL`` under ``JITLENS=1`` was worded
    the same wrong way; now its own words, and the program runs untracked."""
    (tmp_path / "prog.py").write_text(NO_JAX)
    prog = str(tmp_path / "prog.py")
    run = _python(["-m", "jitlens", "run", "--json", "r.json", prog], tmp_path, "a")
    env = _python([prog], tmp_path, "b", JITLENS="1", JITLENS_REPORT="r.json")
    said = "r.json is a relative path and the working folder was removed"
    for proc, who in ((run, "jitlens run: --json "), (env, "jitlens: JITLENS_REPORT=")):
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert proc.stderr.startswith(who + said) and proc.stderr.count("\n") == 1, proc.stderr
    bad = _python([prog], tmp_path, "c", JITLENS="1", JITLENS_INCLUDE_INTERNAL="maybe")
    assert (bad.returncode, bad.stdout) == (0, "ran\n"), bad.stderr
    assert bad.stderr == (
        "jitlens: JITLENS_INCLUDE_INTERNAL='maybe' is not valid; use one of: 1, 0, true, "
        "false, yes, no, on, off; not tracking\n"
    )


#: Characters that act on a terminal instead of being shown: clear the screen, set the
#: window title, write over the line, reverse the text that follows.
ACTING = ("\x1b[2J", "\x1b]0;pwned\x07", "\r", "\u202e")


def test_a_report_from_elsewhere_cannot_drive_the_terminal(tmp_path, capsys):
    """``jitlens report|merge|diff`` print a report that came from another machine: its host,
    retrace reasons, fixes and warnings reached the terminal raw, escape sequences and all."""
    data = sample_report().to_dict()
    evil = "".join(ACTING)
    data.update(host=f"node{evil}7", process_index=1, process_count=2)
    data["warnings"] = [f"warned{evil}"]
    event = next(e for f in data["functions"] for e in f["events"] if e["reasons"])
    event["reasons"][0].update(path=f"x{evil}", message=f"said{evil}", fix=f"fixed{evil}")
    (tmp_path / "evil.json").write_text(json.dumps(data))
    (tmp_path / "good.json").write_text(
        json.dumps({**sample_report().to_dict(), "process_count": 2})
    )
    evil_path, good = str(tmp_path / "evil.json"), str(tmp_path / "good.json")
    for argv in (
        ["report", evil_path, "--color", "never"],
        ["merge", good, evil_path, "--color", "never"],
        ["diff", good, evil_path],
    ):
        assert main(argv) in (0, 1), argv
        text = "".join(capsys.readouterr())
        assert not any(c in text for c in ("\x1b", "\x07", "\r", "\u202e")), (argv, text)
    main(["report", evil_path, "--color", "never"])
    shown = capsys.readouterr().out
    assert "node\\x1b[2J\\x1b]0;pwned\\x07\\x0d\\u202e7" in shown, shown  # readable, inert
    # ... and one saved again by an editor that marks its UTF-8 (Notepad, PowerShell) is read
    (tmp_path / "bom.json").write_text(sample_report().to_json(), encoding="utf-8-sig")
    assert main(["report", str(tmp_path / "bom.json"), "--color", "never"]) == 0
    bom = capsys.readouterr()
    assert bom.err == "" and f"cpu on {sample_report().host}," in bom.out, bom


def test_a_selfcheck_verdict_that_could_not_be_kept_is_not_said_kept(monkeypatch, capsys):
    """``JITLENS_CACHE_DIR=/dev/null jitlens selfcheck`` said "verdict kept in
    /dev/null/selfcheck-....json", a file that cannot exist."""
    monkeypatch.setenv("JITLENS_CACHE_DIR", os.devnull)
    assert main(["selfcheck"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("jitlens selfcheck: passed on "), out
    assert out.endswith(
        f"; verdict not kept ({os.devnull}: File exists): tracked runs will not read it\n"
    ), out


def test_the_pytest_plugin_does_not_say_it_wrote_a_report_it_could_not_write(tmp_path):
    """A test put a folder where ``--jitlens-report`` writes: the plugin said ``jitlens:
    cannot write r.json: Is a directory`` glued to pytest's progress line, then ``jitlens:
    wrote the report to r.json``."""
    (tmp_path / "test_folder.py").write_text("import os\n\ndef test_a():\n    os.mkdir('r.json')\n")
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--jitlens-report", "r.json"]
    args += ["-p", "no:hypothesispytest"]  # (its plugin's start-up: 1 CPU s of each pytest)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    proc = subprocess.run(
        [sys.executable, *args, "test_folder.py"],
        cwd=tmp_path,
        env={**env, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "jitlens: cannot write r.json: Is a directory" in lines, proc.stdout
    assert "wrote" not in proc.stdout + proc.stderr, proc.stdout


def test_merge_of_a_job_of_a_billion_processes_is_refused_and_missing_ones_are_runs(
    tmp_path, capsys
):
    """Two reports claiming ``process_count`` 1,000,000,000: ``jitlens merge`` listed every
    process missing, one by one, and was killed out of memory (it took the machine with it).
    A real job's missing processes are one run of numbers, not thousands of them."""
    data = sample_report().to_dict()
    for count, name in ((10**9, "forged"), (4096, "pod")):
        for index in (0, count - 1):
            part = {**data, "process_index": index, "process_count": count}
            (tmp_path / f"{name}{index}.json").write_text(json.dumps(part))
    forged = [str(tmp_path / "forged0.json"), str(tmp_path / f"forged{10**9 - 1}.json")]
    assert main(["merge", *forged]) == 2
    err = capsys.readouterr().err
    assert "process_count 1,000,000,000, above the 1,000,000 of any job" in err, err
    assert err.count("\n") == 1, err
    pod = [str(tmp_path / "pod0.json"), str(tmp_path / "pod4095.json")]
    assert main(["merge", *pod, "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert "no report from processes 1-4094: divergences" in out.replace("\n", " "), out
