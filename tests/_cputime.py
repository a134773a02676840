"""Where the suite's time goes: CPU seconds per test and per file, measured, not guessed.

``pytest --cpu-times=FILE`` (``.ci/run`` passes it through ``PYTEST_ADDOPTS``, so the README's
command stays verbatim) records, for every phase of every test (setup, call, teardown), the user +
system CPU seconds of the process that ran it (``RUSAGE_SELF``: all of its threads, JAX's included)
and of the child processes it waited for (``RUSAGE_CHILDREN``: every ``jitlens run``, driver and
subprocess a test starts). A session fixture's cost lands on the first test that asks for it, a
module fixture's teardown on the module's last test. Wall seconds on a shared machine measure the
neighbours; CPU seconds measure the suite, so this is the figure that says whether the README's
command fits its budget on two idle cores (total CPU / 2, plus what does not divide evenly).

At the end the terminal summary shows the slowest tests and the costliest files by CPU, each
worker's total (collection and imports included), and ``FILE`` holds every record as JSON. Under
pytest-xdist the workers attach their figures to their reports (``user_properties``) and the
controller adds them up; without xdist the one process does both.
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import subprocess
from collections import defaultdict

import pytest

#: How many tests and files the terminal summary lists.
SLOWEST = 20
_KEY = "cpu_seconds"


#: CPU seconds of processes that ran for this one but are not yet its reaped children (runs
#: of the fork server, reaped by the server until the server itself ends): see credit_children.
_CREDITED = [0.0]


#: The command lines of the processes started since the phase began (``subprocess.Popen``, and
#: the fork server's runs through :func:`note_process`), while --cpu-times records.
_STARTED: list[str] = []


def credit_children(seconds: float) -> None:
    """Count ``seconds`` of a process this one did not reap itself (a fork server's run) as its
    children's now; a negative figure takes them back once they are in ``RUSAGE_CHILDREN``."""
    _CREDITED[0] += seconds


def note_process(args: object) -> None:
    """Record a process started for the current test (its command line, shortened)."""
    if isinstance(args, (str, bytes, os.PathLike)):
        words = [os.fsdecode(args)]
    else:
        words = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in args]
    words = [w if len(w) < 60 else w[:57] + "..." for w in words[:8]]
    _STARTED.append(" ".join(words))


def _count_popen() -> None:
    """Make every ``subprocess.Popen`` note its command line (only while recording)."""
    original = subprocess.Popen.__init__

    def __init__(self, args, *rest, **kwargs):  # Popen's own method, wrapped
        note_process(args)
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = __init__  # type: ignore[method-assign]


def _cpu() -> tuple[float, float]:
    """(this process, its children): user + system CPU seconds so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime + _CREDITED[0]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-times",
        metavar="FILE",
        default=None,
        help="record the CPU seconds of every test (its process and its subprocesses) into "
        f"FILE (JSON) and print the {SLOWEST} slowest tests and files by CPU",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--cpu-times", default=None)
    if path:
        config.pluginmanager.register(CpuTimes(config, pathlib.Path(path)), "jitlens-cpu-times")
        _count_popen()


class CpuTimes:
    """Measures in the process that runs tests; adds up in the one that reports."""

    def __init__(self, config: pytest.Config, path: pathlib.Path) -> None:
        self.config = config
        self.path = path
        self.last = _cpu()
        self.collected = (0.0, 0.0)
        # nodeid -> phase -> [own, children, wall]
        self.tests: dict[str, dict[str, list[float]]] = defaultdict(dict)
        self.workers: dict[str, dict[str, list[float]]] = {}

    # -- the process that runs the tests (a worker, or the only process) --

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = _cpu()

    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        self.last = _cpu()
        _STARTED.clear()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        now = _cpu()
        own, kids = now[0] - self.last[0], now[1] - self.last[1]
        self.last = now
        report.user_properties.append((_KEY, [round(own, 4), round(kids, 4), list(_STARTED)]))
        _STARTED.clear()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        totals = {"collect": list(self.collected), "total": list(_cpu())}
        if workeroutput is not None:  # an xdist worker: the controller reports
            workeroutput[_KEY] = totals
            return
        if not self.workers:  # no xdist: this process ran every test
            self.workers["main"] = totals
        self._write()

    # -- the process that reports (the xdist controller, or the only process) --

    @pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent under -p no:xdist
    def pytest_testnodedown(self, node: object, error: object) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        if _KEY in output:
            name = getattr(getattr(node, "gateway", None), "id", None) or f"w{len(self.workers)}"
            self.workers[name] = output[_KEY]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == _KEY:
                own, kids, started = value
                self.tests[report.nodeid][report.when] = [own, kids, report.duration, started]

    def _rows(self) -> list[tuple[str, float, float, float, int]]:
        rows = []
        for nodeid, phases in self.tests.items():
            own = sum(p[0] for p in phases.values())
            kids = sum(p[1] for p in phases.values())
            wall = sum(p[2] for p in phases.values())
            rows.append((nodeid, own, kids, wall, sum(len(p[3]) for p in phases.values())))
        return rows

    def _write(self) -> None:
        rows = self._rows()
        files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0, 0])
        for nodeid, own, kids, wall, procs in rows:
            entry = files[nodeid.split("::", 1)[0]]
            entry[0] += own
            entry[1] += kids
            entry[2] += wall
            entry[3] += 1
            entry[4] += procs
        data = {
            "tests": {n: dict(self.tests[n]) for n, *_ in rows},
            "files": {
                f: {"own": v[0], "children": v[1], "wall": v[2], "tests": v[3], "processes": v[4]}
                for f, v in files.items()
            },
            "workers": self.workers,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(data, indent=1, sort_keys=True))
        self.summary = (rows, files)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if getattr(self.config, "workeroutput", None) is not None:
            return
        if not hasattr(self, "summary"):
            self._write()
        rows, files = self.summary
        tr = terminalreporter
        total_own = sum(r[1] for r in rows)
        total_kids = sum(r[2] for r in rows)
        head = f"{'cpu':>7} {'own':>7} {'subproc':>7} {'procs':>5}"
        tr.write_sep("=", f"{SLOWEST} slowest tests by CPU seconds (own + subprocesses)")
        tr.write_line(f"{head} {'wall':>7}  test")
        for nodeid, own, kids, wall, procs in sorted(rows, key=lambda r: -(r[1] + r[2]))[:SLOWEST]:
            tr.write_line(
                f"{own + kids:7.1f} {own:7.1f} {kids:7.1f} {procs:5d} {wall:7.1f}  {nodeid}"
            )
        tr.write_sep("-", f"{SLOWEST} costliest files by CPU seconds")
        tr.write_line(f"{head} {'tests':>5}  file")
        ranked = sorted(files.items(), key=lambda f: -(f[1][0] + f[1][1]))
        for name, (own, kids, _wall, n, procs) in ranked[:SLOWEST]:
            tr.write_line(f"{own + kids:7.1f} {own:7.1f} {kids:7.1f} {procs:5d} {n:5d}  {name}")
        workers = ", ".join(
            f"{w}: {t['total'][0] + t['total'][1]:.0f} s (collection {t['collect'][0]:.0f} s)"
            for w, t in sorted(self.workers.items())
        )
        tr.write_line(
            f"tests: {total_own + total_kids:.0f} CPU s ({total_own:.0f} in the test processes, "
            f"{total_kids:.0f} in {sum(r[4] for r in rows)} subprocesses); per process, all "
            f"included: {workers}; records in {self.path}"
        )
