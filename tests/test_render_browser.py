"""The HTML report as a person sees it: rendered by headless Chromium, scripts run, no errors."""

from __future__ import annotations

import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

import html_dom
import report_samples
from conftest import RECOMPILES_GROUP

CHROMIUM = "/usr/bin/chromium"
TIMEOUT_SECONDS = 120
DOCS_PNG = Path(__file__).parent.parent / "docs" / "report.png"
TOOLS = Path(__file__).parent.parent / "tools"
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
    page.write_text(report_samples.sample_report().to_html(), encoding="utf-8")
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
    broken = (
        report_samples.sample_report()
        .to_html()
        .replace("</body>", "<script>no_such_function()</script></body>")
    )
    page.write_text(broken, encoding="utf-8")
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert "no_such_function" in html_dom.parse(done.stdout).find("div", id="jl-errors").text()
    assert "Uncaught ReferenceError" in done.stderr


@pytest.mark.xdist_group(RECOMPILES_GROUP)  # its session fixture runs once
def test_screenshot(tmp_path: Path, recompiles_run) -> None:
    """The front page's picture is a real run of examples/recompiles.py, made by
    tools/docs_screenshot.py (``JITLENS_UPDATE_DOCS=1`` saves it as docs/report.png): the top
    of the report at 1000 px, read at about its own size where the docs show it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_screenshot", TOOLS / "docs_screenshot.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    _, _, page = recompiles_run
    png = tmp_path / "report.png"
    data = tool.screenshot(page, png, tmp_path / "profile")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == tool.SIZE
    assert 20_000 < len(data) < DOCS_MAX_BYTES  # not a blank page, small enough for the docs
    assert struct.unpack(">II", DOCS_PNG.read_bytes()[16:24]) == tool.SIZE  # the docs' is its
    if os.environ.get("JITLENS_UPDATE_DOCS"):
        DOCS_PNG.write_bytes(data)


# ---------------------------------------------------------------- a real run, driven like a user

SEED = """
from functools import partial

import jax.numpy as jnp
from flax import nnx


class CNN(nnx.Module):  # the seed discussion's model: a partial stored on the module
    def __init__(self, rngs):
        self.conv = nnx.Conv(1, 2, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))

    def __call__(self, x):
        return self.avg_pool(nnx.relu(self.conv(x)))


@nnx.jit
def step(model, x):
    return model(x).mean()


x = jnp.ones((4, 8, 8, 1))
for seed in range(3):  # three freshly built models: three compiled entries
    model = CNN(nnx.Rngs(seed))
    for _ in range(3):
        step(model, x)
"""

#: Drives the page as a user would (hover a mark, drag across a timeline, double-click)
#: and leaves what it saw in ``body[data-selftest]`` for ``--dump-dom``.
DRIVE = """<script>
(function(){
var out={}, svg=document.querySelector("svg.timeline"), r=svg.getBoundingClientRect();
function at(e){return +(e.getAttribute("cx")||(+e.getAttribute("x")+4.5));}
var marks=[].slice.call(svg.querySelectorAll(".mark"));
out.t0=+svg.getAttribute("data-t0"); out.t1=+svg.getAttribute("data-t1");
out.ts=marks.map(function(m){return +m.getAttribute("data-t");});
out.xs=marks.map(at);
var mark=svg.querySelector("rect.mark.retrace"), mr=mark.getBoundingClientRect();
mark.dispatchEvent(new MouseEvent("mouseover",{bubbles:true,clientX:mr.left+2,clientY:mr.top+2}));
var tip=document.getElementById("jl-tip");
out.tip=tip.textContent; out.tipShown=!tip.hidden;
function fire(type,f){svg.dispatchEvent(new MouseEvent(type,{bubbles:true,button:0,
  clientX:r.left+r.width*f,clientY:r.top+r.height*0.3}));}
out.view0=svg.getAttribute("data-view");
fire("mousedown",0.2); fire("mousemove",0.4); fire("mouseup",0.6);
out.view1=svg.getAttribute("data-view");
out.visible=marks.filter(function(m){return m.style.display!=="none";}).length;
out.xsZoomed=marks.map(at);
svg.dispatchEvent(new MouseEvent("dblclick",{bubbles:true}));
out.view2=svg.getAttribute("data-view");
document.body.setAttribute("data-selftest",JSON.stringify(out));
})();
</script></body>"""


@pytest.fixture(scope="module")
def seed_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of a real `jitlens run` of the seed program (imports included)."""
    from conftest import run_python

    folder = tmp_path_factory.mktemp("seed")
    (folder / "seed.py").write_text(SEED)
    proc = run_python(
        ["-m", "jitlens", "run", "-q", "--html", "seed.html", "--json", "seed.json", "seed.py"],
        cwd=folder,
    )
    assert proc.returncode == 0, proc.stderr
    return folder / "seed.html"


