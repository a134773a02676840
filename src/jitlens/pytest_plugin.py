"""pytest plugin: the ``max_traces`` / ``max_compiles`` markers, the ``jit_tracker`` fixture and
session reports.

Loaded through the ``pytest11`` entry point in every pytest run, so it
imports nothing of JAX or of jitlens' core until a test uses the marker or
the fixture, or a ``--jitlens*`` option is given. PYTEST_DONT_REWRITE: it
asserts nothing, and may be imported before pytest could rewrite it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._core.report import Report
    from ._track.tracker import Tracker

GROUP = "jitlens"
GROUP_HELP = "jitlens: count and explain recompilations of jitted functions"
MARKER = (
    "max_traces(n, on_exceed='raise'): fail the test when a jitted function it calls is "
    "traced more than n times, with the reason (jitlens)"
)
MARKER_COMPILES = (
    "max_compiles(n, on_exceed='raise'): fail the test when a jitted function it calls is "
    "compiled more than n times (a recompile without a retrace too), with the reason (jitlens)"
)
HELP_SUMMARY = "after the session, list the jitted functions that retraced and why."
HELP_MAX_TRACES = (
    "fail the test that traces a jitted function for the (N+1)th time in the session "
    "(per function, per process)."
)
HELP_MAX_COMPILES = (
    "fail the test that compiles a jitted function for the (N+1)th time in the session "
    "(per function, per process; a recompile without a retrace counts)."
)
HELP_REPORT = "write the session's jitlens report (JSON) to PATH."
HEADER = "jitlens: tracking jitted functions ({what})"
HEADER_PARTS = {
    "summary": "summary at the end",
    "budget": "at most {n} trace(s) per function",
    "compile_budget": "at most {n} compile(s) per function",
    "report": "report to {path}",
}
SECTION = "jitlens"
NO_RETRACES = "jitlens: {n} jitted function(s) traced, none retraced or compiled again."
#: Above the table when it lists some of the session's functions only (its title counts those).
LISTED = (
    "jitlens: {m} of the session's {n} jitted functions compiled again or were stopped; "
    "only they are listed (every function: --jitlens-report PATH)."
)
WROTE = "jitlens: wrote the report to {path}"
MARKER_SOURCE = "@pytest.mark.{name}"
OPTION_SOURCE = "--jitlens-max-traces"
OPTION_COMPILES_SOURCE = "--jitlens-max-compiles"
BAD_MARKER = (
    "@pytest.mark.{name} needs a budget: @pytest.mark.{name}(n) with n an int >= 0 "
    "(and on_exceed='raise' or 'warn'), got args={args!r} kwargs={kwargs!r}"
)
SWALLOWED = "the test caught this error, but the budget was exceeded all the same:\n{message}"
BAD_INT = "expected an int >= 0, got {value!r}"
#: Key of the report a pytest-xdist worker sends back to the controller.
WORKER_KEY = "jitlens_report"
WORKER_TAG = "{qualname} [{worker}]"


def _non_negative_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(BAD_INT.format(value=value))
    return n


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, GROUP_HELP)
    group.addoption("--jitlens", action="store_true", dest="jitlens_summary", help=HELP_SUMMARY)
    group.addoption(
        "--jitlens-max-traces",
        dest="jitlens_max_traces",
        type=_non_negative_int,
        metavar="N",
        default=None,
        help=HELP_MAX_TRACES,
    )
    group.addoption(
        "--jitlens-max-compiles",
        dest="jitlens_max_compiles",
        type=_non_negative_int,
        metavar="N",
        default=None,
        help=HELP_MAX_COMPILES,
    )
    group.addoption(
        "--jitlens-report", dest="jitlens_report", metavar="PATH", default=None, help=HELP_REPORT
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    config.addinivalue_line("markers", MARKER_COMPILES)
    session = _Session.from_config(config)
    if session is not None:
        config.pluginmanager.register(session, "jitlens-session")


# ------------------------------------------------------------------ marker and fixture


def _marker_budget(marker: pytest.Mark) -> tuple[int, str]:
    args, kwargs = marker.args, dict(marker.kwargs)
    n = args[0] if args else kwargs.pop("n", None)
    on_exceed = kwargs.pop("on_exceed", "raise")
    from ._track.budget import ON_EXCEED

    ok = isinstance(n, int) and not isinstance(n, bool) and n >= 0 and on_exceed in ON_EXCEED
    if not ok or len(args) > 1 or kwargs:
        text = BAD_MARKER.format(name=marker.name, args=marker.args, kwargs=marker.kwargs)
        pytest.fail(text, pytrace=False)
    return n, on_exceed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    traces = item.get_closest_marker("max_traces")
    compiles = item.get_closest_marker("max_compiles")
    if traces is None and compiles is None:
        return (yield)
    with contextlib.ExitStack() as stack:
        scopes = []
        for marker in (traces, compiles):
            if marker is None:
                continue
            n, on_exceed = _marker_budget(marker)
            source = MARKER_SOURCE.format(name=marker.name)
            if marker is traces:
                from ._track.scopes import budget_scope as scope_of
            else:
                from ._track.compile_budget import compile_scope as scope_of
            opened = stack.enter_context(scope_of(n, source=source, on_exceed=on_exceed))
            scopes.append((opened, on_exceed))
        result = yield
    for scope, on_exceed in scopes:
        if scope.violations and on_exceed == "raise":
            pytest.fail(SWALLOWED.format(message=scope.violations[0]), pytrace=False)
    return result


@pytest.fixture
def jit_tracker() -> Iterator[Tracker]:
    """A ``jitlens.track()`` open for the test: ``jit_tracker.stats(fn)``, ``.report()``."""
    from ._track.tracker import track

    with track() as tracker:
        yield tracker


# ------------------------------------------------------------------ session options


@dataclasses.dataclass(eq=False)
class _Session:
    """The session-wide tracker, budget and report, when a ``--jitlens*`` option is given."""

    config: pytest.Config
    summary: bool
    budget: int | None
    path: str | None
    worker: str | None
    controller: bool
    report: Report | None = None
    _tracker: Any = None
    problem: str | None = None  # why the session's budget cannot vouch for the tests
    _scope: Any = None
    #: ``--jitlens-max-compiles``: the session's compile budget, and its open block.
    compile_budget: int | None = None
    _compile_scope: Any = None
    #: Whether the report file was written (``None``: not yet), and why not (one line).
    written: bool | None = None
    write_failures: list[str] = dataclasses.field(default_factory=list)
    _worker_reports: list[Report] = dataclasses.field(default_factory=list)
    #: Reports of earlier runs built from the journals they left (one line each).
    recovered: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_config(cls, config: pytest.Config) -> _Session | None:
        summary = bool(config.getoption("jitlens_summary"))
        budget = config.getoption("jitlens_max_traces")
        compiles = config.getoption("jitlens_max_compiles")
        path = config.getoption("jitlens_report")
        if not summary and budget is None and compiles is None and path is None:
            return None
        if path is not None:
            _check_report_path(config, path)
        workerinput = getattr(config, "workerinput", None)
        worker = workerinput.get("workerid") if workerinput is not None else None
        numprocesses = getattr(config.option, "numprocesses", None)
        dist = getattr(config.option, "dist", "no")
        controller = worker is None and bool(numprocesses) and dist != "no"
        return cls(config, summary, budget, path, worker, controller, compile_budget=compiles)

    def pytest_report_header(self, config: pytest.Config) -> str:
        parts = []
        if self.summary:
            parts.append(HEADER_PARTS["summary"])
        if self.budget is not None:
            parts.append(HEADER_PARTS["budget"].format(n=self.budget))
        if self.compile_budget is not None:
            parts.append(HEADER_PARTS["compile_budget"].format(n=self.compile_budget))
        if self.path is not None:
            parts.append(HEADER_PARTS["report"].format(path=self.path))
        return HEADER.format(what=", ".join(parts))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.controller:
            return  # the workers run the tests and send their reports back
        from ._track.scopes import budget_scope
        from ._track.tracker import track

        self._tracker = track()
        _open_journal(self)
        self._tracker.start()
        from ._errors import JitlensError

        try:  # a budget that cannot count refuses to run the tests
            if self.budget is not None:
                scope = budget_scope(self.budget, source=OPTION_SOURCE)
                scope.__enter__()
                self._scope = scope
            if self.compile_budget is not None:
                from ._track.compile_budget import compile_scope

                scope = compile_scope(self.compile_budget, source=OPTION_COMPILES_SOURCE)
                scope.__enter__()
                self._compile_scope = scope
        except JitlensError as exc:
            self._close_scopes()
            self._tracker.stop()
            self._tracker = None
            raise pytest.UsageError(str(exc)) from None

    @pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown without xdist
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist (controller): a worker finished; keep its report."""
        text = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if text is None:
            return
        from ._core.report import Report

        report = Report.from_dict(json.loads(text))
        worker = getattr(node, "workerinput", {}).get("workerid", "?")
        functions = tuple(
            dataclasses.replace(f, qualname=WORKER_TAG.format(qualname=f.qualname, worker=worker))
            for f in report.functions
        )
        self._worker_reports.append(dataclasses.replace(report, functions=functions))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.controller:
            self.report = _combine(self._worker_reports)
        else:
            self.report = self._stop()
            if self.problem is not None:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if self.worker is not None:
                self.config.workeroutput[WORKER_KEY] = self.report.to_json(indent=None)  # type: ignore[attr-defined]
                return
        if self.path is not None and self.report is not None:
            from ._render.outputs import write_outputs

            output = _report_output(self.config, self.path)
            done = write_outputs(self.report, [output], problem=self.write_failures.append)
            self.written = bool(done)
        _close_journal(self)

    def _close_scopes(self) -> None:
        from ._errors import JitlensError

        for name in ("_compile_scope", "_scope"):
            scope = getattr(self, name)
            if scope is None:
                continue
            setattr(self, name, None)
            try:
                scope.__exit__(None, None, None)
            except JitlensError as exc:  # the budget could not count: the session must not pass
                self.problem = str(exc)

    def _stop(self) -> Report:
        self._close_scopes()
        self._tracker.stop()
        report: Report = self._tracker.report()
        return report

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.problem is not None:
            terminalreporter.write_line(f"jitlens: {self.problem}", red=True)
        if self.report is None or self.worker is not None:
            return
        if self.summary:
            terminalreporter.write_sep("=", SECTION)
            terminalreporter.write(_summary(self.report, terminalreporter.hasmarkup))
        if self.path is not None:
            for line in self.write_failures:  # not "wrote": the file is not there
                terminalreporter.write_line(line, red=True)
            if self.written:
                terminalreporter.write_line(WROTE.format(path=self.path))
        for line in self.recovered:  # earlier sessions that ended without their report
            terminalreporter.write_line(line.rstrip("\n"))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._tracker is not None and self.report is None:
            self._stop()


