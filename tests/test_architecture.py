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
import re
import shutil
import subprocess
import sys

import grimp
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "jitlens"

#: The one documented upward import (Report.to_text / to_html / to_trace_events render it).
ALLOWED_UPWARD = {
    ("jitlens._core.report", "jitlens._render.text"),
    ("jitlens._core.report", "jitlens._render.html"),
    ("jitlens._core.report", "jitlens._render.perfetto"),
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


# ---------------------------------------------------------------- the document names what exists

ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: The layers whose bullet in docs/architecture.md names their modules.
LAYERS = ("_compat", "_core", "_track", "_render", "_cli")


def _resolves(name: str) -> bool:
    """``_track/frontends/pmap.py``, ``_core/messages*``, ``frontends/jax_jit.TrackedJit``,
    ``jitlens._track.canary``, ``_compat.find_trace_frame``: a module, package or glob of
    them; a name after a module must be defined in (or re-exported by) that module."""
    name = name.removeprefix("jitlens.").rstrip("/").removesuffix(".py")
    if name.startswith("frontends/"):
        name = "_track/" + name
    folder, _, rest = name.rpartition("/")
    parts = (folder.split("/") if folder else []) + rest.split(".")
    for cut in range(len(parts), 0, -1):
        base = PKG.joinpath(*parts[: cut - 1])
        stem = parts[cut - 1]
        found = [*base.glob(f"{stem}.py"), *(d / "__init__.py" for d in base.glob(stem))]
        found = [f for f in found if f.is_file()]
        if found:
            attribute = parts[cut:]
            return not attribute or any(
                re.search(rf"\b{re.escape(attribute[0])}\b", f.read_text(encoding="utf-8"))
                for f in found
            )
    return False


def test_every_module_named_in_the_architecture_document_exists() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    quoted = re.findall(r"`([^`\s]+)`", text)
    pathlike = [
        q
        for q in quoted
        if re.fullmatch(r"(jitlens\.)?_[a-z]+[/.][\w/.*]*|frontends/[\w/.*]+", q)
        and not q.startswith(("_ext", "_repr", "_fun", "_cached", "_run_python", "_trace"))
    ]
    assert len(pathlike) > 20, pathlike  # the pattern still finds the document's names
    missing = [q for q in pathlike if not _resolves(q)]
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
    # a layer's bullet names its modules bare (`records`, `describe`): each is a module of
    # that layer, or at least a name its source still uses
    for layer in LAYERS:
        bullet = re.search(rf"^- \*\*`{layer}/`(.*?)(?=^- \*\*|^\S)", text, re.M | re.S)
        assert bullet is not None, layer
        source = "\n".join(p.read_text(encoding="utf-8") for p in (PKG / layer).rglob("*.py"))
        words = set(re.findall(r"`([a-z][a-z0-9_]+)`", bullet.group(1)))
        stale = sorted(
            w
            for w in words
            if not (PKG / layer / f"{w}.py").exists()
            and not (PKG / layer / w).is_dir()
            and not re.search(rf"\b{re.escape(w)}\b", source)
        )
        assert not stale, f"docs/architecture.md's {layer}/ names what {layer}/ lacks: {stale}"
