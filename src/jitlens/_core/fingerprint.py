"""A static's fingerprint when its repr is the user's: its state, read without their code.

A key's text (signatures, ``flat_key`` for ``jitlens diff``) needs a stand-in for a
static whose ``__repr__`` is the user's own, which jitlens does not call while
describing a key. That stand-in was once ``hash(value)``: one more call of a user's
``__hash__`` per trace than plain JAX makes (which may be slow, or count its calls).
This one reads the instance's own state instead, with the builtins' own methods:
its ``__dict__`` and ``__slots__`` (a dataclass's fields among them), the builtin
value under a subclass of one, the items of builtin containers. No ``__repr__``,
``__hash__``, ``__eq__``, ``__iter__``, ``__getattr__`` or property of the user's runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from .._peek import own_fields

#: How deep, how many items per container or object, how long the text gets.
_STATE_DEPTH = 3
_STATE_ITEMS = 16
_STATE_MAX = 160
#: Builtin types a user's class may extend, read with the builtin's own repr.
_BUILTIN_REPRS = (int, float, complex, str, bytes)
_CONTAINERS = (tuple, list, dict, set, frozenset)


def state_text(
    value: Any, type_name: str, *, leaf: Callable[[Any], str], own: Callable[[Any], bool]
) -> str:
    """``<type_name>`` and ``value``'s state, e.g. ``<Cfg>(k=1, act='relu')``.

    ``leaf``: the text of a value whose repr is not the user's (the key's own short
    repr); ``own``: whether a value's ``__repr__`` is the user's. Long texts end in a
    digest of the whole, so different states stay apart.

    Example:
        >>> class Cfg:
        ...     def __init__(self): self.k = 1
        ...     def __repr__(self): raise AssertionError("never called")
        >>> state_text(Cfg(), "Cfg", leaf=repr, own=lambda v: isinstance(v, Cfg))
        '<Cfg>(k=1)'
    """
    text = f"<{type_name}>{_Reader(leaf, own).state(value, _STATE_DEPTH, top=True)}"
    if len(text) <= _STATE_MAX:
        return text
    digest = hashlib.blake2b(text.encode(errors="replace"), digest_size=4).hexdigest()
    return f"{text[: _STATE_MAX - 12]}…#{digest}"


class _Reader:
    def __init__(self, leaf: Callable[[Any], str], own: Callable[[Any], bool]) -> None:
        self.leaf = leaf
        self.own = own

    def state(self, value: Any, depth: int, top: bool = False) -> str:
        t = type(value)  # never isinstance: it may read a user's __class__
        own = self.own(value)
        if not own and not issubclass(t, _CONTAINERS):
            return self.leaf(value)
        if depth <= 0:
            return f"<{t.__qualname__}>"
        parts: list[str] = [] if top or not own else [t.__qualname__]
        for base in _BUILTIN_REPRS:
            if issubclass(t, base):
                parts.append(base.__repr__(value)[:40])
                break
        if issubclass(t, (tuple, list)):
            base = tuple if issubclass(t, tuple) else list
            inner = self._items(base.__iter__(value), depth)
            parts.append(f"({inner})" if base is tuple else f"[{inner}]")
        elif issubclass(t, (set, frozenset)):
            parts.append("{" + self._items(self._set_items(value), depth) + "}")
        elif issubclass(t, dict):
            pairs = list(dict.items(value))[:_STATE_ITEMS]
            inner = ", ".join(
                f"{self.state(k, depth - 1)}: {self.state(v, depth - 1)}" for k, v in pairs
            )
            parts.append("{" + inner + "}")
        fields = (own_fields(value) or [])[:_STATE_ITEMS]
        if fields:
            parts.append(
                "(" + ", ".join(f"{k}={self.state(v, depth - 1)}" for k, v in fields) + ")"
            )
        return "".join(parts)

    def _items(self, items: Any, depth: int) -> str:
        out = []
        for i, item in enumerate(items):
            if i >= _STATE_ITEMS:
                out.append("...")
                break
            out.append(self.state(item, depth - 1))
        return ", ".join(out)

    def _set_items(self, value: Any) -> list[Any]:
        """A set's items in an order that does not depend on their hashes (by their text)."""
        base = set if issubclass(type(value), set) else frozenset
        return sorted(base.__iter__(value), key=lambda item: self.state(item, 1))
