"""The data of a cache key: paths, avals, statics and the :class:`Key` of one compiled entry.

A :class:`Key` is what jitlens remembers of one compiled entry: a flat mapping
from a path the user would write (``model.layers[3].avg_pool``, ``batch['x']``)
to what JAX compares there (an aval, a static value, a node type, Variable
metadata). It holds no arrays, no models and no functions: statics that
compare by identity are kept as weak references. ``jitlens._core.signature``
builds keys from a call's arguments.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import keyword
import re
import sys
import types
from typing import Any

from .._peek import dataclass_fields, is_a, static_attr
from .._record import record
from .held import GONE, held_object, hold
from .held import keeping_values as keeping_values
from .kinds import EntryKind
from .shown import closure_bundle, short_repr, user_repr

#: A path part: ("arg", name) at the root, ("attr", name) for graph/object
#: attributes, ("item", key) for dict keys and sequence indices.
PathPart = tuple[str, Any]


Path = tuple[PathPart, ...]


_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")


_REPR_MAX = 120


def is_number(v: Any) -> bool:
    """A Python int or float, not a bool (a static whose program jitlens compares)."""
    return is_a(v, (int, float)) and not is_a(v, bool)


def compares_by_identity(value: Any) -> bool:
    """True when ``==`` on this value is ``is`` (no value-based ``__eq__``)."""
    if value is None or value is Ellipsis or value is NotImplemented:
        return False  # singletons: identity is their value
    eq = getattr(type(value), "__eq__", None)
    return eq is object.__eq__ or (is_a(value, type) and type(value).__eq__ is type.__eq__)


def is_named(value: Any) -> bool:
    """True when writing the value again gives the *same* object: a rebuild hits the cache.

    Enum members, modules, and functions, classes and objects reachable by
    name from their module (``jax.nn.relu``, a module-level ``def``, a class at
    module level) compare by identity, yet they are values: ``act=relu`` then
    ``act=gelu`` is a changed value, not a fresh object.
    """
    if is_a(value, (enum.Enum, types.ModuleType)):
        return True
    module = static_attr(value, "__module__")
    mod = sys.modules.get(module) if is_a(module, str) else None
    qual = static_attr(value, "__qualname__")
    if not is_a(qual, str):
        qual = static_attr(value, "__name__")
    if mod is None or not is_a(qual, str) or "<" in qual:
        return False  # <locals>, <lambda>: made anew by each run of the code around it
    obj: Any = mod
    for part in qual.split("."):
        obj = static_attr(obj, part, _GONE)
        if obj is _GONE:
            return False
    if obj is value:
        return True
    # bound methods of named objects, staticmethods seen through their class
    return type(value) is types.MethodType and is_named(value.__self__) and obj is value.__func__


_GONE = object()


def fresh_object(value: Any) -> bool:
    """Compared by identity *and* made anew by the code that builds it (a lambda, a partial,
    an instance of a class without ``__eq__``): an equal-looking rebuild misses too."""
    return compares_by_identity(value) and not is_named(value)


def diff_texts(before: str, after: str, limit: int = 80) -> tuple[str, str]:
    """Two long reprs cut to the part that differs (common head and tail elided)."""
    if len(before) <= limit and len(after) <= limit:
        return before, after
    head = 0
    n = min(len(before), len(after))
    while head < n and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < n - head and before[len(before) - 1 - tail] == after[len(after) - 1 - tail]:
        tail += 1
    context = 12
    start = max(0, head - context)
    # cut at a separator, so that numbers are not split in the middle
    for sep in (", ", " ", "(", "["):
        k = before.rfind(sep, max(0, start - 8), head)
        if k >= 0 and k < head:
            start = k + len(sep) if k + len(sep) <= head else start
            break

    def cut(text: str) -> str:
        end = min(len(text), len(text) - tail + context)
        middle = text[start:end]
        if len(middle) > limit - 6:
            middle = middle[: limit - 9] + "..."
        return ("..." if start > 0 else "") + middle + ("..." if end < len(text) else "")

    return cut(before), cut(after)


class StaticVal:
    """A static as JAX compares it, without keeping the program's objects alive."""

    __slots__ = (
        "_hold",
        "_last",
        "addr",
        "fresh",
        "identity",
        "key_text",
        "snapshot",
        "state",
        "text",
        "type_name",
    )

    def __init__(self, value: Any) -> None:
        self.identity = compares_by_identity(value)
        #: A rebuilt equal-looking object would miss too (see :func:`fresh_object`).
        # a bound method compares its object by identity, whatever the object's __eq__
        self.fresh = (
            self.identity or type(value) is types.MethodType or closure_bundle(value)
        ) and not is_named(value)
        self.type_name = _type_name(value)
        #: Made now, without the program's code (its ``__repr__`` is never called): the
        #: object may be gone when a retrace is worded.
        self.text = short_repr(value)
        own = user_repr(value)
        self.key_text = self.text if not own else _state_text(value, self.type_name)
        #: The text when described (None for a user ``__repr__`` other than a dataclass's):
        #: compared later with :func:`snapshot_text` of the object, it shows a static changed
        #: in place after its compile.
        self.snapshot = self.text if not own else _fields_text(value)
        from .contents import contents  # what it holds (None if immutable): compared, not shown

        self.state = contents(value)
        self.addr = id(value)
        #: How to get the object back (``held.hold``): weakly (alive while JAX's cache or the
        #: program holds it), as plain builtin data, or a tuple rebuilt from its items held
        #: so: jitlens keeps no object of the program's alive.
        self._hold = hold(value)
        #: ``(other, same)`` of the last comparison: an explanation asks twice of one pair.
        self._last: tuple[StaticVal, bool] | None = None

    def same(self, other: StaticVal) -> bool:
        if self.identity != other.identity:
            return False
        if self.identity:
            if self._hold is not None and other._hold is not None:
                a = self._hold()
                return a is not GONE and a is other._hold()
            return self.addr == other.addr and self.type_name == other.type_name
        last = self._last
        if last is not None and last[0] is other:
            return last[1]
        same = _same_static(self, other)
        self._last = (other, same)
        return same

    def value(self) -> Any:
        """The value if still alive (a static jitlens holds weakly may have been collected)."""
        v = self._hold() if self._hold is not None else GONE
        return None if v is GONE else v

    def alive(self) -> bool:
        """Is the value still there (held as plain data, or weakly and not collected)?"""
        return self._hold is not None and self._hold() is not GONE

    def is_object(self, obj: Any) -> bool:
        """Was this static described from ``obj`` itself? An object jitlens cannot hold (a
        dict, a list) is known by its address: while JAX's cache holds the compiled one, no
        other object has it."""
        if self._hold is None:
            return id(obj) == self.addr and _type_name(obj) == self.type_name
        return self.alive() and self.value() is obj

    def same_object(self, other: StaticVal) -> bool:
        """Were both statics described from the very same object?"""
        if self._hold is None and other._hold is None:
            return self.addr == other.addr and self.type_name == other.type_name
        return self.alive() and other.alive() and self.value() is other.value()

    def object_token(self) -> Any:
        """What ``same`` compares of a static compared by identity, as hashable data: equal for
        two statics of one live object, never for two objects while both statics live (one not
        held: its address, as ``same`` compares it); None when it cannot say (collected, or held
        as its items)."""
        if self._hold is None:
            return ("at", self.addr, self.type_name)
        return held_object(self._hold)

    def full_text(self, limit: int = 4_000) -> str:
        """A longer text than ``text`` (for showing where two long values differ)."""
        return short_repr(self.value(), limit) if self.alive() else self.text

    def display(self) -> str:
        if self.fresh and " at 0x" not in self.text:
            return f"{self.text} at {hex(self.addr)}"
        return self.text


