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
import sys
import types
from typing import Any

from .._peek import class_attr, dataclass_fields, is_a, own_fields, static_attr

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
    if is_a(value, IMMUTABLE):
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
        return f"{t.__qualname__}.{static_attr(value, '_name_')}"
    if issubclass(t, types.ModuleType):
        return f"<module {static_attr(value, '__name__')}>"
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
        fields = own_fields(value)
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


#: Builtin numbers, equal across their types (``1 == 1.0 == True``).
_NUMBERS = frozenset({bool, int, float, complex})


def same_values(a: Any, b: Any) -> bool | None:
    """Would ``a == b`` hold, told without running the program's code? None: cannot tell.

    Builtin values and containers compare as the builtins do (an item ``is`` itself
    first, so one NaN object equals itself); a dataclass whose ``__eq__`` the dataclass
    decorator generated compares its fields; a class without ``__eq__`` compares by
    identity. A class with an ``__eq__`` of its own cannot be told (its code decides).

    Example:
        >>> same_values((1, "a", [2.0]), (1, "a", [2.0])), same_values(float("nan"), float("nan"))
        (True, False)
    """
    return _same(a, b, MAX_DEPTH, [MAX_VALUES])


def _same(a: Any, b: Any, depth: int, left: list[int]) -> bool | None:
    left[0] -= 1
    if a is b:
        return True
    if left[0] < 0 or depth <= 0:
        return None
    t = type(a)
    if t is not type(b):
        return bool(a == b) if _number(t) and _number(type(b)) else False
    if t in _SCALARS or t is str or t is bytes:
        return bool(a == b)
    if (
        t is tuple
        or t is list
        or (issubclass(t, tuple) and class_attr(t, "__eq__") is tuple.__eq__)
    ):
        base = tuple if issubclass(t, tuple) else list
        if base.__len__(a) != base.__len__(b):
            return False
        return _all(
            _same(x, y, depth - 1, left)
            for x, y in zip(base.__iter__(a), base.__iter__(b), strict=True)
        )
    if t is set or t is frozenset:
        plain = all(type(x) in _SCALARS or type(x) in (str, bytes) for x in (*a, *b))
        return bool(t.__eq__(a, b)) if plain else None
    if t is dict:
        keys_a, keys_b = dict.keys(a), dict.keys(b)
        if not all(type(k) in _SCALARS or type(k) in (str, bytes) for k in (*keys_a, *keys_b)):
            return None  # (keys of the program's: their __hash__ and __eq__ would run)
        if keys_a != keys_b:
            return False
        return _all(_same(v, dict.__getitem__(b, k), depth - 1, left) for k, v in dict.items(a))
    if issubclass(t, functools.partial):
        return _same((a.func, a.args, a.keywords), (b.func, b.args, b.keywords), depth - 1, left)
    if issubclass(t, _LEAVES):
        return False  # functions, classes, modules, enum members: equal only to themselves
    eq = class_attr(t, "__eq__")
    if eq is object.__eq__:
        return False
    from .shown import library_type

    if library_type(t):  # a library's object (a treedef, a GraphDef record): its own __eq__
        try:
            return bool(a == b)
        except Exception:
            return None
    fields = dataclass_fields(a) if _generated_eq(t, eq) else None
    if fields is not None:
        names = [f.name for f in fields if f.compare]
        return _same(
            tuple(static_attr(a, n, _ABSENT) for n in names),
            tuple(static_attr(b, n, _ABSENT) for n in names),
            depth - 1,
            left,
        )
    return None


_ABSENT = object()


def _number(t: type) -> bool:
    """A builtin number or a NumPy scalar (``np.int64(3) == 3``, by NumPy's own code)."""
    if t in _NUMBERS:
        return True
    np = sys.modules.get("numpy")
    return np is not None and issubclass(t, np.generic) and t.__module__.startswith("numpy")


def _all(results: Any) -> bool | None:
    unknown = False
    for r in results:
        if r is False:
            return False
        unknown = unknown or r is None
    return None if unknown else True


def _generated_eq(t: type, eq: Any) -> bool:
    """Is ``t.__eq__`` the one ``@dataclasses.dataclass`` wrote (fields compared as a tuple)?"""
    params = class_attr(t, "__dataclass_params__")
    code = getattr(eq, "__code__", None)
    return (
        params is not None
        and bool(getattr(params, "eq", False))
        and type(eq) is types.FunctionType
        and code is not None
        and code.co_filename.startswith("<")
    )
