"""The compiled key closest to a new one, found without building a single reason.

A retrace is explained against the compiled key it differs from least. Building a
key's reasons (``explain.diff_keys``: words, ranking) costs ~50 us a difference, and
comparing two keys entry by entry ~5 us a leaf: against 64 live keys of a 500-leaf
argument whose every shape changed, that was 1.7 s a retrace, a third of its compile.

Here each key gets a :class:`Digest` once, the first time it takes part in an
explanation: a token per position (what JAX compares there, as plain hashable data,
read without calling the program's code) and a hash per subtree. The distance of a
compiled key to the new one walks both from their arguments down, only into
subtrees whose hashes differ, and weighs each differing position as
``explain.diff_keys`` would weigh the reasons it gives (a changed signature 3, a static
changed in place since its compile 0, anything else 1; a new subtree counts once, as
its reason does). Keys are visited newest first and a walk stops once it is farther
than the best so far, so equal distances keep the newest key, as before. Reasons are
then built for that one key only.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import ne
from typing import Any

from .key import Entry, Key, Path, StaticVal, changed_in_place, snapshot_text
from .kinds import EntryKind

#: Builtin types whose ``==`` and ``hash`` are Python's own (no program code runs): a static
#: of one of them is its own token.
_PLAIN = frozenset({int, float, complex, str, bytes, bool, type(None)})
#: Nodes whose items, added or removed, make one reason (the sequence's length).
_SEQUENCES = frozenset({"list", "tuple"})
#: What a position whose comparison needs ``Entry.same`` hashes as (its token is unique).
_LOOSE_HASH = 0x5EED
_ATTR = "_jitlens_digest"
_AVAL = EntryKind.AVAL


class _Loose:
    """The token of a position only ``Entry.same`` can compare (equal to nothing else)."""

    __slots__ = ()


class Digest:
    """What the distance walk reads of one key: a token per position, a hash per subtree, and
    each node's children (``kids[()]``: the arguments) with their subtrees' hashes."""

    __slots__ = ("hashes", "kids", "loose", "sub", "tokens")

    def __init__(self, entries: dict[Path, Entry]) -> None:
        self.tokens: dict[Path, Any] = {p: _token(e) for p, e in entries.items()}
        self.kids: dict[Path, list[Path]] = {}
        for p in entries:
            parent = p[:-1]
            self.kids.setdefault(parent if parent in entries else (), []).append(p)
        self.sub: dict[Path, int] = {}
        #: Positions whose subtree holds a loose token: compared whatever their hashes.
        self.loose: set[Path] = set()
        for p in sorted(entries, key=len, reverse=True):  # children before their parent
            token = self.tokens[p]
            kids = self.kids.get(p, ())
            own = _LOOSE_HASH if type(token) is _Loose else hash(token)
            self.sub[p] = hash((own, *((_part_hash(c[-1]), self.sub[c]) for c in kids)))
            if type(token) is _Loose or any(c in self.loose for c in kids):
                self.loose.add(p)
        if any(p in self.loose for p in self.kids.get((), ())):
            self.loose.add(())  # the arguments' parent
        sub = self.sub
        self.hashes: dict[Path, list[int]] = {
            p: [sub[c] for c in kids] for p, kids in self.kids.items()
        }


def digest(key: Key) -> Digest:
    """``key``'s digest, made on its first explanation and kept with it."""
    found = key.__dict__.get(_ATTR)
    if found is None:
        found = Digest(key.entries)
        key.__dict__[_ATTR] = found
    return found


def nearest(new: Key, previous: Sequence[Key]) -> Key | None:
    """The key of ``previous`` closest to ``new`` (ties: the most recent), or None."""
    best: Key | None = None
    bound = float("inf")
    for old in reversed(previous):
        d = distance(old, new, bound)
        if d < bound:
            best, bound = old, d
            if d == 0:
                break
    return best