def same_type(a: StaticVal, b: StaticVal) -> bool:
    """Are two statics of one type? (``1`` and ``True`` are equal, hash equal, and differ here.)"""
    return a.type_name == b.type_name


def looks_alike(a: StaticVal, b: StaticVal) -> bool:
    """Do two statics print the same, addresses aside? (Two builds' fresh partials do.)"""
    return _ADDR.sub("", a.text) == _ADDR.sub("", b.text)


def changed_in_place(a: StaticVal, b: StaticVal) -> bool:
    """Is ``b`` the very object ``a`` was described from, changed since (what it holds
    differs; an object too big to read counts as unchanged: not known)?"""
    if a.identity or not a.same_object(b):
        return False
    if a.snapshot is not None and b.snapshot is not None and a.snapshot != b.snapshot:
        return True
    from .contents import known

    return known(a.state) and known(b.state) and a.state != b.state


def _nan_field(a: StaticVal, b: StaticVal) -> bool:
    """One float NaN on both sides of a graph record's field, where dataclass fields compare
    without ``is`` first (Python >= 3.13): JAX finds even the very same NaN object unequal."""
    va, vb = a.value(), b.value()
    if type(va) is not float or type(vb) is not float or va == va or vb == vb:
        return False
    from .._compat import cache_keys

    return cache_keys.dataclass_fields_skip_identity()


