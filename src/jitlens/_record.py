"""``record``: ``dataclasses.dataclass`` with its ``__repr__``, ``__eq__`` and ``__hash__``
shared by every class instead of generated for each.

jitlens starts inside the user's program (``jitlens run``, ``JITLENS=1``), so its
import is part of their start-up. ``dataclasses`` compiles each generated method from
source text when the class is created: six compiles for a frozen class, about 0.6 ms a
class on Python 3.11. A record compiles one, later:

- ``__repr__``, ``__eq__`` and ``__hash__`` only read the fields, and are written once
  here with ``dataclasses``' semantics: the repr lists the ``repr=True`` fields by the
  class's ``__qualname__``, equality compares the ``compare=True`` fields of two
  instances of the same class (``NotImplemented`` for any other), and the hash of a
  frozen class hashes the fields that ``hash`` (or, unset, ``compare``) selects; an
  unfrozen class with equality is unhashable, as ``dataclasses`` makes it.
- A frozen class's ``__setattr__`` and ``__delattr__`` are closures with
  ``dataclasses``' rule (an instance of the class itself takes no attribute, a subclass
  none of the fields), not compiled per class.
- ``__init__`` is the function ``dataclasses`` writes for the fields, compiled at the
  class's first instance (or the first look at its signature): a run without a retrace
  builds 15 of the 26 classes.

``tests/test_record.py`` holds each jitlens record to the class ``dataclasses`` would
have made: repr, equality, hash, frozenness and its error, ``__init__``'s signature,
defaults, factories and ``__post_init__``. Classes with ``slots=True`` are left to
``dataclasses`` (its frozen slots need its pickling methods).
"""

from __future__ import annotations

import dataclasses
import reprlib
import sys
import types
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


def _frozen(cls: type, names: tuple[str, ...]) -> None:
    """A frozen class's ``__setattr__``/``__delattr__``, ``dataclasses``' rule without a compile."""

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for method in (__setattr__, __delattr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)


class _Factory:
    """The default shown for a field with a ``default_factory``, as ``dataclasses`` shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _made_init(cls: type) -> Any:
    """``cls.__init__``, the function ``dataclasses`` writes for these fields, compiled once.

    ``dataclasses`` writes ``def __init__(self, a: <type>, b: <type> = <default>) -> None``
    and a body that sets each field, with ``object.__setattr__`` for a frozen class, a
    ``default_factory`` called when its argument was not given (shown as ``<factory>``),
    then ``self.__post_init__()`` when the class has one. A record's fields are positional
    and all in ``__init__`` (``record`` refuses others), so this is all of it."""
    frozen = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    fields = dataclasses.fields(cls)
    me = "__dataclass_self__" if any(f.name == "self" for f in fields) else "self"
    names: dict[str, Any] = {"__name__": cls.__module__, "__record_set__": object.__setattr__}
    params, body = [me], []
    for i, f in enumerate(fields):
        names[f"__record_type{i}__"] = f.type
        value, default = f.name, ""
        if f.default is not dataclasses.MISSING:
            names[f"__record_default{i}__"] = f.default
            default = f"=__record_default{i}__"
        elif f.default_factory is not dataclasses.MISSING:
            names[f"__record_factory{i}__"], names["__record_FACTORY__"] = (
                f.default_factory,
                _FACTORY,
            )
            default = "=__record_FACTORY__"
            value = f"__record_factory{i}__() if {f.name} is __record_FACTORY__ else {f.name}"
        params.append(f"{f.name}:__record_type{i}__{default}")
        body.append(
            f"__record_set__({me},{f.name!r},{value})" if frozen else f"{me}.{f.name}={value}"
        )
    if hasattr(cls, "__post_init__"):
        body.append(f"{me}.__post_init__()")
    source = f"def __init__({','.join(params)})->None:\n " + "\n ".join(body or ["pass"])
    exec(compile(source, "<string>", "exec", dont_inherit=True), names)  # no __future__ of ours
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    type.__setattr__(cls, "__init__", init)
    return init


class _LazyInit:
    """A class's ``__init__`` until its first instance: makes ``dataclasses``' and steps aside."""

    __slots__ = ("cls",)

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, obj: Any, /, *args: Any, **kwargs: Any) -> None:
        init = self.cls.__dict__["__init__"]
        if init is self:
            init = _made_init(self.cls)
        init(obj, *args, **kwargs)

    @property
    def __signature__(self) -> Any:
        import inspect

        init = self.cls.__dict__["__init__"]
        return inspect.signature(_made_init(self.cls) if init is self else init)


def record(cls: T | None = None, /, *, frozen: bool = True, **options: Any) -> Any:
    """``@record`` is ``@dataclasses.dataclass(frozen=True)``; ``@record(frozen=False,
    slots=True, ...)`` takes ``dataclasses.dataclass``' options except ``repr``, ``eq``,
    ``unsafe_hash`` and ``order`` (those classes use ``dataclasses.dataclass`` itself)."""

    def wrap(cls: T) -> T:
        if not options and "__init__" not in cls.__dict__:
            # no compile now: __init__ at the first instance, frozen by shared methods
            documented = bool(cls.__doc__)
            made = dataclasses.dataclass(cls, init=False, repr=False, eq=False)
            fields = dataclasses.fields(made)
            if len(fields) != len(made.__dataclass_fields__) or not all(  # type: ignore[attr-defined]
                f.init and not f.kw_only for f in fields
            ):
                raise TypeError(
                    f"record {cls.__qualname__}: a ClassVar, InitVar, init=False or keyword-only"
                    " field; make this class with dataclasses.dataclass"
                )
            params = made.__dataclass_params__  # type: ignore[attr-defined]
            params.init, params.frozen = True, frozen
            if frozen:
                _frozen(made, tuple(f.name for f in fields))
            made.__init__ = _LazyInit(made)  # type: ignore[assignment,misc]
            if not documented:  # dataclasses' doc is the signature: __init__ made now
                import inspect

                made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
        else:
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
