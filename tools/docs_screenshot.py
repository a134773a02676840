"""The front page's picture, ``docs/report.png``, made from the code as a user would see it.

    python tools/docs_screenshot.py

Runs ``examples/recompiles.py`` under ``jitlens run --html`` (100 columns, a fresh process),
then screenshots the report in headless Chromium: 1000 px wide, its top (the cards, the
table, the first function's recompiles), so that the picture, shown at the docs' and the
README's width, is read at about its own size. ``tests/test_render_browser.py`` calls
:func:`screenshot` on the same run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PNG = ROOT / "docs" / "report.png"
CHROMIUM = "/usr/bin/chromium"
#: The picture's size: about the width the docs and the README show it at.
SIZE = (1000, 1150)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--force-device-scale-factor=1",
)


def screenshot(page: Path, png: Path, profile: Path | None = None) -> bytes:
    """``page`` as Chromium shows it at :data:`SIZE`, written to ``png``; its bytes."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile or scratch}",
            f"--screenshot={png}",
            f"--window-size={SIZE[0]},{SIZE[1]}",
            page.as_uri(),
        ]
        subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    return png.read_bytes()


def report_page(folder: Path) -> Path:
    """``examples/recompiles.py``'s HTML report, from ``jitlens run`` as a user runs it."""
    html = folder / "report.html"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "COLUMNS": "100"}
    command = [sys.executable, "-m", "jitlens", "run", "-q", "--html", str(html)]
    subprocess.run([*command, "examples/recompiles.py"], cwd=ROOT, env=env, check=True)
    return html


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        data = screenshot(report_page(Path(folder)), PNG)
    print(f"wrote {PNG.relative_to(ROOT)} ({len(data):,} bytes, {SIZE[0]}x{SIZE[1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
