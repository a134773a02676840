"""Key diff -> :class:`Reason` objects: the culprit of a recompilation, and its fix.

``explain(new, previous)`` picks the compiled key closest to the new one and lists every
difference, most decisive first, each with a message (what changed and why JAX cares) and a fix
that works in the installed versions; the words live in ``reasons`` (one module per kind), this
decides *what*."""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

from .._compat import cache_keys
from .._peek import dataclass_fields, is_a, static_attr
from .._record import record
from . import callees
from .difference import first_difference
from .key import (
    Entry,
    Key,
    Path,
    StaticVal,
    changed_in_place,
    diff_texts,
    render_path,
    same_type,
)
from .kinds import NNX_ROW_KINDS, EntryKind, RowKind
from .lazy import OnFirstUse
from .paths import Entries, code_path, parent_in, under, written_path
from .report import Reason
from .shown import closure_bundle

R, W = OnFirstUse(".rank", __package__), OnFirstUse(".reasons", __package__)  # at a retrace
N = OnFirstUse(".nearest", __package__)  # the closest compiled key, at a retrace


def _arg(path: Path) -> str:
    return str(path[0][1]) if path else ""


def diff_keys(old: Key, new: Key) -> list[Reason]:
    """Every difference between two keys, most decisive first."""
    reasons: list[Reason] = []
    old_cfg, new_cfg = dict(old.config), dict(new.config)
    for name in sorted(set(old_cfg) | set(new_cfg)):
        if old_cfg.get(name) != new_cfg.get(name):
            reasons.append(W.config(name, old_cfg.get(name, "unset"), new_cfg.get(name, "unset")))

    o, n = old.entries, new.entries
    var_values = _variable_value_changes(o, n)
    for vp, (var_type, before, after) in var_values.items():
        r = W.variable_value_structure(_arg(vp), render_path(vp), var_type, before, after)
        reasons.append(_at(r, vp, (o.get(vp), n.get(vp))))
    skip = {(*vp, ("attr", "value")) for vp in var_values}
    o = {p: e for p, e in o.items() if not under(p, skip)}
    n = {p: e for p, e in n.items() if not under(p, skip)}
    added = {p for p in n if p not in o}
    removed = {p for p in o if p not in n}
    changed_roots: set[Path] = set()
    # pre-order (parents first): a changed node comes before its children, then skipped
    for p in o:
        if p not in n or (changed_roots and parent_in(p, changed_roots)):
            continue
        eo, en = o[p], n[p]
        if eo.same(en):
            continue
        r = _diff_entry(p, eo, en, o.get(p[:-1]), n)
        if r is not None:
            reasons.extend(r)
            if (
                eo.kind != en.kind
                or (eo.kind == EntryKind.NODE and eo.type_name != en.type_name)
                or (eo.kind in (EntryKind.NODE, EntryKind.VAR) and not _types_equal(eo, en))
            ):
                changed_roots.add(p)
    for p in sorted(added, key=lambda q: (len(q), render_path(q))):
        if parent_in(p, added) or parent_in(p, changed_roots) or p[-1][0] == "passed":
            continue
        reasons.append(_at(_structure(p, None, n[p], o, n), p, (None, n[p])))
    for p in sorted(removed, key=lambda q: (len(q), render_path(q))):
        if parent_in(p, removed) or parent_in(p, changed_roots) or p[-1][0] == "passed":
            continue
        reasons.append(_at(_structure(p, o[p], None, o, n), p, (o[p], None)))
    return R.rank(list(dict.fromkeys(reasons)), o, n)  # a list's items: one length


def _at(r: Reason, p: Path, entries: tuple[Entry | None, Entry | None] = (None, None)) -> Reason:
    """``r`` with its structured path: ``p``, unless the builder set a deeper one (a part inside
    a static, a Variable's metadata) or a shallower one (a Variable's value is the Variable);
    ``entries``: the two keys' entries there."""
    return r if r.where else r.replace(where=p, entries=entries)


