"""Stale hits of ``nnx.cached_partial``: a static changed after caching, silently ignored.

``cached_partial`` computes the GraphDef of its cached arguments once; a
static attribute changed later on the original object never reaches the
cache key, so calls keep hitting with the old value (a wrong result, no
retrace). jitlens compares the original objects' GraphDef with the cached
one on calls 1, 2, 4, 8, ... (a power-of-two schedule keeps the cost of a
GraphDef walk away from the hot loop) and when a report is built.
"""

from __future__ import annotations

import ast
import functools
import weakref
from typing import Any

from .. import _compat
from .._core.key import Entry, Path, render_path
from .._core.kinds import EntryKind, RowKind, WordsKind
from .._core.report import StaleHit
from .._core.signature import walk_graphdef
from .._core.words import Template, Words
from .._errors import StaleCacheWarning
from .._peek import dataclass_fields, is_a, static_attr
from . import sink
from .state import internal_failure

STALE_MSG = Template(
    WordsKind.STALE,
    "nnx.cached_partial cached `{path}` = {before}; it is now {after}, but cached calls still "
    "use the old value (no retrace, stale result).",
)
STALE_FIX = Template(
    WordsKind.STALE_FIX,
    "Call nnx.cached_partial({name}, ...) again after changing `{path}` and use the new partial "
    "(one compile per value of `{attr}`).",
)

_WATCHES: list[_Watch] = []


class _Watch:
    def __init__(self, fn_name: str, originals: list[tuple[str, Any, Any]], jitted: Any) -> None:
        self.fn_name = fn_name
        try:  # the nnx.jit wrapper given to cached_partial: finds this watch's record
            self.jitted_ref: Any = weakref.ref(jitted)
        except TypeError:
            self.jitted_ref = None
        self.originals = originals  # (arg name, weakref to node, cached GraphDef)
        self.calls = 0
        self.reported: set[str] = set()
        self.record: Any = None
        self.partial_ref: Any = None

    def check(self, call_index: int, call_site: str) -> list[StaleHit]:
        found = []
        for arg, ref, gd in self.originals:
            node = ref()
            if node is None:
                continue
            flat = _compat.flatten_node(node)
            if flat is None or flat[0] == gd:
                continue
            for path, before, after in _static_diffs(gd, flat[0], arg):
                if path in self.reported:
                    continue
                self.reported.add(path)
                attr = path.rsplit(".", 1)[-1]
                hit = StaleHit(
                    call_index=call_index,
                    call_site=call_site,
                    argument=arg,
                    path=path,
                    before=before,
                    after=after,
                    message=STALE_MSG.words(path=path, before=before, after=after),
                    fix=STALE_FIX.words(path=path, name=self.fn_name, attr=attr),
                )
                found.append(hit)
                sink.warn(f"{hit.message} Fix: {hit.fix}", StaleCacheWarning, stacklevel=4)
        return found


def _static_diffs(old_gd: Any, new_gd: Any, arg: str) -> list[tuple[str, str, str]]:
    root: Path = (("arg", arg),)
    a: dict[Path, Entry] = {}
    b: dict[Path, Entry] = {}
    walk_graphdef(old_gd, [], root, a)
    walk_graphdef(new_gd, [], root, b)
    out = []
    for p in sorted(set(a) | set(b), key=len):
        ea, eb = a.get(p), b.get(p)
        if ea is None or eb is None:
            out.append(
                (
                    render_path(p),
                    "absent" if ea is None else ea.type_name,
                    "absent" if eb is None else eb.type_name,
                )
            )
        elif not ea.same(eb) and ea.kind == EntryKind.STATIC and ea.static and eb.static:
            out.append((render_path(p), ea.static.text, eb.static.text))
    return out


