"""A value's text, made without the program's code: how a static is shown in a key and a reason.

``repr(value)`` runs code the program may have written: its own ``__repr__``, or a
library's ``__repr__`` that calls the ``__repr__`` of the objects it holds (a tuple's,
a partial's, a dataclass's). Plain JAX calls none of them, so jitlens does not either:
:func:`short_repr` writes the text itself from what the value holds (builtin values,
containers, functions and classes by name, an object's fields read from its
``__dict__``), and calls a ``__repr__`` only where it is a library's and everything it
could print is inert (numbers, strings, arrays, functions, classes). ``Cfg(k=1)``
is what a user's ``Cfg`` shows, whatever its ``__repr__`` says.
"""

from __future__ import annotations

import enum
import functools
import types
from collections.abc import Callable
from typing import Any

from .._compat import libraries
from .._peek import dataclass_fields, is_a, own_fields, static_attr

#: Packages whose ``__repr__`` jitlens may call on a value holding only inert values: it
#: runs no code of the program's. The libraries ``_compat`` declares (Flax, Equinox, ...)
#: are added.
_LIBRARY_REPRS = frozenset(
    {
        "builtins",
        "enum",
        "functools",
        "collections",
        "jax",
        "jaxlib",
        "numpy",
        "optax",
        "ml_dtypes",
        "typing",
        "dataclasses",
    }
)
#: Modules whose scalar types are shown as their users write them (``jnp.float32``).
_NUMPY_ALIASES = {"jax.numpy": "jnp", "numpy": "np"}
#: Builtin values shown by the builtin's own repr (exact types only: a subclass may have its own).
_SCALARS = frozenset({int, float, complex, bool, type(None), str, bytes, type(Ellipsis)})
_NAMED = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)
#: Where the array types shown by their library's repr live.
_ARRAY_MODULES = frozenset({"numpy", "jax", "jaxlib"})
#: Fields of an object shown, and how deep a value's text goes.
_FIELDS_SHOWN = 6
_DEPTH = 4
#: Values an inert check reads at most (past it: not inert, shown by its fields).
_INERT_ITEMS = 64


@functools.cache
def _library_reprs() -> frozenset[str]:
    return _LIBRARY_REPRS | frozenset(libraries.packages())


#: Libraries whose objects (a treedef, a GraphDef's records, a dtype, an optax state) jitlens
#: may hold and compare with their own ``__eq__``: objects of the program's they refer to
#: are rare (a pytree's aux data).
_LIBRARY_OBJECTS = frozenset({"jax", "jaxlib", "numpy", "optax", "ml_dtypes"})


@functools.cache
def _library_objects() -> frozenset[str]:
    return _LIBRARY_OBJECTS | frozenset(libraries.packages())


def library_type(t: type) -> bool:
    """Is ``t`` a class of JAX, NumPy or a model library (not of the program, nor a builtin)?"""
    module = t.__module__
    return type(module) is str and module.partition(".")[0] in _library_objects()


def user_repr(value: Any) -> bool:
    """Is ``type(value).__repr__`` the program's own (code JAX would never call)?"""
    fn = getattr(type(value), "__repr__", None)
    mod = getattr(fn, "__module__", None)
    if mod is None:  # a slot wrapper: object.__repr__ or a builtin's
        return False
    return mod.partition(".")[0] not in _library_reprs()


def short_repr(value: Any, limit: int = 120) -> str:
    """A one-line text of ``value``, at most ``limit`` characters, made without running
    any code of the program's (see the module's docstring); it never raises.

    Example:
        >>> class Cfg:
        ...     def __init__(self): self.k, self.act = 1, "relu"
        ...     def __repr__(self): raise AssertionError("never called")
        >>> short_repr(Cfg())
        "Cfg(k=1, act='relu')"
    """
    try:
        text = _Writer(limit).shown(value, _DEPTH)
    except Exception:
        text = f"<{type(value).__name__} object>"
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def closure_bundle(value: Any) -> bool:
    """A tuple of closures made by one call (an optax transform: ``init`` and ``update``):
    equal only to itself, since its closures are; each build is a new object."""
    return (
        is_a(value, tuple)
        and callable(static_attr(value, "init"))
        and callable(static_attr(value, "update"))
    )


def _qualname(value: Any, default: str = "?") -> str:
    name = static_attr(value, "__qualname__")
    return name if is_a(name, str) else default


