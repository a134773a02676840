"""A library is one package: few modules name it, and the engine names no library's row kind.

Counted on the code, not the prose: identifiers (``eqx``, ``equinox_api``,
``is_eqx_module_class``, ``RowKind.EQX_FILTER_JIT``) and string literals that
are code (``"eqx.filter_jit"``, ``"equinox._jit"``; a literal without
whitespace), never docstrings, comments or the words jitlens prints (a literal
with whitespace). The registration table (``_track/frontends/__init__.py``), the
kinds (``_core/kinds.py``), the library's package, its private access
(``_compat/<lib>_api.py``), its lint rules and its audit checks may name it.
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize

import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "src" / "jitlens"

#: library -> the words (of identifiers, split at ``_`` and case changes) that name it.
WORDS = {"equinox": {"equinox", "eqx"}, "linen": {"linen"}, "pmap": {"pmap"}}
#: library -> a pattern a code string names it by beyond its words (``nn.jit``).
PATTERNS = {"linen": re.compile(r"\bnn\.jit\b")}
#: The most modules whose code may name a library (issue 31).
LIMIT = 8


def _words(token: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", token)}


def _prose_lines(tree: ast.AST) -> set[int]:
    """Lines of docstrings and other bare string statements."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


#: A file none of whose text matches this names no library: not tokenized (cheap).
_ANY = re.compile(r"eqx|equinox|linen|pmap|nn\.jit", re.I)


def _code_tokens(path: pathlib.Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if not _ANY.search(text):
        return []
    prose = _prose_lines(ast.parse(text))
    string_types = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME:
            out.append(tok.string)
        elif tok.type in string_types and tok.start[0] not in prose:
            if not any(c.isspace() for c in tok.string):  # words for the user are not code
                out.append(tok.string)
    return out


def _names(token: str, library: str) -> bool:
    pattern = PATTERNS.get(library)
    return bool(_words(token) & WORDS[library]) or bool(pattern and pattern.search(token))


@pytest.fixture(scope="module")
def tokens() -> dict[str, list[str]]:
    return {str(p.relative_to(PKG)): _code_tokens(p) for p in sorted(PKG.rglob("*.py"))}


def _modules_naming(tokens: dict[str, list[str]], library: str) -> list[str]:
    return [m for m, toks in tokens.items() if any(_names(t, library) for t in toks)]


@pytest.mark.parametrize("library", sorted(WORDS))
def test_a_library_is_named_by_few_modules(tokens: dict[str, list[str]], library: str) -> None:
    """Its package (one, however many modules it holds) and at most 7 other modules."""
    found = _modules_naming(tokens, library)
    package = f"_track/frontends/{library}/"
    assert f"{package}__init__.py" in found, f"{library} has no package of its own ({package})"
    outside = [m for m in found if not m.startswith(package)]
    assert 1 + len(outside) <= LIMIT, (
        f"{library} is named in the code of its package and {len(outside)} other modules: {outside}"
    )


def test_the_measure_sees_a_library_named_in_code_not_in_prose(tmp_path: pathlib.Path) -> None:
    assert _names("is_eqx_module_class", "equinox") and _names("EQX_FILTER_JIT", "equinox")
    assert _names('"eqx.filter_jit"', "equinox") and _names('"nn.jit"', "linen")
    assert not _names("lineno", "linen") and not _names("equal", "equinox")
    src = 'def f():\n    """eqx.filter_jit in a docstring."""\n    return "eqx.filter_jit", "an eqx word"\n'
    path = tmp_path / "probe.py"
    path.write_text(src, encoding="utf-8")
    assert _code_tokens(path).count('"eqx.filter_jit"') == 1
    assert '"an eqx word"' not in _code_tokens(path)


def _engine_modules() -> list[pathlib.Path]:
    """``_core/*`` (but the kinds themselves) and ``_track/*.py`` outside the front-end packages."""
    core = [p for p in (PKG / "_core").glob("*.py") if p.name != "kinds.py"]
    return sorted([*core, *(PKG / "_track").glob("*.py")])


def _row_kinds() -> set[str]:
    """The values of ``_core.kinds.RowKind``, read from its source (this module imports no
    private name)."""
    tree = ast.parse((PKG / "_core" / "kinds.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RowKind")
    return {
        n.value.value
        for n in cls.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
    }


def test_the_engine_names_no_row_kind() -> None:
    """The engine compares a row's kind to ``RowKind`` members or asks its front-end."""
    kinds = _row_kinds()
    assert {"jax.jit", "nnx.cached_partial", "eqx.filter_jit", "nn.jit"} <= kinds
    found = []
    for path in _engine_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        }
        found += [
            f"{path.relative_to(PKG)}:{n.lineno} {n.value!r}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in kinds and id(n) not in docstrings
        ]
    assert not found, "\n".join(found)
