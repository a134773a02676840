"""Looking inside the program's objects without running the program's code.

jitlens reads what Python and JAX already computed (types, the instance ``__dict__``,
the class dictionaries); it never runs a method, property, ``__getattr__`` or
``__getattribute__`` the program defined, since plain JAX does not run them either:
a property may load a dataset, a ``__getattribute__`` may count its calls.

Three habits follow, and this module is where they live:

- a type test is ``issubclass(type(x), T)`` (:func:`is_a`), never ``isinstance(x, T)``,
  which reads ``x.__class__`` through the object's own ``__getattribute__`` whenever the
  type does not match;
- an attribute is read from the instance ``__dict__`` (found by the interpreter's own
  descriptor, not by ``x.__dict__``) or from the class dictionaries
  (:func:`static_attr`, like ``inspect.getattr_static``); a descriptor found there runs
  only when it is the interpreter's own (a slot, a function, a namedtuple field), never
  a ``property`` or a descriptor class of the program's;
- a dataclass is told by its class (:func:`dataclass_fields`), never by
  ``dataclasses.is_dataclass(x)`` / ``dataclasses.fields(x)``, which read the instance.

What this cannot read is answered as absent (the ``default``), never guessed.

Example:
    >>> class Lazy:
    ...     def __init__(self): self.n = 1
    ...     @property
    ...     def shape(self): raise AssertionError("never run")
    >>> static_attr(Lazy(), "n"), static_attr(Lazy(), "shape", "?")
    (1, '?')
"""

from __future__ import annotations

import collections
import dataclasses
import types
from collections.abc import Mapping
from typing import Any

#: Returned by :func:`static_attr` when asked for no other default.
MISSING: Any = object()

#: ``type``'s own descriptors: a class's dictionary and its MRO read without a metaclass's code.
_CLASS_DICT = type.__dict__["__dict__"].__get__
_CLASS_MRO = type.__dict__["__mro__"].__get__

_TUPLEGETTER = type(collections.namedtuple("_T", "a").a)  # a namedtuple field
#: Descriptors whose ``__get__`` is the interpreter's own (C) code: run to bind or read.
_OWN_DESCRIPTORS: frozenset[type] = frozenset(
    {
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodDescriptorType,
        types.WrapperDescriptorType,
        types.MemberDescriptorType,
        types.GetSetDescriptorType,
        types.ClassMethodDescriptorType,
        staticmethod,
        classmethod,
        _TUPLEGETTER,
    }
)
#: The descriptor of an instance ``__dict__`` (a getset in a Python class, a member in a C one).
_DICT_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def is_a(value: Any, classes: type | tuple[type, ...]) -> bool:
    """``isinstance(value, classes)`` by ``type(value)`` alone (no ``__class__`` read)."""
    return issubclass(type(value), classes)


def mro(cls: type) -> tuple[type, ...]:
    """``cls.__mro__``, read by ``type``'s own descriptor."""
    return _CLASS_MRO(cls)  # type: ignore[no-any-return]


def class_dict(cls: type) -> Mapping[str, Any]:
    """``cls.__dict__``, read by ``type``'s own descriptor."""
    return _CLASS_DICT(cls)  # type: ignore[no-any-return]


def class_attr(cls: type, name: str, default: Any = None) -> Any:
    """The attribute ``name`` as a class along ``cls``'s MRO stores it (no descriptor runs)."""
    for k in mro(cls):
        d = class_dict(k)
        if name in d:
            return d[name]
    return default


def instance_dict(value: Any) -> dict[str, Any] | None:
    """The instance's own ``__dict__`` (a plain dict), found by the interpreter's descriptor;
    None when it has none, or when a class of the program's defines ``__dict__`` itself."""
    t = type(value)
    for k in mro(t):
        d = class_dict(k).get("__dict__")
        if d is None:
            continue
        if type(d) not in _DICT_DESCRIPTORS:
            return None
        try:
            got = d.__get__(value, t)
        except Exception:
            return None
        return got if type(got) is dict else None
    return None


def static_attr(value: Any, name: str, default: Any = None) -> Any:
    """``value.name`` as Python stores it, read without running the program's code.

    Looked up as ``object.__getattribute__`` (or ``type.__getattribute__`` for a class)
    would: a data descriptor of the type, then the instance ``__dict__`` (a class's own
    MRO), then the type's attribute; except that a descriptor runs only when it is the
    interpreter's own (a slot, a method, a namedtuple field): a ``property``, a
    descriptor class of the program's, ``__getattr__`` or ``__getattribute__`` give
    ``default``.
    """
    t = type(value)
    meta = class_attr(t, name, MISSING)
    if meta is not MISSING and _is_data_descriptor(meta):
        return _bound(meta, value, t, default)
    if issubclass(t, type):
        raw = class_attr(value, name, MISSING)
        if raw is not MISSING:
            return _bound(raw, None, value, default) if _has_get(raw) else raw
    else:
        own = instance_dict(value)
        if own is not None and name in own:
            return own[name]
    if meta is MISSING:
        return default
    return _bound(meta, value, t, default) if _has_get(meta) else meta


def _is_data_descriptor(raw: Any) -> bool:
    rt = type(raw)
    return class_attr(rt, "__set__") is not None or class_attr(rt, "__delete__") is not None


def _has_get(raw: Any) -> bool:
    return class_attr(type(raw), "__get__") is not None


def has_static_attr(value: Any, name: str) -> bool:
    """Does :func:`static_attr` find ``name``?"""
    return static_attr(value, name, MISSING) is not MISSING


def _bound(raw: Any, value: Any, owner: type, default: Any) -> Any:
    if type(raw) not in _OWN_DESCRIPTORS:
        return default  # a property, or a descriptor of the program's: its code would run
    try:
        return raw.__get__(value, owner)
    except Exception:  # an unset slot
        return default


def dataclass_fields(value: Any) -> tuple[dataclasses.Field[Any], ...] | None:
    """The fields of a dataclass *instance* (read from its class), else None."""
    t = type(value)
    if issubclass(t, type) or class_attr(t, "__dataclass_fields__") is None:
        return None
    try:
        return dataclasses.fields(t)
    except TypeError:
        return None


def own_fields(value: Any) -> list[tuple[str, Any]] | None:
    """``(name, value)`` of the instance's ``__dict__`` and ``__slots__``; None when it has
    neither (a C object). Slots are read by their own member descriptors."""
    out: list[tuple[str, Any]] = []
    found = False
    own = instance_dict(value)
    if own is not None:
        found = True
        out += [(str(k), v) for k, v in dict.items(own)]
    t = type(value)
    for cls in mro(t):
        slots = class_dict(cls).get("__slots__", ())
        for name in (slots,) if type(slots) is str else slots:
            if type(name) is not str or name in ("__dict__", "__weakref__"):
                continue
            found = True
            member = class_dict(cls).get(name)
            if type(member) is not types.MemberDescriptorType:
                continue  # (replaced by a property of a subclass's: not read)
            try:
                out.append((name, member.__get__(value, t)))
            except AttributeError:
                continue  # an unset slot
    return out if found else None
