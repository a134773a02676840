"""Reasons of pmap rows, reworded with what only the tracker knows.

The explainer (``_core/explain``) diffs keys alike for every front-end; the
words of ``_core/messages_transforms`` need facts that live with the record:
how many earlier wrappers of the same code compiled, the names a rebuilt
lambda reads, a pmap's ``axis_name``. :func:`reword` is the pmap front-end's
``Frontend.reword``, called by ``describe.describe_and_explain``.
"""

from __future__ import annotations

import dis
import types
from typing import Any

from ...._core.explain import data_free_vars
from ...._core.key import Key
from ...._core.kinds import ReasonKind, RowKind, SubjectKind
from ...._core.reasons import pmap as W
from ...._core.report import Reason
from ...records import Record
from ...registry import REGISTRY
from .adapter import axis_name


def reword(rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
    """``reasons`` of a trace of the pmap row ``rec`` in pmap's terms."""
    return [_pmap(rec, r, len(reasons) == 1) for r in reasons]


# ------------------------------------------------------------------ pmap


def _pmap(rec: Record, r: Reason, alone: bool) -> Reason:
    kind = rec.kind
    if r.kind == ReasonKind.NEW_FUNCTION:
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
    if r.kind == ReasonKind.STATIC_VALUE and len(r.where) == 1:  # a whole static argument
        return W.pmap_static(r)
    if r.kind == ReasonKind.SHARDING and r.subject == SubjectKind.NAMED_SHARDING and r.where:
        root = str(r.where[0][1])  # the argument
        nested = len(r.where) > 1
        return W.pmap_sharding(r, kind, axis_name(rec), root, kind is RowKind.NNX_PMAP and nested)
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
