"""What jitlens knows of each library whose private pieces it reads, as that library declares it.

A library's private access (``_compat/<library>_api.py``) declares one
:class:`Library` as its module-level ``LIBRARY``: its distribution, the packages
whose files and objects are the library's, whether its loops build the user's
model, how its users write its layer classes, and its probe (the private pieces the
installed version lacks). The modules that need such a fact ask :func:`declared`
for every library's, and name none: ``frames`` (whose files are the user's),
``probe`` (the versions ``jitlens selfcheck`` reports, the pieces missing),
``_core.key`` (whose ``__repr__`` runs no user code), ``_core.rank`` (``eqx.nn.Linear``,
``nnx.Linear``: the class of a layer whose arguments made a structure change).
A new library is its ``*_api`` module and its front-end package; no list elsewhere
grows.

The modules are found by their name (``*_api``) when a fact is first asked for,
after the package is imported (they import ``frames`` themselves), and read once.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from collections.abc import Callable
from typing import Any

from .._record import record

#: Libraries whose jits run the user's model: a jit they make whose callable reaches
#: the user's code is the user's row (JAX's, Flax's and optax's own jits are not).
JIT_LIBRARIES = ("keras", "numpyro", "blackjax")
#: The suffix of a library's private-access module in this package.
SUFFIX = "_api"


def _nothing_missing() -> list[tuple[str, str]]:
    return []


@record
class Library:
    """One library, as its private-access module declares it (``LIBRARY = Library(...)``)."""

    #: Its distribution's name (``importlib.metadata``): the version ``jitlens selfcheck`` reports.
    distribution: str
    #: Its top-level packages: their files are the library's, not the user's (nothing is
    #: reported at a line there), and their classes' ``__repr__`` runs no user code.
    packages: tuple[str, ...]
    #: Has the program imported it? (Its probe is read only then, and again once it is.)
    loaded: Callable[[], bool]
    #: Its loops build the user's model (a layer list's ``Sequential``): a loop in its files
    #: that the trace unrolls is the size of the user's program, reported at the user's call.
    builds_models: bool = False
    #: How its users write the class of one of its layers, before the class's name
    #: (``nnx.`` + ``Linear``); "" when it has none.
    layer_prefix: str = ""
    #: ``(module, api)``: the model API whose modules a package of it holds, most specific
    #: first (``("flax.nnx", "nnx")``): a loop the trace unrolled is fixed in its API's terms.
    model_apis: tuple[tuple[str, str], ...] = ()
    #: ``(piece, what jitlens loses)`` for each of its private pieces the installed version
    #: lacks (none while the program has not imported it).
    missing: Callable[[], list[tuple[str, str]]] = _nothing_missing


@functools.cache
def declared() -> tuple[Library, ...]:
    """Every :class:`Library` a ``*_api`` module of this package declares, by module name."""
    package = __name__.rpartition(".")[0]
    out = []
    for info in pkgutil.iter_modules(sys.modules[package].__path__):
        if info.name.endswith(SUFFIX):
            module = importlib.import_module(f"{package}.{info.name}")
            library = getattr(module, "LIBRARY", None)
            if isinstance(library, Library):
                out.append(library)
    return tuple(out)


@functools.cache
def packages() -> tuple[str, ...]:
    """The top-level packages of every declared library."""
    return tuple(dict.fromkeys(p for lib in declared() for p in lib.packages))


@functools.cache
def model_packages() -> tuple[str, ...]:
    """The top-level packages of the libraries whose loops build the user's model."""
    return tuple(dict.fromkeys(p for lib in declared() if lib.builds_models for p in lib.packages))


@functools.cache
def model_apis() -> tuple[tuple[str, str], ...]:
    """Every library's ``(module, model API)``, most specific first."""
    pairs = [pair for lib in declared() for pair in lib.model_apis]
    return tuple(sorted(pairs, key=lambda pair: -pair[0].count(".")))


def layer_prefix(module: str) -> str:
    """How users write a layer class of ``module``'s library (``eqx.nn.``), "" if none."""
    return _layer_prefixes().get(module.partition(".")[0], "")


@functools.cache
def _layer_prefixes() -> dict[str, str]:
    return {p: lib.layer_prefix for lib in declared() if lib.layer_prefix for p in lib.packages}


def installed_versions() -> dict[str, str]:
    """Python's and each library's installed version, read without importing the libraries."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> dict[str, str]:
    """Read once per process: at the start of tracking (the self-check's key, flax's version
    while flax is not imported) and again at exit (the report) it costs ~3 ms each time."""
    import importlib.metadata
    import platform

    out = {"python": platform.python_version(), "machine": platform.machine()}
    libraries = (lib.distribution for lib in declared())
    for dist in dict.fromkeys(("jax", "jaxlib", "flax", *libraries)):
        try:
            out[dist] = _version(importlib.metadata.distribution(dist))
        except Exception:
            out[dist] = "absent"
    return out


def _version(dist: Any) -> str:
    """``dist.version`` without parsing the whole METADATA as an e-mail (read at every
    tracked start: ~3 ms less): its ``Version:`` header line."""
    for line in (dist.read_text("METADATA") or "").splitlines():
        if not line:
            break  # the headers end at the first blank line
        if line.startswith("Version:"):
            return line[len("Version:") :].strip()
    return dist.version
