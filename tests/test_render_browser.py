"""The HTML report as a person sees it: rendered by headless Chromium, scripts run, no errors."""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest

import html_dom
import report_samples
from jitlens._render.html import render_html

CHROMIUM = "/usr/bin/chromium"
TIMEOUT_SECONDS = 120
WINDOW = (1280, 1600)
DOCS_PNG = Path(__file__).parent.parent / "docs" / "report.png"
DOCS_MAX_BYTES = 300_000
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
MISSING = (
    f"{CHROMIUM} is missing: install it with `apt-get install -y chromium` "
    "(.ci/run does; locally this test is skipped)"
)

if not os.path.exists(CHROMIUM):
    if os.environ.get("CI"):
        pytest.fail(MISSING, pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)


def _chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=True
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[html_dom.Node, str]:
    """The DOM after the page's scripts ran, and Chromium's log."""
    folder = tmp_path_factory.mktemp("browser")
    page = folder / "report.html"
    page.write_text(render_html(report_samples.sample_report()), encoding="utf-8")
    done = _chromium(page, folder / "profile", "--dump-dom")
    return html_dom.parse(done.stdout), done.stderr


def test_scripts_ran_without_errors(rendered: tuple[html_dom.Node, str]) -> None:
    dom, log = rendered
    assert dom.find("body").attrs.get("data-rendered") == "ok"
    errors = dom.find("div", id="jl-errors")
    assert "hidden" in errors.attrs and errors.text() == ""
    assert "Uncaught" not in log


def test_function_table_reads_right(rendered: tuple[html_dom.Node, str]) -> None:
    table = rendered[0].find("table", "functions")
    rows = [[c.text() for c in r.find_all("td")] for r in table.find("tbody").find_all("tr")]
    assert rows[0] == ["Trainer.loss", "jax.jit", "7", "5", "5", "2", "29%", "0.15", "0.40", "0.47"]
    assert rows[1][:3] == ["step", "jax.jit", "?"]


def test_timelines_have_their_marks(rendered: tuple[html_dom.Node, str]) -> None:
    svg = rendered[0].find("svg", "timeline", data_function="Trainer.loss")
    assert len(svg.find_all("circle", "mark hit")) == 2
    assert len(svg.find_all("rect", "mark trace")) == 1
    assert len(svg.find_all("rect", "mark retrace")) == 4


def test_explanations_and_escaped_statics(rendered: tuple[html_dom.Node, str]) -> None:
    dom = rendered[0]
    forward = dom.find("section", "function", data_function="forward")
    assert "functools.partial compares by identity" in forward.text()
    assert "model.avg_pool" in forward.find("li", "reason").find("mark", "path").text()
    step = dom.find("section", "function", data_function="step")
    assert report_samples.XSS in step.text()  # shown as text ...
    assert len(dom.find_all("script")) == 1  # ... never run


def test_an_error_in_the_page_would_be_seen(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    broken = render_html(report_samples.sample_report()).replace(
        "</body>", "<script>no_such_function()</script></body>"
    )
    page.write_text(broken, encoding="utf-8")
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert "no_such_function" in html_dom.parse(done.stdout).find("div", id="jl-errors").text()
    assert "Uncaught ReferenceError" in done.stderr


def test_screenshot(tmp_path: Path) -> None:
    """``JITLENS_UPDATE_DOCS=1`` also saves the picture as the README's docs/report.png."""
    page, png = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(render_html(report_samples.docs_report()), encoding="utf-8")
    size = f"--window-size={WINDOW[0]},{WINDOW[1]}"
    _chromium(page, tmp_path / "profile", f"--screenshot={png}", size)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == WINDOW
    assert 20_000 < len(data) < DOCS_MAX_BYTES  # not a blank page, small enough for the docs
    if os.environ.get("JITLENS_UPDATE_DOCS"):
        DOCS_PNG.write_bytes(data)
