"""How a key holds a static: never keeping an object of the program's alive.

A key outlives the call that made it (a later retrace is explained against it), and JAX
lets go of a static when the jit's function is deleted or its cache cleared; a key that
held the static would keep it (a 64 MiB table) alive. So a :class:`~.key.StaticVal`
holds its value through :func:`hold`: weakly; as plain builtin data (a number, a short
string, a small tuple of them, a NumPy scalar) or a library's own object (a treedef, a
flax record); a tuple that cannot be held weakly as its items, each held so (rebuilt
while they all live). What cannot be held so is not held: its text, its fingerprint and
all it held (``contents``) were read when it was described.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from .shown import library_type

#: What a holder gives once its object was collected.
GONE: Any = object()

#: Plain data a key keeps as it is: exact builtin types, short strings, small tuples.
_PLAIN = frozenset({int, float, complex, bool, type(None), type(Ellipsis)})
_PLAIN_CHARS = 4_096
_PLAIN_ITEMS = 64


def _plain(value: Any, depth: int) -> bool:
    """A value made only of builtin numbers, NumPy scalars, short strings and small tuples and
    frozensets of them: holding it keeps no object of the program's (and bounded memory)."""
    t = type(value)
    if t in _PLAIN:
        return True
    np = sys.modules.get("numpy")
    if np is not None and issubclass(t, np.generic) and t.__module__.startswith("numpy"):
        return True  # a NumPy scalar (``np.float32(nan)``)
    if t is str or t is bytes:
        return t.__len__(value) <= _PLAIN_CHARS
    if (t is tuple or t is frozenset) and depth > 0 and t.__len__(value) <= _PLAIN_ITEMS:
        return all(_plain(x, depth - 1) for x in t.__iter__(value))
    return False


def _library_object(t: type) -> bool:
    """A library's own object jitlens may hold (a treedef, a flax record, a dtype, a mesh):
    not a tuple (its items are the program's: held each on its own), nor an array (its
    size is the program's)."""
    return (
        library_type(t)
        and not issubclass(t, tuple)
        and getattr(t, "__array__", None) is None
        and getattr(t, "__jax_array__", None) is None
    )


#: How deep a tuple's items are held (:func:`hold`).
_HOLD_DEPTH = 3


class _Weak:
    """Holds an object weakly; ``GONE`` once it was collected."""

    __slots__ = ("ref",)

    def __init__(self, ref: Any) -> None:
        self.ref = ref

    def __call__(self) -> Any:
        v = self.ref()
        return GONE if v is None else v


class _Plain:
    """Holds plain builtin data (``_plain``) as it is."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


class _Tuple:
    """A tuple that cannot be held weakly, held as its type and its items' holders: rebuilt
    (``tuple.__new__``, no code of the program's) while every item is there."""

    __slots__ = ("items", "type")

    def __init__(self, t: type, items: list[Any]) -> None:
        self.type, self.items = t, items

    def __call__(self) -> Any:
        items = [h() for h in self.items]
        return GONE if any(v is GONE for v in items) else tuple.__new__(self.type, items)


def held_object(holder: Any) -> Any:
    """A token of the object ``holder`` holds as one object (weakly, or as it is): equal for
    two holders of that object, never for two objects while both holders live (the address of
    its weak reference, kept by the holder, or of the object itself); None when collected, or
    held as its items (a tuple rebuilt on each read is no one object)."""
    if type(holder) is _Weak:
        return ("is", id(holder.ref)) if holder.ref() is not None else None
    if type(holder) is _Plain:
        return ("is", id(holder.value))
    return None


#: Set in a thread by :func:`keeping_values`.
_KEEPING = threading.local()


@contextlib.contextmanager
def keeping_values() -> Iterator[None]:
    """Statics described in this thread meanwhile hold their values as they are: for a tool
    that builds objects to compare and drops them with its keys (``jitlens audit``), never
    for a tracked program's keys."""
    before = getattr(_KEEPING, "on", False)
    _KEEPING.on = True
    try:
        yield
    finally:
        _KEEPING.on = before


def hold(value: Any, depth: int = _HOLD_DEPTH) -> Any:
    """A holder that gives ``value`` back later (``GONE`` once collected) without keeping
    any object of the program's alive; None when there is no such way."""
    if getattr(_KEEPING, "on", False):
        return _Plain(value)
    t = type(value)
    if _plain(value, 3) or _library_object(t):
        return _Plain(value)
    try:
        return _Weak(weakref.ref(value))
    except TypeError:
        pass
    if issubclass(t, tuple) and depth > 0 and tuple.__len__(value) <= _PLAIN_ITEMS:
        items = [hold(x, depth - 1) for x in tuple.__iter__(value)]
        if all(h is not None for h in items):
            return _Tuple(t, items)
    return None
