"""The gallery's pages, rendered from real runs' reports when the site is built.

``tools/gallery.py`` runs each program under ``jitlens run --json`` and keeps the report in
``docs/gallery/<name>.json`` (and a page that includes the fragment written here). At build,
each report is rendered by the jitlens the site is built with: the text summary, with the
program's source, into ``docs/_generated/gallery/<name>.md``, and the HTML report into
``docs/_generated/gallery_html/gallery-<name>.html``, which the site serves beside its pages
(``html_extra_path``). Nothing of a report is written by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The fragment a gallery page includes.
PAGE = """\
{what}

It ran as `jitlens run {program}` (jitlens {jitlens}, jax {jax}, flax {flax}, on {backend});
below is that run's report as `jitlens report` prints it at 100 columns. The
<a href="../gallery-{name}.html">HTML report</a> of the same run has the call timelines and
the compiled entries.

```text
{text}
```

The program:

````python
{source}
````
"""


def generate(docs: Path) -> list[str]:
    """Write every gallery page's fragment and HTML report; return the names written."""
    from jitlens import load_report
    from jitlens._render.html import render_html
    from jitlens._render.text import render_text

    index = docs / "gallery" / "gallery.json"
    fragments = docs / "_generated" / "gallery"
    pages = docs / "_generated" / "gallery_html"
    fragments.mkdir(parents=True, exist_ok=True)
    pages.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in json.loads(index.read_text()):
        name = entry["name"]
        report = load_report(docs / "gallery" / f"{name}.json")
        text = render_text(report, color=False, width=100).rstrip()
        source = docs.parent / entry["folder"] / entry["program"]
        (fragments / f"{name}.md").write_text(
            PAGE.format(
                name=name,
                what=entry["what"],
                program=entry["program"],
                jitlens=report.jitlens_version,
                jax=report.jax_version,
                flax=report.flax_version,
                backend=report.backend,
                text=text,
                source=source.read_text().rstrip(),
            )
        )
        (pages / f"gallery-{name}.html").write_text(render_html(report))
        written.append(name)
    return written


def setup(app: Any) -> dict[str, Any]:
    generate(Path(app.srcdir))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