def snapshot_text(value: Any) -> str | None:
    """The text :attr:`StaticVal.snapshot` holds for ``value``, made now (no user code runs)."""
    return short_repr(value) if not user_repr(value) else _fields_text(value)


def _same_static(a: StaticVal, b: StaticVal) -> bool:
    """Would JAX find the two statics equal, told without the program's ``__eq__``?

    The values themselves when both are still there: their equality told as the builtins
    would (``contents.same_values``: builtins, containers, dataclasses), else all they hold
    now; else what was read of them when described: all they held, or their text.
    """
    from .contents import contents, known, same_values

    if a.alive() and b.alive():
        va, vb = a.value(), b.value()
        verdict = same_values(va, vb)
        if verdict is not None:
            return verdict
        now = contents(va), contents(vb)  # (JAX compares the objects as they are now)
        if known(now[0]) and known(now[1]):
            return now[0] == now[1]
    if a.type_name != b.type_name:
        return False
    if known(a.state) and known(b.state):
        return a.state == b.state
    return a.key_text == b.key_text and a.snapshot == b.snapshot


def _fields_text(value: Any) -> str | None:
    """``Cfg(k=1)`` for a dataclass instance, read field by field (its ``__repr__`` is not
    called: it is generated into the user's module, so it counts as theirs); else None."""
    fields = dataclass_fields(value)
    if fields is None:
        return None
    parts = [
        f"{f.name}={short_repr(static_attr(value, f.name, '?'), 30)}" for f in fields if f.repr
    ]
    return f"{type(value).__qualname__}({', '.join(parts)})"


def _state_text(value: Any, type_name: str) -> str:
    """The fingerprint of a static whose repr is the user's, read without running their
    code (:mod:`.fingerprint`; loaded by the first such static)."""
    from .fingerprint import state_text

    return state_text(value, type_name, leaf=lambda v: short_repr(v, 40), own=user_repr)


def _type_name(value: Any) -> str:
    t = type(value)
    mod = t.__module__
    return t.__qualname__ if mod in ("builtins", "__main__") else f"{mod}.{t.__qualname__}"


@record
class Aval:
    """An array argument as the cache key sees it: shape, dtype, weak type and placement."""

    shape: tuple[int, ...]
    dtype: str
    weak: bool
    sharding: str
    #: The ``jax.vmap`` batch axis when the shape is the batched value's.
    batch_axis: int | None = None
    #: Its sharding's class (``NamedSharding``...), "" unplaced; ``sharding`` says where.
    sharding_type: str = dataclasses.field(default="", compare=False)
    #: Its mesh's device ids in order (JAX keys the device assignment); () off a mesh.
    devices: tuple[int, ...] = ()

    def short(self) -> str:
        s = f"{self.dtype}[{','.join(map(str, self.shape))}]"
        if self.weak:
            s += "{weak}"
        return s


