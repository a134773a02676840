"""The pre-commit hook runs `jitlens lint` without the JAX stack: nothing installed, nothing imported.

The linter is standard-library `ast` only. Both ways in are run in a fresh
process whose imports of jax, numpy, flax, equinox, optax and rich fail: the
hook's launcher (`tools/jitlens-lint`, what pre-commit runs) and the `jitlens
lint` command of an installed jitlens.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "tools" / "jitlens-lint"
HEAVY = ("jax", "jaxlib", "numpy", "flax", "equinox", "optax", "rich", "ml_dtypes")

#: Run in the child: block the heavy packages, run ``{call}``, print the modules loaded.
CHILD = """
import json, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {heavy!r}:
            raise ImportError("jitlens lint imported " + name)
sys.meta_path.insert(0, Block())
{call}
print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}))
"""

TRAP = "import jax\nfor i in range(3):\n    jax.jit(lambda x: x + i)(1.0)\n"


def _run(call: str, tmp_path: pathlib.Path) -> dict[str, object]:
    (tmp_path / "trap.py").write_text(TRAP)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(heavy=HEAVY, call=call)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert any("JL001" in line and line.startswith("trap.py:3:") for line in lines), out.stdout
    return json.loads(lines[-1])


def _heavy(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return [m for m in modules if m.partition(".")[0] in HEAVY]


def test_the_hook_launcher_lints_without_jax(tmp_path: pathlib.Path) -> None:
    call = (
        "import runpy\n"
        f"sys.argv = [{str(LAUNCHER)!r}, 'trap.py']\n"
        "try:\n"
        f"    runpy.run_path({str(LAUNCHER)!r}, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code"
    )
    got = _run(call, tmp_path)
    assert got["code"] == 1 and _heavy(got["modules"]) == []
    # only the lint package: jitlens' own __init__ (and with it every other layer) never runs
    ours = {m for m in got["modules"] if m.startswith("jitlens.")}  # type: ignore[union-attr]
    # the lint package, the AST lock, and the stdlib-only file checks it shares with report
    light = ("jitlens._lint", "jitlens._pyast", "jitlens._core.files")
    assert ours and all(m.startswith(light) or m == "jitlens._core" for m in ours), ours


def test_the_lint_command_imports_no_jax(tmp_path: pathlib.Path) -> None:
    got = _run("from jitlens._cli.main import main\ncode = main(['lint', 'trap.py'])", tmp_path)
    assert got["code"] == 1 and _heavy(got["modules"]) == []


def test_the_hook_manifest_runs_the_launcher_as_a_script() -> None:
    """What pre-commit's `validate-manifest` checks, and what `language: script` needs."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {"id", "name", "entry", "language"} <= set(hook)
    assert hook["id"] == "jitlens-lint" and hook["language"] == "script"
    assert hook["entry"] == "tools/jitlens-lint" and hook["types"] == ["python"]
    assert os.access(ROOT / hook["entry"], os.X_OK)
    assert LAUNCHER.read_text().startswith("#!/usr/bin/env python3\n")
