"""Issue 29: the same program, the same results under ``python``, ``jitlens run`` and ``JITLENS=1``.

One program holds most scenarios (each JAX start-up costs seconds): settings
made in ``os.environ`` before ``import jax``, a thread pool left running, an
Orbax checkpoint, warnings the program records or turns into ``SystemExit``,
a ``redirect_stderr`` buffer, the program's own child and its SIGCHLD /
``os.wait`` / ``psutil`` view, and the loaders of what it imports. Its output
and exit status are compared with plain ``python``; the counters in its jitted
bodies are the truth the report must hold. It also holds test_invisible's
program (nothing jitlens does for itself is observable by the program): JAX's own
monitoring events it counts, its own patch of ``jax.jit``, the threads it runs and
the libraries in ``sys.modules``, and JAX's log of its compiles.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, run_python

pytestmark = pytest.mark.xdist_group("run_as_python")

PROGRAM = textwrap.dedent(
    """
    import collections, contextlib, io, json, os, signal, sys, threading, warnings
    os.environ["JAX_ENABLE_X64"] = "1"     # before JAX is imported: JAX must read it
    CHLD = [0]
    signal.signal(signal.SIGCHLD, lambda *a: CHLD.__setitem__(0, CHLD[0] + 1))
    from jax import monitoring             # (imports jax: tracking starts here)
    counts = collections.Counter()         # JAX's own events, as the program sees them
    monitoring.register_event_duration_secs_listener(lambda e, s, **k: counts.update([e]))
    monitoring.register_scalar_listener(lambda e, v, **k: counts.update([e]))
    import jax, jax.numpy as jnp
    jits = collections.Counter()
    original = jax.jit
    def my_jit(*a, **k):                   # the program's own patch of jax.jit
        jits["jax"] += 1
        return original(*a, **k)
    jax.jit = my_jit
    @jax.jit
    def f(x):
        return x * 2
    for n in (2, 2, 3):
        f(jnp.ones(n)).block_until_ready()
    libraries = ("flax", "optax", "equinox", "treescope", "jitlens_canary")
    print("counts", sorted(counts.items()))
    print("jits", dict(jits))
    print("modules", sorted(m for m in libraries if m in sys.modules))
    print("threads", sorted(t.name for t in threading.enumerate()))
    jax.jit = original
    jax.config.update("jax_log_compiles", False)  # (JAX logs to the redirected stderr below)

    T = {"add": 0, "grow": 0, "other": 0}

    @jax.jit
    def add(x):
        T["add"] += 1
        return x + 8.0007e-12

    print("x64", add(jnp.zeros(1)).dtype, repr(float(add(jnp.zeros(1))[0])))

    def grow(x):
        T["grow"] += 1
        return x * 2

    g = jax.jit(grow)
    buf = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(buf):
        warnings.simplefilter("always")
        for n in range(1, 6):
            g(jnp.ones(n))
    print("recorded", [w.category.__name__ for w in caught], "buffer", repr(buf.getvalue()))

    def other(x):
        T["other"] += 1
        return x - 1

    def refuse(*a, **k):
        raise SystemExit(3)

    h = jax.jit(other)
    with warnings.catch_warnings():        # restores showwarning after the block
        warnings.simplefilter("always")
        warnings.showwarning = refuse
        for n in range(1, 6):
            h(jnp.ones(n))
    print("after showwarning: still running")
    jax.config.update("jax_log_compiles", True)

    import subprocess
    child = "import jax, jax.numpy as jnp; print(float(jax.jit(lambda x: x * 3)(jnp.ones(1))[0]))"
    print("child", subprocess.run([sys.executable, "-c", child], capture_output=True,
                                  text=True).stdout.strip())

    import flax.nnx, equinox
    loaders = {m.__name__: type(m.__loader__).__module__ for m in (jax, flax.nnx, equinox)}
    print("loaders", sorted(set(loaders.values())))
    print("meta_path", [type(f).__module__ for f in sys.meta_path if "jitlens" in
                        type(f).__module__])
    print("ORBAX FROM HERE", file=sys.stderr, flush=True)

    if "--orbax" in sys.argv:
        import tempfile
        import orbax.checkpoint as ocp
        from flax import nnx
        folder = tempfile.mkdtemp()
        model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        _, state = nnx.split(model)
        ckpt = ocp.StandardCheckpointer()
        ckpt.save(os.path.join(folder, "state"), state)
        ckpt.wait_until_finished()
        abstract = nnx.eval_shape(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        _, abstract_state = nnx.split(abstract)
        restored = ckpt.restore(os.path.join(folder, "state"), abstract_state)
        print("orbax", bool(jnp.all(restored["kernel"].value == state["kernel"].value)))

    from concurrent.futures import ThreadPoolExecutor
    import time
    pool = ThreadPoolExecutor(1)           # left running: python stops it at exit
    pool.submit(time.sleep, 0.2)

    import psutil
    try:
        os.wait()
        waited = "reaped a child"
    except ChildProcessError:
        waited = "no child"
    print("children", psutil.Process().children(recursive=True), waited, "SIGCHLD", CHLD[0])
    print("TRUTH", json.dumps(T))
    os.makedirs("elsewhere", exist_ok=True)
    os.chdir("elsewhere")                  # relative report paths: still the launch folder's
    sys.stderr = io.StringIO()             # jitlens' last words must not go here
    """
)
#: What the program writes to stderr where the modes part: JITLENS=1 runs it without its Orbax
#: checkpoint (and JAX's log of that checkpoint's compiles).
ORBAX_FROM_HERE = "ORBAX FROM HERE"


#: ``jitlens run`` with ``--gather``: single-process, it says it skipped (on jitlens' terminal).
RUN_ARGS = ["-m", "jitlens", "run", "--json", "r-run-{process_index}.json", "--html", "r.html"]
RUN_ARGS += ["--gather", "merged.json", "prog.py", "--orbax"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Where the program is launched: braces in its name are no template field of a report's."""
    return tmp_path_factory.mktemp("exp{a}")


@pytest.fixture(scope="module")
def runs(folder: pathlib.Path) -> dict[str, tuple[int, str, str, str]]:
    """The program under python, jitlens run and JITLENS=1, with a FIFO where the self-check's
    verdict is kept (a tracked run must not block on it) and JAX logging its compiles."""
    from jitlens._track import selfcheck

    d = folder
    (d / "prog.py").write_text(PROGRAM)
    cache = d / "cache"
    cache.mkdir()
    os.mkfifo(cache / f"selfcheck-{selfcheck.verdict_key()}.json")
    env = {"JITLENS_CACHE_DIR": str(cache), "JITLENS_WARN_RECOMPILES": "2"}
    env["JAX_LOG_COMPILES"] = "1"
    modes = {
        "python": (["prog.py", "--orbax"], {}),
        "run": (RUN_ARGS, {}),
        "env": (["prog.py"], {"JITLENS": "1", "JITLENS_REPORT": "r-env.json"}),
    }
    out = {}
    for mode, (args, extra) in modes.items():
        proc = run_python(args, cwd=d, env={**env, **extra}, timeout=300)
        report = d / ("r-run-0.json" if mode == "run" else f"r-{mode}.json")
        out[mode] = (
            proc.returncode,
            proc.stdout,
            proc.stderr,
            report.read_text() if report.exists() else "",
        )
    return out


def _lines(stdout: str, drop: tuple[str, ...] = ()) -> list[str]:
    return [line for line in stdout.splitlines() if not line.startswith(drop)]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["run", "env"])