def _variable_value_changes(
    o: dict[Path, Entry], n: dict[Path, Entry]
) -> dict[Path, tuple[str, str, str]]:
    """Variables (both present) whose value is a pytree whose *structure* changed."""
    roots = {
        (*vp, ("attr", "value")): vp
        for vp, ev in n.items()
        if ev.kind == EntryKind.VAR and vp in o and o[vp].kind == EntryKind.VAR
    }
    if not roots:
        return {}
    sub_o: dict[Path, dict[Path, Entry]] = {}
    sub_n: dict[Path, dict[Path, Entry]] = {}
    for entries, sub in ((o, sub_o), (n, sub_n)):
        for p, e in entries.items():
            # a Variable's value sits right below it: find the nearest root prefix
            for k in range(len(p), 1, -1):
                root = p[:k]
                if root in roots:
                    sub.setdefault(root, {})[p[k:]] = e
                    break
    out = {}
    for root, vp in roots.items():
        so, sn = sub_o.get(root, {}), sub_n.get(root, {})
        if set(so) != set(sn) or any(so[k].kind != sn[k].kind for k in so):
            out[vp] = (n[vp].type_name, _value_summary(so), _value_summary(sn))
    return out


def _value_summary(sub: dict[Path, Entry]) -> str:
    top = sub.get(())
    if top is None:
        return "absent"
    if top.kind == EntryKind.NODE:
        n = sum(1 for p in sub if len(p) == 1)
        return f"{top.type_name} of {n}"
    return _short(top)


def _flax_layer(e: Entry) -> bool:
    t = e.type_ref() if e.type_ref is not None else None
    return (getattr(t, "__module__", "") or "").startswith("flax.")


def _class_spelling(e: Entry) -> str:
    """How the user writes ``e``'s class: ``nnx.Param`` for flax's own, else its name."""
    return f"nnx.{e.type_name}" if _flax_layer(e) else e.type_name


def _types_equal(a: Entry, b: Entry) -> bool:
    ta = a.type_ref() if a.type_ref is not None else None
    tb = b.type_ref() if b.type_ref is not None else None
    return ta is tb


def _structure(
    p: Path, before: Entry | None, after: Entry | None, o: dict[Path, Entry], n: dict[Path, Entry]
) -> Reason:
    e, entries = (after, n) if after is not None else (before, o)
    assert e is not None
    if p[0][0] == "jit":
        shown = e.static.display() if e.static is not None else "set"
        pair = ("default", shown) if before is None else (shown, "default")
        return W.jit_option(str(p[0][1]), *pair)
    parent = entries.get(p[:-1])
    in_graph = e.in_graph or (parent is not None and parent.in_graph)
    if len(p) == 1:
        return W.argument_added_removed(_arg(p), before is None)
    if not in_graph and p[-1][0] == "item" and getattr(parent, "type_name", "") in W.SEQUENCES:
        return W.sequence_length(_arg(p), p[:-1], parent.type_name, o, n)
    what = e.type_name if e.kind in (EntryKind.NODE, EntryKind.VAR) else _short(e)
    if in_graph:
        var_type = e.type_name if e.kind == EntryKind.VAR else ""
        own = bool(var_type) and not _flax_layer(e)  # the program's own Variable class: a Loss
        return W.graph_attribute(
            _arg(p), render_path(p), what, added=before is None, var_type=var_type, own=own
        )
    return W.pytree_key(_arg(p), render_path(p), what, added=before is None)


def _short(e: Entry) -> str:
    if e.kind == EntryKind.AVAL and e.aval is not None:
        return e.aval.short()
    if e.kind == EntryKind.STATIC and e.static is not None:
        return e.static.display()
    if e.kind == EntryKind.NONE:
        return "None"
    if e.kind == EntryKind.REF:
        return f"shared reference to {e.target or 'an earlier node'}"
    if e.kind in (EntryKind.NODE, EntryKind.VAR):
        return e.type_name
    return e.target or e.kind