@record
class Entry:
    """One position of a key. ``kind`` says what JAX compares there."""

    kind: EntryKind
    aval: Aval | None = None
    static: StaticVal | None = None
    type_name: str = ""
    type_ref: Any = None  # weakref to a node class
    meta: tuple[tuple[str, StaticVal], ...] = ()
    target: str = ""
    in_graph: bool = False
    #: JAX's key includes the static's type here (a jax.jit ``static_argnums`` value).
    typed: bool = False

    def same(self, other: Entry) -> bool:
        if self.kind != other.kind:
            return False
        if self.kind == EntryKind.AVAL:
            return self.aval == other.aval
        if self.kind == EntryKind.STATIC:
            assert self.static is not None and other.static is not None
            if (self.typed or other.typed) and not same_type(self.static, other.static):
                return False
            if self.in_graph and _nan_field(self.static, other.static):
                return False
            return self.static.same(other.static) and not changed_in_place(
                self.static, other.static
            )
        if self.kind in (EntryKind.NODE, EntryKind.VAR):
            if self.type_name != other.type_name or not _same_type(self, other):
                return False
            if len(self.meta) != len(other.meta):
                return False
            return all(
                k1 == k2 and v1.same(v2)
                for (k1, v1), (k2, v2) in zip(self.meta, other.meta, strict=True)
            )
        if self.kind in (EntryKind.REF, EntryKind.PASSED, EntryKind.OPAQUE):
            return self.target == other.target
        return True


def _same_type(a: Entry, b: Entry) -> bool:
    ta = a.type_ref() if a.type_ref is not None else None
    tb = b.type_ref() if b.type_ref is not None else None
    if ta is None or tb is None:
        return a.type_ref is None and b.type_ref is None
    return ta is tb


@record(frozen=False)
class Key:
    """The abstract cache key of one call, flattened to user paths."""

    entries: dict[Path, Entry]
    config: tuple[tuple[str, str], ...]
    signature: str
    fingerprint: str
    cleared: bool = False
    #: ``jax.clear_caches()`` calls seen when it was compiled (None: not counted).
    clears_seen: int | None = None
    #: ``(structure, parameters)`` hashes of the program traced for it, when its statics
    #: include a number (``_track/flows.py``): where that number went.
    program: tuple[int, int, frozenset[float]] | None = None


#: Paths deeper than this are shown by their head and their depth.
PATH_PARTS_SHOWN = 12