def test_the_program_computes_prints_and_exits_as_under_python(runs, mode) -> None:
    code, out, err, _ = runs["python"]
    assert code == 0, err[-3000:]
    assert "x64 float64 8.0007e-12" in out  # os.environ read by JAX at the program's import
    assert "recorded [] buffer ''" in out
    assert "after showwarning: still running" in out
    assert "child 3.0" in out
    assert "orbax True" in out
    assert "children [] no child SIGCHLD 1" in out  # the program's own child, and no other
    t_code, t_out, t_err, _ = runs[mode]
    assert t_code == 0, t_err[-3000:]
    drop = ("orbax",) if mode == "env" else ()
    assert _lines(t_out) == _lines(out, drop)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["run", "env"])
def test_jitlens_speaks_on_the_terminal_and_counts_the_truth(runs, mode) -> None:
    _, out, err, report = runs[mode]
    # the runaway warnings reached the terminal, not the program's records nor its handler
    assert err.count("RunawayRecompileWarning") == 2, err[-3000:]
    assert "jitlens: grow (jax.jit)" in err  # the live retrace lines, not in the buffer
    truth = json.loads(out.split("TRUTH ", 1)[1])
    rows = {f["name"]: f for f in json.loads(report)["functions"]}
    assert {k: rows[k]["traces"] for k in truth} == truth == {"add": 1, "grow": 5, "other": 5}
    assert rows["add"]["calls"] == 2
    # the program's child (a lambda jitted in `python -c`) was not tracked
    assert not [r for r in rows.values() if "<string>" in str(r["defined_at"])], rows.keys()
    assert err.count("jitted function") == 1  # one summary: the child wrote none
    if mode == "run":  # --gather's own line, after the program replaced sys.stderr
        assert "jitlens: --gather skipped (a single-process run)" in err, err[-2000:]


