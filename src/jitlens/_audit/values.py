"""How audited static values compare: what they hold, what is rebuilt, what a user can name."""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from .. import _compat
from .._compat.flax_api import LAZY_NNX as nnx
from .._core.key import compares_by_identity

_LIBRARIES = frozenset(_compat.framework_packages())
_MAX_ITEMS = 64
_MAX_DEPTH = 4
_MAX_VISITS = 2000


def _children(x: Any) -> list[tuple[str, Any]]:
    """``(sub-path, child)`` of containers, dataclasses and partials (not arbitrary objects)."""
    if isinstance(x, (tuple, list)):
        fields = getattr(x, "_fields", None)
        if fields is not None:
            return [(f".{f}", v) for f, v in zip(fields, x, strict=False)]
        return [(f"[{i}]", v) for i, v in enumerate(x[:_MAX_ITEMS])]
    if isinstance(x, (set, frozenset)):
        return [("", v) for v in list(x)[:_MAX_ITEMS]]
    if isinstance(x, Mapping):
        return [(f"[{k!r}]", v) for k, v in list(x.items())[:_MAX_ITEMS]]
    if isinstance(x, functools.partial):
        return [(f"({i})", a) for i, a in enumerate(x.args)] + [
            (f"({k}=)", v) for k, v in x.keywords.items()
        ]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [(f".{f.name}", getattr(x, f.name, None)) for f in dataclasses.fields(x)]
    return []


def _hidden_data(value: Any) -> tuple[str, str | None] | None:
    """``(what, where)`` of the first array / Variable / graph node inside a static value.

    ``where`` is ``None`` when the static itself is one, else its sub-path
    (``.inner``, ``[0]``); the search is breadth-first and bounded.
    """
    queue: list[tuple[Any, str, int]] = [(value, "", 0)]
    for x, where, depth in queue:
        what = _data_kind(x)
        if what is not None:
            return what, where if depth else None
        if depth >= _MAX_DEPTH or len(queue) > _MAX_VISITS:
            continue
        kids = _children(x)
        if not kids and not callable(x) and not _is_library(type(x)):
            try:  # a plain user object: its attributes
                kids = [(f".{k}", v) for k, v in list(vars(x).items())[:_MAX_ITEMS]]
            except TypeError:
                kids = []
        queue += [(child, where + sub, depth + 1) for sub, child in kids]
    return None


def _data_kind(x: Any) -> str | None:
    if isinstance(x, (jax.Array, np.ndarray)):
        return "an array"
    if _compat.is_graph_node(x):
        kind = "Variable" if isinstance(x, nnx.Variable) else "Module"
        return f"a {kind} (`{type(x).__name__}`)"
    return None


def _rebuilt(a: Any, b: Any, depth: int = 0) -> bool:
    """True when ``a != b`` only because identity-compared objects inside were built anew."""
    if type(a) is not type(b) or depth > _MAX_DEPTH:
        return False
    if compares_by_identity(a):
        return True
    if inspect.ismethod(a):  # equal only when bound to the same object
        return a.__func__ is b.__func__
    ka, kb = _children(a), _children(b)
    if not ka or [k for k, _ in ka] != [k for k, _ in kb]:
        return False
    return all(
        _equal(x, y) or _rebuilt(x, y, depth + 1) for (_, x), (_, y) in zip(ka, kb, strict=True)
    )


def _first_rebuilt(a: Any, b: Any) -> tuple[Any, Any] | None:
    if compares_by_identity(b) and a is not b:
        return a, b
    for (_, x), (_, y) in zip(_children(a), _children(b), strict=False):
        found = None if _equal(x, y) else _first_rebuilt(x, y)
        if found is not None:
            return found
    return None


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _unstable_parts(value: Any, stable: Callable[[Any], bool]) -> list[Any]:
    """Identity-compared objects in ``value`` not reachable by name, shallowest first (bounded)."""
    found: list[Any] = []
    queue: list[tuple[Any, int]] = [(value, 0)]
    for x, depth in queue:
        if x is None or isinstance(x, (bool, int, float, complex, str, bytes, enum.Enum)):
            continue
        if stable(x):
            continue
        if compares_by_identity(x):
            found.append(x)
        elif depth < _MAX_DEPTH and len(queue) <= _MAX_VISITS:
            queue += [(child, depth + 1) for _, child in _children(x)]
    return found


