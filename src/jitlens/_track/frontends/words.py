"""Reasons of pmap and nn.jit rows, reworded with what only the tracker knows.

The explainer (``_core/explain``) diffs keys alike for every front-end; the
words of ``_core/messages_transforms`` need facts that live with the record:
how many earlier wrappers of the same code compiled, the names a rebuilt
lambda reads, a pmap's ``axis_name``, the module class an ``nn.jit`` row
jits and where its class was built. :func:`reword` is called by
``describe.describe_and_explain`` for every traced call with reasons.
"""

from __future__ import annotations

import dis
import types
import weakref
from typing import Any

from ..._compat import linen_api
from ..._core import messages_transforms as W
from ..._core.explain import data_free_vars
from ..._core.key import Key
from ..._core.report import Reason
from ..records import Record
from ..registry import REGISTRY
from . import linen as fe_linen
from . import pmap as fe_pmap


def reword(rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
    """``reasons`` of a trace of ``rec`` in its front-end's terms (unchanged for other kinds)."""
    if rec.kind in fe_pmap.KINDS:
        return [_pmap(rec, r, len(reasons) == 1) for r in reasons]
    target = fe_linen.target_of(rec)
    if target is not None:
        # flax compares its module proxy by hash alone: the weakref beside it is never a cause
        fields = _linen_fields(rec, target, key)
        kept = [r for r in reasons if not r.path.startswith(_MODULE_REF)]
        if len(kept) < len(reasons):
            kept.extend(fields)
        out = [_linen(rec, target, r, len(kept) == 1) for r in kept]
        mode = [r for r in out if r.path == W.LINEN_MUTABLE_PATH]
        if mode:  # init vs apply: the variables and rngs passed differ with the mode
            rest = [r for r in out if r.path != W.LINEN_MUTABLE_PATH and not _lifted(r)]
            new = [r for r in rest if r.kind == "new_function"]  # most decisive first
            return [*new, *mode, *(r for r in rest if r.kind != "new_function")]
        return out
    return reasons


# ------------------------------------------------------------------ pmap


def _pmap(rec: Record, r: Reason, alone: bool) -> Reason:
    kind = rec.kind
    if r.kind == "new_function":
        fn = rec.user_fn()
        return W.pmap_new_function(
            r,
            kind,
            REGISTRY.earlier_wrappers(rec),
            rec.defined_at,
            alone,
            one_call(fn),
            data_free_vars(fn),
        )
    if r.kind == "static_value" and r.argument == r.path:
        return W.pmap_static(r)
    if r.kind == "sharding" and "NamedSharding" in r.after:
        root = r.path.split(".", 1)[0].split("[", 1)[0]
        nested = "." in r.path or "[" in r.path
        return W.pmap_sharding(
            r, kind, fe_pmap.axis_name(rec), root, kind == fe_pmap.NNX_PMAP and nested
        )
    return r


def one_call(fn: Any) -> tuple[str, tuple[tuple[str, bool], ...]] | None:
    """``(callee, ((argument name, read from outside), ...))`` when ``fn`` is one call.

    ``lambda b: eval_step(params, b)`` -> ``('eval_step', (('params', True), ('b', False)))``:
    a lambda that only calls a named function with plain names.
    """
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType) or code.co_name != "<lambda>":
        return None
    own = set(code.co_varnames[: code.co_argcount])
    loads: list[tuple[str, bool]] = []
    calls = 0
    for ins in dis.get_instructions(code):
        op = ins.opname
        if op in ("RESUME", "PUSH_NULL", "PRECALL", "RETURN_VALUE", "COPY_FREE_VARS", "CACHE"):
            continue
        if op in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_FAST", "LOAD_NAME", "LOAD_CLOSURE"):
            name = ins.argval if isinstance(ins.argval, str) else str(ins.argval)
            loads.append((name.removeprefix("NULL + ").removesuffix(" + NULL"), name not in own))
            continue
        if op in ("CALL", "CALL_FUNCTION"):
            calls += 1
            continue
        return None  # anything else (attributes, constants, arithmetic): not one plain call
    if calls != 1 or len(loads) < 2 or loads[0][1] is False:
        return None
    return loads[0][0], tuple(loads[1:])


# ------------------------------------------------------------------ nn.jit

_MODULE_REF = f"{fe_linen.LIFTED_NAMES[0]}[1].module_ref"


def _linen(rec: Record, target: fe_linen.LinenTarget, r: Reason, alone: bool) -> Reason:
    if r.kind == "new_function":
        return W.linen_new_class(
            r, target.cls, target.built_in, REGISTRY.earlier_wrappers(rec), alone
        )
    if r.kind == "pytree_structure" and r.path.startswith(fe_linen.LIFTED_NAMES[2]):
        return W.linen_rngs(r, target.cls)
    if r.path.startswith(f"{target.cls}.") and r.argument == fe_linen.LIFTED_NAMES[0]:
        return W.linen_field(r, target.cls, target.method)
    if not r.path.startswith(fe_linen.LIFTED_NAMES[0]):
        return r
    rest = r.path[len(fe_linen.LIFTED_NAMES[0]) :]
    if rest.startswith("[1]"):
        return W.linen_fields(r, target.cls, target.method)
    if rest.startswith("[0]") or not rest:
        return W.linen_mutable(r, target.cls, r.before, r.after)
    return r


#: record -> {module hash: the module's fields then}, for naming the field that changed.
_FIELDS: weakref.WeakKeyDictionary[Record, dict[int, dict[str, str]]] = weakref.WeakKeyDictionary()
#: Module hashes remembered per nn.jit row.
MAX_FIELD_SNAPSHOTS = 16


def _fingerprint(key: Key) -> Any:
    entry = key.entries.get((("arg", fe_linen.LIFTED_NAMES[0]),))
    return entry.static.value() if entry is not None and entry.static is not None else None


def _linen_fields(rec: Record, target: fe_linen.LinenTarget, key: Key) -> list[Reason]:
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
    return [
        Reason(
            "static_value",
            fe_linen.LIFTED_NAMES[0],
            f"{target.cls}.{name}",
            before.get(name, "absent"),
            fields.get(name, "absent"),
            "",
            "",
        )
        for name in sorted(set(before) | set(fields))
        if before.get(name) != fields.get(name)
    ]


def _lifted(r: Reason) -> bool:
    """A difference in the variables or rngs nn.jit passes (not in the user's arguments)?"""
    return r.path.split("[", 1)[0] in fe_linen.LIFTED_NAMES[1:]


REGISTRY.rewords.append(reword)
