"""Cache hits tied to the compiled entry they hit when their light signature cannot tell.

A hit is filed under an entry by its light signature (shapes, static numbers, model objects
by identity: ``calls._light``). Two entries can share one: a parameter of the same model
placed otherwise (a sharding recompile under ``nnx.jit``), a committed array where an
uncommitted one was. The hits after such a recompile were left "not tied to one".

What tells those entries apart is what their keys differ in (the reasons of the compile that
made the newer one): when that is where arrays are placed, or their weak type, a hit reads
those few arrays (:class:`Discriminator`, a few microseconds) and goes to the entry whose key
holds the same there. Any other difference (a static changed in place, a graph's own
structure) is not read per hit: those hits stay unknown (-1), never a guess.
"""

from __future__ import annotations

import inspect
from typing import Any

from .._core.key import Aval, EntryKind, Path
from .._core.kinds import ReasonKind
from .._core.signature import aval_of
from .._record import record
from .records import EventBuilder, Record
from .state import internal_failure

#: Reasons whose difference a hit can read off its arrays.
READABLE = frozenset({ReasonKind.SHARDING, ReasonKind.WEAK_TYPE})
#: Paths read per hit at most: past them, reading would cost what a description does.
MAX_PATHS = 16


@record
class Discriminator:
    """The arrays that tell apart the entries sharing one light signature, and each entry's."""

    #: The function's parameter names, in order (``arg`` paths name them).
    names: tuple[str, ...]
    paths: tuple[Path, ...]
    #: What the arrays at ``paths`` are, for each entry: -> that entry.
    by_values: dict[tuple[Aval | None, ...], int]

    def entry(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        """The entry whose arrays at ``paths`` are this call's (-1: none, or unreadable)."""
        try:
            values = tuple(aval_of(self._at(p, args, kwargs)) for p in self.paths)
        except Exception:
            return -1  # a path that is not there any more: not read, not guessed
        return self.by_values.get(values, -1)

    def _at(self, path: Path, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        (_, name), rest = path[0], path[1:]
        i = self.names.index(name)
        obj = args[i] if i < len(args) else kwargs[name]
        for kind, part in rest:
            if kind == "item":
                obj = obj[part]
            elif part == "value" and callable(getattr(obj, "get_value", None)):
                obj = obj.get_value()  # an nnx Variable's array ("value" is deprecated)
            else:
                obj = getattr(obj, part)
        return obj


def note_shared(rec: Record, light: Any, earlier: int, built: EventBuilder | None) -> None:
    """A compile made an entry whose light signature an earlier entry has (``earlier``; -1:
    entries already shared it): what tells them apart, from what the compile's key differs in
    (``built``: its event)."""
    try:
        rec.ties[light] = _discriminator(rec, light, earlier, built)
    except Exception as exc:
        internal_failure("telling apart two entries", exc)
        rec.ties[light] = None


def _discriminator(
    rec: Record, light: Any, earlier: int, built: EventBuilder | None
) -> Discriminator | None:
    old = rec.ties.get(light)
    if built is None or built.key is None or not built.reasons:
        return None
    if any(r.kind not in READABLE for r in built.reasons):
        return None
    paths = list(old.paths) if old is not None else []
    for r in built.reasons:
        aval = _aval_path(built.key.entries, r.where)
        if aval is None:
            return None
        if aval not in paths:
            paths.append(aval)
    if len(paths) > MAX_PATHS or not paths or paths[0][0][0] != "arg":
        return None
    sharing = {built.entry, earlier, *(old.by_values.values() if old is not None else ())}
    by_values: dict[tuple[Aval | None, ...], int] = {}
    for k in rec.keys:
        entry = getattr(k, "entry", -1)
        if entry not in sharing:
            continue
        values = tuple(_aval(k.entries.get(p)) for p in paths)
        if values in by_values and by_values[values] != entry:
            return None  # two entries alike at these paths: they cannot tell them apart
        by_values[values] = entry
    fn = rec.user_fn()
    names = tuple(inspect.signature(fn).parameters) if fn is not None else ()
    if any(p[0][1] not in names for p in paths):
        return None
    return Discriminator(names, tuple(paths), by_values)


def _aval_path(entries: dict[Path, Any], where: Path) -> Path | None:
    """The path of the array a reason at ``where`` is about (an nnx Variable's value under it)."""
    for p in (where, (*where, ("attr", "value"))):
        e = entries.get(p)
        if e is not None and e.kind is EntryKind.AVAL:
            return p
    return None


def _aval(e: Any) -> Aval | None:
    return e.aval if e is not None and e.kind is EntryKind.AVAL else None


def tied_entry(rec: Record, light: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """The entry a hit whose light signature ``light`` two entries share went to, or -1."""
    found = rec.ties.get(light)
    return -1 if found is None else found.entry(args, kwargs)