@pytest.mark.slow
def test_the_import_hooks_leave_modules_as_pythons_loader_does(runs) -> None:
    for mode in ("python", "run", "env"):
        out = runs[mode][1]
        assert "meta_path []" in out, (mode, out)
        loaders = out.split("loaders ", 1)[1].splitlines()[0]
        assert "jitlens" not in loaders, (mode, loaders)


@pytest.mark.slow
def test_report_paths_are_where_the_program_started_after_a_chdir(runs, folder) -> None:
    """(From test_run.) A relative --json/--html path (or JITLENS_REPORT) names a file in the
    launch directory, even when the program changes directory before it ends (they used to
    land in the new one); braces in the launch directory's name are not template fields."""
    assert runs["run"][0] == runs["env"][0] == 0
    # {process_index} filled, {a} of the folder not
    assert json.loads(runs["run"][3])["functions"] and json.loads(runs["env"][3])["functions"]
    assert "jitlens: wrote r-run-0.json" in runs["run"][2], runs["run"][2][-2000:]
    assert (folder / "r.html").read_text().rstrip().endswith("</html>")
    assert sorted(p.name for p in (folder / "elsewhere").iterdir()) == []


COMPILED = re.compile(r"jit\(([A-Za-z_]\w*)\)")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["run", "env"])
def test_the_program_sees_the_same_events_jits_threads_and_modules(runs, mode) -> None:
    """(test_invisible's) No self-check runs in or under the program, and jitlens imports no
    library the program did not: its own counts of JAX's events, of its jits, its threads and
    libraries are python's."""
    seen = ("counts", "jits", "modules", "threads")
    plain, tracked = _lines(runs["python"][1]), _lines(runs[mode][1])
    assert "jits {'jax': 1}" in plain and "modules []" in plain
    assert any(line.startswith("counts [('/jax/") for line in plain), plain
    assert [x for x in tracked if x.startswith(seen)] == [x for x in plain if x.startswith(seen)]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["run", "env"])
def test_jax_compile_log_names_the_same_functions(runs, mode) -> None:
    """(test_invisible's) JAX's own log of the program's compiles (``JAX_LOG_COMPILES=1``)."""

    def compiled(stderr: str) -> list[str]:
        if mode == "env":  # (run without the Orbax checkpoint)
            stderr = stderr.split(ORBAX_FROM_HERE, 1)[0]
        return sorted(COMPILED.findall(stderr))

    assert "f" in compiled(runs["python"][2])
    assert compiled(runs[mode][2]) == compiled(runs["python"][2])
    assert "canary" not in runs[mode][2]


SAFE_PATH = """
import sys
try:
    import shadow_mod
    found = "found"
except ImportError:
    found = "not found"
print(found, sys.path)
"""


