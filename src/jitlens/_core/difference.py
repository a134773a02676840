"""Where two values first differ, told without the program's code: the part a reason names.

Two statics found unequal (a config, a partial, a tuple of options) differ somewhere
inside: :func:`first_difference` walks both at once and names the first field or item
that differs (``cfg.lr``). Items are compared as the builtins would compare them
(``contents.same_values``), else by all they hold; fields are read as stored
(``_peek``): no ``__eq__``, property or ``__getattr__`` of the program's runs.
"""

from __future__ import annotations

import functools
from typing import Any

from .._peek import class_attr, dataclass_fields, instance_dict, is_a, static_attr
from .key import Path, compares_by_identity


def _equal(a: Any, b: Any) -> bool:
    """Equal, told without the program's ``__eq__``: by the builtins' rules
    (``contents.same_values``), else by all the two hold, read in full."""
    from .contents import contents, known, same_values

    if a is b:
        return True
    try:
        verdict = same_values(a, b)
    except Exception:
        return False
    if verdict is not None:
        return verdict
    state = contents(a)
    return known(state) and state == contents(b)


def first_difference(
    a: Any, b: Any, depth: int = 0, *, unequal: bool = False
) -> tuple[Path, Any, Any] | None:
    """The path (below the value) and the two parts where ``a`` and ``b`` first differ.

    Descends into containers compared item by item (tuples, lists, dicts,
    dataclasses, partials, GraphDef-like records); stops at anything else.
    ``None`` when they are equal. Nothing of the program's runs: items are compared by
    :func:`_equal`, fields read as stored (``_peek``); ``unequal``: the caller knows they
    differ.
    """
    if not unequal and _equal(a, b):
        return None
    here: tuple[Path, Any, Any] = ((), a, b)
    t = type(a)
    if depth > 24 or t is not type(b):
        return here
    fields = dataclass_fields(a)
    if issubclass(t, functools.partial):
        pairs: list[tuple[Any, Any, Any]] = [(("attr", "func"), a.func, b.func)]
        ka, kb = dict(a.keywords), dict(b.keywords)
        if len(a.args) != len(b.args) or set(ka) != set(kb):
            return here if _equal(a.func, b.func) else ((("attr", "func"),), a.func, b.func)
        pairs += [(("item", i), x, y) for i, (x, y) in enumerate(zip(a.args, b.args, strict=False))]
        pairs += [(("attr", k), ka[k], kb[k]) for k in ka]
    elif issubclass(t, tuple) and is_a(class_attr(t, "_fields"), tuple):  # a NamedTuple
        named = class_attr(t, "_fields")
        pairs = [
            (("attr", f), x, y)
            for f, x, y in zip(named, tuple.__iter__(a), tuple.__iter__(b), strict=False)
        ]
    elif issubclass(t, (tuple, list)):
        base = tuple if issubclass(t, tuple) else list
        if base.__len__(a) != base.__len__(b):
            return here
        pairs = [
            (("item", i), x, y)
            for i, (x, y) in enumerate(zip(base.__iter__(a), base.__iter__(b), strict=False))
        ]
    elif issubclass(t, dict):
        ka, kb = list(dict.keys(a)), list(dict.keys(b))
        if not all(type(k) in (str, int, float, bool, bytes, type(None)) for k in ka + kb):
            return here  # (keys of the program's: their __hash__ and __eq__ would run)
        if ka != kb and set(ka) != set(kb):
            return here
        pairs = [(("item", k), dict.__getitem__(a, k), dict.__getitem__(b, k)) for k in ka]
    elif fields is not None:
        params = class_attr(t, "__dataclass_params__")
        if params is None or not params.eq:
            return here  # eq=False: compared by identity, fields don't matter
        pairs = [
            (("attr", f.name), static_attr(a, f.name), static_attr(b, f.name))
            for f in fields
            if f.compare
        ]
    elif _record_like(a):  # GraphDef, NodeDef, Static...: compare their fields
        pairs = [(("attr", f), getattr(a, f), getattr(b, f)) for f in _record_fields(a)]
    elif not compares_by_identity(a) and _plain_attrs(a) and _plain_attrs(b):
        # a class with its own __eq__ over its attributes: name the attribute
        va, vb = _plain_attrs(a), _plain_attrs(b)
        if set(va) != set(vb):
            return here
        pairs = [(("attr", k), va[k], vb[k]) for k in va]
    else:
        return here
    for part, x, y in pairs:
        if not _equal(x, y):
            deeper = first_difference(x, y, depth + 1)
            if deeper is None:
                continue
            return ((part, *deeper[0]), deeper[1], deeper[2])
    return here


def _plain_attrs(a: Any) -> dict[str, Any]:
    d = instance_dict(a)
    if d is None or len(d) > 32:
        return {}
    return {k: v for k, v in d.items() if type(k) is str and not k.startswith("_")}


def _record_fields(a: Any) -> tuple[str, ...]:
    fields = class_attr(type(a), "__match_args__")
    return tuple(fields) if type(fields) is tuple else ()


def _record_like(a: Any) -> bool:
    """A flax record type (``GraphDef``, ``NodeDef``, ``Static``): compared field by field."""
    mod = type(a).__module__
    return type(mod) is str and mod.startswith("flax.") and bool(_record_fields(a))
