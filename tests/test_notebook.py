"""``%load_ext jitlens`` in IPython itself: ``%%jitlens`` and ``%jitlens on|off|report``.

Each test runs IPython in a fresh process (an IPython shell is a process-wide
singleton, and JAX state must not leak between tests); the last one runs a
tiny notebook through a real Jupyter kernel when nbclient is installed.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import USER_PYTHONPATH, run_python

pytest.importorskip("IPython")

SESSION = """
import warnings
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

ip = start_ipython()
if {html}:
    ip.display_formatter.active_types = ["text/plain", "text/html"]
ip.run_cell("import jax, jax.numpy as jnp\\nE = []\\ndef early_body(x):\\n    E.append(1)\\n    return x\\nearly = jax.jit(early_body)")
ip.run_line_magic("load_ext", "jitlens")
# the usual flow: a function jitted in an earlier cell, called in a %%jitlens cell
ip.run_cell("T = []\\ndef body(x):\\n    T.append(1)\\n    return x + 1\\nS = []\\ndef step_body(x):\\n    S.append(1)\\n    return x * 3\\nstep = jax.jit(step_body)")
outputs = {{}}
with capture_output() as cap, warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ip.run_cell_magic("jitlens", "", "f = jax.jit(body)\\nfor n in (2, 2, 3):\\n    f(jnp.ones(n))\\n    step(jnp.ones(n))\\ne = early(jnp.ones(1))\\n")
outputs["cell"] = [cap.stdout, [o.data for o in cap.outputs]]
outputs["warnings"] = [str(w.message) for w in caught]
with capture_output() as cap:
    ip.run_line_magic("jitlens", "report")
    ip.run_line_magic("jitlens", "on")
    ip.run_cell("g = jax.jit(lambda x: body(x) * 2)\\ng(jnp.ones(2))")
    ip.run_cell("g(jnp.ones(2)); g(jnp.ones(5))")
    ip.run_line_magic("jitlens", "report")
    ip.run_cell("g(jnp.ones(6))")
    ip.run_line_magic("jitlens", "off")
    ip.run_cell("g(jnp.ones(7))")
outputs["on"] = [cap.stdout, [o.data for o in cap.outputs]]
outputs["traces"] = len(ip.user_ns["T"])
outputs["step_traces"] = len(ip.user_ns["S"])
print("JSON" + json.dumps(outputs))
"""


def _session(html: bool) -> dict:
    # the real IPython: the suite hides it from its other subprocesses (tests/_suite_path)
    env = {"PYTHONPATH": USER_PYTHONPATH}
    proc = run_python(["-c", "import json\n" + SESSION.format(html=html)], env=env)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("JSON"))
    return json.loads(line[4:])


def test_cell_magic_and_tracking_across_cells_in_terminal_ipython() -> None:
    out = _session(html=False)
    cell_text, cell_displays = out["cell"]
    assert cell_displays == []  # a terminal shows text, printed
    assert cell_text.startswith("jitlens: 3 jitted functions, 5 traces")
    assert "<lambda>" not in cell_text and "body  retraced 1x" in cell_text
    assert "f32[2] -> f32[3]" in cell_text
    rows = {line.split()[0]: line.split()[1:] for line in cell_text.splitlines()[3:6]}
    # jitted in an earlier cell: 3 calls, 2 traces (the body ran twice), 1 hit
    assert out["step_traces"] == 2
    assert rows["step_body"][1:5] == ["3", "2", "2", "1"]
    # jitted before %load_ext: its calls cannot be counted, and a note says so
    assert rows["early_body"][1] == "?"
    assert cell_text.rstrip().endswith(
        "jitlens: calls and cache hits of `early_body` are unknown (?): jitted before "
        "`%load_ext jitlens`; re-run the cell that defines it to count them."
    )

    text, _ = out["on"]
    first, rest = text.split("jitlens: tracking jitted functions across cells", 1)
    assert first.startswith("jitlens: not tracking; `%jitlens on` starts")
    so_far, final = rest.split("jitlens: 1 jitted function", 2)[1:]
    # `report` while on: the cells so far (3 calls of g, 2 traces); `off`: one more call
    assert " 3 " in so_far.splitlines()[3] and "f32[2] -> f32[5]" in so_far
    assert " 4 " in final.splitlines()[3] and "f32[5] -> f32[6]" in final
    assert "f32[7]" not in final  # after `off`, nothing is tracked
    assert out["traces"] == 2 + 4  # ground truth: the body ran once per trace


def test_cell_magic_shows_the_html_report_in_a_notebook_front_end() -> None:
    out = _session(html=True)
    cell_text, cell_displays = out["cell"]
    assert cell_text.startswith("jitlens: calls and cache hits of `early_body` are unknown")
    assert out["warnings"] == []  # no "Consider using IPython.display.IFrame"
    (shown,) = cell_displays
    page = shown["text/html"]
    assert page.startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;')
    assert 'onload="var f=this;' in page  # sized to its page once loaded
    assert "f32[2] -&amp;gt; f32[3]" in page or "f32[3]" in page
    assert "body" in page


def test_import_jitlens_stays_cheap_with_the_extension() -> None:
    proc = run_python(
        [
            "-c",
            "import sys, jitlens; jitlens.load_ipython_extension; "
            "print(sorted(m for m in ('jax', 'IPython', 'flax') if m in sys.modules))",
        ]
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_real_notebook_through_a_jupyter_kernel(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", USER_PYTHONPATH)  # the kernel's: the real IPython
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jitlens"),
        nbformat.v4.new_code_cell("import jax, jax.numpy as jnp\nstep = jax.jit(lambda x: x * 2)"),
        nbformat.v4.new_code_cell(
            textwrap.dedent("""\
            %%jitlens
            for n in (2, 2, 3):
                step(jnp.ones(n))
            """)
        ),
    ]
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    outputs = nb.cells[2].outputs
    html = [o for o in outputs if o.get("output_type") == "display_data"]
    assert html, outputs
    assert html[0]["data"]["text/html"].startswith("<iframe srcdoc=")
    assert "retrace" in html[0]["data"]["text/html"]