class _Reachable:
    """Objects a user can name: module-level functions, classes, constants, class attributes.

    Such an object is created once per process, so sharing it between
    instances is stable; anything else shared (a cached lambda, a partial
    returned by a memoised helper) holds only as long as that cache does.
    """

    def __init__(self) -> None:
        self._index: dict[int, Any] | None = None

    def stable(self, value: Any) -> bool:
        if value is None or value is ... or value is NotImplemented:
            return True
        if isinstance(value, (types.ModuleType, enum.Enum)) or _by_qualname(value):
            return True
        if self._index is None:
            self._index = _name_index()
        return self._index.get(id(value)) is value


def _by_qualname(value: Any) -> bool:
    try:  # user objects may answer any attribute with anything, or raise
        mod = sys.modules.get(getattr(value, "__module__", None) or "")
        qualname = getattr(value, "__qualname__", None)
        if mod is None or not isinstance(qualname, str) or "<" in qualname:
            return False
        obj: Any = mod
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        return obj is value
    except Exception:
        return False


def _name_index() -> dict[int, Any]:
    """id -> object for every module global; in user modules, class attributes and registries.

    Read without running the program's code: a class attribute is taken as stored (a lazy
    attribute such as ``six.moves``' imports a module when asked for anything), and a module
    that fails to be read is skipped."""
    index: dict[int, Any] = {}
    for modname, mod in list(sys.modules.items()):
        try:
            values = list(vars(mod).values())
        except TypeError:
            continue
        user = modname.partition(".")[0] not in _LIBRARIES
        for v in values:
            index[id(v)] = v
            if not user:
                continue
            try:
                inner = _inner(v, modname)
            except Exception:  # a user object answering type checks with anything
                continue
            index.update((id(x), x) for x in inner)
    return index


def _inner(v: Any, modname: str) -> list[Any]:
    """The values a user module's global holds: a class's attributes (a static or class
    method's function), a registry's items (``ACTIVATIONS["gelu"]``)."""
    if isinstance(v, type) and v.__module__ == modname:
        methods = (staticmethod, classmethod)
        return [a.__func__ if isinstance(a, methods) else a for a in list(vars(v).values())]
    if isinstance(v, (dict, list, tuple)):
        return list(v.values() if isinstance(v, dict) else v)[: _MAX_ITEMS * 4]
    return []


def _is_library(obj: Any) -> bool:
    """A class or function defined in flax, jax, optax... (``_compat``'s framework packages)."""
    return (getattr(obj, "__module__", "") or "").partition(".")[0] in _LIBRARIES


@functools.lru_cache(maxsize=256)
def _init_params(cls: type) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(cls.__init__).parameters) - {"self"}
    except (TypeError, ValueError):
        return frozenset()


@functools.lru_cache(maxsize=256)
def _library_attrs(cls: type) -> frozenset[str]:
    """Attribute names a library base class (``nnx.Linear``...) sets: not the user's numbers."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if _is_library(base):
            names |= _init_params(base) | set(getattr(base, "__annotations__", {}))
    return frozenset(names)


@functools.lru_cache(maxsize=256)
def _init_defaults(cls: type) -> frozenset[int]:
    """ids of ``__init__`` default arguments in the MRO: one object for the whole process."""
    ids: set[int] = set()
    for base in cls.__mro__:
        init = vars(base).get("__init__")
        ids |= {id(v) for v in getattr(init, "__defaults__", None) or ()}
        ids |= {id(v) for v in (getattr(init, "__kwdefaults__", None) or {}).values()}
    return frozenset(ids)


def _flax_name(cls: type) -> str:
    return f"nnx.{cls.__name__}" if getattr(nnx, cls.__name__, None) is cls else cls.__name__
