"""The table of lint rules: every ``rules_*.py`` module's ``RULES``, by code.

A rules module holds the checks of one family (jit wrappers, NNX statics, eager
control flow, a library's own jit) and declares them as ``RULES``; one for a library
of its own declares that library's names too (``VOCABULARY``: its conventional alias,
its tracing decorators, its jit that keeps non-array arguments static). The modules
are found by name when this module is imported, so a new family is one module.
"""

from __future__ import annotations

import ast
import functools
import importlib
import operator
import pkgutil
import sys
from types import ModuleType

from .index import VOCABULARY as BASE_VOCABULARY
from .index import FileIndex, Vocabulary
from .nodes import Hit
from .rule import Rule as Rule


def _rule_modules() -> list[ModuleType]:
    package = __name__.rpartition(".")[0]
    return [
        importlib.import_module(f"{package}.{info.name}")
        for info in pkgutil.iter_modules(sys.modules[package].__path__)
        if info.name.startswith("rules_")
    ]


_MODULES = _rule_modules()
#: Every rule, by code: ``JL0xx`` jit, NNX and JAX traps, ``JL1xx`` Equinox's.
RULES: tuple[Rule, ...] = tuple(
    sorted((rule for m in _MODULES for rule in m.RULES), key=lambda rule: rule.code)
)
#: The names of every library the rules know (``index.Vocabulary``).
VOCABULARY: Vocabulary = functools.reduce(
    operator.or_, (m.VOCABULARY for m in _MODULES if hasattr(m, "VOCABULARY")), BASE_VOCABULARY
)


def run_rules(tree: ast.Module) -> list[Hit]:
    """Every finding of every rule in one parsed file, unsorted."""
    index = FileIndex(tree, VOCABULARY)
    return [hit for rule in RULES for hit in rule.check(index)]
