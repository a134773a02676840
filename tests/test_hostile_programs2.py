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
    """``python ARGS`` in a fresh process, with ``env`` set and the variables set to "" unset."""
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
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
