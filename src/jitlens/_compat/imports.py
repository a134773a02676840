"""Run code when the program imports a library, without importing it ourselves.

jitlens must not import what the program did not (flax brings optax and
treescope, ~0.4 s and a different ``sys.modules``). A front-end whose library
is not loaded yet is installed the moment the program's own import of it
finishes: :func:`when_imported` puts a finder on ``sys.meta_path``, right before
Python's own ``PathFinder`` (what the program finds first there is what python put
there, or the program's own import hooks), that wraps the module's loader, so the callback runs right after the module's code
has executed, in the importing thread, before the import statement returns.

The finder only ever answers for the names it waits for, and a callback that
fails is reported by the caller's guard: the user's import always completes
as it would without jitlens.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Callable
from typing import Any

_LOCK = threading.RLock()
#: module name -> callbacks waiting for its import to finish.
_WAITING: dict[str, list[Callable[[], None]]] = {}


class _Loader(importlib.abc.Loader):
    """The module's own loader, with the callbacks run after its ``exec_module``."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        try:  # the module keeps its real loader, as Python's own import leaves it
            module.__spec__.loader = self._loader
            module.__loader__ = self._loader
        except Exception:
            pass
        self._loader.exec_module(module)
        with _LOCK:
            callbacks = _WAITING.pop(self._name, [])
            _uninstall_if_idle()
        for cb in callbacks:
            cb()

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _WAITING:
            return None
        finders = list(sys.meta_path)
        mine = next((i for i, f in enumerate(finders) if f is self), -1)
        for finder in finders[mine + 1 :]:  # (those before it found nothing)
            if not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, name)
                return spec
        return None


_FINDER = _Finder()


def _uninstall_if_idle() -> None:
    if not _WAITING:
        try:
            sys.meta_path.remove(_FINDER)
        except ValueError:
            pass


def _before_path_finder() -> int:
    """Where Python's ``PathFinder`` is on ``sys.meta_path`` (the end, if it is not there)."""
    for i, finder in enumerate(sys.meta_path):
        if getattr(finder, "__name__", "") == "PathFinder":
            return i
    return len(sys.meta_path)


def when_imported(name: str, callback: Callable[[], None]) -> bool:
    """Call ``callback()`` once module ``name`` is imported: now if it already is.

    Returns True when it ran now, False when it waits for the program's import.
    """
    if name in sys.modules:
        callback()
        return True
    with _LOCK:
        _WAITING.setdefault(name, []).append(callback)
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(_before_path_finder(), _FINDER)
    return False


def cancel(name: str, callback: Callable[[], None]) -> None:
    """Stop waiting for ``name`` with ``callback`` (tracking ended before the import)."""
    with _LOCK:
        waiting = _WAITING.get(name)
        if waiting is not None:
            try:
                waiting.remove(callback)
            except ValueError:
                pass
            if not waiting:
                del _WAITING[name]
        _uninstall_if_idle()


def is_loaded(name: str) -> bool:
    return name in sys.modules
