"""Library front-ends: installed when the program imports their library, never before.

A front-end whose jit lives in a library (``nnx.jit`` and ``nnx.cached_partial``
in flax, ``eqx.filter_jit`` in equinox, ...) is counted by replacing the
library's per-call entry point while jitlens tracks. jitlens never imports the
library itself (the program's ``sys.modules`` stay as they are): each
:class:`LibraryPatch` waits for its module through
:func:`jitlens._compat.imports.when_imported` and is installed the moment the
program's import finishes (or at once if the program imported it already).
Adapters are listed in :data:`LIBRARIES`; a new one is one more entry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..._compat import imports
from ..registry import REGISTRY
from ..state import internal_failure
from . import equinox, jax_jit, nnx, pmap
from . import keras as keras  # registers its keras-step record maker and words
from . import linen as linen  # registers its jax.jit record maker (nn.jit rows)
from . import numpyro as numpyro  # registers its MCMC / SVI record maker
from . import words as words  # registers the pmap / nn.jit words


@dataclasses.dataclass(frozen=True)
class LibraryPatch:
    """One library front-end's installation: which module it waits for, what it patches."""

    #: The row kind it stands for (``nnx.jit``, ``eqx.filter_jit``).
    kind: str
    #: The module whose import means the program uses the library.
    module: str
    #: ``install(set_attr)``: patch the library's entry points through ``set_attr(owner, name, value)``.
    install: Callable[[Callable[[Any, str, Any], None]], None]


#: Every library front-end jitlens knows, by the module it waits for.
LIBRARIES: tuple[LibraryPatch, ...] = (
    LibraryPatch(jax_jit.KIND, "jax", jax_jit.install),
    LibraryPatch(nnx.KIND, nnx.MODULE, nnx.install),
    LibraryPatch(equinox.KIND, equinox.MODULE, equinox.install),
    LibraryPatch(pmap.JAX_PMAP, "jax", pmap.install),
)
# linen's nn.jit goes through jax.jit (its records named by ``linen.record_for``) and
# pmap/nn.jit reasons are reworded by ``words``: both register with the engine on import.

#: kind -> [(owner, attribute, original), ...] of each installed front-end.
_PATCHED: dict[str, list[tuple[Any, str, Any]]] = {}
#: kind -> the callback waiting for its library's import.
_WAITING: dict[str, Callable[[], None]] = {}


def _installer(lib: LibraryPatch, now: bool = False) -> Callable[[], None]:
    def install_now() -> None:
        _WAITING.pop(lib.kind, None)
        if not now and not REGISTRY.active:  # tracking ended before the import
            return
        with REGISTRY.lock:
            if lib.kind in _PATCHED:
                return
            done: list[tuple[Any, str, Any]] = []

            def set_attr(owner: Any, name: str, value: Any) -> None:
                done.append((owner, name, getattr(owner, name)))
                setattr(owner, name, value)

            try:
                lib.install(set_attr)
            except Exception as exc:
                for owner, name, original in reversed(done):
                    setattr(owner, name, original)
                if now:  # at activation: all or nothing (the caller undoes the rest)
                    raise
                # at the program's import: this front-end goes uncounted, said once
                internal_failure(f"installing the {lib.kind} front-end", exc)
                return
            _PATCHED[lib.kind] = done
            REGISTRY.installed_kinds.add(lib.kind)

    return install_now


def install() -> None:
    """Install every front-end whose library is imported; wait for the others' imports."""
    for lib in LIBRARIES:
        if lib.kind in _PATCHED or lib.kind in _WAITING:
            continue
        if imports.is_loaded(lib.module):
            _installer(lib, now=True)()
            continue
        callback = _installer(lib)
        _WAITING[lib.kind] = callback
        imports.when_imported(lib.module, callback)


def uninstall() -> None:
    """Put every patched entry point back and stop waiting for imports."""
    with REGISTRY.lock:
        for kind, callback in list(_WAITING.items()):
            lib = next(lib for lib in LIBRARIES if lib.kind == kind)
            imports.cancel(lib.module, callback)
        _WAITING.clear()
        for patched in _PATCHED.values():
            for owner, name, original in reversed(patched):
                try:
                    setattr(owner, name, original)
                except Exception as exc:  # pragma: no cover - a read-only attribute now
                    internal_failure("restoring a patched function", exc)
        _PATCHED.clear()
        REGISTRY.installed_kinds.clear()