class _Writer:
    """Writes a value's text, stopping once it has ``budget`` characters."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def shown(self, value: Any, depth: int) -> str:
        t = type(value)
        if t in _SCALARS:
            return repr(value)
        if issubclass(t, functools.partial):
            return self._partial(value, t, depth)
        if issubclass(t, type):
            module = _NUMPY_ALIASES.get(static_attr(value, "__module__") or "")
            name = _qualname(value)
            return f"{module}.{name}" if module else f"<class '{name}'>"
        if closure_bundle(value):
            # its repr is a row of closure addresses, alike for every build: name the maker
            maker = _qualname(static_attr(value, "init"), "").split(".<locals>")[0] or "optax"
            return f"<{t.__qualname__} made by {maker}()>"
        if t is types.MethodType:
            owner = type(value.__self__).__name__
            return f"<bound method {_qualname(value.__func__)} of {owner}>"
        if issubclass(t, (types.FunctionType, types.BuiltinFunctionType)):
            return f"<function {_qualname(value)}>"
        if issubclass(t, enum.Enum):
            inner = self.shown(static_attr(value, "_value_"), depth - 1)
            return f"<{t.__name__}.{static_attr(value, '_name_')}: {inner}>"
        if issubclass(t, types.ModuleType):
            return f"<module {static_attr(value, '__name__')!r}>"
        if callable(value) and is_a(static_attr(value, "__qualname__"), str):
            # a decorated function object (custom_jvp, a jit wrapper): name it as one
            return f"<function {_qualname(value)}>"
        if t in (tuple, list, set, frozenset, dict):
            return self._container(value, t, depth)
        if issubclass(t, tuple) and is_a(static_attr(t, "_fields"), tuple):
            fields = zip(static_attr(t, "_fields"), tuple.__iter__(value), strict=False)
            return self._fields(t.__name__, list(fields), depth)
        if _array_type(t):
            object_dtype = t.__module__ == "numpy" and str(value.dtype) == "object"
            return (
                f"array(shape={tuple(value.shape)}, dtype=object)" if object_dtype else repr(value)
            )
        if not user_repr(value) and _shows_inert(value):
            text = repr(value)
            if " object at 0x" not in text:
                return text
        return self._object(value, t, depth)

    def _partial(self, value: Any, t: type, depth: int) -> str:
        func = value.func
        name = static_attr(func, "__name__")
        parts = [name if is_a(name, str) else self.shown(func, depth - 1)]
        parts += [self.cut(a, 40, depth - 1) for a in value.args]
        parts += [f"{k}={self.cut(v, 40, depth - 1)}" for k, v in dict.items(value.keywords)]
        return f"{t.__module__}.{t.__qualname__}({', '.join(parts)})"

    def _container(self, value: Any, t: type, depth: int) -> str:
        if t is dict:
            items: Any = dict.items(value)
            show: Callable[[Any], str] = lambda kv: (  # noqa: E731
                f"{self.shown(kv[0], depth - 1)}: {self.shown(kv[1], depth - 1)}"
            )
        else:
            items = t.__iter__(value)
            show = lambda x: self.shown(x, depth - 1)  # noqa: E731
        inner = "..." if depth <= 0 and t.__len__(value) else self._items(items, show)
        if t is tuple:
            return f"({inner},)" if tuple.__len__(value) == 1 else f"({inner})"
        if t is list:
            return f"[{inner}]"
        if t is frozenset:
            return f"frozenset({{{inner}}})" if inner else "frozenset()"
        if t is set and not inner:
            return "set()"
        return "{" + inner + "}"

    def _items(self, items: Any, show: Callable[[Any], str]) -> str:
        out: list[str] = []
        used = 0
        for item in items:
            if used > self.budget:
                out.append("...")
                break
            text = show(item)
            used += len(text) + 2
            out.append(text)
        return ", ".join(out)

    def _object(self, value: Any, t: type, depth: int) -> str:
        """``Type(field=..., ...)``: a dataclass's fields, else the public attributes."""
        dc = dataclass_fields(value)
        if dc is not None:
            fields = [(f.name, static_attr(value, f.name, "?")) for f in dc if f.repr]
        else:
            own = own_fields(value)
            if own is None:
                base = next(
                    (b for b in (int, float, complex, str, bytes) if issubclass(t, b)), None
                )
                if base is not None:  # a builtin value under a class of the program's
                    return f"{t.__qualname__}({base.__repr__(value)})"
                return f"<{t.__qualname__} object>"
            fields = [(k, v) for k, v in own if not k.startswith("_")]
        return self._fields(t.__qualname__, fields, depth)

    def _fields(self, name: str, fields: list[tuple[str, Any]], depth: int) -> str:
        if depth <= 0:
            return f"{name}(...)" if fields else f"{name}()"
        shown = ", ".join(f"{k}={self.cut(v, 30, depth - 1)}" for k, v in fields[:_FIELDS_SHOWN])
        return f"{name}({shown}{', ...' * (len(fields) > _FIELDS_SHOWN)})"

    def cut(self, value: Any, limit: int, depth: int) -> str:
        text = _Writer(limit).shown(value, depth)
        return text if len(text) <= limit else text[: limit - 3] + "..."


def _array_type(t: type) -> bool:
    return (
        t.__module__.partition(".")[0] in _ARRAY_MODULES
        and getattr(t, "shape", None) is not None
        and getattr(t, "dtype", None) is not None
    )


def _shows_inert(value: Any) -> bool:
    """Can a library's ``__repr__`` of ``value`` reach no code of the program's? True for a
    C object (its repr is the library's code) and for an object whose fields are inert."""
    fields = own_fields(value)
    if fields is None:
        return True
    left = [_INERT_ITEMS]
    return len(fields) <= _INERT_ITEMS and all(_inert(v, 3, left) for _, v in fields)


def _inert(value: Any, depth: int, left: list[int]) -> bool:
    """Numbers, strings, arrays, functions, classes, enum members, and containers of them."""
    left[0] -= 1
    if left[0] < 0:
        return False
    t = type(value)
    if t in _SCALARS or issubclass(t, _NAMED):
        return True
    if issubclass(t, enum.Enum):
        return not user_repr(value)
    if _array_type(t):
        return not (t.__module__ == "numpy" and str(value.dtype) == "object")
    if depth <= 0:
        return False
    if t in (tuple, list, set, frozenset):
        return all(_inert(x, depth - 1, left) for x in t.__iter__(value))
    if t is dict:
        return all(
            _inert(k, depth - 1, left) and _inert(v, depth - 1, left) for k, v in dict.items(value)
        )
    return False
