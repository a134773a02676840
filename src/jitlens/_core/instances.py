"""What an instance that compares by identity holds, read for its fix (no words here).

A static instance of a class without ``__eq__`` misses on every new object; which fix is
right depends on what the instances hold (``reasons/identity_static.py`` words it): the
attributes that changed between the compiled instance and the new one
(:func:`changed_attributes`), its arrays (:func:`array_fields`), and the code that makes
its class a pytree (:func:`pytree_registration`).
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from typing import Any

from .._peek import instance_dict, is_a


def changed_attributes(old: Any, new: Any) -> list[str] | None:
    """The instance attributes whose values differ from ``old`` to ``new`` (``[]``: the same
    values, a rebuild), or ``None``: not two instances of one class with plain attributes of
    the same names (``__slots__``, a builtin), or a value that will not compare."""
    if old is None or new is None or type(old) is not type(new):
        return None
    a, b = instance_dict(old), instance_dict(new)
    if a is None or b is None:
        return None
    if set(a) != set(b) or not all(type(k) is str and k.isidentifier() for k in a):
        return None
    return [k for k in a if not _same(a[k], b[k])]


def _same(x: Any, y: Any) -> bool:
    """Equal, told without the program's ``__eq__``: by the builtins' rules, else by all the
    two hold (an array of many values, a value too big to read: changed)."""
    from .contents import contents, known, same_values

    try:
        verdict = same_values(x, y)
    except Exception:  # an array of many values: not one truth
        return False
    if verdict is not None:
        return verdict
    a, b = contents(x), contents(y)
    return known(a) and a == b


def array_fields(value: Any) -> tuple[list[str], list[str]] | None:
    """The instance attributes of ``value`` that hold arrays (jax or NumPy: data of a pytree)
    and the others (its meta), or ``None``: no array among them, or not plain attributes."""
    import numpy as np

    jax = sys.modules.get("jax")
    kinds: tuple[type, ...] = (np.ndarray,) + ((jax.Array,) if jax is not None else ())
    attrs = instance_dict(value)
    if attrs is None:
        return None  # __slots__ or a builtin: no attributes to name
    if not attrs or not all(type(k) is str and k.isidentifier() for k in attrs):
        return None
    data = [k for k, v in attrs.items() if is_a(v, kinds)]
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


def pytree_registration(value: Any, tn: str, data: list[str], meta: list[str]) -> tuple[str, str]:
    """The shortest registration that makes ``value``'s class a pytree with ``data`` traced and
    ``meta`` static, as ``(form, code)``: a dataclass built from exactly those fields is
    registered with ``register_dataclass`` (``"decorator"`` alone when every field is data,
    else ``"call"`` after the class); any other class gets ``register_pytree_node_class`` and
    ``"methods"``, ``tree_flatten`` / ``tree_unflatten``, which rebuild the instance through
    its constructor when it takes exactly those names, else without calling it."""
    cls = type(value)
    if dataclasses.is_dataclass(cls) and _keyword_init(cls, data + meta):
        if not meta:
            return "decorator", "@jax.tree_util.register_dataclass"
        return (
            "call",
            f"jax.tree_util.register_dataclass({tn}, data_fields={data!r}, meta_fields={meta!r})",
        )
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
    return "methods", "\n".join(
        (f"def tree_flatten(self): return {kids}, {aux}", "@classmethod", *rebuilt)
    )


def _tuple_code(items: list[str]) -> str:
    """Python for the tuple of ``items``: ``()``, ``(a,)``, ``(a, b)``."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
