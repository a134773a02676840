"""Sphinx configuration: MyST Markdown pages, reference tables generated from the code.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html``
(``tests/test_docs.py`` runs exactly this, so the README's test command covers it).
"""

from __future__ import annotations

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
]
source_suffix = {".md": "markdown"}
root_doc = "index"
# docs/incoming/ holds pages helpers proposed; the lead moves them into the site.
exclude_patterns = ["_build", "_generated", "incoming", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "furo"
html_title = f"jitlens {release}"
html_static_path: list[str] = []
# `--json` must stay two hyphens (and quotes straight) in option help and examples
smartquotes = False
