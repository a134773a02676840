"""Nothing jitlens does for itself is observable by the program it watches.

A program that counts JAX's own monitoring events, patches ``jax.jit`` to count
its own jits, lists the threads it runs and the libraries in ``sys.modules``, and
logs its compiles prints the same under ``python``, ``jitlens run`` and
``JITLENS=1``: no self-check runs in or under the program, and jitlens imports no
library the program did not. That program is the start of test_run_as_python's (one
run per mode holds both: each is a fresh interpreter importing JAX), where its two
tests are; the drivers below need only a fresh tracker.
"""

from __future__ import annotations

import textwrap
import traceback
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jitlens
from conftest import counted, run_python


@pytest.mark.slow
def test_a_program_that_jits_nothing_prints_nothing_under_jitlens_env(
    tmp_path, fork_python
) -> None:
    prog = tmp_path / "nothing.py"
    prog.write_text("import jax.numpy as jnp\nprint(float(jnp.ones(3).sum()))\n")
    plain = fork_python([str(prog)], cwd=tmp_path)  # what JAX itself prints: no start-up read
    tracked = run_python([str(prog)], cwd=tmp_path, env={"JITLENS": "1"})
    assert (tracked.returncode, tracked.stdout, tracked.stderr) == (0, "3.0\n", plain.stderr)


@pytest.mark.slow
def test_tracking_imports_no_library_the_program_did_not(tmp_path, fork_python) -> None:
    code = textwrap.dedent(
        """
        import sys, jax, jax.numpy as jnp, jitlens
        with jitlens.track() as t:
            jax.jit(lambda x: x + 1)(jnp.ones(2))
        t.report()
        print(sorted(m for m in ("flax", "optax", "equinox", "treescope") if m in sys.modules))
        """
    )
    # a fork of a server that imported JAX and nothing else (jitlens is imported by the code)
    proc = fork_python(["-c", code], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_a_library_imported_after_tracking_started_is_counted_from_its_import() -> None:
    """nnx.jit is patched the moment the program imports flax (here: already imported)."""
    from flax import nnx

    runs = counted()

    @nnx.jit
    def g(x):
        runs.tick()
        return x + 1

    with jitlens.track() as t:
        for n in (2, 2, 3):
            g(jnp.ones(n))
    row = t.stats(g)
    assert (row.calls, row.traces, row.cache_hits) == (3, runs.n, 1) == (3, 2, 1)


def test_jitlens_frames_do_not_show_in_the_users_traceback() -> None:
    def boom(x):
        raise ValueError("from the body")

    with jitlens.track():
        f = jax.jit(boom)
        with pytest.raises(ValueError) as info:
            f(jnp.ones(2))
    files = [fr.filename for fr in traceback.extract_tb(info.value.__traceback__)]
    # jitlens' frames are its installed package's files; the user's own may sit
    # in any folder, one named jitlens/ too (a fresh `git clone`)
    package = Path(jitlens.__file__).resolve().parent
    assert not [p for p in files if Path(p).resolve().is_relative_to(package)], files
    assert __file__ in files and files[-1].endswith("test_invisible.py"), files


def test_no_frame_of_jitlens_on_a_call_checked_for_stale_statics() -> None:
    """Calls #2, #3, #5, ... take another path (the check of statics changed in place): an
    error raised on one (call #3, a retrace) shows no frame of jitlens' either."""

    def boom(x):
        if x.shape[0] == 3:
            raise ValueError("from the body")
        return x

    with jitlens.track():
        f = jax.jit(boom)
        f(jnp.ones(1)), f(jnp.ones(2))
        with pytest.raises(ValueError) as info:
            f(jnp.ones(3))
    files = [fr.filename for fr in traceback.extract_tb(info.value.__traceback__)]
    package = Path(jitlens.__file__).resolve().parent
    assert not [p for p in files if Path(p).resolve().is_relative_to(package)], files


def test_the_tracked_jit_looks_like_what_it_wraps() -> None:
    plain = jax.jit(lambda x: x)
    with jitlens.track():
        tracked = jax.jit(lambda x: x)
    assert type(tracked).__name__ == type(plain).__name__
    assert type(tracked).__qualname__ == type(plain).__qualname__


@pytest.mark.slow
def test_the_canary_runs_only_in_jitlens_selfcheck_and_its_verdict_is_read(
    tmp_path, fork_python
) -> None:
    """A fresh cache folder: a tracked program starts nothing and keeps nothing (issue 29);
    ``jitlens selfcheck`` keeps the verdict; the next program reads it. No program sees a
    canary function."""
    code = textwrap.dedent(
        """
        import jax, jax.numpy as jnp, jitlens
        from jitlens._track import selfcheck
        with jitlens.track() as t:
            jax.jit(lambda x: x + 1)(jnp.ones(2))
        report = t.report()
        print("warnings", list(report.warnings), "canary", selfcheck.result().canary_ran)
        print("names", sorted(f.name for f in report.functions))
        """
    )
    env = {"JITLENS_CACHE_DIR": str(tmp_path / "cache")}
    # the two programs: forks of a server that imported JAX, not jitlens (the folder is read
    # when jitlens is); `jitlens selfcheck`, under a debugging session's start-up settings, fresh
    first = fork_python(["-c", code], cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert not (tmp_path / "cache").exists()  # nothing started, nothing written
    # a debugging session's settings and the user's folder do not reach the canary
    (tmp_path / "numpy.py").write_text("raise SystemExit('the folder shadowed numpy')\n")
    debugging = {**env, "JAX_DISABLE_JIT": "1", "XLA_FLAGS": f"--xla_dump_to={tmp_path}/dump"}
    check = run_python(["-m", "jitlens", "selfcheck"], cwd=tmp_path, env=debugging)
    (tmp_path / "numpy.py").unlink()
    assert not (tmp_path / "dump").exists()
    assert check.returncode == 0, check.stdout + check.stderr
    assert "jitlens selfcheck: passed" in check.stdout
    (kept,) = list((tmp_path / "cache").glob("selfcheck-*.json"))
    assert '"problems": []' in kept.read_text()
    second = fork_python(["-c", code], cwd=tmp_path, env=env)
    assert first.stdout.replace("canary False", "canary True") == second.stdout
    assert "warnings []" in first.stdout and "names ['<lambda>']" in first.stdout


def test_a_recompile_error_traceback_starts_at_the_users_call() -> None:
    @jitlens.max_traces(1)
    @jax.jit
    def h(x):
        return x + 1

    h(jnp.ones(2))
    with pytest.raises(jitlens.RecompileError) as info:
        h(jnp.ones(3))
    files = [fr.filename for fr in traceback.extract_tb(info.value.__traceback__)]
    assert files == [__file__], files


@pytest.mark.parametrize("late", [3, 40])
def test_a_retrace_names_the_call_that_retraced_early_and_late(late: int) -> None:
    """Call 41 is past the 32 calls that take the detailed path: it is found all the same."""
    runs = counted()

    def body(x):
        runs.tick()
        return x * 3

    with jitlens.track() as t:
        f = jax.jit(body)
        for _ in range(late):
            f(jnp.ones(2))
        f(jnp.ones(5))
    (event,) = [e for e in t.stats(f).events if e.kind == "retrace"]
    assert runs.n == 2 and event.call_index == late
