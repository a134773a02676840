"""The fixes of an instance that compares by identity (a class without ``__eq__``) as a static.

What is right depends on what the two instances hold, read from their attributes:

* the same values (a rebuild of one configuration): a frozen dataclass compares them equal,
  or the one instance can be reused (``NO_EQ_FIX``);
* arrays: they cannot be hashed as a static; a pytree traces them (``ARRAYS_PYTREE_FIX``);
* other numbers (jax#28418 made to work: ``obj = copy.copy(obj); obj.a = 2`` each step, or
  a new ``MyClass(a)`` each step): reusing one instance changed in place is the stale hit
  jax#28418 reported, so it is never offered; a pytree whose changed numbers are traced
  compiles once, a frozen dataclass once per value if a number sets a shape
  (``NO_EQ_TRACED_FIX``, with the registration code for the class);
* other values, or values jitlens cannot read: a frozen dataclass, one compile per
  configuration, and never "reuse" (``NO_EQ_VALUES_FIX``).
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from typing import Any

from ..key import is_number
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import Template, Words

NO_EQ_FIX = Template(
    K.NO_EQ,
    "Make `{type}` a frozen dataclass (`@dataclasses.dataclass(frozen=True)`) so equal "
    "configurations compare equal, or reuse one instance.",
)


#: An instance without ``__eq__`` that holds arrays: a frozen dataclass of it cannot be hashed
#: (jit raises TypeError on a static holding a jax Array); a pytree whose arrays are data and
#: the rest meta is traced instead, and one compile serves every rebuilt instance.
ARRAYS_PYTREE_FIX = Template(
    K.ARRAYS_PYTREE,
    "`{type}` holds arrays ({data}), which cannot be hashed as a static: make it a pytree whose "
    "arrays are traced and the rest static, then {unstatic}. {code}",
)


#: The shortest registration that works for the class, the last part of ``ARRAYS_PYTREE_FIX``:
#: a dataclass whose fields are all arrays takes the decorator alone; one with other fields
#: names them (data and meta) in one call after the class; any other class gets
#: ``register_pytree_node_class`` and its two methods, one short line each (``{methods}``).
ARRAYS_PYTREE_DECORATOR = Template(M.ARRAYS_PYTREE_DECORATOR, "Above the class: `{code}`.")
ARRAYS_PYTREE_CALL = Template(M.ARRAYS_PYTREE_CALL, "After the class: `{code}`.")
ARRAYS_PYTREE_METHODS = Template(
    M.ARRAYS_PYTREE_METHODS,
    "Put `@jax.tree_util.register_pytree_node_class` above `class {type}` and these in it:\n"
    "{methods}",
)


#: Two instances of a class without ``__eq__`` whose numbers differ: either way the user got
#: there (a copy changed each step, a new instance each step), reusing one instance is wrong.
NO_EQ_TRACED_FIX = Template(
    K.NO_EQ_TRACED,
    "`{type}` instances differ in {changed}: reusing one instance would run the old "
    "compile (stale results). If {changed} sets a shape, a loop count or a branch, make "
    "`{type}` a frozen dataclass (one compile per value); else trace it, then {unstatic}: one "
    "compile serves every value. {code}",
)


NO_EQ_VALUES_FIX = Template(
    K.NO_EQ_VALUES,
    "Make `{type}` a frozen dataclass (`@dataclasses.dataclass(frozen=True)`, changed with "
    "`dataclasses.replace`) so equal configurations compare equal: one compile per distinct "
    "{changed}. Do not reuse one instance changed in place: it would run the old compile.",
)


def instance_fix(value: Any, old: Any, tn: str, in_graph: bool, unstatic: Words) -> tuple[K, Words]:
    """The fix for ``value``, an instance of ``tn`` compared by identity, that missed where
    ``old`` was compiled (see the module's docstring for the cases)."""
    fields = None if in_graph else array_fields(value)
    if fields is not None:
        data, meta = fields
        code = pytree_code(value, tn, data, meta)
        named = ", ".join(f"`{d}`" for d in data)
        return K.ARRAYS_PYTREE, ARRAYS_PYTREE_FIX.as_written(
            type=tn, data=named, code=code, unstatic=unstatic
        )
    changed = changed_attributes(old, value)
    if changed == []:
        return K.NO_EQ, NO_EQ_FIX.words(type=tn)
    numbers = changed is not None and all(
        is_number(getattr(old, a)) and is_number(getattr(value, a)) for a in changed
    )
    named = ", ".join(f"`{a}`" for a in changed or ())
    if numbers and not in_graph and changed is not None:
        meta = [a for a in vars(value) if a not in changed]
        return K.NO_EQ_TRACED, NO_EQ_TRACED_FIX.as_written(
            type=tn,
            changed=named,
            unstatic=unstatic,
            code=pytree_code(value, tn, changed, meta),
        )
    return K.NO_EQ_VALUES, NO_EQ_VALUES_FIX.words(type=tn, changed=named or "configuration")


def changed_attributes(old: Any, new: Any) -> list[str] | None:
    """The instance attributes whose values differ from ``old`` to ``new`` (``[]``: the same
    values, a rebuild), or ``None``: not two instances of one class with plain attributes of
    the same names (``__slots__``, a builtin), or a value that will not compare."""
    if old is None or new is None or type(old) is not type(new):
        return None
    try:
        a, b = dict(vars(old)), dict(vars(new))
    except TypeError:
        return None
    if set(a) != set(b) or not all(isinstance(k, str) and k.isidentifier() for k in a):
        return None
    changed = []
    for k in a:
        x, y = a[k], b[k]
        try:
            same = x is y or bool(x == y)
        except Exception:  # an array of many values: not one truth
            same = False
        if not same:
            changed.append(k)
    return changed


def array_fields(value: Any) -> tuple[list[str], list[str]] | None:
    """The instance attributes of ``value`` that hold arrays (jax or NumPy: data of a pytree)
    and the others (its meta), or ``None``: no array among them, or not plain attributes."""
    import numpy as np

    jax = sys.modules.get("jax")
    kinds: tuple[type, ...] = (np.ndarray,) + ((jax.Array,) if jax is not None else ())
    try:
        attrs = dict(vars(value))
    except TypeError:
        return None  # __slots__ or a builtin: no attributes to name
    if not attrs or not all(isinstance(k, str) and k.isidentifier() for k in attrs):
        return None
    data = [k for k, v in attrs.items() if isinstance(v, kinds)]
    if not data:
        return None
    return data, [k for k in attrs if k not in data]


def _keyword_init(cls: type, names: list[str]) -> bool:
    """Does ``cls(**{name: ...})`` rebuild an instance from exactly its attributes ``names``?"""
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls) if f.init} == set(names)
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = {n for n, p in params.items() if p.kind in kinds}
    required = {n for n, p in params.items() if p.default is p.empty and p.kind in kinds}
    return set(names) <= named and required <= set(names)


