"""The words of retraces in jits a library makes around the user's code (keras, numpyro).

A reason found by the one explainer names JAX's arguments (``data[0]``); here it
is said with the user's names (``x`` of ``fit``) and a fix in the library's own
terms. Facts come in a :class:`~jitlens._compat.LibraryJit`; nothing here reads
a library.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .._compat.library_jits import LibraryJit
from .kinds import FixKind, ReasonKind
from .messages import _reason
from .report import Reason

#: A batch's leading dimension changed in ``fit`` / ``evaluate`` (the last, ragged batch).
KERAS_RAGGED = (
    "The batch keras cut from `{name}` of `{entry}` changed shape {before} -> {after}: "
    "{why} keras compiles its {role} step once per batch shape."
)
KERAS_RAGGED_WHY = (
    "the last batch of an epoch holds the remainder when the number of samples is not a "
    "multiple of `batch_size`{bs};"
)
KERAS_SMALL_WHY = (
    "a set smaller than `batch_size`{bs} is one batch of its own size, so each size is a new shape;"
)
KERAS_RAGGED_FIX = (
    "Give `{entry}` a number of samples that is a multiple of `batch_size`{bs}: drop the "
    "remainder (`n = len(x) // {b} * {b}`, then `x[:n]`, `y[:n]`) or pad `x` and `y` up to "
    "a multiple (with `sample_weight` 0 on the padding); do the same for the validation data."
)
KERAS_VALIDATION_FIX = (
    "Split the validation data off yourself, each part a multiple of `batch_size`{bs}, and "
    "pass it as `validation_data` instead of `validation_split`: `v = int(len(x) * {split}) "
    "// {b} * {b}`, `t = (len(x) - v) // {b} * {b}`, then `{entry}(x[:t], y[:t], "
    "validation_data=(x[t:t + v], y[t:t + v]))`."
)
KERAS_RAGGED_PREDICT_FIX = (
    "Pad `x` up to a multiple of `batch_size`{bs} before `{entry}` (`n = -len(x) % {b}`, then "
    "`np.pad(x, [(0, n)] + [(0, 0)] * (x.ndim - 1))`) and drop the last `n` rows of the output."
)
KERAS_SMALL_FIX = (
    "Give every set that `{entry}` and the validation see one size: the same number of "
    "samples (a multiple of `batch_size`{bs}), or pad `x` and `y` up to it with "
    "`sample_weight` 0 on the padding, and pass `batch_size=` alike to `fit` and `{entry}`."
)
#: A batch passed whole (``*_on_batch``) changed size.
KERAS_ON_BATCH = (
    "The batch passed to `{entry}` as `{name}` changed shape {before} -> {after}: keras "
    "compiles its {role} step once per batch shape."
)
KERAS_ON_BATCH_FIX = (
    "Pad every batch to one size B, the largest you pass ({b} so far), before `{entry}` "
    "(`np.pad({name}, [(0, B - len({name}))] + [(0, 0)] * ({name}.ndim - 1))`) and drop the "
    "padded rows of the output, or call `{whole}({name}, batch_size=B)` on all of it at once."
)
#: A dimension other than the batch changed (variable-length inputs).
KERAS_LENGTH = (
    "`{name}` of `{entry}` changed shape {before} -> {after} in a dimension other than the "
    "batch: keras compiles its {role} step once per input shape."
)
KERAS_LENGTH_FIX = (
    "Pad `{name}` to one length (`keras.utils.pad_sequences(seqs, maxlen={b}, padding='post')`, "
    "with a `Masking` layer or `mask_zero=True` to ignore the padding), or bucket the lengths "
    "to a few sizes so that each compiles once."
)
#: The whole-set form of an ``*_on_batch`` method.
_WHOLE = {"predict_on_batch": "predict", "train_on_batch": "fit", "test_on_batch": "evaluate"}


def _dims(entry: Any) -> tuple[int, ...] | None:
    """The shape of an array's key entry (``Reason.entries``), or None."""
    aval = getattr(entry, "aval", None)
    return tuple(aval.shape) if aval is not None else None


def user_path(step: LibraryJit, path: str) -> tuple[str, str] | None:
    """``data[0]['a']`` -> (``x``, ``x['a']``) with the library's names, or None."""
    for prefix, name in step.paths:
        if path == prefix or path.startswith((prefix + "[", prefix + ".")):
            if prefix == "data" and re.match(r"data\[[0-9]+\]", path):
                return None  # a part past the known ones
            return name, name + path[len(prefix) :]
    return None


