"""The documentation builds with warnings as errors, its examples run, and its links resolve.

The site is built from ``docs/`` with Sphinx + MyST (``docs/conf.py``); its reference
pages are generated from the code (``docs/_ext/jitlens_reference.py``), so the
tables checked here are the code's own. The README's test command runs this file,
so CI builds the docs on every change.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import jitlens
from conftest import ROOT

DOCS = ROOT / "docs"
#: Pages of the site and the README; docs/incoming/ holds proposals, not pages.
PAGES = sorted(
    p
    for p in DOCS.rglob("*.md")
    if not {"incoming", "_generated", "_build"} & set(p.relative_to(DOCS).parts)
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(% (?:not run|lint): ?([^\n]*)\n)?```python\n(.*?)^```", re.M | re.S)


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sphinx-build -W --keep-going -b html docs OUT``, once for the module."""
    out = tmp_path_factory.mktemp("site")
    command = ["-W", "--keep-going", "-q", "-b", "html", "-d", str(out / ".doctrees")]
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", *command, str(DOCS), str(out / "html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return out / "html"


pytestmark = pytest.mark.xdist_group("docs")


def test_docs_build_with_warnings_as_errors(built_site: Path) -> None:
    assert (built_site / "index.html").exists()
    for page in PAGES:
        rel = page.relative_to(DOCS).with_suffix(".html")
        assert (built_site / rel).exists(), f"{rel} was not built (not in a toctree?)"
    assert not (built_site / "incoming").exists()


def test_reference_pages_are_generated_from_the_code(built_site: Path) -> None:
    from jitlens import Event, FunctionReport, _config
    from jitlens._cli.main import COMMANDS
    from jitlens._lint.rules import RULES

    reasons = (built_site / "reference" / "reasons.html").read_text()
    for kind in [*jitlens.ReasonKind, *jitlens.AdviceKind]:
        assert f">{kind}<" in reasons, kind
    cli = (built_site / "reference" / "cli.html").read_text()
    for command in COMMANDS:
        assert f"jitlens {command}" in cli, command
    for option in ("--fail-on-retrace", "--json", "--select", "--jitlens-max-traces"):
        assert option in cli, option
    settings = (built_site / "reference" / "settings.html").read_text()
    for env, *_ in _config.SETTINGS.values():
        assert env in settings
    for env in _config.OTHER_VARIABLES:
        assert env in settings
    schema = (built_site / "reference" / "report-schema.html").read_text()
    for field in ("call_entries", "python_dispatch_calls", "persistent_cache", "expected"):
        assert field in schema, field
    for cls in (Event, FunctionReport):
        for field in cls.__dataclass_fields__:
            assert f">{field}<" in schema, (cls.__name__, field)
    lint = (built_site / "reference" / "lint-rules.html").read_text()
    assert all(rule.code in lint for rule in RULES)
    api = (built_site / "reference" / "python-api.html").read_text()
    for name in jitlens.__all__:
        assert name.startswith("_") or f"jitlens.{name}<" in api, name
    for method in (
        "Report.to_text",
        "Report.to_html",
        "Report.to_trace_events",
        "MergedReport.to_text",
    ):
        assert f"jitlens.{method}<" in api, method


def test_every_kind_and_setting_has_words() -> None:
    """What the generated pages would otherwise fail on, said directly."""
    from jitlens import _config
    from jitlens._core import kind_docs, reasons

    assert list(reasons.SPECS) == list(jitlens.ReasonKind)
    assert list(kind_docs.EVENT_KIND_DOCS) == list(jitlens.EventKind)
    assert list(kind_docs.ADVICE_KIND_DOCS) == list(jitlens.AdviceKind)
    assert set(_config.SETTING_DOCS) == set(_config.SETTINGS)


