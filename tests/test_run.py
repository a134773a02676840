"""``jitlens run`` runs a program as ``python`` would, with tracking in place before its imports."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from conftest import RECOMPILES_GROUP, ROOT, run_python

PROGRAM = """
import sys
import helper_mod          # imported from sys.path[0], the script's folder
print("argv", sys.argv)
print("name", __name__)
print("path0_is_script_dir", sys.path[0] == __import__("os").path.dirname(__file__))
helper_mod.work()
if "--fail" in sys.argv:
    raise KeyError("boom")
sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
"""

HELPER = """
import jax, jax.numpy as jnp

T = [0]

@jax.jit          # decorated at import time, in an imported module
def double(x):
    T[0] += 1
    return x * 2

def work():
    for n in (2, 2, 3):
        double(jnp.ones(n))
    print("TRACES", T[0])
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("prog")
    (d / "main.py").write_text(textwrap.dedent(PROGRAM))
    (d / "helper_mod.py").write_text(textwrap.dedent(HELPER))
    return d


@pytest.mark.xdist_group("run_program")  # its module fixture runs once
def test_same_argv_name_path_and_counts(failed):
    """(The program's own exit status, ``sys.exit(3)``, is test_endings' "chain" ending.)"""
    proc, _plain, report = failed
    assert proc.returncode == 1, proc.stderr
    assert "argv ['main.py', 'a', '--fail']" in proc.stdout
    assert "name __main__" in proc.stdout
    assert "path0_is_script_dir True" in proc.stdout
    data = json.loads(report.read_text())
    (double,) = [f for f in data["functions"] if f["name"] == "double"]
    assert (double["calls"], double["traces"], double["cache_hits"]) == (3, 2, 1)
    assert double["defined_at"] == "helper_mod.py:6"
    assert double["first_call_site"] == "helper_mod.py:13"
    assert "TRACES 2" in proc.stdout
    assert "double" in proc.stderr  # the summary table goes to stderr


@pytest.fixture(scope="module")
def failed(program, tmp_path_factory):
    """``jitlens run --json R main.py a --fail`` and ``python main.py a --fail``: a KeyError
    raised in the program's own code after its jitted calls (one run for the three tests
    reading it)."""
    report = tmp_path_factory.mktemp("failed") / "r.json"
    proc = run_python(
        ["-m", "jitlens", "run", "--json", str(report), "main.py", "a", "--fail"], cwd=program
    )
    plain = run_python(["main.py", "a", "--fail"], cwd=program)
    return proc, plain, report


@pytest.mark.xdist_group("run_program")  # its module fixture runs once
def test_exceptions_keep_their_traceback_and_exit_code(failed):
    proc = failed[0]
    assert proc.returncode == 1
    assert "KeyError: 'boom'" in proc.stderr
    assert 'main.py", line 9, in <module>' in proc.stderr
    assert "_run.py" not in proc.stderr  # jitlens' own frames are not shown


@pytest.mark.xdist_group("run_program")  # its module fixture runs once
def test_module_mode_and_html(program, tmp_path):
    (program / "pkgmod.py").write_text(
        "import helper_mod\nif __name__ == '__main__':\n    helper_mod.work()\n"
    )
    html = tmp_path / "r.html"
    proc = run_python(["-m", "jitlens", "run", "--html", str(html), "-m", "pkgmod"], cwd=program)
    assert proc.returncode == 0, proc.stderr
    assert "TRACES 2" in proc.stdout
    assert html.read_text().startswith("<!DOCTYPE html>")


