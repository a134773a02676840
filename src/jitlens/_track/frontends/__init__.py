"""Library front-ends: installed when the program imports their library, never before.

A front-end whose jit lives in a library (``nnx.jit`` and ``nnx.cached_partial``
in flax, ``eqx.filter_jit`` in equinox, ...) is counted by replacing the
library's per-call entry point while jitlens tracks. jitlens never imports the
library itself (the program's ``sys.modules`` stay as they are): each
:class:`~jitlens._track.frontend.Frontend` that patches waits for its module through
:func:`jitlens._compat.imports.when_imported` and is installed the moment the
program's import finishes (or at once if the program imported it already).
Adapters are listed in :data:`LIBRARIES`, the registration table: a new library is
one package here, one entry there, one ``RowKind`` member and its tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._compat import imports
from ..._core.key import Key
from ..._core.kinds import RowKind
from ..._core.report import Reason
from ..._core.words import Words
from ..frontend import Frontend, SetAttr, register
from ..records import Record
from ..registry import REGISTRY
from ..state import internal_failure
from . import equinox, jax_jit, keras, library_rows, linen, nnx, numpyro, pmap

if TYPE_CHECKING:
    from ..._core.template_kinds import FixKind


class JaxJitFrontend(Frontend):
    """``jax.jit`` itself: the counted wrapper it returns while tracking (``jax_jit``); and
    JAX's control-flow primitives run outside jit (``RowKind.LAX``, ``_track/nested``)."""

    kinds = (RowKind.JAX_JIT, RowKind.LAX)
    stale_traced = (
        "A number that changes often is better traced: pass it as an array argument "
        "(`jnp.asarray(...)`), not inside a static."
    )
    module = "jax"

    def install(self, set_attr: SetAttr) -> None:
        jax_jit.install(set_attr)

    def data_fix(self, kind: str, r: Reason, unstatic: Words) -> tuple[FixKind, Words] | None:
        from ..._core.reasons import STATIC_ARG_FIX  # the words load at the first retrace
        from ..._core.template_kinds import FixKind

        return FixKind.STATIC_ARG, STATIC_ARG_FIX.words(arg=r.argument or r.path, unstatic=unstatic)

    def reword(self, rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
        if rec.internal:
            return reasons
        # a library-built function passed as a static argument, built anew per call
        reasons = library_rows.library_static_reasons(reasons, rec.name)
        if not (isinstance(rec.code_key, tuple) and rec.code_key[:1] == ("library",)):
            return reasons
        # a library's function the user jitted, built anew per call of its factory
        return library_rows.library_closure_reasons(rec, reasons)


#: Every front-end jitlens knows, registered with the engine (``frontend.register``) and
#: installed in this order: the registration table. (linen's ``nn.jit``, keras' and
#: numpyro's steps go through ``jax.jit``: they install nothing and make their rows in
#: ``Frontend.record_for_jit``, asked in this order.)
LIBRARIES: tuple[Frontend, ...] = tuple(
    register(fe)
    for fe in (
        JaxJitFrontend(),
        nnx.FRONTEND,
        equinox.FRONTEND,
        pmap.FRONTEND,
        keras.FRONTEND,
        linen.FRONTEND,
        numpyro.FRONTEND,
    )
)

#: kind -> [(owner, attribute, original), ...] of each installed front-end.
_PATCHED: dict[str, list[tuple[Any, str, Any]]] = {}
#: kind -> the callback waiting for its library's import.
_WAITING: dict[str, Callable[[], None]] = {}


def _installer(lib: Frontend, now: bool = False) -> Callable[[], None]:
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
        if not lib.patches or lib.kind in _PATCHED or lib.kind in _WAITING:
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
