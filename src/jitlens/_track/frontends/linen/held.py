"""nn.jit's module fields as compiled: what a stale check compares a cache hit's fields with.

flax keys an nn.jit compile on ``hash`` of the module's fields (``_HashableProxy``):
dicts, sequences and dataclasses are walked, anything else is hashed as it is. An
object without a ``__hash__`` of its own hashes by identity, so changing its
attributes in place keeps the hash: the call hits and runs the old compile, with
the old values baked in. The key jitlens files holds only that hash (and a weak
reference to a module cloned for the call), so the fields are kept here, per
compile, as :class:`~jitlens._core.key.StaticVal` s: ``stale.check_statics`` compares
them with the fields a later hit passes, the way it compares the statics the key
holds for the other jits.
"""

from __future__ import annotations

import weakref
from typing import Any

from ...._compat import linen_api
from ...records import Record

#: record -> {(module hash, mutable collections): {field: StaticVal at that compile}}.
_COMPILED: weakref.WeakKeyDictionary[Record, dict[Any, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
#: Compiles remembered per nn.jit row (the latest kept): flax's own cache holds as many.
MAX_COMPILES = 32


def _entry(fingerprint: Any) -> tuple[Any, Any] | None:
    """``((hash, mutable), module)`` of a lifted call's static fingerprint."""
    parts = linen_api.fingerprint_parts(fingerprint)
    if parts is None or parts[1] is None:
        return None
    mutable, h = parts
    try:
        hash(mutable)
    except Exception:
        return None
    return (h, mutable), linen_api.module_of(fingerprint)


def compiled(rec: Record, args: tuple[Any, ...]) -> None:
    """A trace of ``rec`` with ``args`` (``fingerprint, variables, rngs, *own``): keep its
    module's fields as they are now, under the compile's hash."""
    from ...._core.key import StaticVal

    try:
        found = _entry(args[0]) if args else None
    except Exception:
        return  # not a fingerprint flax made: nothing to keep
    if found is None or found[1] is None:
        return
    index, module = found
    values = linen_api.module_field_values(module).items()
    fields = {name: StaticVal(v) for name, v in values if linen_api.hashed_as_is(v)}
    held = _COMPILED.setdefault(rec, {})
    held.pop(index, None)
    held[index] = fields
    while len(held) > MAX_COMPILES:
        del held[next(iter(held))]


def held_statics(rec: Record, args: tuple[Any, ...], frame: Any) -> list[tuple[str, str, Any, Any]]:
    """The fields this hit passed beside the ones its compile saw: ``(path, root, StaticVal,
    value now)``, the path spelled with the name the caller holds the module by."""
    held = _COMPILED.get(rec)
    found = _entry(args[0]) if held and args else None
    if found is None or found[1] is None:
        return []
    index, module = found
    fields = held.get(index)
    if not fields:
        return []
    now = linen_api.module_field_values(module)
    root = ""
    out = []
    for name, sv in fields.items():
        if name not in now:
            continue
        if not root:
            root = _held_as(module, name, now[name], frame) or "module"
        out.append((f"{root}.{name}", root, sv, now[name]))
    return out


def _held_as(module: Any, field: str, value: Any, frame: Any) -> str:
    """The caller's name for the module (``m`` of ``m.apply(...)``): the call runs a clone
    of it, so the one of its class whose field is the very object."""
    from ...._compat.frames import name_in_frame_matching

    cls = type(module)
    return name_in_frame_matching(
        lambda v: type(v) is cls and linen_api.module_field_values(v).get(field, _NONE) is value,
        frame,
    )


_NONE = object()