def watch_cached_partial(out: Any, f: Any, cached_args: tuple[Any, ...]) -> Any:
    """Wrap the function ``nnx.cached_partial`` returned with a staleness check."""
    from .._core.signature import arg_names
    from .registry import REGISTRY
    from .state import tls

    user_fn = _compat.user_function(f)
    names = arg_names(user_fn, len(cached_args))
    originals = []
    for name, node in zip(names, cached_args, strict=True):
        if not _compat.is_graph_node(node):
            continue
        flat = _compat.flatten_node(node)
        if flat is None:
            continue
        try:
            originals.append((name, weakref.ref(node), flat[0]))
        except TypeError:
            continue
    if not originals:
        return out
    watch = _Watch(getattr(user_fn, "__name__", "step"), originals, f)
    # drop watches whose cached objects are all gone
    _WATCHES[:] = [w for w in _WATCHES if _alive(w)]
    _WATCHES.append(watch)

    @functools.wraps(out)
    def cached_call(*args: Any, **kwargs: Any) -> Any:
        n = watch.calls
        watch.calls += 1
        if REGISTRY.active and not tls.busy and n >= 1 and (n & (n - 1)) == 0:
            _check(watch, n)
        return out(*args, **kwargs)

    cached_call.__jitlens_watch__ = watch  # type: ignore[attr-defined]
    # a partial that is gone (e.g. rebuilt, as the fix says) is no longer checked
    watch.partial_ref = weakref.ref(cached_call)
    return cached_call


def _check(watch: _Watch, n: int) -> None:

    from .registry import REGISTRY

    try:
        hits = watch.check(n, _compat.user_call_site(_compat.caller(2)))
    except Exception as exc:
        internal_failure("checking nnx.cached_partial for stale statics", exc)
        return
    if hits:
        rec = _find_record(watch)
        if rec is not None:
            rec.stale_hits.extend(hits)
        for cb in list(REGISTRY.on_stale):
            cb(rec, hits)


def _find_record(watch: _Watch) -> Any:
    from .registry import REGISTRY

    jitted = watch.jitted_ref() if watch.jitted_ref is not None else None
    for r in reversed(REGISTRY.records):
        if r.kind != RowKind.NNX_CACHED_PARTIAL:
            continue
        wrapper = r.wrapper_ref() if r.wrapper_ref is not None else None
        if (jitted is not None and wrapper is jitted) or (
            jitted is None and r.name == watch.fn_name
        ):
            return r
    return None


def check_all() -> None:
    """Check every live watch now (called when a report is built)."""
    for w in list(_WATCHES):
        if _alive(w):
            _check(w, w.calls)


def _alive(w: _Watch) -> bool:
    """Both the partial and one of its cached objects still exist."""
    partial = w.partial_ref() if w.partial_ref is not None else True
    return partial is not None and any(ref() is not None for _a, ref, _g in w.originals)


# A static changed in place after its compile: the cache key holds the very object, so
# the jit compares it with itself, finds it equal, and serves the old compile. The same
# holds for nnx.jit (a dict or object attribute of a Module), jax.jit (a static_argnums /
# static_argnames object compared by identity, or whose __hash__ ignores the change) and
# eqx.filter_jit (a non-array field: every non-array leaf is static) and linen's nn.jit (a
# module field flax hashes as it is, by identity unless its class hashes its state: the
# key holds only the hash, so the linen front-end keeps the fields of each compile,
# ``Frontend.held_statics``). A static whose hash
# follows the change misses instead (a retrace, a right result): only a call that hit the
# cache is checked. Whether the jitted code reads it is not known (a log list kept on a
# model is never read), so the words say "if": copying a log on every change would make
# each new value compile again.

