"""Shared fixtures: jitlens' tests keep models tiny and compile as little as possible."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

import pytest
from _cputime import pytest_addoption, pytest_configure  # noqa: F401 (pytest's hooks: --cpu-times)

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"

#: XLA_FLAGS of the whole suite (its workers, the fork server's children, the interpreters it
#: starts): no LLVM optimisation passes, and XLA:CPU's older loop emitters instead of its fusion
#: emitters. Traces, cache keys, culprits and fixes are decided before XLA's backend runs, and
#: most of a tiny program's compile is the backend (the test processes' own CPU 90 -> 65 s on
#: eight in-process files with the first flag; test_fixes 34 -> 21 and test_advice 19 -> 12
#: CPU s with the second, measured side by side). Outputs a fix keeps are compared with a
#: float32 tolerance: a constant passed as an argument instead of folded changes the last bits.
#: Only on the jaxlib versions it was tried with: XLA refuses a flag it does not know. Set
#: before any test module imports JAX (JAX reads it once).
FAST_XLA = (
    "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
    if __import__("importlib.metadata").metadata.version("jaxlib").startswith(("0.9.", "0.10."))
    else ""
)
if FAST_XLA and FAST_XLA.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_XLA}".strip()

#: The ``PYTHONPATH`` the suite was started with; its subprocesses get :data:`SUITE_PATH` first
#: (a stand-in for IPython that refuses to import: flax imports IPython at its own import, 0.45
#: CPU s in each fresh process that imports flax). The test processes themselves keep IPython.
USER_PYTHONPATH = os.environ.get("SUITE_USER_PYTHONPATH", os.environ.get("PYTHONPATH", ""))
SUITE_PATH = str(ROOT / "tests" / "_suite_path")
os.environ["SUITE_USER_PYTHONPATH"] = USER_PYTHONPATH
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SUITE_PATH, USER_PYTHONPATH) if p)
if SUITE_PATH in sys.path:  # an xdist worker started with it: the worker keeps IPython
    sys.path.remove(SUITE_PATH)


def _plugins_from_outside() -> list[str]:
    """The pytest plugins installed here that jitlens' ``[test]`` extra does not bring
    (hypothesis' and pytest-benchmark's on a machine that has them: 0.9 CPU s at each pytest
    start, in the workers and the ~12 pytest sessions the suite starts). A newcomer's machine
    has none of them; the suite runs as it does there. jitlens' own plugin, xdist and the
    plugins of the extra's dependencies stay (the tests read them loaded by entry point)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    brought, todo = set(), [("jitlens", frozenset({"test"}))]
    while todo:
        name, extras = todo.pop()
        if (canonicalize_name(name), extras) in brought:
            continue
        brought.add((canonicalize_name(name), extras))
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            envs = [{"extra": e} for e in extras | {""}]
            if req.marker is None or any(req.marker.evaluate(e) for e in envs):
                todo.append((req.name, frozenset(req.extras)))
    names = {name for name, _ in brought}
    return sorted(
        ep.name
        for ep in metadata.entry_points(group="pytest11")
        if ep.dist is not None and canonicalize_name(ep.dist.name) not in names
    )


def _compile_once() -> None:
    """Byte-compile the modules the suite's processes import from this clone, once a session.

    Under ``PYTHONDONTWRITEBYTECODE`` (this project's machines set it) Python writes no
    ``.pyc``, so each of the ~420 processes compiled the same modules from source again: the
    test programs and helpers under ``tests/``, and jitlens itself where it is installed from
    this clone in development mode (~80 modules, 0.15 CPU s in each tracked process; pip
    compiles an installed copy itself). Python still reads the files, and compiles afresh a
    module edited since. ``__pycache__`` folders are ignored by git."""
    import compileall
    import importlib.util

    folders = [ROOT / "tests"]
    spec = importlib.util.find_spec("jitlens")
    if spec is not None and spec.origin and ROOT in pathlib.Path(spec.origin).parents:
        folders.append(pathlib.Path(spec.origin).parent)
    for folder in folders:
        compileall.compile_dir(str(folder), quiet=2, workers=1)


if "SUITE_PLUGINS_BLOCKED" not in os.environ:  # the controller: its workers inherit it
    if sys.dont_write_bytecode:
        _compile_once()
    _blocked = " ".join(f"-p no:{name}" for name in _plugins_from_outside())
    os.environ["SUITE_PLUGINS_BLOCKED"] = _blocked
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {_blocked}".strip()


