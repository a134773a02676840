"""A budget's exit status against Python's own rule for ``sys.exit(code)``.

Every early ending this file once ran under ``JITLENS=1`` (signals, ``os._exit`` in the
program, a thread, a handler or an ``atexit`` hook, ``os.execv``, a handler that chains)
is in ``test_endings.py`` now, under ``python``, ``jitlens run`` and ``JITLENS=1``: with
the recorder nothing inside the program handles those endings, so the report that says how
the program ended is ``jitlens run``'s, or the journal's under ``JITLENS=1``.
"""

from __future__ import annotations

import pytest

from conftest import run_python

pytestmark = pytest.mark.xdist_group("exit_trust")

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
