"""``JITLENS=1 python prog.py`` explains retraces with no code change; unset, nothing is imported."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

from conftest import CASES, run_python

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"


def test_env_switch_logs_retraces_and_writes_the_report(tmp_path):
    report = tmp_path / "r.json"
    proc = run_python(
        [str(next(CASES.glob("17_*.py")))],
        cwd=tmp_path,
        env={"JITLENS": "1", "JITLENS_REPORT": str(report)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "TRACES=5" in proc.stdout
    # one log record per retrace as it happens, then the summary at exit
    assert proc.stderr.count("jitlens: loss (jax.jit)") == 3  # then folded (issue 24)
    assert proc.stderr.count("jitlens: `loss` retrace #4") == 1
    assert "batch  shape" in proc.stderr
    (loss,) = [f for f in json.loads(report.read_text())["functions"] if f["name"] == "loss"]
    assert loss["traces"] == 5


def test_unset_costs_nothing_and_bad_value_is_named(tmp_path):
    probe = "import sys; print('jitlens' in sys.modules, 'jax' in sys.modules)"
    proc = run_python(["-c", probe], env={"JITLENS": "0"})
    assert proc.stdout.split() == ["False", "False"]
    proc = run_python(["-c", probe], env={"JITLENS": "maybe"})
    assert "JITLENS='maybe' is not valid" in proc.stderr


def test_a_bad_setting_means_no_tracking_never_a_program_stopped_at_import_jax():
    code = "print('before'); import jax, jax.numpy as jnp; print('after', jax.jit(abs)(-2))"
    proc = run_python(["-c", code], env={"JITLENS": "1", "JITLENS_WARN_RECOMPILES": "abc"})
    assert (proc.returncode, proc.stdout.split()) == (0, ["before", "after", "2"])
    assert "JITLENS_WARN_RECOMPILES='abc' is not valid" in proc.stderr
    assert "not tracking" in proc.stderr and "jitlens run" not in proc.stderr


def test_processes_that_never_import_jax_pay_nothing_and_print_nothing():
    probe = (
        "import sys; heavy = [m for m in sys.modules if m.split('.')[0] in ('jax', 'flax', 'numpy')]"
        "; print(heavy)"
    )
    proc = run_python(["-c", probe], env={"JITLENS": "1"})
    assert proc.returncode == 0
    assert proc.stdout.strip() == "[]"
    assert proc.stderr == ""


#: What tracking leaves out of a program's start (issue 35: jitlens' start-up cost): what
#: words a retrace (``reasons``, ``rank``, the ids of its templates: ``template_kinds``), reads a
#: long compile (``_core.cost``), lays out text (rich, the renderers), and the libraries jitlens
#: never imports itself.
NOT_AT_START = (
    "rich",
    "jitlens._core.reasons",
    "jitlens._core.rank",
    "jitlens._core.template_kinds",
    "jitlens._core.cost",
    "jitlens._render.text",
    "jitlens._render.html",
    "flax",
    "treescope",
)
LOADED = f"[m for m in {NOT_AT_START!r} if m in sys.modules]"


def test_tracking_starts_when_the_program_imports_jax():
    """... with only what counting needs (a static number's program kept at its first trace
    among it): the words of a retrace load at the first retrace."""
    code = (
        "import sys; assert 'jitlens._track.tracker' not in sys.modules\n"
        "import jax, jax.numpy as jnp\n"
        "assert 'jitlens._track.tracker' in sys.modules\n"
        f"print('start', {LOADED})\n"
        "f = jax.jit(lambda x, n: x + n, static_argnums=1); f(jnp.ones(2), 1); f(jnp.ones(2), 1)\n"
        f"print('first trace', {LOADED})\n"
        "f(jnp.ones(3), 1)\n"
        "print('retrace', 'jitlens._core.reasons' in sys.modules)\n"
    )
    proc = run_python(["-c", code], env={"JITLENS": "1"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == ["start []", "first trace []", "retrace True"], proc.stdout
    assert "<lambda>  jax.jit      3       2" in proc.stderr
    assert "`x` changed shape f32[2] -> f32[3]" in proc.stderr  # worded at the retrace


def test_a_clean_run_s_summary_needs_no_rich(tmp_path):
    """Most programs' summaries need none of rich's layout: it is written without importing
    rich (here made unimportable), the same text and nothing else on the terminal."""
    code = (
        "import sys; sys.modules['rich'] = None\n"
        "import jax, jax.numpy as jnp\n"
        "f = jax.jit(lambda x: x * 2); f(jnp.ones(2)); f(jnp.ones(2))\n"
    )
    report = tmp_path / "r.json"
    env = {"JITLENS": "1", "JITLENS_REPORT": str(report), "COLUMNS": "100"}  # (at 80: no hit %)
    proc = run_python(["-c", code], env=env)
    assert proc.returncode == 0, proc.stderr
    head = " function  kind     calls  traces  compiles  hits  hit %  trace s  compile s  lost s"
    lines = proc.stderr.splitlines()
    assert lines[:3] == ["", "jitlens: 1 jitted function, 1 trace, 0.00 s lost to recompiles", head]
    assert set(lines[3]) == {"\u2500"} and lines[4].split()[:6] == [
        "<lambda>", "jax.jit", "2", "1", "1", "1"
    ]  # fmt: skip
    assert "no retraces: no function compiled again." in lines
    assert "could not" not in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads(report.read_text())["functions"][0]["calls"] == 2


SPAWN = """
import multiprocessing as mp
import jax, jax.numpy as jnp

def work(i):
    return float(jax.jit(lambda x: x + i)(jnp.ones(2)).sum())

if __name__ == "__main__":
    f = jax.jit(lambda x: x * 2)
    f(jnp.ones(2)); f(jnp.ones(3))
    with mp.get_context("spawn").Pool(1) as pool:  # (each worker a fresh interpreter)
        print("RESULTS", pool.map(work, range(2)))
"""


def test_spawn_workers_are_left_alone(tmp_path):
    prog = tmp_path / "spawn_prog.py"
    prog.write_text(SPAWN)
    proc = run_python([str(prog)], cwd=tmp_path, env={"JITLENS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "RESULTS [2.0, 4.0]" in proc.stdout
    assert proc.stderr.count("jitted function") == 1  # the main program's summary only
    assert "closed file" not in proc.stderr and "Report(" not in proc.stderr


def test_a_venv_with_system_site_packages(tmp_path):
    """The .pth runs before the base site-packages are on sys.path: it must not import jax.

    The venv is built from the base interpreter (as ``python -m venv`` is, even
    from inside another venv), which may or may not hold jax: the directories
    that hold jax and jitlens' dependencies for this test run are added by a
    .pth that sorts after jitlens', so that jax is importable only after
    jitlens' .pth ran, wherever jax is installed.
    """
    import venv

    import jax
    import rich

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    pth = pathlib.Path(site) / "zz_jitlens_autostart.pth"
    pth.write_text(str(SRC) + "\n" + (SRC / "jitlens_autostart.pth").read_text())
    holders = {str(pathlib.Path(m.__file__).parent.parent) for m in (jax, rich)}
    (pathlib.Path(site) / "zzz_jax_for_this_test.pth").write_text("\n".join(sorted(holders)) + "\n")
    code = "import jax, jax.numpy as jnp; f = jax.jit(lambda x: x); f(jnp.ones(2)); print('OK')"
    proc = subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "JITLENS": "1", "JAX_PLATFORMS": "cpu", "PYTHONPATH": ""},
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"
    assert "<lambda>  jax.jit      1       1" in proc.stderr
