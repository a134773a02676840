"""Keras 3 (JAX backend) rows: the train, test and predict steps keras jits around the user's model.

Keras builds its steps with ``jax.jit`` inside ``fit``/``evaluate``/``predict``
(:mod:`jitlens._compat.keras_api` recognises them). Seen as plain jits they are
keras-internal rows (hidden); :func:`record_for` makes each the user's row,
named in keras' terms (``keras: Sequential.fit train step``), and
:func:`reword` says a retrace in them with the user's names: the batch cut from
``x`` of ``fit`` changed shape (a ragged last batch), and the fix in keras'
terms. Keras' other jits (``compute_output_spec``'s shape inference) never run
the user's data through a compiled step and stay hidden.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import TYPE_CHECKING, Any

from ... import _compat
from ..._compat import keras_api
from ..._core.key import Key
from ..._core.kinds import Fact, ReasonKind, RowKind
from ..._core.lazy import OnFirstUse
from ..._core.report import Reason
from ..frontend import Frontend
from ..records import Record
from ..registry import REGISTRY
from .library_rows import library_record

if TYPE_CHECKING:
    from ..._core.template_kinds import FixKind

#: The row kind.
KIND = RowKind.KERAS
#: The words, loaded at the first retrace (``_core.lazy``).
W = OnFirstUse("..._core.reasons", __package__)
L = OnFirstUse("..._core.reasons.library", __package__)

#: record -> the keras step it is.
STEPS: weakref.WeakKeyDictionary[Record, _compat.LibraryJit] = weakref.WeakKeyDictionary()
#: record -> the method that ran its last trace (``predict``, ``predict_on_batch``).
LAST_ENTRY: weakref.WeakKeyDictionary[Record, str] = weakref.WeakKeyDictionary()


def record_for(fun: Any, options: dict[str, Any]) -> Record | None:
    """The record of keras' ``jax.jit(step, **options)``, or None for any other jit."""
    step = keras_api.step_of(fun, _compat.caller(1))
    if step is None:
        return None
    return _new_record(fun, step, options, counts_calls=True)


def untracked(
    fun: Any, info: _compat.TraceFrame | None
) -> tuple[Record, tuple[Any, ...], dict[str, Any]] | None:
    """A keras step jitted before tracking began (keras binds ``jax.jit`` at its import).

    Seen only through JAX's trace events: its calls are unknown, its traces and
    retraces are counted and explained as for a step jitted while tracking.
    """
    if info is None:
        return None
    rec = REGISTRY.find_by_fun(fun)
    if rec is None:
        step = keras_api.step_of(fun, _compat.caller(1))
        if step is None:
            return None
        rec = _new_record(fun, step, {}, counts_calls=False)
    elif rec.kind != KIND:
        return None
    return rec, info.args, dict(info.kwargs)


def _new_record(
    fun: Any, step: _compat.LibraryJit, options: dict[str, Any], counts_calls: bool
) -> Record:
    # each model's steps are its own (two models are not one step rebuilt)
    return library_record(KIND, fun, step, options, STEPS, counts_calls)


