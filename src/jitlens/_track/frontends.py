"""Counting calls of library jit front-ends (``eqx.filter_jit``) while tracking.

Each :class:`~jitlens._compat.Frontend` names its library's per-call function;
while hooks are in place it is replaced by :func:`~.calls.make_frontend_call`'s
counting version. Only libraries the program imported are touched (jitlens
never imports equinox); one imported after tracking started is patched at the
first trace of one of its functions (:func:`ensure_installed`), and the call
that traced is counted then.
"""

from __future__ import annotations

from typing import Any

from .. import _compat
from .calls import make_frontend_call
from .registry import REGISTRY
from .state import internal_failure

#: kind -> (owner, attribute, original) of each patched per-call function.
_PATCHED: dict[str, tuple[Any, str, Any]] = {}


def install() -> None:
    """Patch the per-call function of every loaded front-end not patched yet."""
    with REGISTRY.lock:
        for fe in _compat.FRONTENDS:
            if fe.kind in _PATCHED or not fe.loaded():
                continue
            entry = fe.call_entry()
            if entry is None:
                continue
            owner, attr = entry
            original = getattr(owner, attr)
            setattr(owner, attr, make_frontend_call(original, fe))
            _PATCHED[fe.kind] = (owner, attr, original)


def uninstall() -> None:
    """Put every patched per-call function back."""
    with REGISTRY.lock:
        for owner, attr, original in _PATCHED.values():
            try:
                setattr(owner, attr, original)
            except Exception as exc:  # pragma: no cover - a read-only attribute now
                internal_failure("restoring a patched function", exc)
        _PATCHED.clear()


def is_installed(frontend: _compat.Frontend) -> bool:
    return frontend.kind in _PATCHED


def ensure_installed(frontend: _compat.Frontend) -> bool:
    """Patch ``frontend`` now if its library was imported after tracking started.

    Returns True when it was patched just now (the current call went uncounted).
    """
    if frontend.kind in _PATCHED or not REGISTRY.active:
        return False
    install()
    return frontend.kind in _PATCHED
