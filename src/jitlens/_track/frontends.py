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
import functools
from collections.abc import Callable
from typing import Any

from .. import _compat
from .._compat import imports
from .calls import make_frontend_call, make_nnx_call
from .registry import REGISTRY
from .state import internal_failure


@dataclasses.dataclass(frozen=True)
class LibraryPatch:
    """One library front-end's installation: which module it waits for, what it patches."""

    #: The row kind it stands for (``nnx.jit``, ``eqx.filter_jit``).
    kind: str
    #: The module whose import means the program uses the library.
    module: str
    #: ``install(set_attr)``: patch the library's entry points through ``set_attr(owner, name, value)``.
    install: Callable[[Callable[[Any, str, Any], None]], None]


def make_cached_partial(original: Callable[..., Any]) -> Callable[..., Any]:
    """``nnx.cached_partial``, watching the cached graph for statics changed after caching."""

    @functools.wraps(original)
    def cached_partial(f: Any, *cached_args: Any, **kw: Any) -> Any:
        out = original(f, *cached_args, **kw)
        if not REGISTRY.active:
            return out
        try:
            from .stale import watch_cached_partial

            return watch_cached_partial(out, f, cached_args)
        except Exception as exc:
            internal_failure("watching nnx.cached_partial", exc)
            return out

    return cached_partial


def _install_nnx(set_attr: Callable[[Any, str, Any], None]) -> None:
    from .._compat import flax_api

    flax_api.load()
    for cls, _kind in _compat.NNX_WRAPPERS:
        set_attr(cls, "__call__", make_nnx_call(cls.__call__))
    owners = _compat.cached_partial_owners()
    if owners:
        patched = make_cached_partial(getattr(*owners[0]))
        for owner, attr in owners:
            set_attr(owner, attr, patched)


def _install_library_frontends(set_attr: Callable[[Any, str, Any], None]) -> None:
    for fe in _compat.FRONTENDS:
        if not fe.loaded():
            continue
        entry = fe.call_entry()
        if entry is not None:
            owner, attr = entry
            set_attr(owner, attr, make_frontend_call(getattr(owner, attr), fe))


#: Every library front-end jitlens knows, by the module it waits for.
LIBRARIES: tuple[LibraryPatch, ...] = (
    LibraryPatch("nnx.jit", "flax.nnx", _install_nnx),
    LibraryPatch("eqx.filter_jit", _compat.EQUINOX.module, _install_library_frontends),
)

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
            except Exception as exc:  # the library changed: it goes uncounted, said once
                for owner, name, original in reversed(done):
                    setattr(owner, name, original)
                internal_failure(f"installing the {lib.kind} front-end", exc)
                return
            _PATCHED[lib.kind] = done

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


def is_installed(frontend: _compat.Frontend) -> bool:
    return frontend.kind in _PATCHED


def ensure_installed(frontend: _compat.Frontend) -> bool:
    """Install ``frontend`` now if its library's import was not seen (imported oddly).

    Returns True when it was installed just now (the current call went uncounted).
    """
    if frontend.kind in _PATCHED or not REGISTRY.active:
        return False
    lib = next((lib for lib in LIBRARIES if lib.kind == frontend.kind), None)
    if lib is None:
        return False
    _installer(lib, now=True)()
    return frontend.kind in _PATCHED