def library_reason(step: LibraryJit, r: Reason) -> Reason:
    """``r`` said with the user's names and, for a batch's shape, keras' fix."""
    names = user_path(step, r.path)
    if names is None:
        return r
    name, path = names
    out = dataclasses.replace(r, argument=name, path=path)
    if r.kind != ReasonKind.SHAPE:
        return out
    before, after = (_dims(e) for e in r.entries)
    if before is None or after is None or len(before) != len(after) or not before:
        return out
    bs = step.fact("batch_size")
    bs_text = f" ({bs})" if bs else ""
    fields = dict(
        name=name, entry=step.entry, role=step.role, before=r.before, after=r.after, bs=bs_text
    )
    if before[1:] != after[1:]:
        longest = max(max(b, a) for b, a in zip(before[1:], after[1:], strict=True))
        return _with_fix(
            out,
            FixKind.KERAS_LENGTH,
            KERAS_LENGTH_FIX.format(name=name, b=longest),
            message=KERAS_LENGTH.format(**fields),
        )
    if step.entry in _WHOLE:
        size = max(before[0], after[0])
        return _with_fix(
            out,
            FixKind.KERAS_ON_BATCH,
            KERAS_ON_BATCH_FIX.format(
                entry=step.entry, name=name, b=size, whole=_WHOLE[step.entry]
            ),
            message=KERAS_ON_BATCH.format(**fields),
        )
    b = bs or max(before[0], after[0])
    small = bool(bs) and max(before[0], after[0]) < bs
    why = (KERAS_SMALL_WHY if small else KERAS_RAGGED_WHY).format(bs=bs_text)
    split = step.fact("validation_split")
    if step.role == "predict":
        fk, fix = FixKind.KERAS_RAGGED_PREDICT, KERAS_RAGGED_PREDICT_FIX
    elif split and step.role == "test" and step.entry == "fit":  # the set fit split off
        fk, fix = FixKind.KERAS_VALIDATION, KERAS_VALIDATION_FIX
    elif small:
        fk, fix = FixKind.KERAS_SMALL, KERAS_SMALL_FIX
    else:
        fk, fix = FixKind.KERAS_RAGGED, KERAS_RAGGED_FIX
    return _with_fix(
        out,
        fk,
        fix.format(entry=step.entry, bs=bs_text, b=b, split=split),
        message=KERAS_RAGGED.format(**fields, why=why),
    )


#: numpyro's ``MCMC.run`` compiled its sample loop again around a sample step built anew.
NUMPYRO_REBUILT = (
    "`{entry}` built its sample step anew for this run ({before} -> {after}): numpyro compiles "
    "its sample loop once per `run`, even on data of the same shape (also with "
    "`jit_model_args=True`)."
)
NUMPYRO_REBUILT_FIX = (
    "Draw what you need in one `run` (a larger `num_samples`, or `num_chains`) instead of "
    "calling `run` again; each `run` costs one compile of the sample loop."
)


#: ``SVI.run`` jitted a new step: numpyro builds one per ``run``.
NUMPYRO_SVI_RUN = (
    "`SVI.run` jitted a new step for this run: numpyro builds one per `run`, with the model's "
    "arguments closed into it, so every `run` compiles again, even on data of the same shape."
)
NUMPYRO_SVI_RUN_FIX = (
    "Call `svi.run` once with all the steps (`num_steps`), or step yourself: "
    "`update = jax.jit(svi.update)` once, then `state, loss = update(state, *args, **kwargs)` "
    "per step, with data of one shape."
)


def numpyro_reasons(step: LibraryJit, reasons: list[Reason]) -> list[Reason]:
    """A numpyro row's reasons: a step rebuilt per ``run`` in numpyro's terms.

    numpyro makes a new ``jax.jit`` wrapper per ``run``: that the wrapper is new is
    numpyro's business, said in its terms only when nothing else changed.
    """
    if step.role == "svi":
        return [
            _with_fix(r, FixKind.NUMPYRO_SVI_RUN, NUMPYRO_SVI_RUN_FIX, message=NUMPYRO_SVI_RUN)
            if r.kind == ReasonKind.NEW_FUNCTION
            else r
            for r in reasons
        ]
    if step.role != "sample":
        return reasons
    out = []
    for r in reasons:
        if r.kind == ReasonKind.IDENTITY_STATIC and r.argument == "_body_fn":
            before, after = r.before.split(" at ")[0], r.after.split(" at ")[0]
            message = NUMPYRO_REBUILT.format(entry=step.entry, before=before, after=after)
            out.append(_with_fix(r, FixKind.NUMPYRO_REBUILT, NUMPYRO_REBUILT_FIX, message=message))
        elif r.kind != ReasonKind.NEW_FUNCTION:
            out.append(r)
        elif len(reasons) == 1:
            message = NUMPYRO_REBUILT.format(entry=step.entry, before=r.before, after=r.after)
            out.append(_with_fix(r, FixKind.NUMPYRO_REBUILT, NUMPYRO_REBUILT_FIX, message=message))
    return out


DIFFERENT_FUNCTION_MSG = (
    "`{name}` calls a different function through `{free}` than its {count} earlier "
    "wrapper(s) ({before} -> {after}): a different function, compiled once on purpose."
)
DIFFERENT_FUNCTION_FIX = (
    "Expected once per function: nothing to fix. To run the same one again, keep this "
    "`{name}` and call it again rather than building a new one."
)


def different_function(name: str, count: int, free: str, before: str, after: str) -> Reason:
    """A new wrapper of the same code over different functions (three samplers' kernels)."""
    msg = DIFFERENT_FUNCTION_MSG.format(
        name=name, free=free, count=count, before=f"`{before}`", after=f"`{after}`"
    )
    r = _reason(
        ReasonKind.NEW_FUNCTION, "", name, before, after, msg,
        DIFFERENT_FUNCTION_FIX.format(name=name), fix_kind=FixKind.DIFFERENT_FUNCTION,
    )  # fmt: skip
    return dataclasses.replace(r, expected=True)


def _with_fix(r: Reason, fix_kind: FixKind, fix: str, **changes: Any) -> Reason:
    """``r`` with another fix made from the ``fix_kind`` template (as written: not capped)."""
    return dataclasses.replace(r, fix=fix, fix_kind=fix_kind, **changes)
