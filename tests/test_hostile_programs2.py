"""More programs written to break jitlens (the second round; the first is
``test_hostile_programs.py``), each compared with plain ``python`` as ground truth.

Stdout, exit status and the program's own files must be what ``python`` gives,
and jitlens' counts must equal the counters in the jitted bodies. JAX's start-up
costs seconds, so one program holds several moves and runs once per mode.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.xdist_group("hostile_programs")


def _python(args: list[str], cwd, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    """``python ARGS`` in a fresh process, with ``env`` set and the variables set to "" unset.

    Not this test run's xdist worker: a pytest the program starts would read
    ``PYTEST_XDIST_WORKER`` as its own (pytest-benchmark then warns that xdist is on,
    an error under ``-W error``)."""
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    full = {k: v for k, v in full.items() if not k.startswith("PYTEST_XDIST")}
    full = {k: v for k, v in full.items() if v != ""}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=240,
    )


KILLED = """
import os, signal, sys
print("written before the kill", sys.flags.interactive)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_unbuffered_and_interactive_flags_reach_the_program(tmp_path):
    """``python -u -m jitlens run prog.py | tee log``: Python keeps no flag for ``-u`` and
    subprocess' list of flags leaves it (and ``-i``) out, so the program ran buffered: what
    it printed before it was killed was lost, and ``python -i -m jitlens run prog.py`` gave
    no prompt after the program (for ``pdb.pm()``)."""
    (tmp_path / "killed.py").write_text(KILLED)
    (tmp_path / "inspect.py").write_text("x = 41\n")
    for args in (["-u", "killed.py"], ["-u", "-m", "jitlens", "run", "killed.py"]):
        proc = _python(args, tmp_path, PYTHONUNBUFFERED="")
        assert proc.returncode == -9, proc.stderr
        assert proc.stdout == "written before the kill 0\n", (args, proc.stderr)
    repl = "print('at the prompt', x + 1)\n"
    plain = _python(["-i", "inspect.py"], tmp_path, stdin=repl)
    tracked = _python(["-i", "-m", "jitlens", "run", "inspect.py"], tmp_path, stdin=repl)
    assert "at the prompt 42" in plain.stdout
    assert (tracked.returncode, tracked.stdout) == (plain.returncode, plain.stdout), tracked.stderr


IMPORT_HOOK = """
import importlib, importlib.abc, importlib.machinery, json, sys

class FindsEverything(importlib.abc.MetaPathFinder):
    '''The program's own import hook, first on sys.meta_path, finding every module itself
    (as typeguard's install_import_hook() with no packages, a tracer, a lazy importer).'''
    found = []
    def find_spec(self, name, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and not name.startswith("jitlens"):
            self.found.append(name)
        return spec

sys.meta_path.insert(0, FindsEverything())
if sys.argv[1:] == ["import_module"]:
    jax = importlib.import_module("jax")
else:
    import jax
import jax.numpy as jnp
T = [0]

@jax.jit
def f(x):
    T[0] += 1
    return x + 1

f(jnp.ones(1)); f(jnp.ones(2)); f(jnp.ones(2))
print("hook found jax", "jax" in FindsEverything.found, type(jax.__loader__).__name__)
print("TRUTH", T[0])
"""