def distance(old: Key, new: Key, bound: float = float("inf")) -> float:
    """How far ``old`` is from ``new``: the weight of the reasons their diff gives (see the
    module's docstring); the walk stops once it reaches ``bound``, returning ``bound``."""
    do, dn = digest(old), digest(new)
    o, n = old.entries, new.entries
    cost = float(_config_changes(old, new))
    stack: list[Path] = []
    cost += _children((), o, n, do, dn, None, stack)
    while stack and cost < bound:
        p = stack.pop()
        tok_o, tok_n = do.tokens[p], dn.tokens[p]
        if tok_o == tok_n and type(tok_o) is not _Loose:
            below = True
        elif type(tok_o) is tuple and type(tok_n) is tuple and tok_o[0] is tok_n[0] is _AVAL:
            cost += _aval_weight(tok_o, tok_n)  # an array: its token holds all that JAX compares
            continue
        else:
            weight, below = _weigh(p, o[p], n[p])
            cost += weight
        if below:
            eo = o[p]
            parent = eo if eo.kind is EntryKind.NODE and not eo.in_graph else None
            cost += _children(p, o, n, do, dn, parent, stack)
    return min(cost, bound)


def _children(
    p: Path,
    o: dict[Path, Entry],
    n: dict[Path, Entry],
    do: Digest,
    dn: Digest,
    parent: Entry | None,
    stack: list[Path],
) -> int:
    """Push the children of ``p`` both keys hold whose subtrees differ; return the weight of
    those only one holds: one each (the structure reason), a sequence's items one in all (its
    length)."""
    ko, kn = do.kids.get(p, ()), dn.kids.get(p, ())
    if not ko and not kn:
        return 0
    if ko == kn:  # the same children: those whose hashes differ, found in C, and loose ones
        ho, hn = do.hashes[p], dn.hashes[p]
        stack.extend(compress(kn, map(ne, ho, hn)))
        if p in do.loose or p in dn.loose:
            stack.extend(
                c
                for c, a, b in zip(kn, ho, hn, strict=True)
                if a == b and (c in do.loose or c in dn.loose)
            )
        return 0
    cost = 0
    sequence = parent is not None and parent.type_name in _SEQUENCES
    counted = False
    for c in kn:
        if c in o:
            if do.sub[c] != dn.sub[c] or c in do.loose or c in dn.loose:
                stack.append(c)
        elif c[-1][0] != "passed":
            cost += _one(sequence, c, counted)
            counted = counted or (sequence and c[-1][0] == "item")
    for c in ko:
        if c not in n and c[-1][0] != "passed":
            cost += _one(sequence, c, counted)
            counted = counted or (sequence and c[-1][0] == "item")
    return cost


def _one(sequence: bool, c: Path, counted: bool) -> int:
    return 0 if sequence and counted and c[-1][0] == "item" else 1


def _weigh(p: Path, eo: Entry, en: Entry) -> tuple[int, bool]:
    """The weight of the reasons at ``p`` and whether the diff looks below it."""
    if p[-1][0] == "passed":
        return (3 if eo.target != en.target else 0), False  # a signature change
    if eo.same(en):
        return 0, True
    if eo.kind is not en.kind or p[0][0] == "jit":  # a jit option: one reason
        return 1, False
    kind = eo.kind
    if kind is EntryKind.AVAL:
        return _aval_weight(_token(eo), _token(en)) if eo.aval and en.aval else 1, False
    if kind is EntryKind.STATIC:
        assert eo.static is not None and en.static is not None
        return (0 if _changed_since_compile(eo.static, en.static) else 1), False
    if kind is EntryKind.NODE or kind is EntryKind.VAR:
        if eo.type_name != en.type_name or not _same_class(eo, en):
            return 1, False  # a node of another type: one reason, nothing below it
        if kind is EntryKind.NODE:
            return sum(
                1 for (_, a), (_, b) in zip(eo.meta, en.meta, strict=False) if not a.same(b)
            ), True
        mo, mn = dict(eo.meta), dict(en.meta)
        return sum(
            1 for k in set(mo) | set(mn) if k not in mo or k not in mn or not mo[k].same(mn[k])
        ), True
    return 1, False