def test_safe_path_and_isolated_mode_are_pythons_own(tmp_path) -> None:
    """PYTHONSAFEPATH=1 and -I: the script's folder is not importable, as under python."""
    (tmp_path / "prog.py").write_text(SAFE_PATH)
    (tmp_path / "shadow_mod.py").write_text("")
    for flags, env in (([], {"PYTHONSAFEPATH": "1"}), (["-I"], {}), ([], {})):
        plain = run_python([*flags, "prog.py"], cwd=tmp_path, env=env)
        tracked = run_python([*flags, "-m", "jitlens", "run", "prog.py"], cwd=tmp_path, env=env)
        assert tracked.returncode == plain.returncode == 0, tracked.stderr
        assert tracked.stdout == plain.stdout, (flags, env)
        assert plain.stdout.startswith("found" if not (flags or env) else "not found")
        assert "never imported jax" in tracked.stderr


REEXEC = """
import os, sys
import jax, jax.numpy as jnp
T = [0]

@jax.jit
def f(x):
    T[0] += 1
    return x + 1

stage = os.environ.get("STAGE", "first")
if stage == "first":
    f(jnp.ones(1))
    os.environ["STAGE"] = "second"
    os.execv(sys.executable, [sys.executable, *sys.argv])  # re-executes itself
f(jnp.ones(2)); f(jnp.ones(3)); f(jnp.ones(3))
print("TRUTH", T[0], flush=True)
"""


def test_a_program_that_re_executes_itself_ends_with_a_report_and_a_clear_line(
    tmp_path, fork_python
) -> None:
    (tmp_path / "prog.py").write_text(REEXEC)
    # python's own answer: its first image forked from the server that imported JAX, its
    # second a fresh `python prog.py` (what os.execv makes of it either way)
    plain = fork_python(["prog.py"], cwd=tmp_path)
    proc = run_python(["-m", "jitlens", "run", "--json", "r.json", "prog.py"], cwd=tmp_path)
    assert proc.returncode == plain.returncode == 0, proc.stderr
    assert proc.stdout == plain.stdout == "TRUTH 2\n"
    assert "re-executed itself" in proc.stderr
    # one report: the new image's, which replaces the first image's journal
    assert proc.stderr.count("jitlens: 1 jitted function, 2 traces,") == 1
    assert "1 trace," not in proc.stderr and "ended by" not in proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    (row,) = report["functions"]
    assert (row["calls"], row["traces"]) == (3, 2)
    assert any("re-executed itself" in w for w in report["warnings"])


PYTEST_FILE = """
import warnings
import jax, jax.numpy as jnp

def retrace(name):
    f = jax.jit(lambda x: x + 1)
    for n in range(1, 3):  # a retrace: the runaway warning's first (JITLENS_WARN_RECOMPILES=1)
        f(jnp.ones(n))

def test_capsys(capsys):
    retrace("a")
    assert capsys.readouterr().err == ""

def test_capfd(capfd):
    retrace("b")
    assert capfd.readouterr().err == ""

def test_no_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retrace("c")
    assert caught == []
"""


#: test_hostile_programs2's: the tests of a project whose pytest settings make warnings errors.
from test_hostile_programs2 import PYTEST_FILE as STRICT_FILE  # noqa: E402


@pytest.fixture(scope="module")
def pytest_runs(tmp_path_factory, fork_python):
    """``pytest -W error test_quiet.py test_strict.py`` under ``jitlens run --json r.json``, and
    under python (a fork of the JAX server: the tests pass, no start-up involved)."""
    tmp = tmp_path_factory.mktemp("pytest")
    (tmp / "test_quiet.py").write_text(PYTEST_FILE)
    (tmp / "test_strict.py").write_text(STRICT_FILE)
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    # (hypothesis' plugin: 1 CPU s of each pytest's start; pytest-benchmark warns that xdist is
    # on when this suite runs under xdist, and a warning is an error here)
    args += ["-p", "no:hypothesispytest", "-p", "no:benchmark"]
    args += ["test_quiet.py", "test_strict.py", "-W", "error"]
    env = {"JITLENS_WARN_RECOMPILES": "1"}
    plain = fork_python(args, cwd=tmp, env=env)
    tracked = run_python(["-m", "jitlens", "run", "--json", "r.json", *args], cwd=tmp, env=env)
    report = tmp / "r.json"
    return plain, tracked, json.loads(report.read_text()) if report.exists() else None


