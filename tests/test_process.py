"""process_info outside a multi-process job, and per-process report path templates."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from jitlens._errors import ConfigError
from jitlens._track.process import ProcessInfo, expand_path_template, process_info

INFO = ProcessInfo(process_index=3, process_count=8, host="node-7")


def test_single_process_defaults() -> None:
    assert process_info() == (0, 1, socket.gethostname())


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


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("report-{process_index}.json", "report-3.json"),
        ("r-{process_index:03d}-of-{process_count}.json", "r-003-of-8.json"),
        ("out/{host}/report.json", "out/node-7/report.json"),
        ("plain.json", "plain.json"),
        ("{{literal}}-{process_index}.json", "{literal}-3.json"),
        ("{{literal}}.json", "{literal}.json"),
    ],
)
def test_expand_path_template(template: str, expected: str) -> None:
    assert expand_path_template(template, INFO) == expected


def test_pid_field() -> None:
    assert expand_path_template("r-{pid}.json", INFO) == f"r-{os.getpid()}.json"


def test_defaults_to_this_process() -> None:
    assert expand_path_template("r-{process_index}-{host}.json") == (
        f"r-0-{socket.gethostname()}.json"
    )


@pytest.mark.parametrize(
    ("template", "words"),
    [
        ("r-{rank}.json", ["{rank}", "{process_index}, {process_count}, {host}, {pid}"]),
        ("r-{}.json", ["unnamed field", "'r-{process_index}.json'"]),
        ("r-{0}.json", ["unnamed field"]),
        ("r-{host.upper}.json", ["{host.upper}"]),
        ("r-{process_index.json", ["not a valid template"]),
        ("r-}.json", ["not a valid template", "literal braces"]),
    ],
)
def test_bad_templates_fail_clearly(template: str, words: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        expand_path_template(template, INFO)
    for word in words:
        assert word in str(info.value)