def _diff_entry(
    p: Path, eo: Entry, en: Entry, parent: Entry | None = None, entries: Entries | None = None
) -> list[Reason] | None:
    """The reasons ``eo`` -> ``en`` at ``p``, each with its structured path."""
    value_of = parent is not None and parent.kind == EntryKind.VAR and p[-1] == ("attr", "value")
    found = _entry_reasons(p, eo, en, parent, entries)
    if found is None:
        return None
    loc = p[:-1] if value_of else p  # a Variable's value: the user writes `model.kernel`
    own = ((), p)  # not a deeper path a builder set (a part inside a static, a metadata key)
    return [r.replace(where=loc, entries=(eo, en)) if r.where in own else r for r in found]


def _entry_reasons(
    p: Path, eo: Entry, en: Entry, parent: Entry | None, entries: Entries | None
) -> list[Reason] | None:
    var = parent is not None and parent.kind == EntryKind.VAR and p[-1] == ("attr", "value")
    arg, variable = _arg(p), _class_spelling(parent) if var and parent else ""
    # a Variable's value is written `model.kernel`; a dict's child `hyperparams['lr']`
    path = render_path(written_path(p[:-1] if variable else p, entries))
    if p[0][0] == "jit":
        assert eo.static is not None and en.static is not None
        return [W.jit_option(str(p[0][1]), eo.static.display(), en.static.display())]
    if p[-1][0] == "passed":
        return [W.signature(arg, eo.target, en.target)]
    if eo.kind != en.kind:
        if eo.kind == EntryKind.VAR and en.kind == EntryKind.AVAL and en.in_graph:
            return [W.variable_replaced(arg, path, _class_spelling(eo), _short(eo), _short(en))]
        if eo.in_graph or en.in_graph:
            return [W.graph_kind_change(arg, path, _short(eo), _short(en))]
        none = EntryKind.NONE in (eo.kind, en.kind)
        return [W.pytree_kind_change(arg, path, _short(eo), _short(en), none=none)]
    if eo.kind == EntryKind.AVAL:
        a, b = eo.aval, en.aval
        assert a is not None and b is not None
        out = []
        key_change = a.dtype != b.dtype and "key<" in a.dtype + b.dtype
        if a.shape != b.shape and not key_change:  # a typed key's raw data differs in shape too
            axis = b.batch_axis if b.batch_axis is not None else a.batch_axis
            dims = (a.shape, b.shape)
            out.append(W.shape(arg, path, a.short(), b.short(), en.in_graph, axis, dims))
        if a.dtype != b.dtype and a.weak == b.weak:  # else one change, said as a weak type
            out.append(W.dtype(arg, path, a.short(), b.short(), b.dtype, a.dtype))
        if a.weak != b.weak:
            code = code_path(p[:-1] if variable else p, entries)
            weak = (a.short(), b.short(), a.dtype, b.weak, variable, code, b.dtype)
            out.append(W.weak_type(arg, path, *weak, nodes=(p, entries)))
        if a.sharding != b.sharding or a.devices != b.devices:  # (the devices: of its mesh)
            default = "uncommitted (default device)"
            placed = (a.sharding or default, b.sharding or default, b.sharding_type)
            held = code_path(p[:-1], entries) if variable else ""  # placed in place
            out.append(W.sharding(arg, path, *placed, held, (a.devices, b.devices)))
        return out
    if eo.kind == EntryKind.STATIC:
        assert eo.static is not None and en.static is not None
        layer = (
            parent.type_name
            if parent is not None and parent.kind == EntryKind.NODE and _flax_layer(parent)
            else ""
        )
        return [_static(arg, path, p, eo.static, en.static, en.in_graph, "", layer, entries)]
    if eo.kind == EntryKind.NODE:
        if not _types_equal(eo, en):
            if eo.type_name == en.type_name:
                return [W.class_redefined(arg, path, eo.type_name)]
            if eo.in_graph or en.in_graph:
                return [W.node_type_change(arg, path, eo.type_name, en.type_name)]
            return [W.pytree_kind_change(arg, path, eo.type_name, en.type_name, none=False)]
        out = []
        for (k, v1), (_k2, v2) in zip(eo.meta, en.meta, strict=False):
            if not v1.same(v2):
                out.append(_static(arg, path, p, v1, v2, en.in_graph, aux=k))
        return out or None
    if eo.kind == EntryKind.VAR:
        if not _types_equal(eo, en):
            return [W.graph_kind_change(arg, path, eo.type_name, en.type_name)]
        mo, mn = dict(eo.meta), dict(en.meta)
        out = []
        for k in sorted(set(mo) | set(mn)):
            v1, v2 = mo.get(k), mn.get(k)
            if v1 is None or v2 is None or not v1.same(v2):
                shown = (v1.display() if v1 else "unset", v2.display() if v2 else "unset")
                meta = W.variable_metadata(arg, path, k, *shown, en.type_name)
                out.append(_at(meta, (*p, ("attr", k))))
        return out or None
    if eo.kind == EntryKind.REF:
        return [W.graph_kind_change(arg, path, _short(eo), _short(en))]
    return [W.unknown(arg, path, _short(eo), _short(en))]


