"""The package's shape is a tested property: layers point down, no cycles, one compat door.

See docs/architecture.md. The layering contract lives in pyproject.toml
(``[tool.importlinter]``); these tests run it, prove it catches an upward
import, and check what import-linter cannot: cycles inside a layer and
private JAX/Flax access outside ``jitlens._compat``.
"""

from __future__ import annotations

import ast
import os
import pathlib
import shutil
import subprocess
import sys

import grimp
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "jitlens"

#: The one documented upward import (Report.__str__ / _repr_html_ print themselves).
ALLOWED_UPWARD = {
    ("jitlens._core.report", "jitlens._render.text"),
    ("jitlens._core.report", "jitlens._render.html"),
}
#: Private modules of JAX/Flax/Equinox only ``jitlens._compat`` may import.
PRIVATE_MODULES = (
    "jax._src",
    "flax.nnx.graphlib",
    "flax.nnx.graph",
    "flax.nnx.extract",
    "flax.nnx.transforms",
    "equinox._",
)
#: Interpreter internals only ``jitlens._compat.frames`` may read.
PRIVATE_NAMES = ("_getframe", "f_back", "f_locals", "_trace_for_jit")


def _lint_imports(src: pathlib.Path, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports())"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_layers_are_kept() -> None:
    done = _lint_imports(ROOT / "src", ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 kept, 0 broken" in done.stdout


def test_the_engine_names_no_front_end(tmp_path: pathlib.Path) -> None:
    """A front-end imported into the engine (here: listeners) breaks the seam's contract."""
    shutil.copytree(PKG, tmp_path / "src" / "jitlens", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    listeners = tmp_path / "src" / "jitlens" / "_track" / "listeners.py"
    listeners.write_text(listeners.read_text() + "\n\ndef _x():\n    from .frontends import nnx\n")
    done = _lint_imports(tmp_path / "src", tmp_path)
    assert done.returncode != 0
    assert "the engine imports no front-end adapter BROKEN" in done.stdout


def test_an_upward_import_breaks_the_build(tmp_path: pathlib.Path) -> None:
    shutil.copytree(PKG, tmp_path / "src" / "jitlens", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    explain = tmp_path / "src" / "jitlens" / "_core" / "explain.py"
    explain.write_text(explain.read_text() + "\n\ndef _up():\n    from .._cli import main\n")
    done = _lint_imports(tmp_path / "src", tmp_path)
    assert done.returncode == 1
    assert "jitlens._core.explain -> jitlens._cli.main" in done.stdout


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("jitlens")


def test_no_import_cycles(graph: grimp.ImportGraph) -> None:
    """No module reaches back to a module that imports it (function-level imports count)."""
    for allowed in ALLOWED_UPWARD:
        graph.remove_import(importer=allowed[0], imported=allowed[1])
    cycles = []
    for importer in sorted(graph.modules):
        if not importer.startswith("jitlens"):
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if not imported.startswith("jitlens") or imported == importer:
                continue
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert not cycles, "\n".join(cycles)


def _modules() -> list[pathlib.Path]:
    return sorted(PKG.rglob("*.py"))


def test_private_access_only_in_compat() -> None:
    found = []
    for path in _modules():
        rel = path.relative_to(PKG)
        if rel.parts[0] == "_compat":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith(PRIVATE_MODULES):
                    found.append(f"{rel}:{node.lineno} imports {name}")
            if isinstance(node, ast.Attribute) and node.attr in PRIVATE_NAMES:
                found.append(f"{rel}:{node.lineno} reads .{node.attr}")
            if isinstance(node, ast.Constant) and node.value in PRIVATE_NAMES:
                found.append(f"{rel}:{node.lineno} names {node.value!r}")
    assert not found, "\n".join(found)


def test_package_shape() -> None:
    top = [p for p in PKG.glob("*.py")]
    subpackages = [p for p in PKG.iterdir() if (p / "__init__.py").is_file()]
    assert len(top) <= 12, [p.name for p in top]
    assert len(subpackages) >= 4
    long = [
        f"{p.relative_to(PKG)}: {n}"
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > 600
    ]
    assert not long, long
    undocumented = [
        str(p.relative_to(PKG))
        for p in _modules()
        if ast.get_docstring(ast.parse(p.read_text())) is None and p.name != "_version.py"
    ]
    assert not undocumented, undocumented
