"""The ``shape`` reason: an array's shape changed; every distinct shape compiles separately.

Also a parameter's shape (another architecture), a shape batched by ``jax.vmap``, and the
batches keras cuts (a ragged last batch, a set smaller than ``batch_size``, variable lengths),
said with the user's names (``x`` of ``fit``) and a fix in keras' terms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..kinds import Fact, ReasonKind, SubjectKind
from ..reason import Reason
from ..template_kinds import FixKind
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    Words,
    _reason,
    _with_fix,
)
from .spec import KindSpec

if TYPE_CHECKING:  # a keras step's words and a bucket set's: imported where they are read
    from ..._compat.library_jits import LibraryJit
    from ..buckets import SharedShape, SizeSet

SHAPE_MSG = Template(
    M.SHAPE,
    "{path} changed shape {before} -> {after}; every distinct shape is compiled separately.",
)


SHAPE_FIX = Template(
    K.SHAPE,
    "Keep shapes fixed: pad smaller batches to the largest shape (and mask the padding), or bucket "
    "lengths to a few sizes so each compiles once.",
)


#: A shape whose one axis (past the first) grew by one: the prefix a decode loop feeds back
#: (flax's gemma sampler, lm1b's decode, written naively): one compile per token.
GROWING_FIX = Template(
    K.GROWING,
    "`{path}` grows by one on axis {axis} per call (a decode prefix): preallocate it at full "
    "length, write each step in place (`{path}.at[{index}pos].set(t)`, "
    "`lax.dynamic_update_slice`), pass the position as `jnp.asarray(pos)`.",
)


def grown_axis(before: tuple[int, ...], after: tuple[int, ...]) -> int | None:
    """The one axis past the first (a sequence's, after the batch's) that grew by one, or None."""
    if len(before) != len(after) or len(before) < 2:
        return None
    changed = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a]
    if len(changed) != 1 or changed[0] == 0:
        return None
    i = changed[0]
    grew = isinstance(before[i], int) and isinstance(after[i], int) and after[i] == before[i] + 1
    return i if grew else None


PARAM_SHAPE_FIX = Template(
    K.PARAM_SHAPE,
    "Expected once per architecture: parameter shapes follow the layer sizes. If the models "
    "should be the same, build them with the same sizes.",
)


#: What a deliberate bucket set is (``_core/buckets.py``: every retrace of a function a shape
#: of one axis, the sizes multiples of a power of two, each compiled once): said instead of
#: the shape retraces' reasons, in the exit summary and in the live log alike.
BUCKETED_MSG = Template(
    M.BUCKETED,
    "`{path}` axis {axis} took {sizes} (multiples of {step}): a bounded set of buckets, each "
    "compiled once; expected, not lost",
)


def bucketed(size_set: SizeSet) -> Words:
    """The makings of what the deliberate bucket set ``size_set`` is (``BUCKETED_MSG``)."""
    sizes = ", ".join(map(str, size_set.distinct))
    from ..buckets import bucket_step

    step = bucket_step(size_set.sizes)
    return BUCKETED_MSG.words(path=size_set.path, axis=size_set.axis, sizes=sizes, step=step)


#: A few shapes the program needs (``_core/buckets.py``'s ``reused_shapes``: each first passed
#: from a line of its own, each compiled once and reused): said instead of the pad fix, which
#: would compute the largest shape on every call (jax's mnist_classifier: the accuracy of the
#: training set and of the test set, every epoch).
REUSED_SHAPES_MSG = Template(
    M.REUSED_SHAPES,
    "`{path}` took {n} shapes, each passed from a line of its own and reused ({shapes}): "
    "shapes the program needs (a training set and a test set, say), each compiled once; "
    "expected, not lost. Padding them to one shape would compute the largest on every call.",
)


def reused_shapes(shared: Sequence[SharedShape]) -> Words:
    """The makings of what a set of shapes the program needs is (``REUSED_SHAPES_MSG``)."""
    shapes = "; ".join(f"{s.shape} at {s.call_site}, {s.calls} calls" for s in shared)
    return REUSED_SHAPES_MSG.as_written(path=shared[0].path, n=len(shared), shapes=shapes)


VMAP_SHAPE_MSG = Template(
    M.VMAP_SHAPE,
    "{path} is batched by jax.vmap (axis {axis}) and the batched shape changed {before} -> "
    "{after}: the function is traced per example but compiled per batch size.",
)


def shape(
    arg: str,
    path: str,
    before: str,
    after: str,
    in_graph: bool = False,
    batch_axis: int | None = None,
    dims: tuple[tuple[int, ...], tuple[int, ...]] | None = None,
) -> Reason:
    """``dims``: the two shapes, where known (a prefix grown by one gets the decode fix)."""
    # the same words for every shape, so that a run of shape retraces folds into one
    fix, fk = (PARAM_SHAPE_FIX, K.PARAM_SHAPE) if in_graph else (SHAPE_FIX, K.SHAPE)
    axis = grown_axis(*dims) if dims is not None and not in_graph and batch_axis is None else None
    if axis is not None:
        fix, fk = GROWING_FIX.words(path=path, axis=axis, index=":, " * axis), K.GROWING
    facts = (Fact.IN_GRAPH,) if in_graph else ()
    if batch_axis is not None:
        msg = VMAP_SHAPE_MSG.words(path=f"`{path}`", axis=batch_axis, before=before, after=after)
        facts = (*facts, Fact.BATCHED)
    else:
        msg = SHAPE_MSG.words(path=f"`{path}`", before=before, after=after)
    return _reason(
        ReasonKind.SHAPE, arg, path, before, after, msg, fix,
        fix_kind=fk, subject=SubjectKind.ARRAY, facts=facts,
    )  # fmt: skip


#: A batch's leading dimension changed in ``fit`` / ``evaluate`` (the last, ragged batch).
KERAS_RAGGED_MSG = Template(
    M.KERAS_RAGGED,
    "The batch keras cut from `{name}` of `{entry}` changed shape {before} -> {after}: "
    "{why} keras compiles its {role} step once per batch shape.",
)


KERAS_RAGGED_WHY = Template(
    M.KERAS_RAGGED_WHY,
    "the last batch of an epoch holds the remainder when the number of samples is not a "
    "multiple of `batch_size`{bs};",
)


KERAS_SMALL_WHY = Template(
    M.KERAS_SMALL_WHY,
    "a set smaller than `batch_size`{bs} is one batch of its own size, so each size is a new shape;",
)


KERAS_RAGGED_FIX = Template(
    K.KERAS_RAGGED,
    "Give `{entry}` a number of samples that is a multiple of `batch_size`{bs}: drop the "
    "remainder (`n = len(x) // {b} * {b}`, then `x[:n]`, `y[:n]`) or pad `x` and `y` up to "
    "a multiple (with `sample_weight` 0 on the padding){validation}.",
)


#: ``KERAS_RAGGED_FIX``'s closing clause, when ``fit`` was given validation data: a program
#: with none was told to "do the same for the validation data" (keras.io's custom train_step
#: in JAX, ``fit(x, y, batch_size=32)`` on 100 samples).
KERAS_VALIDATION_TOO = Template(M.KERAS_VALIDATION_TOO, "; do the same for the validation data")


def validation_too(step: LibraryJit) -> str:
    """The closing clause of a ragged ``fit``'s fix: said only when it had validation data."""
    given = step.entry == "fit" and (step.fact("validation_data") or step.fact("validation_split"))
    return KERAS_VALIDATION_TOO if given else ""


