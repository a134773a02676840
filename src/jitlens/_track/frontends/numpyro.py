"""numpyro rows: the sample loop ``MCMC.run`` and the step ``SVI.run`` jit around the user's model.

:mod:`jitlens._compat.numpyro_api` recognises them at ``jax.jit`` time;
:func:`record_for` makes each the user's row, named in numpyro's terms
(``numpyro: MCMC sample loop (NUTS)``). A user's own ``jax.jit(svi.update)`` is
a plain ``jax.jit`` row made at the user's line (``numpyro: SVI.update``).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ... import _compat
from ..._compat import numpyro_api
from ..._core.key import Key
from ..._core.kinds import ReasonKind, RowKind
from ..._core.lazy import OnFirstUse
from ..._core.report import Reason
from ..frontend import Frontend
from ..records import Record
from ..registry import REGISTRY
from .library_rows import library_record

if TYPE_CHECKING:
    pass

#: The row kind.
KIND = RowKind.NUMPYRO
#: The words, loaded at the first retrace (``_core.lazy``).
W = OnFirstUse("..._core.reasons", __package__)
L = OnFirstUse("..._core.reasons.library", __package__)


#: record -> the numpyro jit it is.
STEPS: weakref.WeakKeyDictionary[Record, _compat.LibraryJit] = weakref.WeakKeyDictionary()


def record_for(fun: Any, options: dict[str, Any]) -> Record | None:
    """The record of numpyro's ``jax.jit`` of its sample loop or SVI step, or None."""
    step = numpyro_api.step_of(fun, _compat.caller(1))
    if step is None:
        return None
    if step.role == numpyro_api.HIDDEN:
        return REGISTRY.record_for_jax_jit(fun, options)  # numpyro's own, as without a front-end
    # each MCMC / SVI object's loop is its own: another model's is not this one rebuilt
    return library_record(KIND, fun, step, options, STEPS)


def reword(rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
    """A numpyro row's reasons in numpyro's terms (other rows unchanged)."""
    step = STEPS.get(rec) if rec.kind == KIND else None
    if step is None:
        return reasons
    reasons = [_evidence(step, r) for r in W.numpyro_reasons(step, reasons)]
    changed = step.fact("new_data")
    if isinstance(changed, str) and not (step.fact("stepped") and "new values" in changed):
        # a run on another data set: its compile is needed (values alone, a progress bar and no
        # `jit_model_args=True`: that fix below holds)
        return [_new_data(r, changed) for r in reasons]
    chains = step.fact("num_chains")
    if step.fact("chain_method") == "sequential" and isinstance(chains, int) and chains > 1:
        return [_sequential(r, chains) for r in reasons]
    if step.fact("stepped"):
        reasons = [_state_type(r) for r in reasons]
    if step.fact("stepped") and step.fact("jit_model_args") is False:
        return [_model_args(r) for r in reasons]
    return reasons


def _state_type(r: Reason) -> Reason:
    """A weak type flip in numpyro's own loop state (``val``) of its stepped sample step."""
    from ..._core.template_kinds import FixKind

    if r.kind is not ReasonKind.WEAK_TYPE or r.argument != numpyro_api.STEP_STATE:
        return r
    message = L.NUMPYRO_STATE_TYPE_MSG.words(path=r.path, before=r.before, after=r.after)
    fix = L.NUMPYRO_STATE_TYPE_FIX.words()
    return W.with_fix(r, FixKind.NUMPYRO_STATE_TYPE, fix, message=message)


def _model_args(r: Reason) -> Reason:
    """The stepped sample step (a progress bar) rebuilt by a ``run`` over new model arguments:
    ``jit_model_args=True`` makes it one compile for every run on data of the same shapes."""
    from ..._core.template_kinds import FixKind

    if r.fix_kind is not FixKind.NUMPYRO_REBUILT:
        return r
    message = L.NUMPYRO_MODEL_ARGS_MSG.words(before=r.before, after=r.after)
    return W.with_fix(
        r, FixKind.NUMPYRO_MODEL_ARGS, L.NUMPYRO_MODEL_ARGS_FIX.words(), message=message
    )


def _new_data(r: Reason, change: str) -> Reason:
    """The sample loop compiled again for a ``run`` on other data: needed, nothing to fix."""
    from ..._core.template_kinds import FixKind

    if r.fix_kind not in (FixKind.NUMPYRO_REBUILT, FixKind.NUMPYRO_SEQUENTIAL):
        return r
    message = L.NUMPYRO_NEW_DATA_MSG.words(change=change)
    fix = L.NUMPYRO_NEW_DATA_FIX.words()
    return W.with_fix(r, FixKind.NUMPYRO_NEW_DATA, fix, message=message).replace(expected=True)


def _evidence(step: _compat.LibraryJit, r: Reason) -> Reason:
    """numpyro's rebuilt loop body as the user knows it: the ``run`` that rebuilt it, its
    builds without the addresses of numpyro's closures (once ``_body_fn`` and ``at 0x...``)."""
    from ..._core.template_kinds import FixKind

    if r.fix_kind is not FixKind.NUMPYRO_REBUILT or r.argument != numpyro_api.LOOP_BODY:
        return r
    before, after = "an earlier build", "a new build"
    message = W.NUMPYRO_REBUILT_MSG.words(entry=step.entry, before=before, after=after)
    return W.with_fix(
        r, r.fix_kind, r.fix, message=message, path=step.entry, before=before, after=after
    )


def _sequential(r: Reason, chains: int) -> Reason:
    """A sample loop rebuilt by a sequential ``MCMC.run``: per chain, not only per run."""
    from ..._core.template_kinds import FixKind

    if r.fix_kind is not FixKind.NUMPYRO_REBUILT:
        return r
    message = L.NUMPYRO_SEQUENTIAL_MSG.words(chains=chains)
    fix = L.NUMPYRO_SEQUENTIAL_FIX.words(chains=chains)
    return W.with_fix(r, FixKind.NUMPYRO_SEQUENTIAL, fix, message=message)


class NumpyroFrontend(Frontend):
    """numpyro's jits around the user's model: nothing to patch, rows from ``jax.jit``."""

    kinds = (KIND,)
    module = numpyro_api.MODULE

    def record_for_jit(self, fun: Any, options: dict[str, Any]) -> Record | None:
        return record_for(fun, options)

    def reword(self, rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
        return reword(rec, reasons, key)


FRONTEND = NumpyroFrontend()