def _report_output(config: pytest.Config, path: str) -> Any:
    from ._render.outputs import Output, is_url

    # Relative to where pytest was started, not to a test's monkeypatch.chdir.
    where = path if is_url(path) else os.path.join(str(config.invocation_params.dir), path)
    return Output("json", path, where)


def _check_report_path(config: pytest.Config, path: str) -> None:
    """A bad ``--jitlens-report`` is a usage error before any test runs."""
    from ._render.outputs import OutputError, check_outputs

    output = _report_output(config, path)
    output = dataclasses.replace(output, label=f"--jitlens-report {path}")
    base = str(config.invocation_params.dir)
    # The test paths pytest parsed (its positional arguments), not every word of the command
    # line: the report path itself is one (`--jitlens-report r.json`), a file after a first run.
    files = [os.path.join(base, str(a).split("::")[0]) for a in getattr(config, "args", ())]
    inputs = [(f, f"the test file {os.path.relpath(f, base)}") for f in files if os.path.isfile(f)]
    try:
        check_outputs([output], inputs)
    except OutputError as exc:
        raise pytest.UsageError(str(exc)) from None


def _combine(reports: list[Report]) -> Report | None:
    """One report of the xdist workers' reports: their functions side by side."""
    if not reports:
        return None
    first = min(reports, key=lambda r: r.started_at)
    return dataclasses.replace(
        first,
        duration_seconds=max(r.started_at + r.duration_seconds for r in reports) - first.started_at,
        functions=tuple(f for r in reports for f in r.functions),
    )