KERAS_VALIDATION_FIX = Template(
    K.KERAS_VALIDATION,
    "Split the validation data off yourself, each part a multiple of `batch_size`{bs}, and "
    "pass it as `validation_data` instead of `validation_split`: `v = int(len(x) * {split}) "
    "// {b} * {b}`, `t = (len(x) - v) // {b} * {b}`, then `{entry}(x[:t], y[:t], "
    "validation_data=(x[t:t + v], y[t:t + v]))`.",
)


KERAS_RAGGED_PREDICT_FIX = Template(
    K.KERAS_RAGGED_PREDICT,
    "Pad `x` up to a multiple of `batch_size`{bs} before `{entry}` (`n = -len(x) % {b}`, then "
    "`np.pad(x, [(0, n)] + [(0, 0)] * (x.ndim - 1))`) and drop the last `n` rows of the output.",
)


#: ``evaluate``'s ragged last batch: padding ``x`` and ``y`` with ``sample_weight`` 0 (the
#: fit's fix) changes the loss and metrics keras reports (mse 0.6213 -> 0.3883 over 20
#: samples padded to 32: keras divides by the padded count), dropping the remainder
#: evaluates fewer samples; a batch size that divides the set keeps every figure.
KERAS_RAGGED_EVALUATE_FIX = Template(
    K.KERAS_RAGGED_EVALUATE,
    "Evaluate with a `batch_size` that divides the number of samples ({n}): "
    "`{entry}(x, y, batch_size={d})`{whole}: every batch one shape, the same loss and metrics. "
    "Padding `x` and `y`, even with `sample_weight` 0, changes what keras reports (it divides "
    "by the padded count).",
)


def _divisor(n: int, bs: int) -> int | None:
    """The batch size to evaluate ``n`` samples with in batches of one shape: the largest
    divisor of ``n`` up to ``bs`` when it is at least half of it, else ``n`` (one batch)
    when that is not much more than ``bs``; None when neither fits."""
    d = max(d for d in range(1, min(n, bs) + 1) if n % d == 0)
    if 2 * d >= bs:
        return d
    return n if n <= 8 * bs else None


KERAS_SMALL_FIX = Template(
    K.KERAS_SMALL,
    "Give every set that `{entry}` and the validation see one size: the same number of "
    "samples (a multiple of `batch_size`{bs}), or pad `x` and `y` up to it with "
    "`sample_weight` 0 on the padding, and pass `batch_size=` alike to `fit` and `{entry}`.",
)