def test_missing_script_is_a_clear_error(tmp_path):
    proc = run_python(["-m", "jitlens", "run", "nope.py"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot open 'nope.py'" in proc.stderr


def test_report_command_validates_input(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "functions": [')
    proc = run_python(["-m", "jitlens", "report", str(bad)])
    assert proc.returncode == 2
    assert "not valid JSON" in proc.stderr and "Traceback" not in proc.stderr
    other = tmp_path / "v99.json"
    other.write_text(json.dumps({"schema_version": 99, "functions": []}))
    proc = run_python(["-m", "jitlens", "report", str(other)])
    assert proc.returncode == 2 and "schema_version 99 is not supported" in proc.stderr


@pytest.mark.xdist_group(RECOMPILES_GROUP)  # its session fixture runs once
def test_example_script_under_jitlens_run(recompiles_run):
    """examples/recompiles.py: the three recompiles it shows are counted and explained."""
    _, report, _ = recompiles_run
    fns = {f["name"]: f for f in json.loads(report.read_text())["functions"]}
    assert {k: (f["calls"], f["traces"]) for k, f in fns.items()} == {
        "predict": (3, 3),
        "mse": (3, 2),
        "accumulate": (3, 2),
    }
    first = {k: f["events"][1]["reasons"][0] for k, f in fns.items()}
    assert (first["predict"]["kind"], first["predict"]["path"]) == ("identity_static", "model.pool")
    assert (first["mse"]["kind"], first["mse"]["path"]) == ("shape", "batch")
    assert (first["accumulate"]["kind"], first["accumulate"]["path"]) == ("weak_type", "total")


def test_demo_measures_the_seed_cnn(tmp_path, fork_python):
    # from a folder of its own, as a user runs it: not from the clone, where an editable
    # install would show the demo's path relative to the working folder
    # (the README shows a 100-column terminal; the demo fits its output to COLUMNS); a fork
    # of the server that imported JAX: the demo reads nothing at the interpreter's start-up
    proc = fork_python(["-m", "jitlens", "demo"], cwd=tmp_path, env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "foo_step: 4 calls, traced 2x, compiled 2x" in out
    assert "(counter inside the function: 2 traces)" in out
    assert "fixed_step: 4 calls, traced 1x, compiled 1x" in out
    assert "model.avg_pool  identity_static" in out
    assert (
        "output shape (8,)" in out and "fwd: 5 calls, traced 1x, compiled 1x, 4 cache hits" in out
    )
    assert max(len(line) for line in out.splitlines()) <= 100  # issue 26: lines of 225
    # The README and the tutorial show this very output (addresses, seconds and the
    # install path aside).
    for page in ("README.md", "docs/tutorials/first-steps.md"):
        shown = re.search(r"```text\n(jitlens demo: .+?)\n```", (ROOT / page).read_text(), re.S)
        assert shown is not None, f"{page} shows the demo's output"
        assert _demo_words(shown.group(1)) == _demo_words(out), page


def _demo_words(text: str) -> str:
    text = re.sub(r"0x[0-9a-f]+", "0x…", text)
    text = re.sub(r"\d+\.\d+ s\b", "N s", text)
    text = re.sub(r"\S*jitlens/_exercise/demo\.py", "demo.py", text)
    # the words, not where they wrap: a slower machine's "10.57 s" folds a line earlier
    return " ".join(text.split())


ARGS_PROGRAM = """
import sys, time
print("argv", sys.argv, flush=True)
if "--sleep" not in sys.argv:
    raise SystemExit  # argv is all these runs show: no JAX start-up (about 2 CPU s each)
import jax, jax.numpy as jnp
f = jax.jit(lambda x: x * 2)
f(jnp.ones(3)); f(jnp.ones(4))
print("ready", flush=True)
import faulthandler
faulthandler.dump_traceback_later(60)  # where it is, if the signal has not ended it by then
for _ in range(1200):  # a signal JAX's threads take would not end one long sleep
    time.sleep(0.1)
"""


@pytest.fixture(scope="module")
def args_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("args")
    (d / "prog.py").write_text(ARGS_PROGRAM)
    (d / "mypkg").mkdir()
    (d / "mypkg" / "__init__.py").write_text("")
    (d / "mypkg" / "train.py").write_text(ARGS_PROGRAM)
    return d


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        (["-m", "mypkg.train", "--epochs", "1"], "['{d}/mypkg/train.py', '--epochs', '1']"),
        (
            ["-q", "-m", "mypkg.train", "--", "--epochs", "1"],
            "['{d}/mypkg/train.py', '--', '--epochs', '1']",
        ),
        (["prog.py", "--flag", "v", "-q"], "['prog.py', '--flag', 'v', '-q']"),
        (["--json", "r.json", "--", "prog.py", "--", "--flag"], "['prog.py', '--', '--flag']"),
        (["-q", "--", "-m", "mypkg.train", "a"], "['{d}/mypkg/train.py', 'a']"),
    ],
)
@pytest.mark.xdist_group("run_args_program")  # its module fixture runs once
def test_everything_after_the_program_belongs_to_it(args_program, command, argv):
    proc = run_python(["-m", "jitlens", "run", *command], cwd=args_program)
    assert proc.returncode == 0, proc.stderr
    assert f"argv {argv.format(d=args_program)}" in proc.stdout


@pytest.mark.xdist_group("run_program")  # its module fixture runs once
def test_the_traceback_is_pythons_and_the_summary_follows_it_and_files_follow_the_umask(failed):
    """Python prints the traceback, then runs the atexit hooks: jitlens' summary is one of them
    (issue 29: the old runner printed it first by imitating the interpreter)."""
    proc, plain, report = failed
    assert proc.returncode == plain.returncode == 1
    summary, traceback = proc.stderr.index("jitlens: 1 jitted"), proc.stderr.index("Traceback")
    assert traceback < summary
    assert (
        proc.stderr[traceback:summary].rstrip()
        == plain.stderr[plain.stderr.index("Traceback") :].rstrip()
    )
    assert report.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_a_syntax_error_is_shown_as_python_shows_it_and_nothing_else(tmp_path):
    (tmp_path / "bad.py").write_text("x = (\n")
    proc = run_python(["-m", "jitlens", "run", "bad.py"], cwd=tmp_path)
    plain = run_python(["bad.py"], cwd=tmp_path)
    assert proc.returncode == plain.returncode == 1
    assert proc.stderr == plain.stderr
    assert "no jitted function" not in proc.stderr


def test_report_on_a_binary_file_is_a_clean_error(tmp_path):
    (tmp_path / "r.json").write_bytes(b"\xff\xfe\x00binary")
    proc = run_python(["-m", "jitlens", "report", "r.json"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "not UTF-8" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.xdist_group("run_args_program")  # its module fixture runs once
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_signal_writes_the_report_then_kills_the_program_as_without_jitlens(
    args_program, tmp_path, signame
):
    import os
    import signal
    import subprocess
    import sys

    sig = getattr(signal, signame)
    report = tmp_path / "r.json"
    # a terminal's program: pytest started in the background of a script inherits SIGINT
    # ignored, and so would every process it starts (python then installs no Ctrl-C handler)
    ignored = signal.getsignal(sig) is signal.SIG_IGN
    if ignored:
        signal.signal(sig, signal.SIG_DFL)  # (while the program starts; the worker's after)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitlens", "run", "--json", str(report), "prog.py", "--sleep"],
        cwd=args_program,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if ignored:
        signal.signal(sig, signal.SIG_IGN)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("ready"):
            break
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:  # the stacks the program dumped at 60 s say where
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"still running 90 s after {signame}:\n{err[-6000:]}") from None
    assert proc.returncode == -sig, err  # killed by the signal, as python would be
    data = json.loads(report.read_text())
    assert [f["traces"] for f in data["functions"]] == [2]
    assert "jitlens: 1 jitted" in err
    if signame == "SIGINT":  # python's traceback, then the atexit hooks (the summary)
        assert err.index("KeyboardInterrupt") < err.index("jitlens: 1 jitted")
