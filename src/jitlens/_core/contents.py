"""What a static holds, read in full up to a bound: the state compared for a change in place.

A static's text (``key.short_repr``) is made to be shown: a few attributes, each cut
short, the whole cut at a line. Compared before and after, it misses a change in the
seventh attribute or past the cut, and claims the object unchanged. :func:`contents`
reads the whole state instead (every attribute, item and field, nested), without
running the user's code (``__dict__`` and ``__slots__`` read with ``object``'s own
methods, builtin containers with the builtins'), and bounds the work by the number of
values read: past :data:`MAX_VALUES` (or :data:`MAX_DEPTH` levels) it returns
:data:`TOO_BIG`, which says "not checked", never "unchanged". The walk runs when a key
is described (once per trace) and on the scheduled stale checks (calls #2, #3, #5, #9,
...), so a hit's cost does not grow with the object.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import types
from typing import Any

#: Values read per object at most (items, attributes, characters / 64 of a string,
#: elements / 64 of a NumPy array) before the object counts as too big to check.
MAX_VALUES = 2_000
#: Levels read at most.
MAX_DEPTH = 24
#: The contents of an object past the bounds: unknown, compared equal to nothing.
TOO_BIG = "<too big to check>"
#: Longer contents are kept as a digest (compared, not shown): a key keeps one per static.
MAX_KEPT = 2_000
DIGEST = "<digest of "

#: Values that cannot change in place: no state to keep.
IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), type, frozenset)
#: Where the array types read by shape and dtype live (NumPy's, JAX's).
_ARRAY_MODULES = frozenset({"numpy", "jax", "jaxlib"})
_SCALARS = (bool, int, float, complex, type(None))
_LEAVES = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, enum.Enum)


class _TooBig(Exception):
    pass


def contents(value: Any) -> str | None:
    """The full state of ``value`` as text, :data:`TOO_BIG`, or None for a value that
    cannot change in place (nothing to keep).

    Example:
        >>> class Box:
        ...     def __init__(self): self.a, self.b = 1, [2, 3]
        >>> contents(Box())
        'Box(a=1, b=[2, 3])'
    """
    if isinstance(value, IMMUTABLE):
        return None
    for attempt in range(2):
        try:
            text = _Reader().read(value, 0)
            break
        except (_TooBig, RecursionError):
            return TOO_BIG
        except Exception:  # another thread changed a dict or set while it was read: again
            if attempt:
                return TOO_BIG
    if len(text) <= MAX_KEPT:
        return text
    digest = hashlib.blake2b(text.encode(errors="replace"), digest_size=12).hexdigest()
    return f"{DIGEST}{len(text)} characters #{digest}>"


def known(state: str | None) -> bool:
    """A state read in full (not None, not too big to read)."""
    return state is not None and state != TOO_BIG


def readable(state: str) -> bool:
    """Is ``state`` the text itself (not a digest of a long one, nor too big)?"""
    return state != TOO_BIG and not state.startswith(DIGEST)


def _leaf(value: Any) -> str:
    """A value with no state to read (a function, a class, a C object) by its name and
    identity: replaced by another, it reads differently (no ``__repr__`` of the user's runs)."""
    t = type(value)
    if issubclass(t, enum.Enum):
        return f"{t.__qualname__}.{value.name}"
    if issubclass(t, types.ModuleType):
        return f"<module {value.__name__}>"
    name = getattr(value, "__qualname__", None) if issubclass(t, _LEAVES) else None
    shown = f" {name}" if isinstance(name, str) else ""
    return f"<{t.__qualname__}{shown} at {hex(id(value))}>"


class _Reader:
    def __init__(self) -> None:
        self.left = MAX_VALUES
        self.path: set[int] = set()  # objects being read: a cycle is written, not followed

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise _TooBig

    def read(self, value: Any, depth: int) -> str:
        self.spend()
        t = type(value)  # never isinstance on the value: it may read a user's __class__
        if t in _SCALARS:
            return repr(value)
        if t is str or t is bytes:
            self.spend(len(value) // 64)
            return repr(value)
        if issubclass(t, _LEAVES):
            return _leaf(value)
        if depth >= MAX_DEPTH:
            raise _TooBig
        if id(value) in self.path:
            return "<cycle>"
        self.path.add(id(value))
        try:
            return self._compound(value, t, depth + 1)
        finally:
            self.path.discard(id(value))

    def _compound(self, value: Any, t: type, depth: int) -> str:
        array = _array_text(value, t, self)
        if array is not None:
            return array
        if issubclass(t, functools.partial):  # its function and arguments are C fields
            inner = self.read((value.func, value.args, value.keywords), depth)
            return f"{t.__qualname__}{inner}"
        parts = []
        if issubclass(t, (tuple, list)):
            base = tuple if issubclass(t, tuple) else list
            inner = ", ".join(self.read(v, depth) for v in base.__iter__(value))
            comma = "," if base is tuple and len(value) == 1 else ""
            parts.append(f"({inner}{comma})" if base is tuple else f"[{inner}]")
        elif issubclass(t, (set, frozenset)):
            base = set if issubclass(t, set) else frozenset
            inner = ", ".join(sorted(self.read(v, depth) for v in base.__iter__(value)))
            parts.append("{" + inner + "}")
        elif issubclass(t, dict):
            items = dict.items(value)
            parts.append(
                "{"
                + ", ".join(f"{self.read(k, depth)}: {self.read(v, depth)}" for k, v in items)
                + "}"
            )
        elif issubclass(t, (str, bytes, int, float, complex)):
            base = next(b for b in (str, bytes, int, float, complex) if issubclass(t, b))
            parts.append(base.__repr__(value))
        fields = _own_fields(value, t)
        if fields is None and not parts:
            return _leaf(value)  # no state of its own to read (a C object, a builtin)
        if fields:
            parts.append("(" + ", ".join(f"{k}={self.read(v, depth)}" for k, v in fields) + ")")
        text = "".join(parts)
        return text if t.__module__ == "builtins" else f"{t.__qualname__}{text}"


def _array_text(value: Any, t: type, reader: _Reader) -> str | None:
    """A NumPy array by its shape, dtype and a digest of its bytes (read in full, within the
    bound); another array type (immutable, a JAX array) by its shape, dtype and identity."""
    if t.__module__.partition(".")[0] not in _ARRAY_MODULES:
        return None  # (a user's class: its ``shape`` may be a property, their code)
    if getattr(t, "shape", None) is None or getattr(t, "dtype", None) is None:
        return None
    try:
        shape, dtype = value.shape, value.dtype
        if t.__module__ == "numpy" and t.__name__ == "ndarray":
            reader.spend(int(value.size) // 64)
            digest = hashlib.blake2b(value.tobytes(), digest_size=8).hexdigest()
            return f"ndarray({tuple(shape)}, {dtype}, #{digest})"
        return f"{t.__qualname__}({tuple(shape)}, {dtype}) at {hex(id(value))}"
    except _TooBig:
        raise
    except Exception:
        return None


def _own_fields(value: Any, t: type) -> list[tuple[str, Any]] | None:
    """``(name, value)`` of the instance's ``__dict__`` and ``__slots__``, read with
    ``object.__getattribute__`` (no user ``__getattr__`` or property runs); None when it
    has neither."""
    out: list[tuple[str, Any]] = []
    found = False
    try:
        own = object.__getattribute__(value, "__dict__")
    except Exception:
        own = None
    if isinstance(own, dict):
        found = True
        out += [(str(k), v) for k, v in dict.items(own)]
    for cls in t.__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            found = True
            try:
                out.append((name, object.__getattribute__(value, name)))
            except Exception:
                continue  # an unset slot
    return out if found else None
