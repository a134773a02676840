"""Programs written to break jitlens, third round (the first two: ``test_hostile_programs.py``
and ``test_hostile_programs2.py``), each compared with plain ``python`` as ground truth.

Stdout, exit status and the program's own files must be what ``python`` gives, and
jitlens' counts must equal the counters in the jitted bodies. JAX's start-up costs
seconds, so one program holds several moves and runs once per mode.
"""

from __future__ import annotations

import json
import os
import pathlib
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


def _python(
    args: list[str], tmp_path, removed: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess:
    """``python ARGS`` started in the folder ``tmp_path / removed``, removed before it starts
    (with the file ``stdin`` on its standard input)."""
    folder = tmp_path / removed
    folder.mkdir()
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    full = {k: v for k, v in full.items() if not k.startswith("PYTEST_XDIST")}
    launcher = {k: v for k, v in full.items() if not k.startswith("JITLENS")}
    with open(stdin or os.devnull) as given:
        return subprocess.run(
            [sys.executable, "-c", IN_A_REMOVED_FOLDER, str(folder), json.dumps(full), *args],
            env=launcher,
            stdin=given,
            capture_output=True,
            text=True,
            timeout=240,
        )


#: One program, read from stdin (``python - x``) and started in a removed folder, with the
#: moves of two rounds (test_hostile_programs' stdin program joined this one: each mode is a
#: fresh interpreter importing JAX). It uses jitlens' API before it imports jax; removes the
#: next folder it works in; closes every descriptor (as daemonizing code does) and opens its own
#: files, which take the numbers jitlens kept (the terminal, the journal and its mapping);
#: clears JAX's monitoring listeners; starts a Python child running ``PROG_CHILD`` (``import
#: jax`` where JITLENS_CHILDREN=1 tracks it; a child jitlens leaves alone, that imports jax, is
#: test_run_as_python's); puts a folder where jitlens writes its HTML report; replaces
#: sys.stderr with its own log file; writes its files' last lines unflushed (Python flushes
#: them at its exit, after jitlens closed its journal); empties sys.path; exits 3.
PROGRAM = """
import os, subprocess, sys, tempfile
from jitlens import max_traces  # jitlens' API before jax: this import of jitlens imports jax
import jax, jax.numpy as jnp
names = ("HTML", "LOG", "REPORT", "CHILD", "LOGS")  # (its arguments are python's: `-`, `x`)
html, log, report, child, logs = (os.environ["PROG_" + name] for name in names)
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
os.closerange(3, 4096)
files = [open(os.path.join(logs, name), "w") for name in ("a.log", "b.log", "c.log", "d.log")]
jax.monitoring.clear_event_listeners()  # as a test fixture or a metrics library does
f(jnp.ones(2))  # a retrace: jitlens' live line and journal frame are not the program's to hold
f(jnp.ones(2))  # a cache hit
for fh in files:
    fh.write("user line\\n")
    fh.flush()
done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
print("child", done.returncode, repr(done.stdout), "report there", os.path.exists(report))
print("argv", sys.argv, "file", globals().get("__file__"), "path0", repr(sys.path[0]))
print("logs", [open(fh.name).read() for fh in files])
print("TRUTH", T[0])
for fh in files:
    fh.write("mine")  # flushed at Python's exit
os.makedirs(html)
sys.stderr = open(log, "w")
sys.path[:] = []  # the report's renderers are imported at exit all the same
sys.exit(3)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple:
    """The program under python, jitlens run and JITLENS=1: each mode's process, what its four
    files hold once it has ended, its report (where it wrote one), and the folder of it all."""
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "prog.py").write_text(PROGRAM)
    out = {}
    for mode in ("python", "run", "env"):
        html, log, report = (str(tmp / f"{mode}.{ext}") for ext in ("html", "log", "json"))
        (tmp / f"logs-{mode}").mkdir()
        paths = {"PROG_HTML": html, "PROG_LOG": log, "PROG_REPORT": report}
        paths["PROG_LOGS"] = str(tmp / f"logs-{mode}")
        paths["PROG_CHILD"] = "import jax" if mode == "env" else "pass"
        stdin = str(tmp / "prog.py")
        if mode == "python":
            proc = _python(["-", "x"], tmp, mode, stdin, **paths)
        elif mode == "run":
            jitlens = ["-m", "jitlens", "run", "--json", report, "--html", html]
            proc = _python([*jitlens, "-", "x"], tmp, mode, stdin, **paths)
        else:
            paths.update(JITLENS_REPORT=report, JITLENS_HTML=html)
            proc = _python(["-", "x"], tmp, mode, stdin, JITLENS="1", JITLENS_CHILDREN="1", **paths)
        logs = [(tmp / f"logs-{mode}" / f"{c}.log").read_text() for c in "abcd"]
        done = pathlib.Path(report)
        out[mode] = (proc, logs, json.loads(done.read_text()) if done.exists() else {})
    return out, tmp


@pytest.mark.slow
def test_a_removed_working_folder_a_tracked_child_and_the_programs_own_stderr(runs):
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
    out, tmp = runs
    plain = out["python"][0]
    assert plain.returncode == 3, plain.stderr
    assert "report there False\n" in plain.stdout and plain.stdout.endswith("TRUTH 2\n")
    for mode in ("run", "env"):
        proc, _logs, report = out[mode]
        assert (proc.returncode, proc.stdout) == (3, plain.stdout), (mode, proc.stderr[-3000:])
        assert "stepped aside" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert "could not start" not in proc.stderr, proc.stderr
        (row,) = report["functions"]
        assert (row["calls"], row["traces"], row["cache_hits"]) == (3, 2, 1), (mode, row)
        assert f"jitlens: cannot write {tmp / mode}.html: Is a directory" in proc.stderr
        assert (tmp / f"{mode}.log").read_text() == "", mode  # the program's own file
        assert f"jitlens: wrote {tmp / mode}.json" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_descriptors_the_program_reopens_are_its_own_and_stdin_programs_run(runs):
    """(From test_hostile_programs.) ``os.closerange`` closed jitlens' duplicate of the terminal
    and the program's next file took its number: jitlens wrote its live line and summary into
    the user's log. After ``jax.monitoring.clear_event_listeners()`` the compiles and hits went
    uncounted. And ``jitlens run -`` (the program on stdin, as ``python -``) said "cannot open
    '-'"."""
    out, _tmp = runs
    plain = out["python"][0]
    assert plain.returncode == 3, plain.stderr
    assert "logs ['user line\\n', 'user line\\n', 'user line\\n', 'user line\\n']" in plain.stdout
    assert "argv ['-', 'x'] file <stdin> path0 ''" in plain.stdout
    for mode in ("run", "env"):
        proc, _logs, report = out[mode]
        assert (proc.returncode, proc.stdout) == (3, plain.stdout), (mode, proc.stderr)
        assert "jitlens: 1 jitted function, 2 traces" in proc.stderr, (mode, proc.stderr)
        assert "could not" not in proc.stderr, (mode, proc.stderr)
        (row,) = report["functions"]
        assert row["traces"] == 2 and "TRUTH 2" in proc.stdout
        # counted after the program cleared JAX's listeners (they were 1 and 0)
        assert (row["calls"], row["compiles"], row["cache_hits"]) == (3, 2, 1), row


@pytest.mark.slow
def test_files_the_program_opens_at_the_journal_s_old_numbers_stay_the_program_s(runs):
    """(From test_journal.) ``os.closerange`` closed the journal's descriptor and the one
    ``mmap`` keeps; the program's next files took those numbers. jitlens wrote its frames into
    the program's log, and closing the journal at exit closed the program's file before Python
    flushed it."""
    out, _tmp = runs
    assert out["python"][1] == ["user line\nmine"] * 4
    for mode in ("run", "env"):
        proc, logs, _report = out[mode]
        assert proc.returncode == 3, proc.stderr
        assert logs == ["user line\nmine"] * 4, (mode, logs)  # only the program's lines
        assert "retrace #1" in proc.stderr and "could not" not in proc.stderr, proc.stderr


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
