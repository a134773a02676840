"""Report paths are checked before the program runs and written each on its own after it ends.

The refusals are tested in-process (``main(argv)`` returns before anything
runs); the writing needs a real program, so a real process.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import run_python
from jitlens import main

PROGRAM = """
import jax, jax.numpy as jnp
open("ran", "w").close()
f = jax.jit(lambda x: x + 1)
f(jnp.ones(2)); f(jnp.ones(3))
"""


@pytest.fixture
def prog(tmp_path, monkeypatch):
    (tmp_path / "prog.py").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(capsys, argv, *words):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--json", "prog.py", "prog.py"], ("--json prog.py", "the script")),
        (["--json", "x.json", "--html", "x.json", "prog.py"], ("--html x.json", "--json")),
        (["--trace", "./x.json", "--json", "x.json", "prog.py"], ("--trace ./x.json", "--json")),
        (["--json", "/proc/r.json", "--html", "ok.html", "prog.py"], ("/proc/r.json", "/proc")),
        (["--json", ".", "prog.py"], ("--json .", "folder")),
        (["--json", "gs://bucket/r.json", "prog.py"], ("gs://bucket/r.json", "gs://")),
    ],
)
def test_a_bad_report_path_stops_jitlens_run_before_the_program(prog, capsys, argv, words):
    before = (prog / "prog.py").read_text()
    _refused(capsys, ["run", *argv], *words)
    assert (prog / "prog.py").read_text() == before
    assert not (prog / "ran").exists()
    assert not (prog / "gs:").exists()
    assert sorted(p.name for p in prog.iterdir()) == ["prog.py"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--json", "trainmod.py", "-m", "trainmod"], ("--json trainmod.py", "the module")),
        (["--html", "app/__main__.py", "app"], ("app/__main__.py", "the script")),
        (["--json", "pkg/__init__.py", "-m", "pkg.sub"], ("pkg/__init__.py", "the module pkg")),
        (["--json", "pkg/sub/__main__.py", "-m", "pkg.sub"], ("pkg/sub/__main__.py", "__main__")),
    ],
)
def test_a_report_path_never_overwrites_the_module_or_folder_python_runs(prog, capsys, argv, words):
    """``-m MODULE`` and a folder with ``__main__.py``: the files python would run (found as it
    finds them, nothing imported) are the program's, as the script is."""
    for name in ("trainmod.py", "app/__main__.py", "pkg/__init__.py", "pkg/sub/__init__.py"):
        (prog / name).parent.mkdir(parents=True, exist_ok=True)
        (prog / name).write_text("open('ran', 'w').close()\n")
    (prog / "pkg" / "sub" / "__main__.py").write_text("open('ran', 'w').close()\n")
    sources = {p: p.read_text() for p in prog.rglob("*.py")}
    _refused(capsys, ["run", *argv], *words)
    assert {p: p.read_text() for p in prog.rglob("*.py")} == sources
    assert not (prog / "ran").exists()


def test_a_hard_link_to_the_script_is_the_script(prog, capsys):
    os.link(prog / "prog.py", prog / "alias.json")
    _refused(capsys, ["run", "--json", "alias.json", "prog.py"], "alias.json", "the script")


def test_a_fifo_as_output_is_refused(prog, capsys):
    os.mkfifo(prog / "pipe.json")
    _refused(capsys, ["run", "--json", "pipe.json", "prog.py"], "pipe.json", "regular file")


def test_report_may_not_overwrite_its_own_input(tmp_path, capsys, monkeypatch):
    from report_samples import sample_report

    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.json").write_text(sample_report().to_json())
    before = (tmp_path / "r.json").read_text()
    for option in ("--html", "--trace", "--json"):
        _refused(capsys, ["report", "r.json", option, "r.json"], "r.json", "the report")
    assert (tmp_path / "r.json").read_text() == before


def test_symlinks_are_written_through_one_failure_costs_nothing_else_urls_via_fsspec(tmp_path):
    """A link stays a link; an output that fails at the end is named; the others and the summary
    are written; a file:// URL goes through fsspec."""
    pytest.importorskip("fsspec")
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "link.json").symlink_to("real.json")
    (tmp_path / "out").mkdir()
    (tmp_path / "prog.py").write_text(
        PROGRAM + "import shutil; shutil.rmtree('out'); open('out', 'w').close()\n"
    )
    url = (tmp_path / "url.json").as_uri()
    argv = ["--json", "link.json", "--html", "out/r.html", "--trace", url, "prog.py"]
    proc = run_python(["-m", "jitlens", "run", *argv], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link.json").is_symlink()
    data = json.loads((tmp_path / "real.json").read_text())
    assert [f["traces"] for f in data["functions"]] == [2]
    assert "traceEvents" in json.loads((tmp_path / "url.json").read_text())
    assert "jitlens: cannot write out/r.html:" in proc.stderr
    assert ".jitlens-" not in proc.stderr  # the user's path, not a temporary file
    assert "jitlens: 1 jitted function" in proc.stderr
    assert "jitlens: wrote link.json" in proc.stderr


def test_jitlens_report_env_path_is_checked_before_the_program(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    proc = run_python(
        ["prog.py"],
        cwd=tmp_path,
        env={"JITLENS": "1", "JITLENS_REPORT": "prog.py", "JITLENS_HTML": "r.html"},
    )
    assert proc.returncode == 2, proc.stderr
    assert "JITLENS_REPORT=prog.py" in proc.stderr and "the script" in proc.stderr
    assert not (tmp_path / "ran").exists()
    assert (tmp_path / "prog.py").read_text() == PROGRAM


@pytest.mark.parametrize(
    ("argv", "source"),
    [
        (["check", "sol.py", "--json", "sol.py"], "the solution sol.py"),
        (["audit", "sol.py:make", "--json", "./sol.py"], "the file sol.py"),
    ],
)
def test_check_and_audit_may_not_overwrite_their_input(tmp_path, capsys, monkeypatch, argv, source):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sol.py").write_text("def jit_forward(seed, x, features, num_calls):\n    pass\n")
    before = (tmp_path / "sol.py").read_text()
    _refused(capsys, argv, "--json", source)
    assert (tmp_path / "sol.py").read_text() == before