def _aval_weight(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    """The reasons two arrays' tokens give: shape, dtype, weak type, placement (its sharding
    and its mesh's devices: one reason; a typed PRNG key's raw data differs in shape too: one
    reason)."""
    _, shape_a, dtype_a, weak_a, sharding_a, _ = a
    _, shape_b, dtype_b, weak_b, sharding_b, _ = b
    key_change = dtype_a != dtype_b and "key<" in dtype_a + dtype_b
    return (
        (shape_a != shape_b and not key_change)
        + (dtype_a != dtype_b and weak_a == weak_b)
        + (weak_a != weak_b)
        + (sharding_a != sharding_b)
    )


def _changed_since_compile(old: StaticVal, new: StaticVal) -> bool:
    """A static changed in place since its compile: weighs nothing, that entry is the one the
    program meant (JAX up to 0.10 hits it with stale code; from 0.11 it matches nothing, and
    the mutation is the reason an equal new value missed)."""
    return changed_in_place(old, new) or mutated_text(old, new) is not None


def mutated_text(old: StaticVal, new: StaticVal) -> str | None:
    """The compiled static's text now if changed in place since its compile into what the new
    value looks like (so the change is why they differ); else None."""
    then = old.snapshot
    if then is None or old.identity or new.snapshot != then:
        return None
    value = old.value()
    if value is None:
        return None
    now = snapshot_text(value)
    return now if now is not None and now != then else None


def _same_class(a: Entry, b: Entry) -> bool:
    ta = a.type_ref() if a.type_ref is not None else None
    tb = b.type_ref() if b.type_ref is not None else None
    return ta is tb


def _config_changes(old: Key, new: Key) -> int:
    if old.config == new.config:
        return 0
    a, b = dict(old.config), dict(new.config)
    return sum(1 for k in set(a) | set(b) if a.get(k) != b.get(k))


def _token(e: Entry) -> Any:
    """What JAX compares at ``e`` as plain data: equal tokens mean ``Entry.same``; a position
    only ``Entry.same`` can decide (a static compared by its own ``__eq__``) is loose."""
    kind = e.kind
    if kind is EntryKind.AVAL:
        a = e.aval
        if a is None:
            return _Loose()
        return (_AVAL, a.shape, a.dtype, a.weak, (a.sharding, a.devices), a.batch_axis)
    if kind is EntryKind.STATIC:
        return _Loose() if e.static is None else _static_token(e.static)
    if kind is EntryKind.NODE or kind is EntryKind.VAR:
        meta = tuple((k, _static_token(v)) for k, v in e.meta)
        if any(type(t) is _Loose for _, t in meta):
            return _Loose()
        return (kind, e.type_name, _ref_token(e.type_ref), meta)
    return (kind, e.target)


def _static_token(s: StaticVal) -> Any:
    """An identity static: its object as the key holds it (``StaticVal.object_token``: never
    one token for two objects while a key holds them), or its address where the key could not
    hold it, as ``StaticVal.same`` compares; a plain builtin value: its type and value; else
    loose (equal to nothing)."""
    if s.identity:
        token = s.object_token()
        return _Loose() if token is None else token
    if not s.alive():  # collected, or not held: ``StaticVal.same`` reads what was described
        return _Loose()
    value = s.value()
    if _plain(value):
        return ("==", type(value), value)
    return _Loose()


def _ref_token(ref: Any) -> Any:
    if ref is None:
        return None
    return ("is", id(ref)) if ref() is not None else _Loose()


def _plain(v: Any, depth: int = 0) -> bool:
    """A value of builtin types only (tuples of them too), compared and hashed by Python; not
    NaN (equal to itself only as the same object: ``StaticVal.same`` says unequal)."""
    t = type(v)
    if t in _PLAIN:
        return v == v  # NaN is not equal to itself
    if t is tuple and depth < 4 and len(v) <= 32:
        return all(_plain(x, depth + 1) for x in v)
    return False


def _part_hash(part: Any) -> int:
    """A path part's hash, read from builtin names only (a dict key may be the program's)."""
    name = part[1]
    return hash((part[0], name)) if type(name) in _PLAIN else hash((part[0], type(name).__name__))