@pytest.mark.xdist_group("render_browser_seed_page")  # its module fixture runs once
def test_seed_entries_render_distinguishably(seed_page: Path, tmp_path: Path) -> None:
    done = _chromium(seed_page, tmp_path / "profile", "--dump-dom")
    dom = html_dom.parse(done.stdout)
    rows = dom.find("table", "entries", data_function="step").find_all("tr", "entry")
    signatures = [r.find("code", "signature").text() for r in rows]
    assert len(signatures) == 3 and len(set(signatures)) == 3, signatures
    assert all("model.avg_pool=partial@…" in s for s in signatures)


@pytest.mark.xdist_group("render_browser_seed_page")  # its module fixture runs once
def test_timeline_starts_at_the_first_call_zooms_and_shows_tooltips(
    seed_page: Path, tmp_path: Path
) -> None:
    import json

    page = tmp_path / "driven.html"
    page.write_text(seed_page.read_text().replace("</body>", DRIVE), encoding="utf-8")
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    dom = html_dom.parse(done.stdout)
    assert dom.find("body").attrs.get("data-rendered") == "ok", done.stderr[-2000:]
    seen = json.loads(dom.find("body").attrs["data-selftest"])
    # the axis starts at the first jitted call, not at process start (imports took seconds)
    # (a call starts a moment before the trace it causes: the axis starts at the call)
    assert 0.3 < seen["t0"] <= min(seen["ts"]) < seen["t0"] + 0.05
    # each mark sits where its time is on the axis, the first at the left edge (64 px) plus
    # the moment between the call and its trace (longer on a loaded machine)
    xs, ts, t0 = seen["xs"], seen["ts"], seen["t0"]
    last = max(range(len(ts)), key=ts.__getitem__)
    px_per_s = (xs[last] - 64) / (ts[last] - t0)
    assert all(
        x == pytest.approx(64 + (t - t0) * px_per_s, abs=3) for x, t in zip(xs, ts, strict=True)
    )
    assert min(xs) == pytest.approx(64 + (min(ts) - t0) * px_per_s, abs=3) and min(xs) >= 60
    # a tooltip per mark: the call (from 1), what happened, the signature, the phases
    assert seen["tipShown"]
    assert seen["tip"].startswith("call #4: retrace #1 → entry #1\nmodel: CNN<graph ")
    assert "model.avg_pool=partial@…" in seen["tip"] and "+ compile " in seen["tip"]
    # dragging across 20%..60% of the width zooms every timeline to that range
    a0, b0 = map(float, seen["view0"].split())
    a1, b1 = map(float, seen["view1"].split())
    assert (a0, b0) == pytest.approx((seen["t0"], seen["t1"]), abs=1e-5)
    assert a0 < a1 < b1 < b0 and (b1 - a1) < 0.6 * (b0 - a0)
    assert seen["visible"] < len(seen["ts"]) or seen["xsZoomed"] != seen["xs"]
    # a double-click shows it all again
    assert seen["view2"] == seen["view0"]


NOTEBOOK = """<!DOCTYPE html><html><body><p>a notebook cell's output:</p>{frame}
<script>
window.addEventListener("load", function () {{
  var f = document.querySelector("iframe"), d = f.contentDocument.documentElement;
  var last = d.querySelector("section.function:last-of-type") || d;
  document.body.setAttribute("data-fit", [f.getBoundingClientRect().height,
    d.getBoundingClientRect().height, last.getBoundingClientRect().bottom].join(" "));
}});
</script></body></html>"""


def test_the_notebook_frame_fits_its_page(tmp_path: Path) -> None:
    """`%%jitlens`'s frame grows to the report, so the explanations are not below its fold."""
    page = tmp_path / "notebook.html"
    frame = report_samples.sample_report()._repr_html_()  # what a notebook shows
    style = html_dom.parse(frame).find("iframe").attrs["style"]
    first_height = int(re.search(r"(?:^|;)height:(\d+)px", style).group(1))
    page.write_text(NOTEBOOK.format(frame=frame), encoding="utf-8")
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    outer, inner, last_section = map(
        float, html_dom.parse(done.stdout).find("body").attrs["data-fit"].split()
    )
    assert inner > first_height  # the sample report is taller than the frame's first height
    assert outer >= inner >= last_section  # the last explanation is inside the frame