def render_path(path: Path) -> str:
    """``model.layers[3].avg_pool``; a very deep path as ``tree['a']['a']... (70 levels)``."""
    if len(path) > PATH_PARTS_SHOWN:
        head = _render_parts(path[: PATH_PARTS_SHOWN // 2])
        return f"{head}... ({len(path) - 1} levels)"
    return _render_parts(path)


def _render_parts(path: Path) -> str:
    out = []
    for kind, name in path:
        if kind == "arg":
            out.append(str(name))
        elif kind == "jit":
            out.append(f"jit({name}=...)")
        elif (
            kind == "attr"
            and is_a(name, str)
            and name.isidentifier()
            and not keyword.iskeyword(name)
        ):
            out.append(f".{name}")
        else:
            out.append(f"[{short_repr(name, 60)}]")  # (a dict key's own repr is not called)
    return "".join(out)


def _key_text(path: Path) -> str:
    """``path`` as text for a fingerprint (a dict key of the program's is not ``repr``'d)."""
    return _render_parts(path)


def _entry_text(e: Entry) -> str:
    if e.kind == EntryKind.AVAL and e.aval is not None:
        return e.aval.short() + (f"@{e.aval.sharding}" if e.aval.sharding else "")
    if e.kind == EntryKind.STATIC and e.static is not None:
        return e.static.key_text
    if e.kind in (EntryKind.NODE, EntryKind.VAR):
        return e.type_name + "".join(f"{k}={v.key_text}" for k, v in e.meta)
    return f"{e.kind}:{e.target}"


def signature_text(entries: dict[Path, Entry], names: list[str]) -> str:
    """``model: CNN<graph 3f2a>, x: f32[1,28,28,1]`` — short, human, address-free."""
    parts = []
    for name in names:
        root: Path = (("arg", name),)
        e = entries.get(root)
        if e is None:
            continue
        if e.kind == EntryKind.AVAL and e.aval is not None:
            parts.append(f"{name}: {e.aval.short()}")
        elif e.kind == EntryKind.STATIC and e.static is not None:
            parts.append(
                f"{name}={short_repr(e.static.value(), 40) if e.static.alive() else e.static.key_text}"
            )
        elif e.kind == EntryKind.NONE:
            parts.append(f"{name}: None")
        elif e.in_graph or e.kind == EntryKind.VAR:
            sub = [
                f"{_key_text(p)}{_entry_text(v)}"
                for p, v in entries.items()
                if p[0] == root[0] and len(p) > 1 and p[1][0] != "passed"
            ]
            h = hashlib.blake2b(_ADDR.sub("", "|".join(sub)).encode(), digest_size=2).hexdigest()
            parts.append(f"{name}: {e.type_name}<graph {h}>")
        else:
            leaves = [
                v.aval.short()
                for p, v in entries.items()
                if p[: len(root)] == root and v.kind == EntryKind.AVAL and v.aval is not None
            ]
            shown = ", ".join(leaves[:3]) + (", ..." if len(leaves) > 3 else "")
            parts.append(f"{name}: {e.type_name}({shown})")
    return _ADDR.sub("", ", ".join(parts)) + identity_suffix(entries, names)


def _one_object(static: StaticVal) -> bool:
    """Whether this static equals only itself: compared by identity, or a tuple of closures
    (an optax transform), and not a module-level function every key shares."""
    value = static.value()
    if static.identity:
        return not _module_level(value)
    return is_a(value, tuple) and any(
        is_a(x, types.FunctionType) and not _module_level(x) for x in tuple.__iter__(value)
    )


def _module_level(value: Any) -> bool:
    """A function or class reachable by its module and name: the same object in every key."""
    if not is_a(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return False
    module = static_attr(value, "__module__")
    obj: Any = sys.modules.get(module) if is_a(module, str) else None
    qual = static_attr(value, "__qualname__")
    for part in (qual if is_a(qual, str) else "<").split("."):
        obj = static_attr(obj, part)
    return obj is value


#: Identity-compared statics named in a signature (more fold into "+N").
_IDENTITY_SHOWN = 2


def identity_suffix(entries: dict[Path, Entry], names: list[str]) -> str:
    """`` [model.avg_pool=partial@…3a60]``: what tells apart keys whose shapes and types agree.

    A static compared by identity (a ``functools.partial`` stored on a model)
    makes a new cache entry per object, although every hash and repr above
    ignores the object: the end of its address is the one visible difference.
    ``@…`` marks it, so tools comparing processes can drop it.
    """
    found = [
        f"{render_path(p)}={v.static.type_name.rpartition('.')[2]}@…{v.static.addr & 0xFFFF:04x}"
        for p, v in entries.items()
        if p and p[0][0] == "arg" and p[0][1] in names
        if v.kind == EntryKind.STATIC and v.static is not None and _one_object(v.static)
    ]
    if not found:
        return ""
    more = len(found) - _IDENTITY_SHOWN
    return f" [{', '.join(found[:_IDENTITY_SHOWN])}{f', +{more}' if more > 0 else ''}]"


def flat_key(key: Key | None, limit: int = 400) -> tuple[tuple[str, str], ...]:
    """``(user path, what JAX compared there)`` of each position of ``key``, address-free:
    what a report keeps of a key, so that two runs' keys can be compared (``jitlens diff``)."""
    if key is None:
        return ()
    out = []
    for path, entry in key.entries.items():
        if len(out) >= limit:
            break
        if entry.kind == EntryKind.PASSED:
            continue
        if entry.kind in (EntryKind.NODE, EntryKind.VAR) and entry.meta:
            meta = ", ".join(f"{k}={v.key_text}" for k, v in entry.meta)
            text = f"{entry.type_name}({meta})"
        else:
            text = _entry_text(entry)
        out.append((render_path(path), _ADDR.sub("", text)))
    return tuple(out)