INPLACE_MSG = Template(
    WordsKind.STALE_IN_PLACE,
    "`{path}` was changed in place after its compile (noticed at call #{call}); {compares}, "
    "so no retrace: jitted code that reads it still sees {before} (stale), not {after}.",
)
#: How the jit found the changed object equal, per front-end (default: the key holds it).
_COMPARES = {
    RowKind.NN_JIT: "{kind} keys on a hash of the module's fields, the same for this object",
}
_COMPARES_KEY = "{kind} compares it with itself (the same object)"
INPLACE_FIX = Template(
    WordsKind.STALE_IN_PLACE_FIX,
    "If the jitted code reads it, assign a new object ({example}): the jit then compiles for "
    "the new value. If only code outside the jit uses it (a log), keep it out of the call's "
    "arguments. {traced}",
)
#: nn.jit: flax hashes the module's fields, walking dataclasses, and keeps only the hash (no
#: reference), so a copy is no fix: a new object may take a freed one's address, and its
#: identity hash, and run that one's compile.
INPLACE_LINEN_FIX = Template(
    WordsKind.STALE_IN_PLACE_FIX,
    "If the jitted code reads it, make `{cls}` a dataclass (`@dataclasses.dataclass`): nn.jit "
    "hashes its fields, so each new value compiles once (a copy is no fix: flax keeps only a "
    "hash, which a new object may share). {traced}",
)
#: The closing remark of the fix where the front-end has none of its own (``Frontend.stale_traced``):
#: how to make a value that changes often traced instead of static (one compile for every value).
_TRACED_NNX = (
    "A number that changes often is better traced: an array "
    "(`jnp.asarray(...)`, an nnx.Variable) instead of a static."
)
#: A hit whose static is another object than its compile's, at an equal hash: flax keeps
#: only the hash, so a new object may take a freed one's address, and its identity hash.
REUSED_MSG = Template(
    WordsKind.STALE_REUSED,
    "`{path}` is {other}, so {kind}'s key is unchanged (call #{call}, no retrace): the jitted "
    "code runs with {before} (stale), not {after}.",
)
_OTHER_FREED = "a new object at the address of the freed one its compile saw (the same id)"
_OTHER_LIVE = "another object than its compile saw, with the same hash"
#: Values that cannot change in place: nothing to check.
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), type, frozenset)