def _summary(report: Report, color: bool) -> str:
    from ._core.fold import count_functions
    from ._render.text import render_text

    retraced = tuple(
        f
        for f in report.user_functions()
        if f.retraces or f.recompiles or f.stale_hits or f.stopped
    )
    if not retraced:
        return NO_RETRACES.format(n=count_functions(report.user_functions())) + "\n"
    table = render_text(dataclasses.replace(report, functions=retraced), color=color)
    n, m = count_functions(report.user_functions()), count_functions(retraced)
    return table if m == n else LISTED.format(m=m, n=n) + "\n" + table


def _open_journal(session: _Session) -> None:
    """The session's journal: a test process killed (SIGKILL, a CI timeout) leaves its figures,
    which ``jitlens report JOURNAL`` or the next session with jitlens reads."""
    import sys

    from ._core.journal import journal_dir, new_path
    from ._track import journal

    outputs = {"json": _report_output(session.config, session.path).path} if session.path else {}
    start = journal.start_frame(list(sys.argv), {"outputs": outputs})
    problem = journal.open_journal(new_path(journal_dir(), os.getpid()), start, 0.0)
    if problem is None:
        journal.started(session._tracker.started_at())


def _close_journal(session: _Session) -> None:
    """The report is out: the journal goes, and those earlier runs left get their reports."""
    from ._journals import recover
    from ._track import journal

    own = journal.current_path()
    journal.close(delete=True)
    if session.worker is None:
        recover(session.recovered.append, own)
