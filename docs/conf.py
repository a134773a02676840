"""Sphinx configuration: MyST Markdown pages, reference tables generated from the code.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html``
(``tests/test_docs.py`` runs exactly this, so the README's test command covers it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

from jitlens import __version__  # noqa: E402

project = "jitlens"
author = "the jitlens authors"
copyright = "the jitlens authors"
release = __version__
version = __version__

extensions = [
    "myst_parser",
    # writes docs/_generated/*.md from jitlens' code (kinds, CLI, settings, schema)
    "jitlens_reference",
    # renders docs/gallery/*.json (real runs' reports) into the gallery's pages
    "jitlens_gallery",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
# docs/incoming/ holds pages helpers proposed; the lead moves them into the site.
exclude_patterns = ["_build", "_generated", "incoming", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "furo"
html_title = f"jitlens {release}"
html_static_path = ["_static"]
# a content column that holds a report's 100 columns whole (docs/_static/jitlens.css)
html_css_files = ["jitlens.css"]
# the gallery's HTML reports, rendered at build (docs/_ext/jitlens_gallery.py)
html_extra_path = ["_generated/gallery_html"]
# `--json` must stay two hyphens (and quotes straight) in option help and examples
smartquotes = False

# The version selector (docs/_templates/sidebar/versions.html) and the versions page, from
# docs/versions.json: a static build links each version's folder or site.
VERSIONS = json.loads((HERE / "versions.json").read_text())
html_context = {"versions": VERSIONS}
templates_path = ["_templates"]
html_sidebars = {
    "**": [
        "sidebar/brand.html",
        "sidebar/search.html",
        "sidebar/versions.html",
        "sidebar/scroll-start.html",
        "sidebar/navigation.html",
        "sidebar/scroll-end.html",
    ]
}
(HERE / "_generated").mkdir(exist_ok=True)
(HERE / "_generated" / "versions.md").write_text(
    "| version | documentation |\n| --- | --- |\n"
    + "".join(
        f"| {v['version']}{' (' + v['label'] + ')' if v.get('label') else ''} | `{v['url']}` |\n"
        for v in VERSIONS
    )
)