def _static(
    arg: str,
    path: str,
    p: Path,
    old: StaticVal,
    new: StaticVal,
    in_graph: bool,
    aux: str = "",
    layer: str = "",
    entries: Entries | None = None,
) -> Reason:
    """A static that differs: a changed value, or a fresh object compared by identity.

    The two values are searched for the part that differs (a tuple item, a
    dataclass field, a partial's function...). Only when that part is a fresh
    object on both sides (a lambda, a partial, an instance of a class without
    ``__eq__``: an equal-looking rebuild misses too) is it ``identity_static``;
    anything else unequal is a changed value, shown where it differs (``entries``: the jit's).
    """
    un = None if in_graph or aux else W.unstatic(entries, arg)  # how to make it not static

    def identity(*found: Any) -> Reason:  # its words are read only for a fresh object
        return W.identity_static(*found, in_graph=in_graph, unstatic=un)

    field = not in_graph and not aux and len(p) > 1 and p[0][0] == "arg"
    if not same_type(old, new) and old.same(new):
        return _at(W.static_type(arg, path, old, new), p)
    if changed_in_place(old, new):
        then, now = old.snapshot or old.key_text, new.snapshot or new.text
        return _at(_mutation(arg, path, then, now, new), p)
    mutated = N.mutated_text(old, new)
    if mutated is not None:
        return _at(_mutation(arg, path, old.snapshot or old.key_text, mutated, new), p)
    boxed = in_graph  # compared as a dataclass field (flax's graph records, a user's dataclass)
    a, b = old.value(), new.value()
    fields = W.data_fields(a, b) if len(p) == 1 and not in_graph and not aux else None
    if a is not None and b is not None:
        # the key's comparison already found them unequal: no second call of a user's __eq__
        found = first_difference(a, b, unequal=True)
        if found is not None and found[0]:
            parts, pa, pb = found
            part_old, part_new = StaticVal(pa), StaticVal(pb)
            if _closure_bundle(a):  # the user rebuilds the whole transform, not its closures
                if part_old.fresh and part_new.fresh:
                    attr = str(p[-1][1]) if len(p) > 1 else arg
                    return _at(identity(arg, path, attr, old, new), p)
            else:
                p = (*p, *parts)
                path = render_path(p)
                old, new = part_old, part_new
                boxed = boxed or dataclass_fields(a) is not None
    attr = str(p[-1][1]) if len(p) > 1 else arg
    if W.is_nan(old.value()) and W.is_nan(new.value()):
        return _at(_nan(arg, path, attr, old, new, boxed), p)
    dtypes = W.as_dtype(old.value()), W.as_dtype(new.value())
    if dtypes[0] is not None and dtypes[0] == dtypes[1]:
        return _at(W.dtype_spelling(arg, path, attr, old, new), p)
    if old.fresh and new.fresh:
        return _at(identity(arg, path, attr, old, new), p)
    mode_flag = attr in W.MODE_FLAGS and type(new.value()) is bool
    if layer and not mode_flag and not field:  # a flax layer's own configuration
        before, after = diff_texts(old.full_text(), new.full_text())
        return _at(W.layer_config(arg, path, layer, before, after), p)
    if fields is not None and len(p) == 2:  # a float field of a plain dataclass static
        return _at(W.static_dataclass_field(arg, path, attr, old, new, *fields, unstatic=un), p)
    kw = {"in_graph": in_graph, "aux": aux, "field": field, "unstatic": un}
    return _at(W.static_value(arg, path, attr, old, new, **kw), p)