def test_pytest_under_jitlens_run_sees_no_jitlens_output_in_its_captures(pytest_runs) -> None:
    plain, tracked, _report = pytest_runs
    assert "4 passed" in plain.stdout, plain.stdout
    assert tracked.returncode == 0 and "4 passed" in tracked.stdout, tracked.stdout
    assert "RunawayRecompileWarning" in tracked.stderr  # on the terminal


def test_pytest_with_warnings_as_errors_runs_under_jitlens_run(pytest_runs) -> None:
    """(From test_hostile_programs2, whose ``JITLENS=1 pytest`` half is there.) ``jitlens run
    -m pytest`` in a project whose pytest settings say ``filterwarnings = error``: pytest marks
    every plugin's package for assertion rewriting and warns that ``jitlens`` was imported
    before it could be rewritten (the start-up hook imports it), and that warning, made an
    error, stopped the run before its first test."""
    _plain, proc, report = pytest_runs
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert "4 passed" in proc.stdout and "rewritten" not in proc.stdout + proc.stderr
    assert "jitlens: 2 jitted functions, 8 traces" in proc.stderr, proc.stderr
    (row,) = [f for f in report["functions"] if f["defined_at"].startswith("test_strict.py")]
    assert row["traces"] == 2, row


_TEXT = {"capture_output": True, "text": True, "env": {"JITLENS": "1"}}
#: The base interpreter's site-packages, where it finds jax and rich (found, not imported).
FOUND = (
    "import importlib.util as u, site; assert u.find_spec('jax') and u.find_spec('rich'); "
    "print(site.getsitepackages()[0])"
)


def test_without_jitlens_pth_jitlens_run_refuses_before_the_program_runs(tmp_path) -> None:
    """An interpreter that does not process jitlens' .pth (jitlens on PYTHONPATH only): nothing
    can arm jitlens without putting a ``sitecustomize`` of its own on the program's path, so
    ``jitlens run`` says how to install it and exits 2, the program not run."""
    real = os.path.join(sys.base_prefix, "bin", "python3")
    found = subprocess.run(
        [real, "-c", FOUND],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        pytest.skip("the base interpreter has no jax / rich")
    # a venv that reaches the base site-packages through a .pth line: Python adds that folder
    # to sys.path but processes no .pth file in it, so jitlens' own .pth is not run there
    venv = tmp_path / "venv"
    subprocess.run([real, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site_dir,) = venv.glob("lib/python3*/site-packages")
    (site_dir / "base.pth").write_text(found.stdout.strip() + "\n")
    base = str(venv / "bin" / "python")
    pth = subprocess.run([base, "-c", "import sys; print('jitlens' in sys.modules)"], **_TEXT)
    assert pth.stdout.split() == ["False"]  # nothing armed jitlens at start-up
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("print('USER SITECUSTOMIZE')\n")
    (tmp_path / "prog.py").write_text(
        "import sys, jax, jax.numpy as jnp\njax.jit(lambda x: x)(jnp.ones(2))\n"
        "print([p for p in sys.path if 'site-packages' not in p])\n"
    )
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(user)]),
    }
    env.pop("JITLENS", None)
    run = dict(cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    plain = subprocess.run([base, "prog.py"], **run)
    tracked = subprocess.run([base, "-m", "jitlens", "run", "--json", "r.json", "prog.py"], **run)
    assert plain.returncode == 0 and tracked.returncode == 2, tracked.stderr
    assert "install jitlens into that interpreter" in tracked.stderr
    assert (
        tracked.stdout == "USER SITECUSTOMIZE\n"
    )  # jitlens run's own interpreter: not the program
    assert not (tmp_path / "r.json").exists()