def check_statics(rec: Any, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """After call ``n`` of ``rec`` hit the cache: did it pass a static that changed in place
    since its compile? Each changed static is reported once, with the call that noticed it.

    Called on the calls of index 1, 2, 4, 8, ... only (calls #2, #3, #5, #9, ... as people
    count): the walk of the keys stays away from the hot loop (log2 of the calls, all told),
    at a price in latency: a change made before call #k is noticed at the next scheduled
    call, up to k calls later (before call #6 at call #9, before call #1000 at call #1025),
    and one made after the last scheduled call of a run is not noticed at all. The warning
    names the call that noticed it."""
    from .._core.signature import arg_names
    from .frontend import of_kind
    from .registry import REGISTRY

    try:
        names = None
        found = []
        for key in list(rec.keys):
            if key.cleared:
                continue
            for path, entry in key.entries.items():
                sv = entry.static
                if sv is None or (sv.snapshot is None and sv.state is None):
                    continue
                if (path, sv.addr) in rec.stale_seen:
                    continue
                if names is None:
                    names = arg_names(rec.user_fn(), len(args))
                value = _resolve(path, names, args, kwargs)
                if value is _MISSING or is_a(value, _IMMUTABLE) or not sv.is_object(value):
                    continue  # this call did not pass it (or it cannot change)
                change = _change(sv, value)
                if change is None:
                    continue
                rec.stale_seen.add((path, sv.addr))
                frame = _compat.user_frame(_compat.caller(2))
                held = _held_as(path, names, args, kwargs, frame)
                if change is _UNCHECKED:
                    _unchecked(rec, n, path, held)
                    continue
                site = _compat.user_call_site(_compat.caller(2))
                found.append(_inplace_hit(rec, n, site, path, change, value, held))
        own = of_kind(rec.kind)
        held = own.held_statics(rec, args, _compat.user_frame(_compat.caller(2))) if own else []
        for shown, root, sv, value in held:  # statics its library keyed by a hash (nn.jit)
            if is_a(value, _IMMUTABLE):
                continue
            same = sv.is_object(value)
            # not the object compiled for, at an equal hash (a freed one's address reused):
            # said once per field and compile, whichever objects come after
            seen = (shown, sv.addr) if same else (shown, "other", id(sv))
            if seen in rec.stale_seen:
                continue
            change = _change(sv, value)
            if change is None:
                continue  # (another object, holding the same: the compile is right for it)
            rec.stale_seen.add(seen)
            path = (("arg", root), *(("attr", a) for a in shown.split(".")[1:]))
            if change is _UNCHECKED:
                _unchecked(rec, n, path)
                continue
            site = _compat.user_call_site(_compat.caller(2))
            other = None if same else _OTHER_LIVE if sv.alive() else _OTHER_FREED
            found.append(_inplace_hit(rec, n, site, path, change, value, other=other))
        if found:
            rec.stale_hits.extend(found)
            for cb in list(REGISTRY.on_stale):
                cb(rec, found)
    except Exception as exc:
        internal_failure("checking statics changed in place", exc)


#: :func:`_change` of an object too big to read in full: not known, never "unchanged".
_UNCHECKED = ("?", "?", "?", "?")
#: ``Unchecked.why`` of a static holding more values than a check reads.
TOO_BIG = "too_big"


def _change(sv: Any, value: Any) -> tuple[str, str, str, str] | None:
    """``(then, now)`` as shown, then in full, of a static changed in place since ``sv`` was taken at its compile,
    ``_UNCHECKED`` when it is too big to read, None when unchanged. What its text shows is
    compared first (a change shown as the user sees the value), then all it holds
    (``_core.contents``: a change past the text, shown where it differs)."""
    from .._core.contents import TOO_BIG, contents, readable
    from .._core.key import diff_texts, snapshot_text

    if sv.snapshot is not None:
        now = snapshot_text(value)
        if now is not None and now != sv.snapshot:
            return sv.snapshot, now, sv.snapshot, now
    if sv.state is None:
        return None
    state = TOO_BIG if sv.state == TOO_BIG else contents(value)
    if state == TOO_BIG:
        return _UNCHECKED
    if state == sv.state:
        return None
    if readable(sv.state) and readable(state):
        return (*diff_texts(sv.state, state), sv.state, state)
    then = sv.snapshot or sv.text
    return then, f"{then} changed past what its text shows", then, then


def _unchecked(rec: Any, n: int, path: Any, held: str = "") -> None:
    """Keep, and say once per static, that a hit passed an object too big to check: not
    known unchanged (``Report``: ``FunctionReport.unchecked``)."""
    from .._core.contents import MAX_VALUES
    from .._core.report import Unchecked
    from .._core.retrace_text import unchecked_text
    from .frontend import of_kind

    shown = render_path(path)
    root = str(path[0][1])
    if held:
        shown = held + shown[len(root) :]
    site = _compat.user_call_site(_compat.caller(3))
    fe = of_kind(rec.kind)
    remedy = fe.unchecked_remedy if fe is not None else ""
    u = Unchecked(n, site, shown, TOO_BIG, MAX_VALUES, remedy)
    rec.unchecked.append(u)
    sink.warn(unchecked_text(rec.kind, u), UserWarning, _compat.user_stacklevel())


_MISSING = object()


def _held_as(
    path: Any, names: list[str], args: tuple[Any, ...], kwargs: dict[str, Any], frame: Any
) -> str:
    """The name the caller holds the argument at ``path`` by when it is not the parameter's
    (``c.calc(3)`` passes ``c`` as ``self``): the fix is code the caller can write."""
    root = _resolve(path[:1], names, args, kwargs)
    if root is _MISSING or frame is None:
        return ""
    held = _compat.name_in_frame(root, frame)
    return held if held and held != str(path[0][1]) else ""


def _resolve(path: Any, names: list[str], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The object at ``path`` in this call's arguments (``_MISSING`` when not found)."""
    (kind, name), rest = path[0], path[1:]
    if kind != "arg":
        return _MISSING
    if name in kwargs:
        obj = kwargs[name]
    elif name in names and names.index(name) < len(args):
        obj = args[names.index(name)]
    else:
        return _MISSING
    for kind, name in rest:
        if kind == "attr":
            obj = static_attr(obj, name, _MISSING)
        elif issubclass(type(obj), dict) and type(name) in (str, int):
            obj = dict.get(obj, name, _MISSING)  # (as stored: no __getitem__ of the program's)
        elif issubclass(type(obj), (tuple, list)) and type(name) is int:
            base = tuple if issubclass(type(obj), tuple) else list
            obj = (
                base.__getitem__(obj, name)
                if -base.__len__(obj) <= name < base.__len__(obj)
                else _MISSING
            )
        else:
            return _MISSING  # (a container of the program's: its __getitem__ is not run)
        if obj is _MISSING:
            return _MISSING
    return obj


def _inplace_hit(
    rec: Any,
    n: int,
    site: str,
    path: Any,
    change: Any,
    value: Any,
    held: str = "",
    other: str | None = None,
) -> StaleHit:
    """``change``: :func:`_change`'s texts, as shown and in full (the fix reads the full);
    ``other``: what the hit's object is when it is not the compile's (``REUSED_MSG``)."""
    before, after, full_before, full_after = change
    shown = render_path(path)
    root = str(path[0][1])
    # the fix in the caller's names: `c = copy.copy(c)`, not `self = copy.copy(self)`
    spelled, spelled_root = (held + shown[len(root) :], held) if held else (shown, root)
    hit = StaleHit(
        call_index=n,
        call_site=site,
        argument=str(path[0][1]),
        path=shown,
        before=before,
        after=after,
        message=(INPLACE_MSG if other is None else REUSED_MSG).words(
            path=shown,
            after=after,
            before=before,
            compares=_COMPARES.get(rec.kind, _COMPARES_KEY).format(kind=rec.kind),
            call=n + 1,  # counted from 1
            **({} if other is None else {"other": other, "kind": rec.kind}),
        ),
        fix=_inplace_fix(rec.kind, spelled, spelled_root, full_before, full_after, value),
    )
    sink.warn(f"{hit.message} Fix: {hit.fix}", StaleCacheWarning, _compat.user_stacklevel())
    return hit


def _inplace_fix(kind: Any, shown: str, root: str, before: str, after: str, value: Any) -> Words:
    from .frontend import of_kind

    fe = of_kind(kind)
    traced = ("traced", (fe.stale_traced if fe is not None else None) or _TRACED_NNX)
    # (the closing remark is left out when the fix would be too long)
    if kind == RowKind.NN_JIT:
        cls = ("cls", type(value).__qualname__)
        return Words(INPLACE_LINEN_FIX, (cls, traced), optional="traced")
    example = ("example", _example(kind, shown, root, before, after, value))
    return Words(INPLACE_FIX, (example, traced), optional="traced")


def _example(kind: Any, shown: str, root: str, before: str, after: str, value: Any) -> str:
    """The fix as code in the user's names: a new object assigned where the old one was."""
    changed = _changed_items(before, value)
    if changed:  # the new value, as a new dict: `m.cfg = {**m.cfg, 'scale': 2.0}`
        items = ", ".join(f"{k!r}: {v!r}" for k, v in changed)
        return f"`{_assign(kind, shown, root, f'{{**{shown}, {items}}}')}`"
    fields = _changed_fields(before, after)
    if fields and dataclass_fields(value) is not None:
        items = ", ".join(f"{k}={v}" for k, v in fields)
        return f"`{_assign(kind, shown, root, f'dataclasses.replace({shown}, {items})')}`"
    new = _assign(kind, shown, root, f"copy.copy({shown})")
    if fields:
        k, v = fields[0]
        return f"`{new}` before `{shown}.{k} = {v}`"
    return f"`{new}` before changing it"


def _assign(kind: Any, shown: str, root: str, new: str) -> str:
    """``shown = new`` as the front-end allows (``Frontend.stale_assign``)."""
    from .frontend import of_kind

    fe = of_kind(kind)
    return fe.stale_assign(shown, root, new) if fe is not None else f"{shown} = {new}"


def _changed_fields(before: str, after: str) -> list[tuple[str, str]]:
    """The fields whose text differs between two snapshots of one object, ``Cfg(scale=1.0)``
    and ``Cfg(scale=2.0)``: ``[('scale', '2.0')]`` (only values written as literals)."""
    old, new = _fields(before), _fields(after)
    if old is None or new is None:
        return []
    return [(k, v) for k, v in new.items() if old.get(k) != v][:3]


def _fields(text: str) -> dict[str, str] | None:
    try:
        call = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(call, ast.Call) or call.args:
        return None
    out = {}
    for kw in call.keywords:
        try:
            ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None  # a shortened or non-literal value: no code made from it
        if kw.arg is None:
            return None
        out[kw.arg] = ast.unparse(kw.value)
    return out


def _changed_items(before: str, value: Any) -> list[tuple[Any, Any]]:
    """The items of a dict of literals that differ from its text at compile (``before``)."""
    if type(value) is not dict:
        return []
    literal = (int, float, complex, str, bytes, bool, type(None))
    if not all(type(x) in literal for kv in value.items() for x in kv):
        return []  # (no repr of the user's objects: they may run code)
    try:
        old = ast.literal_eval(before)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return []
    if not isinstance(old, dict):
        return []
    return [(k, v) for k, v in value.items() if k not in old or old[k] != v][:3]