def test_every_environment_variable_jitlens_reads_is_documented() -> None:
    from jitlens import _config

    documented = {env for env, *_ in _config.SETTINGS.values()} | set(_config.OTHER_VARIABLES)
    # set by `jitlens run` / the tracked program for the program's own interpreter and
    # children (`_cli/environ.py`), never by a user
    internal = {"JITLENS_MAIN_PID", "JITLENS_RUN", "JITLENS_IMAGE"}
    read = set()
    for path in (ROOT / "src" / "jitlens").rglob("*.py"):
        read |= set(re.findall(r"[\"'](JITLENS_[A-Z_]*[A-Z])[\"']", path.read_text()))
    assert read - documented - internal == set()


def _links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return [a or b for a, b in LINK.findall(text)]


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT))
)
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link of the README and the docs names a file (and heading) that exists."""
    for target in _links(page):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.relative_to(ROOT)}: broken link {target}"
        assert dest.is_relative_to(ROOT), f"{page.relative_to(ROOT)}: {target} leaves the repo"
        if anchor and dest.suffix == ".md":
            heads = re.findall(r"^#+ (.+)$", dest.read_text(), re.M)
            labels = re.findall(r"^\(([\w-]+)\)=$", dest.read_text(), re.M)
            assert anchor in {_slug(h) for h in heads} | set(labels), (
                f"{page.relative_to(ROOT)}: no heading #{anchor} in {path}"
            )


def _blocks() -> list[tuple[str, str, str, str]]:
    """(page, marker, marker text, code) of every ```python block of the docs."""
    found = []
    for page in PAGES:
        for match in FENCE.finditer(page.read_text()):
            marker = (match.group(1) or "").split(":")[0].strip("% \n")
            found.append(
                (str(page.relative_to(DOCS)), marker, match.group(2) or "", match.group(3))
            )
    return found


#: Runs each example file given on its command line as ``python FILE`` would (own globals,
#: ``__name__ == "__main__"``), one after the other in this one process: a fresh
#: interpreter per example would cost a JAX import each.
RUN_EXAMPLES = """
import runpy, sys, traceback
for path in sys.argv[1:]:
    print("=== " + path, flush=True)
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException:
        traceback.print_exc()
        print("FAILED " + path, flush=True)
        raise SystemExit(1)
"""


def test_every_python_example_runs_or_says_why_not(tmp_path: Path, fork_python) -> None:
    """Each ```python block runs, unless a ``% not run: why`` line precedes it."""
    runnable = [(page, code) for page, marker, _why, code in _blocks() if marker == ""]
    skipped = [(page, why) for page, marker, why, _code in _blocks() if marker == "not run"]
    assert len(runnable) >= 4, runnable
    assert all(why.strip() for _page, why in skipped), skipped
    scripts = []
    for i, (page, code) in enumerate(runnable):
        script = tmp_path / f"{i}_{page.replace('/', '_')}.py"
        script.write_text(code)
        scripts.append(str(script))
    proc = fork_python(["-c", RUN_EXAMPLES, *scripts], cwd=tmp_path)  # a process after `import jax`
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("=== ") == len(runnable)


def test_lint_examples_find_the_codes_they_name() -> None:
    """A block after ``% lint: JL001 ...`` is linted and yields exactly those codes."""
    blocks = [(page, why, code) for page, marker, why, code in _blocks() if marker == "lint"]
    assert blocks
    for page, codes, code in blocks:
        found = sorted({finding.code for finding in jitlens.lint_source(code)})
        assert found == sorted(codes.split()), page


def test_lint_guide_table_lists_every_rule() -> None:
    """The how-to's table (with a fix column the code does not hold) names every rule, once."""
    from jitlens._lint.rules import RULES

    text = (DOCS / "howto" / "tasks" / "lint.md").read_text()
    listed = re.findall(r"^\| (JL\d{3}) \|", text, re.M)
    assert listed == [rule.code for rule in RULES]


# ---------------------------------------------------------------- the site in a browser

