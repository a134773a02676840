"""A diff's reasons read with the rest of the key: what causes what, and what the earlier keys say.

``explain.diff_keys`` finds every difference between two keys; some of them
are consequences of another (a new optax optimizer gives its state a new
structure), and some read differently once the earlier compiled keys are
known (a static going 0, 1, 2, 3 is a counter). This module rewords and
orders them so that the reason whose fix alone removes the retrace leads,
and a fix names who makes the value (optax, not the user's ``__init__``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .._compat.libraries import layer_prefix
from . import reasons as W
from .key import Entry, Key, Path, render_path
from .kinds import EntryKind, Fact, ReasonKind, SubjectKind, reason_order
from .report import Reason
from .template_kinds import FixKind

_NNX_OPTIMIZER = "nnx.Optimizer"


def rank(reasons: list[Reason], o: dict[Path, Entry], n: dict[Path, Entry]) -> list[Reason]:
    """``reasons`` (one diff of ``o`` -> ``n``), most decisive first: by kind, except that a new
    optimizer (``optimizer.tx``) leads the state changes it causes."""
    if any(_structure(r.kind) for r in reasons):  # one pass over each key, not per reason
        nodes = (_optax_nodes(o), _optax_nodes(n))
        reasons = [_optax_made(r, o, n, nodes) for r in reasons]
    reasons = _whole_arguments(reasons, n)
    reasons = _placed_together(reasons)
    reasons = _library_made(reasons, o, n)
    tx_changed = any(_is_optax_transform(r) for r in reasons)
    made = [r for r in reasons if Fact.OPTAX_MADE in r.facts]
    if tx_changed and made:  # another kind of optimizer: inject_hyperparams would not help
        reasons = [W.optax_kind(r, made[0].path) if _is_optax_transform(r) else r for r in reasons]
    return sorted(
        reasons,
        key=lambda r: (
            (tx_changed and Fact.OPTAX_MADE in r.facts) or Fact.LIBRARY_MADE in r.facts,
            reason_order(r.kind),
        ),
    )


@functools.cache
def _structure(kind: ReasonKind) -> bool:
    """A kind whose change a library may make (its ``KindSpec.structure``): optax, a layer; read
    from that kind's module alone (a retrace imports the words of its own kinds only)."""
    return W.kind_spec(kind).structure


def _whole_arguments(reasons: list[Reason], n: dict[Path, Entry]) -> list[Reason]:
    """Leaves of one argument all placed otherwise the same way (a checkpoint restore hands back
    committed arrays): one reason whose fix puts the whole argument, in place of the first leaf's
    reason; a fix naming one leaf leaves the others to compile again. Kept leaf by leaf: an nnx
    Variable (placed in place), and an argument with an array placed otherwise than the rest."""
    groups: dict[tuple[Any, ...], list[Reason]] = {}
    for r in reasons:
        placed = _placed_leaf(r, n)
        if placed is not None:
            groups.setdefault((r.where[0], *placed), []).append(r)
    folded: dict[int, Reason] = {}  # id of a group's first reason -> the group's reason
    gone: set[int] = set()
    for (root, _, after), leaves in groups.items():
        under = [e for p, e in n.items() if p[:1] == (root,) and e.kind is EntryKind.AVAL]
        if len(leaves) < 2 or any(e.aval is None or e.aval.sharding != after for e in under):
            continue
        folded[id(leaves[0])] = W.whole_argument(leaves, render_path((root,)))
        gone.update(id(r) for r in leaves[1:])
    return [folded.get(id(r), r) for r in reasons if id(r) not in gone]


def _placed_together(reasons: list[Reason]) -> list[Reason]:
    """Leaves of several arguments (or nnx Variables, placed in place) all placed otherwise the
    same way: the model's parameter and its optimizer's momentum, say. Each keeps its reason; they
    share one fix that places every one of them, a line each: a fix naming one leaf left the
    others to compile again (the reader applied the fix shown and the step compiled twice)."""
    groups: dict[tuple[str, str], list[Reason]] = {}
    for r in reasons:
        if r.kind is ReasonKind.SHARDING and r.fix_kind is FixKind.SHARDING:
            groups.setdefault((r.before, r.after), []).append(r)
    shared: dict[int, Reason] = {}
    for leaves in groups.values():
        if len(leaves) > 1:
            shared.update(zip(map(id, leaves), W.placed_together(leaves), strict=True))
    return [shared.get(id(r), r) for r in reasons] if shared else reasons


def _placed_leaf(r: Reason, n: dict[Path, Entry]) -> tuple[str, str] | None:
    """The placement before and after of ``r``, a leaf of an argument placed otherwise (not an
    nnx Variable's value, which is placed in place); None for any other reason."""
    if r.kind is not ReasonKind.SHARDING or r.fix_kind is not FixKind.SHARDING:
        return None
    if len(r.where) < 2 or r.where[0][0] != "arg":
        return None
    eo, en = r.entries
    for q in (r.where, r.where[:-1]):  # a Variable's reason is at the Variable, or its value
        if (e := n.get(q)) is not None and e.kind is EntryKind.VAR:
            return None
    if eo is None or en is None or eo.aval is None or en.aval is None:
        return None
    return eo.aval.sharding, en.aval.sharding


