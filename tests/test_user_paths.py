"""Paths as Python's tracebacks print them (issue 46): a script outside the working folder is
named by its absolute path everywhere jitlens prints one (the live log, the summary, the JSON
report, the HTML page), never as ``../../x/y.py``. (One below it stays relative, as pytest
shows it: ``tests/test_run_words.py``.)"""

from __future__ import annotations

import html
import json
import pathlib

import pytest

from conftest import run_python

PROGRAM = """\
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return x + 1

for n in (2, 3):
    f(jnp.ones(n))
"""


@pytest.mark.slow
def test_a_script_outside_the_working_folder_is_named_by_its_absolute_path(
    tmp_path: pathlib.Path,
) -> None:
    script = tmp_path / "x" / "y.py"
    script.parent.mkdir()
    script.write_text(PROGRAM)
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    out_json, out_html = tmp_path / "r.json", tmp_path / "r.html"
    command = ["--json", str(out_json), "--html", str(out_html), "../../x/y.py"]
    cli = ["-m", "jitlens", "run", "--color", "never", *command]
    proc = run_python(cli, cwd=here, env={"COLUMNS": "400"})  # a long path, unwrapped
    assert proc.returncode == 0, proc.stderr[-3000:]
    full = str(script)
    log, summary = proc.stderr.split("jitlens: 1 jitted function", 1)
    assert f"(jax.jit) {full}:9  retrace #1" in log, log  # the live log
    assert f"{full}:9  retrace #1" in summary and f"(defined at {full}:4)" in summary, summary
    assert "../" not in proc.stderr, proc.stderr
    (fn,) = json.loads(out_json.read_text())["functions"]
    assert fn["defined_at"] == f"{full}:4", fn["defined_at"]
    assert all(e["call_site"] == f"{full}:9" for e in fn["events"]), fn["events"]
    page = html.unescape(out_html.read_text())
    assert f"defined at {full}:4" in page and "../x/y.py" not in page