def reword(rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
    """A keras step's reasons with the user's names and keras' fixes (others unchanged)."""
    step = STEPS.get(rec) if rec.kind == KIND else None
    if step is None:
        return reasons
    then = LAST_ENTRY.get(rec, step.entry)
    model = step.owner() if step.owner is not None else None
    if model is not None:  # the method running now (evaluate reuses fit's test step)
        entry, facts = keras_api.entry_at(model, _compat.caller(1))
        if entry:
            paths, facts = keras_api.step_terms(step.role, facts)
            step = dataclasses.replace(step, entry=entry, facts=facts, paths=paths)
    LAST_ENTRY[rec] = step.entry
    return [
        _recompiled(rec, step, model, r)
        or _mixed(step, then, r)
        or _dict_x(step, W.library_reason(step, r))
        for r in reasons
    ]


#: The array fixes whose code reads ``x`` as one array -> their form for a dict ``x``.
def _dict_fixes() -> dict[FixKind, tuple[FixKind, Any]]:
    from ..._core.template_kinds import FixKind

    return {
        FixKind.KERAS_RAGGED: (FixKind.KERAS_RAGGED_DICT, L.KERAS_RAGGED_DICT_FIX),
        FixKind.KERAS_RAGGED_PREDICT: (
            FixKind.KERAS_RAGGED_PREDICT_DICT,
            L.KERAS_RAGGED_PREDICT_DICT_FIX,
        ),
    }


def _dict_x(step: _compat.LibraryJit, r: Reason) -> Reason:
    """A ragged batch of a dict ``x`` (named inputs): the fix cuts or pads each of its arrays."""
    found = _dict_fixes().get(r.fix_kind) if step.fact("x_is_dict") else None
    if found is None:
        return r
    bs = step.fact("batch_size")
    if not isinstance(bs, int):
        return r
    kind, template = found
    from ..._core.reasons.shape import validation_too

    fields = dict(entry=step.entry, bs=f" ({bs})", b=bs, validation=validation_too(step))
    return W.with_fix(r, kind, template.words(**fields))


def _recompiled(rec: Record, step: _compat.LibraryJit, model: Any, r: Reason) -> Reason | None:
    """A new step of the same model: ``compile`` ran again and dropped the jitted steps."""
    from ..._core.template_kinds import FixKind

    if r.kind is not ReasonKind.NEW_FUNCTION or r.expected or model is None:
        return None
    name = keras_api.user_name(model, _compat.caller(1))
    fields = dict(model=name, role=step.role, entry=step.entry)
    message = L.KERAS_RECOMPILE_MSG.words(**fields, count=REGISTRY.earlier_wrappers(rec))
    fix = L.KERAS_RECOMPILE_FIX.words(model=name)
    out = W.with_fix(r, FixKind.KERAS_RECOMPILE, fix, message=message, path=f"{name}.compile")
    return out.with_facts(Fact.LIBRARY_MADE)


def _mixed(step: _compat.LibraryJit, then: str, r: Reason) -> Reason | None:
    """The batch's container changed because another of keras' methods ran the step."""
    from ..._core.template_kinds import FixKind

    now = step.entry
    pair = {now.removesuffix("_on_batch"), then.removesuffix("_on_batch")}
    if r.kind is not ReasonKind.PYTREE_STRUCTURE or now == then or len(pair) != 1:
        return None
    if r.argument != "data":  # the step's batch, not its state
        return None
    whole = pair.pop()
    message = L.KERAS_MIXED_MSG.words(
        now=now, then=then, role=step.role, before=r.before, after=r.after
    )
    fix = L.KERAS_MIXED_FIX.words(whole=whole, batch=f"{whole}_on_batch")
    return W.with_fix(r, FixKind.KERAS_MIXED, fix, message=message, argument="x", path="x")


def adopt(rec: Record, fn: Any) -> bool:
    """keras' step jitted by ``nnx.jit`` (``KERAS_NNX_ENABLED``): its row, in keras' terms."""
    step = keras_api.step_of(fn, _compat.caller(1))
    if step is None:
        return False
    rec.kind = KIND
    rec.internal = False
    REGISTRY.rename(rec, step.name, step.owner() if step.owner is not None else None)
    STEPS[rec] = step
    return True


class KerasFrontend(Frontend):
    """keras's jits around the user's model: nothing to patch, rows from ``jax.jit``."""

    kinds = (KIND,)
    module = keras_api.MODULE

    def record_for_jit(self, fun: Any, options: dict[str, Any]) -> Record | None:
        return record_for(fun, options)

    def untracked(
        self, fun: Any, info: Any
    ) -> tuple[Record, tuple[Any, ...], dict[str, Any]] | None:
        return untracked(fun, info)

    def adopt(self, rec: Record, fn: Any) -> bool:
        return adopt(rec, fn)

    def reword(self, rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
        return reword(rec, reasons, key)


FRONTEND = KerasFrontend()