@pytest.mark.slow
def test_a_program_whose_own_import_hook_finds_jax_is_told_why_nothing_was_tracked(tmp_path):
    """An import hook of the program's own ahead of jitlens' on ``sys.meta_path``, finding
    every module itself: jitlens is never asked for ``jax``. It used to put its watcher first
    for that import from the ``import`` audit event; an audit hook is one more thing in the
    program (issue 49), so jitlens says it could not see the import, and how to let it (its fix
    applied: the program's output unchanged and every call counted). Never "never imported"."""
    import json

    (tmp_path / "hook.py").write_text(IMPORT_HOOK)
    fixed = IMPORT_HOOK.replace("sys.meta_path.insert(0, FindsEverything())\n", "")
    fixed = fixed.replace(
        "import jax.numpy as jnp\n",
        "import jax.numpy as jnp\nsys.meta_path.insert(0, FindsEverything())\n",
    )
    fixed = fixed.replace('"jax" in FindsEverything.found', "True")  # (it found nothing now)
    (tmp_path / "fixed.py").write_text(fixed)
    plain = _python(["hook.py"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "hook found jax True SourceFileLoader\nTRUTH 2\n"
    for args, env in ((["-m", "jitlens", "run", "hook.py"], {}), (["hook.py"], {"JITLENS": "1"})):
        unseen = _python(args, tmp_path, **env)
        assert (unseen.returncode, unseen.stdout) == (0, plain.stdout), unseen.stderr
        assert "imported jax where jitlens could not see it" in unseen.stderr
        assert "fix: import jax before the program installs that hook" in unseen.stderr
        assert "never imported jax" not in unseen.stderr
    applied = _python(["-m", "jitlens", "run", "--json", "run.json", "fixed.py"], tmp_path)
    assert (applied.returncode, applied.stdout) == (0, plain.stdout), applied.stderr
    (row,) = json.loads((tmp_path / "run.json").read_text())["functions"]
    assert (row["calls"], row["traces"], row["cache_hits"]) == (3, 2, 1), row


PYTEST_FILE = """
import jax, jax.numpy as jnp
T = []

def test_retraces():
    f = jax.jit(lambda x: T.append(1) or x + 1)
    f(jnp.ones(1)); f(jnp.ones(2))
    assert len(T) == 2
"""


@pytest.mark.slow
def test_pytest_with_warnings_as_errors_runs_under_jitlens(tmp_path):
    """``JITLENS=1 pytest`` / ``jitlens run -m pytest`` in a project whose pytest settings say
    ``filterwarnings = error``: pytest marks every plugin's package for assertion rewriting
    and warns that ``jitlens`` was imported before it could be rewritten (the start-up hook
    imports it), and that warning, made an error, stopped the run before its first test.
    Under ``python -OO`` too, where the package has no docstring for pytest to read. (The
    ``jitlens run`` half runs this file beside test_run_as_python's pytest file, in one session
    there: each is a fresh interpreter importing JAX and pytest.)"""
    (tmp_path / "test_prog.py").write_text(PYTEST_FILE)
    pytest_args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    pytest_args += ["test_prog.py", "-W"]  # (hypothesis' plugin: 1 CPU s of each pytest's start)
    # (python -OO: pytest's own warning that asserts are off is not this one)
    args = ["-OO", *pytest_args, "error::pytest.PytestAssertRewriteWarning"]
    proc = _python(args, tmp_path, JITLENS="1")
    assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "1 passed" in proc.stdout and "rewritten" not in proc.stdout + proc.stderr
    assert "jitlens: 1 jitted function, 2 traces" in proc.stderr, proc.stderr


LATIN_1 = """
import jax, jax.numpy as jnp

def f_é(x):
    return x + 1

g = jax.jit(f_é)
g(jnp.ones(1)); g(jnp.ones(2))
print("é")
"""


@pytest.mark.slow
def test_jitlens_words_are_in_the_terminals_encoding(tmp_path):
    """``PYTHONIOENCODING=latin-1`` (or a Windows code page): Python writes the program's
    output in that encoding, and jitlens wrote its lines in UTF-8 beside it: mojibake
    (``f_Ã©``, rules of ``â\\x94\\x80``). Now its rules and ellipses fall back to ASCII and
    the user's names are escaped where the encoding lacks them, as Python's stderr does."""
    (tmp_path / "enc.py").write_text(LATIN_1, encoding="utf-8")
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JITLENS": "1", "PYTHONIOENCODING": "latin-1"}
    proc = subprocess.run(
        [sys.executable, "enc.py"], cwd=tmp_path, env=env, capture_output=True, timeout=240
    )
    assert (proc.returncode, proc.stdout) == (0, "é\n".encode("latin-1")), proc.stderr
    err = proc.stderr.decode("latin-1")
    assert "jitlens: f_é (jax.jit) enc.py:8  retrace #1" in err, err
    assert "\n" + "-" * 40 in err and "Ã" not in err and "â" not in err, err
