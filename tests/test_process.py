"""process_info outside a multi-process job, and per-process report path templates."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import jitlens
import report_samples


def test_single_process_defaults() -> None:
    with jitlens.track() as t:
        pass
    report = t.report()
    assert (report.process_index, report.process_count, report.host) == (
        0,
        1,
        socket.gethostname(),
    )


@pytest.mark.slow
def test_process_info_does_not_start_jax_backends() -> None:
    code = (
        "import sys; from jitlens._track.process import process_info; info = process_info(); "
        "import jax._src.xla_bridge as xb; "
        "print(info.process_index, info.process_count, bool(xb._backends))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    # jitlens may import jax itself; what matters is that no backend was started.
    index, count, backends = out.split()
    assert (index, count, backends) == ("0", "1", "False")


@pytest.fixture
def report_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A saved report, in the folder the paths below are relative to."""
    monkeypatch.chdir(tmp_path)
    saved = tmp_path / "saved.json"
    saved.write_text(report_samples.empty_report().to_json())
    return saved


def _written(saved: Path, template: str) -> list[str]:
    """The files ``jitlens report SAVED --json TEMPLATE`` wrote next to SAVED: the fields are
    the saved report's (process 0 of 1 on "devbox"), wherever it is rendered again."""
    assert jitlens.main(["report", str(saved), "--json", template]) == 0
    folder = saved.parent
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.json") if p != saved)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("report-{process_index}.json", "report-0.json"),
        ("r-{process_index:03d}-of-{process_count}.json", "r-000-of-1.json"),
        ("out/{host}/report.json", "out/devbox/report.json"),  # the saved report's host
        ("plain.json", "plain.json"),
        ("{{literal}}-{process_index}.json", "{literal}-0.json"),
        ("{{literal}}.json", "{literal}.json"),
        ("r-{process_index}-{host}.json", "r-0-devbox.json"),
        ("r-{pid}.json", "r-{pid}.json"),  # this process's pid, filled in below
    ],
)
def test_report_paths_are_templates(report_in: Path, template: str, expected: str) -> None:
    # the pid is filled in here, not in the parameters: test ids must be the same in every
    # pytest-xdist worker
    expected = expected.replace("{pid}", str(os.getpid()))
    assert _written(report_in, template) == [expected]
    assert jitlens.load_report(report_in.parent / expected) == jitlens.load_report(report_in)


@pytest.mark.parametrize(
    ("template", "words"),
    [
        ("r-{rank}.json", ["{rank}", "{process_index}, {process_count}, {host}, {pid}"]),
        ("r-{}.json", ["unnamed field", "e.g. '", "/r-{process_index}.json'"]),
        ("r-{0}.json", ["unnamed field"]),
        ("r-{host.upper}.json", ["{host.upper}"]),
        ("r-{process_index.json", ["not a valid template"]),
        ("r-}.json", ["not a valid template", "literal braces"]),
    ],
)
def test_bad_templates_fail_clearly(
    report_in: Path, capsys: pytest.CaptureFixture[str], template: str, words: list[str]
) -> None:
    assert jitlens.main(["report", str(report_in), "--json", template]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err
    assert [p.name for p in report_in.parent.iterdir()] == ["saved.json"]  # nothing written
