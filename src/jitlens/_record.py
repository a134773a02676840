"""``record``: ``dataclasses.dataclass`` with its ``__repr__``, ``__eq__`` and ``__hash__``
shared by every class instead of generated for each.

jitlens starts inside the user's program (``jitlens run``, ``JITLENS=1``), so its
import is part of their start-up. ``dataclasses`` compiles each generated method
from source text when the class is created: six compiles for a frozen class, about
0.6 ms each class on Python 3.11, 15 ms for the report and records that load when a
program imports jax. ``__init__`` (and a frozen class's ``__setattr__`` /
``__delattr__``) stay ``dataclasses``' own; the three methods that only read the
fields are written once here, with ``dataclasses``' semantics: the repr lists the
``repr=True`` fields by the class's ``__qualname__``, equality compares the
``compare=True`` fields of two instances of the same class (``NotImplemented`` for any
other), and the hash of a frozen class hashes the fields that ``hash`` (or, unset,
``compare``) selects; an unfrozen class with equality is unhashable, as
``dataclasses`` makes it. ``tests/test_record.py`` holds each jitlens record to the
methods ``dataclasses`` would have generated for it.
"""

from __future__ import annotations

import dataclasses
import reprlib
import sys
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

#: dataclasses' ``__eq__`` compares field by field from Python 3.13 (a tuple of the fields
#: before, whose ``==`` takes an object as equal to itself first).
_FIELD_BY_FIELD = sys.version_info >= (3, 13)
#: Class -> (repr field names, compare field names, hash field names).
_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def _names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    names = _NAMES.get(cls)
    if names is None:
        fields = dataclasses.fields(cls)
        names = _NAMES[cls] = (
            tuple(f.name for f in fields if f.repr),
            tuple(f.name for f in fields if f.compare),
            tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)),
        )
    return names


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(type(self))[0])
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = _names(type(self))[1]
    if _FIELD_BY_FIELD:  # Python 3.13: `self.a == other.a and ...`, no `is` first (a NaN field)
        return self is other or all(getattr(self, n) == getattr(other, n) for n in names)
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in _names(type(self))[2]))


def record(cls: T | None = None, /, *, frozen: bool = True, **options: Any) -> Any:
    """``@record`` is ``@dataclasses.dataclass(frozen=True)``; ``@record(frozen=False,
    slots=True, ...)`` takes ``dataclasses.dataclass``' options except ``repr``, ``eq``,
    ``unsafe_hash`` and ``order`` (those classes use ``dataclasses.dataclass`` itself)."""

    def wrap(cls: T) -> T:
        made = dataclasses.dataclass(cls, frozen=frozen, repr=False, eq=False, **options)
        own = cls.__dict__
        if "__repr__" not in own:
            made.__repr__ = _repr
        if "__eq__" not in own:
            made.__eq__ = _eq
        declared = own.get("__hash__", dataclasses.MISSING)  # None: set by a class's own __eq__
        if declared is dataclasses.MISSING or (declared is None and "__eq__" in own):
            made.__hash__ = _hash if frozen else None  # type: ignore[assignment]
        return made

    return wrap if cls is None else wrap(cls)