def _library_made(
    reasons: list[Reason], o: dict[Path, Entry], n: dict[Path, Entry]
) -> list[Reason]:
    """Structure changes inside a flax/equinox layer (``model.bias`` of an ``nnx.Linear``
    built with ``use_bias=False``): the layer's arguments made them, and those lead."""
    config: dict[Path, list[str]] = {}  # layer path -> its changed arguments
    for r in reasons:
        if r.fix_kind is FixKind.LAYER and len(r.where) > 1:  # one argument of a layer
            config.setdefault(r.where[:-1], []).append(f"`{r.where[-1][1]}`")
    out = []
    for r in reasons:
        # a Variable the program replaced by an array: its assignment, not the layer's making
        mine = r.fix_kind is FixKind.VAR_REPLACED
        cls = _layer_class(r, o, n) if _structure(r.kind) and not mine else ""
        if cls and Fact.OPTAX_MADE not in r.facts:
            args = ", ".join(config.get(r.where[:-1], []))
            r = W.library_made(r, cls, f" (here {args})" if args else "")
        out.append(r)
    return out


def _layer_class(r: Reason, o: dict[Path, Entry], n: dict[Path, Entry]) -> str:
    """``nnx.Linear`` when ``r`` is about an attribute of a flax/equinox layer, else ""."""
    p = r.where
    for entries in (n, o):
        parent = entries.get(p[:-1]) if p in entries and len(p) > 1 else None
        if parent is None or parent.kind is not EntryKind.NODE or p[-1][0] != "attr":
            continue
        prefix = layer_prefix(module_of(parent))  # as its library declares it (nnx., eqx.nn.)
        if prefix and not module_of(parent).startswith("flax.nnx.training"):
            return prefix + parent.type_name
    return ""


def _optax_made(
    r: Reason,
    o: dict[Path, Entry],
    n: dict[Path, Entry],
    nodes: tuple[list[tuple[Path, str]], list[tuple[Path, str]]],
) -> Reason:
    """A structure change in state optax builds (an optimizer's ``opt_state``): worded so."""
    if not _structure(r.kind):
        return r
    cls = _optax_class(r.where, o, nodes[0]) or _optax_class(r.where, n, nodes[1])
    return W.optax_state(r, "" if cls == _NNX_OPTIMIZER else cls) if cls else r


def _optax_nodes(entries: dict[Path, Entry]) -> list[tuple[Path, str]]:
    """The optax nodes of a key (path, class name): read once per diff, as a pytree of 10,000
    leaves that changed structure has as many reasons (a scan of the key per reason took
    41 s at 3,000 leaves)."""
    return [
        (q, e.type_name)
        for q, e in entries.items()
        if e.kind is EntryKind.NODE and module_of(e).startswith("optax")
    ]


def _optax_class(p: Path, entries: dict[Path, Entry], nodes: list[tuple[Path, str]]) -> str:
    """The optax class at or right below ``p`` (or above it), ``nnx.Optimizer`` when ``p`` is
    in an nnx.Optimizer's ``opt_state``, else ""; ``nodes`` are the key's optax nodes."""
    if p not in entries:
        return ""
    if ("attr", "opt_state") in p:
        owner = entries.get(p[: p.index(("attr", "opt_state"))])
        if owner is not None and module_of(owner).startswith("flax.nnx.training"):
            return _NNX_OPTIMIZER
    for q, type_name in nodes:
        if (q[: len(p)] == p and len(q) - len(p) <= 2) or p[: len(q)] == q:
            return type_name
    return ""


def module_of(e: Entry) -> str:
    """The module of ``e``'s class ("" when unknown)."""
    t = e.type_ref() if e.type_ref is not None else None
    return getattr(t, "__module__", "") or ""


def _is_optax_transform(r: Reason) -> bool:
    return r.kind is ReasonKind.IDENTITY_STATIC and r.subject is SubjectKind.OPTAX_TRANSFORM


def with_history(r: Reason, new: Key, old: Key | None, live: Sequence[Key]) -> Reason:
    """``r`` reworded from every compiled key when it is a module's static number: a counter
    (0, 1, 2, ...) is then one reason with one fix, however many retraces it causes."""
    if r.kind is not ReasonKind.STATIC_VALUE or old is None:
        return r
    p = r.where
    en, eo = new.entries.get(p), old.entries.get(p)
    if en is None or eo is None or not en.in_graph or len(p) < 2:
        return r
    if en.static is None or eo.static is None or not W.is_number(en.static.value()):
        return r
    parent = new.entries.get(p[:-1])
    attr = str(p[-1][1])
    flax_layer = (
        parent is not None
        and parent.kind is EntryKind.NODE
        and module_of(parent).startswith("flax.")
    )
    if attr in W.MODE_FLAGS or flax_layer:
        return r
    values = [v for k in live if (v := _static_value(k, p)) is not None and W.is_number(v)]
    again = W.static_value(
        r.argument, r.path, attr, eo.static, en.static, in_graph=True,
        history=[*values, en.static.value()],
    )  # fmt: skip
    return again.replace(where=p)


def _static_value(k: Key, p: Path) -> object:
    e = k.entries.get(p)
    return e.static.value() if e is not None and e.static is not None else None