#: A batch passed whole (``*_on_batch``) changed size.
KERAS_ON_BATCH_MSG = Template(
    M.KERAS_ON_BATCH,
    "The batch passed to `{entry}` as `{name}` changed shape {before} -> {after}: keras "
    "compiles its {role} step once per batch shape.",
)


KERAS_ON_BATCH_FIX = Template(
    K.KERAS_ON_BATCH,
    "Pad every batch to one size B, the largest you pass ({b} so far), before `{entry}` "
    "(`np.pad({name}, [(0, B - len({name}))] + [(0, 0)] * ({name}.ndim - 1))`) and drop the "
    "padded rows of the output, or call `{whole}({name}, batch_size=B)` on all of it at once.",
)


#: A dimension other than the batch changed (variable-length inputs).
KERAS_LENGTH_MSG = Template(
    M.KERAS_LENGTH,
    "`{name}` of `{entry}` changed shape {before} -> {after} in a dimension other than the "
    "batch: keras compiles its {role} step once per input shape.",
)


KERAS_LENGTH_FIX = Template(
    K.KERAS_LENGTH,
    "Pad `{name}` to one length (`keras.utils.pad_sequences(seqs, maxlen={b}, padding='post')`, "
    "with a `Masking` layer or `mask_zero=True` to ignore the padding), or bucket the lengths "
    "to a few sizes so that each compiles once.",
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
    out = r.replace(argument=name, path=path)
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
            KERAS_LENGTH_FIX.words(name=name, b=longest),
            message=KERAS_LENGTH_MSG.words(**fields),
        )
    if step.entry in _WHOLE:
        size = max(before[0], after[0])
        return _with_fix(
            out,
            FixKind.KERAS_ON_BATCH,
            KERAS_ON_BATCH_FIX.words(entry=step.entry, name=name, b=size, whole=_WHOLE[step.entry]),
            message=KERAS_ON_BATCH_MSG.words(**fields),
        )
    b = bs or max(before[0], after[0])
    small = bool(bs) and max(before[0], after[0]) < bs
    why = (KERAS_SMALL_WHY if small else KERAS_RAGGED_WHY).as_written(bs=bs_text)
    split = step.fact("validation_split")
    n = step.fact("samples")
    d = _divisor(n, bs) if isinstance(n, int) and bs and n > 0 else None
    if step.role == "predict":
        fk, fix = FixKind.KERAS_RAGGED_PREDICT, KERAS_RAGGED_PREDICT_FIX
    elif step.entry == "evaluate" and d is not None and not small and not step.fact("x_is_dict"):
        whole = " (the whole set in one batch)" if d == n else ""
        fix_text = KERAS_RAGGED_EVALUATE_FIX.words(entry=step.entry, n=n, d=d, whole=whole)
        message = KERAS_RAGGED_MSG.words(**fields, why=why)
        return _with_fix(out, FixKind.KERAS_RAGGED_EVALUATE, fix_text, message=message)
    elif split and step.role == "test" and step.entry == "fit":  # the set fit split off
        fk, fix = FixKind.KERAS_VALIDATION, KERAS_VALIDATION_FIX
    elif small:
        fk, fix = FixKind.KERAS_SMALL, KERAS_SMALL_FIX
    else:
        fk, fix = FixKind.KERAS_RAGGED, KERAS_RAGGED_FIX
    return _with_fix(
        out,
        fk,
        fix.words(entry=step.entry, bs=bs_text, b=b, split=split, validation=validation_too(step)),
        message=KERAS_RAGGED_MSG.words(**fields, why=why),
    )


SPEC = KindSpec(
    ReasonKind.SHAPE,
    what="array shape",
    example="f32[4,4] -> f32[2,4]",
    fixes={
        K.SHAPE: SHAPE_FIX,
        K.PARAM_SHAPE: PARAM_SHAPE_FIX,
        K.GROWING: GROWING_FIX,
        K.KERAS_RAGGED: KERAS_RAGGED_FIX,
        K.KERAS_VALIDATION: KERAS_VALIDATION_FIX,
        K.KERAS_RAGGED_PREDICT: KERAS_RAGGED_PREDICT_FIX,
        K.KERAS_RAGGED_EVALUATE: KERAS_RAGGED_EVALUATE_FIX,
        K.KERAS_SMALL: KERAS_SMALL_FIX,
        K.KERAS_ON_BATCH: KERAS_ON_BATCH_FIX,
        K.KERAS_LENGTH: KERAS_LENGTH_FIX,
    },
    messages=(
        SHAPE_MSG,
        BUCKETED_MSG,
        REUSED_SHAPES_MSG,
        VMAP_SHAPE_MSG,
        KERAS_RAGGED_MSG,
        KERAS_RAGGED_WHY,
        KERAS_SMALL_WHY,
        KERAS_VALIDATION_TOO,
        KERAS_ON_BATCH_MSG,
        KERAS_LENGTH_MSG,
    ),
)