def pytree_code(value: Any, tn: str, data: list[str], meta: list[str]) -> Words:
    """The shortest registration that makes ``value``'s class a pytree with ``data`` traced and
    ``meta`` static: a dataclass built from exactly those fields is registered with
    ``register_dataclass`` (its decorator alone when every field is data); any other class
    gets ``register_pytree_node_class`` with ``tree_flatten`` / ``tree_unflatten``, which
    rebuild the instance through its constructor when it takes exactly those names, else
    without calling it."""
    cls = type(value)
    if dataclasses.is_dataclass(cls) and _keyword_init(cls, data + meta):
        if not meta:
            return ARRAYS_PYTREE_DECORATOR.words(code="@jax.tree_util.register_dataclass")
        code = f"jax.tree_util.register_dataclass({tn}, data_fields={data!r}, meta_fields={meta!r})"
        return ARRAYS_PYTREE_CALL.words(code=code)
    kids, aux = (_tuple_code([f"self.{n}" for n in names]) for names in (data, meta))
    if _keyword_init(cls, data + meta):
        given = [f"{n}=meta[{i}]" for i, n in enumerate(meta)]
        given += [f"{n}=data[{i}]" for i, n in enumerate(data)]
        rebuilt = [f"def tree_unflatten(cls, meta, data): return cls({', '.join(given)})"]
    else:  # not through its constructor: its attributes set back as they were
        sets = [f"{_tuple_code([f'o.{n}' for n in names])[1:-1]} = {side}" for names, side in
                ((meta, "meta"), (data, "data")) if names]  # fmt: skip
        rebuilt = [
            "def tree_unflatten(cls, meta, data):",
            f"    o = cls.__new__(cls); {'; '.join(sets)}; return o",
        ]
    methods = "\n".join((f"def tree_flatten(self): return {kids}, {aux}", "@classmethod", *rebuilt))
    return ARRAYS_PYTREE_METHODS.as_written(type=tn, methods=methods)


def _tuple_code(items: list[str]) -> str:
    """Python for the tuple of ``items``: ``()``, ``(a,)``, ``(a, b)``."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