CHROMIUM = "/usr/bin/chromium"
#: Left in ``body[data-measured]`` by the page: each code block's longest line (characters)
#: and whether the block shows it whole (no horizontal scroll).
MEASURE = """<script>
window.addEventListener("load", function () {
  var out = [].slice.call(document.querySelectorAll("article pre")).map(function (pre) {
    var longest = Math.max.apply(null, pre.textContent.split("\\n").map(function (l) {
      return l.length; }));
    return [longest, pre.scrollWidth <= pre.clientWidth + 1];
  });
  var tasks = [].slice.call(document.querySelectorAll(".sidebar-tree a")).map(function (a) {
    return a.textContent.trim(); });
  var select = document.getElementById("jl-version");
  document.body.setAttribute("data-measured", JSON.stringify({blocks: out, sidebar: tasks,
    versions: select ? [].slice.call(select.options).map(function (o) {
      return [o.textContent, o.value]; }) : null}));
});
</script></body>"""


def _measured(built_site: Path, page: str, width: int, tmp_path: Path) -> dict:
    """``page`` of the built site, as Chromium lays it out ``width`` px wide."""
    import json

    import html_dom

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    source = built_site / page
    probe = source.with_name(f"measured-{width}-{source.name}")
    probe.write_text(source.read_text().replace("</body>", MEASURE))
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},900",
         "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(html_dom.parse(done.stdout).find("body").attrs["data-measured"])


@pytest.mark.parametrize("width", [1280, 1600])
def test_a_100_column_report_shows_whole_in_the_tutorial(
    built_site: Path, width: int, tmp_path: Path
) -> None:
    """Issue 47: Furo's column showed ~84 columns at 1280 px and cut the summaries off."""
    seen = _measured(built_site, "tutorials/first-steps.html", width, tmp_path)
    wide = [(n, whole) for n, whole in seen["blocks"] if 84 < n <= 100]
    assert wide, seen  # the tutorial shows a 100-column summary
    assert all(whole for _, whole in wide), wide


def test_the_sidebar_lists_tasks_in_the_order_a_user_needs_them(
    built_site: Path, tmp_path: Path
) -> None:
    seen = _measured(built_site, "howto/index.html", 1280, tmp_path)
    tasks = [t for t in seen["sidebar"] if t in {
        "Run a program under jitlens", "Track from Python: jitlens.track()",
        "Grade the nnx.jit exercise: jitlens check",
    }]  # fmt: skip
    assert tasks[0] == "Run a program under jitlens", seen["sidebar"]
    assert tasks[-1] == "Grade the nnx.jit exercise: jitlens check"
    # every page has the version selector, its options pointing at built pages
    (this, url), *_ = seen["versions"]
    assert this.startswith(jitlens.__version__)
    assert (built_site / "howto" / url).resolve().is_file(), url


def test_the_gallery_shows_real_reports_rendered_by_this_jitlens(built_site: Path) -> None:
    """Each gallery page: the program, its run's report as `jitlens report` prints it today,
    and its HTML report beside the pages."""
    import json

    from jitlens._render.text import render_text

    entries = json.loads((DOCS / "gallery" / "gallery.json").read_text())
    assert {e["name"] for e in entries} >= {"recompiles", "fsdp"}
    for entry in entries:
        report = jitlens.load_report(DOCS / "gallery" / f"{entry['name']}.json")
        page = (built_site / "gallery" / f"{entry['name']}.html").read_text()
        first = render_text(report, color=False, width=100).splitlines()[0]
        assert first.split(",")[0] in page, entry["name"]  # "jitlens: N jitted functions"
        assert (built_site / f"gallery-{entry['name']}.html").is_file()
        assert (ROOT / entry["folder"] / entry["program"]).is_file()
    fsdp = (built_site / "gallery" / "fsdp.html").read_text()
    assert "model.w2, optimizer.momentum[&#39;w2&#39;]  sharding" in fsdp