def _mutation(arg: str, path: str, then: str, now: str, new: StaticVal) -> Reason:
    """A static changed in place: stale hits since (jax <= 0.10), or misses (jax >= 0.11)."""
    if cache_keys.mutated_static_hits():
        return W.mutated_static(arg, path, then, now, new.text)
    return W.mutated_static_miss(arg, path, then, now, new.text)


def _nan(arg: str, path: str, attr: str, old: StaticVal, new: StaticVal, boxed: bool) -> Reason:
    """Two NaNs: one shared NaN object hits, unless even it missed (Python >= 3.13 dataclass)."""
    same_object = old.alive() and new.alive() and old.value() is new.value()
    if same_object or (boxed and cache_keys.dataclass_fields_skip_identity()):
        return W.nan_field(arg, path, attr, old, new)
    return W.nan_static(arg, path, attr, old, new)


def _closure_bundle(a: Any) -> bool:
    """A library object made of closures (an optax transform): the user rebuilds the whole."""
    return "GradientTransformation" in type(a).__qualname__ or closure_bundle(a)


def closest(new: Key, previous: Sequence[Key]) -> tuple[Key | None, list[Reason]]:
    """The previous key with the fewest differences (ties: most recent) and the diff: found by
    :func:`.nearest.nearest` without building reasons, which are built for that key only."""
    best = N.nearest(new, previous)
    return best, (diff_keys(best, new) if best is not None else [])


def explain(
    new: Key,
    live: Sequence[Key],
    cleared: Sequence[Key] = (),
    cache_fill: tuple[int, int] | None = None,
) -> list[Reason]:
    """Reasons for a retrace of ``new`` given the keys compiled before.

    ``live`` are keys that should still be in JAX's cache; ``cleared`` those
    compiled before a ``clear_cache()`` / ``jax.clear_caches()`` jitlens saw.
    ``cache_fill``: ``(entries, capacity)`` of JAX's trace cache now, the
    evidence of an eviction when a live key equals the new one.
    """
    if live:
        k, rs = closest(new, live)
        if rs:
            return [R.with_history(r, new, k, live) for r in rs]
        return [no_difference(new, cache_fill)]
    if cleared:
        _k, rs = closest(new, cleared)
        return [W.cache_cleared(), *rs]
    return []


def differences(new: Key, live: Sequence[Key], cleared: Sequence[Key] = ()) -> list[Reason]:
    """What differs from the closest compiled key (live ones first); no cause for equal keys."""
    if live or cleared:
        return closest(new, live or cleared)[1]
    return []


def no_difference(new: Key, cache_fill: tuple[int, int] | None) -> Reason:
    """An equal key compiled again: an eviction if JAX's trace cache is full, else unknown."""
    if cache_fill is not None and cache_fill[1] > 0 and cache_fill[0] >= cache_fill[1]:
        return W.cache_evicted(*cache_fill)
    return W.no_difference(_compared(new))