def run_python(
    args: list[str],
    *,
    cwd: pathlib.Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS`` in a fresh process (JAX state must not leak between tests)."""
    full_env = {**os.environ, **(env or {})}
    full_env.setdefault("JAX_PLATFORMS", "cpu")
    if FAST_XLA:
        full_env.setdefault("XLA_FLAGS", FAST_XLA)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Counted:
    """How many times a function's Python body ran: the ground truth jitlens' counts must equal.

    A jitted function runs its body once per trace, so ``count.n`` is the number of traces
    JAX really made, whatever jitlens reports::

        count = counted()

        @jax.jit
        def step(x):
            count.tick()
            return x + 1
    """

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def tick(self) -> None:
        """Call this first thing in the body."""
        self.n += 1

    def __repr__(self) -> str:
        return f"counted({self.n})"


def counted() -> Counted:
    """A fresh body counter (see :class:`Counted`)."""
    return Counted()


@pytest.fixture
def run_py():
    return run_python


@pytest.fixture(scope="session")
def fork_python(tmp_path_factory: pytest.TempPathFactory):
    """``run_python`` for driver scripts whose fresh *process* is not the point: each run is a
    fork of a server that imported JAX once (tests/fork_server.py says what the child gets).
    ``fork_python(args, cwd=..., env=..., timeout=...)`` returns a ``CompletedProcess``;
    ``fork_python.submit(...)`` / ``fork_python.wait(handle)`` run several at once."""
    from fork_server import ForkRunner

    runner = ForkRunner(str(tmp_path_factory.mktemp("forked")))
    yield runner
    runner.close()


#: The group of every test reading ``recompiles_run`` (one worker runs the program once).
RECOMPILES_GROUP = "recompiles_run"


@pytest.fixture(scope="session")
def recompiles_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], pathlib.Path, pathlib.Path]:
    """``jitlens run --json J --html H examples/recompiles.py`` at 100 columns, once for the
    session, as a user runs it: its process (the summary on stderr), its JSON and its HTML.
    The README's example is read by test_run, test_first_hour and test_render_browser; each
    ran it on its own (about 6 CPU seconds each). Mark the tests ``RECOMPILES_GROUP``."""
    out = tmp_path_factory.mktemp("recompiles")
    json_path, html_path = out / "r.json", out / "r.html"
    command = ["--json", str(json_path), "--html", str(html_path), "examples/recompiles.py"]
    proc = run_python(["-m", "jitlens", "run", *command], cwd=ROOT, env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json_path, html_path


@pytest.fixture(scope="session", autouse=True)
def _self_check_done() -> None:
    """Run jitlens' once-per-process self-check before any test patches jitlens' internals.

    (A test that injects a fault would otherwise make the canary fail, and the
    rest of the worker's tests would see unknown figures.)
    """
    import jax
    import jax.numpy as jnp

    import jitlens

    with jitlens.track():
        jax.jit(lambda x: x)(jnp.ones(1))


TRIAL_PROGRAMS = pathlib.Path(__file__).parent / "trial_programs"


def trial_runs(names: list[str], libraries: tuple[str, ...], fork_python) -> dict:
    """Every trial program ``names`` run by ``trial_c_driver.py`` as written ("before") and
    with jitlens' printed fix applied ("after"), each scenario in a fresh process (a fork of
    ``fork_python``'s server: JAX imported, jitlens not yet): its rows, its own trace counters
    and outputs. Skips when a library it needs is missing. A program with nothing to fix
    (``NO_FIX = True``) runs once: its "after" is its "before"."""
    import importlib.util
    import json

    for lib in libraries:  # found, not imported (keras' backend)
        if importlib.util.find_spec(lib) is None:
            pytest.skip(f"{lib} is not installed")
    driver = str(TRIAL_PROGRAMS / "trial_c_driver.py")
    out = {}
    for scenario in ("before", "after"):  # one at a time: the worker has one core to give
        proc = fork_python([driver, scenario, *names], cwd=TRIAL_PROGRAMS, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[scenario] = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    for name in names:  # a program with nothing to fix ran once (``NO_FIX``)
        out["after"].setdefault(name, out["before"][name])
    return out


def check_trial_counts(trial: dict, program: str, *, clean_after: bool = True) -> None:
    """A trial program's ground truth: jitlens' traces equal the counters in its jitted bodies,
    before and after its printed fixes are applied, with the same outputs; ``clean_after``: a
    function traced once has no reason, and the fixed program loses no time to a retrace."""
    for scenario in ("before", "after"):
        run = trial[scenario][program]
        for fn, truth in run["truth"].items():
            assert run["rows"][fn]["traces"] == truth, (scenario, fn, run["rows"][fn])
            if clean_after and truth == 1:  # a negative control, or the fix applied
                assert run["rows"][fn]["reasons"] == [], (scenario, fn, run["rows"][fn])
    before, after = trial["before"][program], trial["after"][program]
    if before["same_out"]:
        assert after["out"] == before["out"]
    if clean_after:
        for fn, row in after["rows"].items():  # applied, the fix leaves no avoidable retrace
            assert row["lost"] == 0.0, (fn, row)
            assert all(r["expected"] for r in row["reasons"]), (fn, row["reasons"])


# Journals of tracked programs the suite kills on purpose stay in a folder of the session's
# own (never in the user's cache), and each test has one of its own below it: a run's end
# reports the journals earlier runs left, and a test must not see another test's.
JOURNALS = pathlib.Path(tempfile.mkdtemp(prefix="jitlens-journals-"))
os.environ["JITLENS_JOURNAL_DIR"] = str(JOURNALS)


@pytest.fixture(autouse=True)
def _journals_of_the_test(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITLENS_JOURNAL_DIR", tempfile.mkdtemp(prefix="t-", dir=JOURNALS))
