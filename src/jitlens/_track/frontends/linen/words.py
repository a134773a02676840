"""Reasons of nn.jit rows, reworded with what only the tracker knows.

The explainer (``_core/explain``) diffs keys alike for every front-end; the
words of ``_core/messages_transforms`` need facts that live with the record:
how many earlier wrappers of the same code compiled, the module class an
``nn.jit`` row jits and where its class was built, the module's fields behind
each hash flax keys on. :func:`reword` is the linen front-end's
``Frontend.reword``, called by ``describe.describe_and_explain``.
"""

from __future__ import annotations

import weakref
from typing import Any

from ...._compat import linen_api
from ...._core.key import Key
from ...._core.kinds import ReasonKind
from ...._core.reasons import linen as W
from ...._core.report import Reason
from ...._core.template_kinds import FixKind
from ...records import Record
from ...registry import REGISTRY
from .adapter import LIFTED_NAMES, LinenTarget, target_of


def reword(rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
    """``reasons`` of a trace of the nn.jit row ``rec`` in linen's terms."""
    target = target_of(rec)
    if target is not None:
        # flax compares its module proxy by hash alone: the weakref beside it is never a cause
        fields = _linen_fields(rec, target, key)
        kept = [r for r in reasons if r.where[: len(_MODULE_REF)] != _MODULE_REF]
        if len(kept) < len(reasons):
            kept.extend(fields)
        out = [_linen(rec, target, r, len(kept) == 1) for r in kept]
        mode = [r for r in out if r.fix_kind == FixKind.LINEN_MUTABLE]
        if mode:  # init vs apply: the variables and rngs passed differ with the mode
            rest = [r for r in out if r.fix_kind != FixKind.LINEN_MUTABLE and not _lifted(r)]
            new = [r for r in rest if r.kind == ReasonKind.NEW_FUNCTION]  # most decisive first
            return [*new, *mode, *(r for r in rest if r.kind != ReasonKind.NEW_FUNCTION)]
        return out
    return reasons


# ------------------------------------------------------------------ nn.jit

#: Where flax keeps the module's weak reference beside its hash (``fingerprint[1].module_ref``).
_MODULE_REF = (("arg", LIFTED_NAMES[0]), ("item", 1), ("attr", "module_ref"))


def _root(r: Reason) -> str:
    """The argument of the lifted function a reason is about (``fingerprint``, ``rngs``, ...)."""
    return str(r.where[0][1]) if r.where and r.where[0][0] == "arg" else ""


def _linen(rec: Record, target: LinenTarget, r: Reason, alone: bool) -> Reason:
    if r.kind == ReasonKind.NEW_FUNCTION:
        return W.linen_new_class(
            r, target.cls, target.built_in, REGISTRY.earlier_wrappers(rec), alone
        )
    if r.kind == ReasonKind.PYTREE_STRUCTURE and _root(r) == LIFTED_NAMES[2]:
        return W.linen_rngs(r, target.cls)
    if r.fix_kind == FixKind.LINEN_FIELD or _root(r) != LIFTED_NAMES[0]:
        return r  # a field named by _linen_fields (worded there), or the method's arguments
    part = r.where[1:2]  # fingerprint = (mutable, module hash)
    if part == (("item", 1),):
        return W.linen_fields(r, target.cls, target.method)
    if part in ((("item", 0),), ()):
        return W.linen_mutable(r, target.cls, r.before, r.after)
    return r


#: record -> {module hash: the module's fields then}, for naming the field that changed.
_FIELDS: weakref.WeakKeyDictionary[Record, dict[int, dict[str, str]]] = weakref.WeakKeyDictionary()
#: Module hashes remembered per nn.jit row.
MAX_FIELD_SNAPSHOTS = 16


def _fingerprint(key: Key) -> Any:
    entry = key.entries.get((("arg", LIFTED_NAMES[0]),))
    return entry.static.value() if entry is not None and entry.static is not None else None


def _linen_fields(rec: Record, target: LinenTarget, key: Key) -> list[Reason]:
    """The module fields that changed since the closest earlier trace of the same mode.

    flax keys nn.jit on a hash of the module's fields; jitlens remembers the
    fields behind each hash it saw, and names the ones that differ.
    """
    value = _fingerprint(key)
    parts = linen_api.fingerprint_parts(value)
    if parts is None or parts[1] is None:
        return []
    mutable, h = parts
    fields = linen_api.module_fields(linen_api.module_of(value))
    seen = _FIELDS.setdefault(rec, {})
    earlier = []
    for k in rec.keys:
        p = linen_api.fingerprint_parts(_fingerprint(k))
        if p is not None and p[1] is not None and p[1] != h and p[0] == mutable:
            earlier.append(p[1])
    if len(seen) < MAX_FIELD_SNAPSHOTS:
        seen[h] = fields
    before = seen.get(earlier[-1]) if earlier else None
    if not before or not fields:
        return []
    where = (("arg", LIFTED_NAMES[0]), ("item", 1))  # the module hash stands for its fields
    return [
        W.linen_field(
            Reason(
                ReasonKind.STATIC_VALUE,
                LIFTED_NAMES[0],
                f"{target.cls}.{name}",
                before.get(name, "absent"),
                fields.get(name, "absent"),
                "",
                "",
                fix_kind=FixKind.LINEN_FIELD,  # worded just below
                where=(*where, ("attr", name)),
            ),
            target.cls,
            target.method,
        )
        for name in sorted(set(before) | set(fields))
        if before.get(name) != fields.get(name)
    ]


def _lifted(r: Reason) -> bool:
    """A difference in the variables or rngs nn.jit passes (not in the user's arguments)?"""
    return _root(r) in LIFTED_NAMES[1:]
