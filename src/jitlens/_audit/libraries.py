"""The audits of libraries whose models are no NNX graph, each declared by its own module.

``jitlens audit`` builds the factory's objects twice and compares what a jit would
key on. For NNX that is the graph (``audit.py``, ``checks.py``); a library whose
jit keys its models its own way (``eqx.filter_jit``: the non-array leaves of a
pytree) has a module here that declares a :class:`LibraryAudit` as its ``AUDIT``:
how to recognise what the factory built as its models, and the audit of two builds.
:func:`declared` finds them, so ``audit.py`` names no library.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
import sys
from collections.abc import Callable
from typing import Any

from .model import AuditResult

#: ``[(the name a user would write, root object)]``, as a library's audit names the roots.
Roots = list[tuple[str, Any]]


@dataclasses.dataclass(frozen=True)
class LibraryAudit:
    """The audit of one library's models, as its module declares it (``AUDIT = LibraryAudit(...)``)."""

    #: The roots when the factory built this library's models (with their companions: an
    #: optax optimizer), else None.
    roots: Callable[[Any], Roots | None]
    #: The findings of two builds: ``(target, roots of the first, roots of the second,
    #: perf_counter at the start)``.
    audit: Callable[[str, Roots, Roots, float], AuditResult]


@functools.cache
def declared() -> tuple[LibraryAudit, ...]:
    """Every :class:`LibraryAudit` a module of this package declares, by module name."""
    package = __name__.rpartition(".")[0]
    out = []
    for info in pkgutil.iter_modules(sys.modules[package].__path__):
        audit = getattr(importlib.import_module(f"{package}.{info.name}"), "AUDIT", None)
        if isinstance(audit, LibraryAudit):
            out.append(audit)
    return tuple(out)