def _compared(key: Key) -> str:
    """What jitlens compared, for a reason that found nothing: positions and the signature."""
    n = sum(1 for p in key.entries if p[-1][0] != "passed")
    sig = key.signature if len(key.signature) <= 80 else key.signature[:77] + "..."
    return f"{n} key position(s) ({sig or 'no arguments'}) and the JAX config"


def data_free_vars(fn: Any) -> tuple[str, ...]:
    """Names a closure reads from its enclosing function that hold data (not functions or modules)."""
    code, cells = static_attr(fn, "__code__"), static_attr(fn, "__closure__")
    if not is_a(code, types.CodeType) or not is_a(cells, tuple):
        return ()
    out = []
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if callable(v) or is_a(v, (type, types.ModuleType)) or _closure_bundle(v):
            continue  # an optax transform is not data: it cannot be passed as an argument
        out.append(name)
    return tuple(out)


@record
class Wrapper:
    """What the first-trace policy needs of a jitted callable (a record, as plain data)."""

    name: str
    qualname: str
    kind: str
    defined_at: str
    calls: int
    keys: tuple[Key, ...]
    #: The function a rebuilt partial binds (named in the fix), if the row is a partial.
    partial: Any = None
    #: Values the jitted function reads from the function that built it (a closure).
    free_vars: tuple[str, ...] = ()
    #: The functions its closure calls (``_compat.closure_callees``), compared by code.
    callees: tuple[Any, ...] = ()
    #: ``(class, method)`` when it jits a method of an instance (``jax.jit(self.loss)``).
    method: tuple[str, str] | None = None
    options: str = ""  #: the jit's static options as code (", static_argnums=1"), kept in fixes


def explain_first_trace(
    new: Key, wrapper: Wrapper, shared: Sequence[Key], siblings: Sequence[Wrapper]
) -> list[Reason]:
    """Reasons for the *first* trace of a wrapper: a retrace when another wrapper compiled.

    ``shared`` are keys of other records sharing this wrapper's cache (``nnx.cached_partial``
    of one ``nnx.jit``): the trace is explained against them as an ordinary retrace.
    ``siblings`` are earlier wrappers of the same code: a new wrapper is the cause when one of
    them compiled this very key, or when every earlier wrapper was used for one call only (the
    jit-in-a-loop pattern). Otherwise a new key seen by a new wrapper is simply a first trace.
    """
    if shared:
        return explain(new, [k for k in shared if not k.cleared], [k for k in shared if k.cleared])
    others = [s for s in siblings if s.keys and s.kind == wrapper.kind]
    if not others:
        return []
    change = callees.different_function(wrapper.callees, [s.callees for s in others])
    if change is not None:  # blackjax's one_step over hmc's, then mala's kernel: on purpose
        return [W.different_function(wrapper.name, len(others), *change)]
    _k, diffs = closest(new, [k for s in others for k in s.keys])
    if diffs and not all(s.calls <= 1 for s in others):
        return []
    # reusing the wrapper alone would not remove a key's differences: they lead, it comes last
    kind = RowKind.NNX_JIT if wrapper.kind in NNX_ROW_KINDS else RowKind.JAX_JIT
    name = wrapper.name
    is_lambda = name == "<lambda>" or (
        "<locals>" in wrapper.qualname and wrapper.kind == RowKind.JAX_JIT
    )
    if wrapper.partial is not None:  # a partial rebuilt per call: name what it binds
        head = W.new_partial(name, wrapper.defined_at, len(others), wrapper.partial)
    else:
        at, free, m, o = wrapper.defined_at, wrapper.free_vars, wrapper.method, wrapper.options
        n = len(others)
        head = W.new_function(name, kind, at, n, not diffs, is_lambda, free, method=m, options=o)
    return [*diffs, head]
