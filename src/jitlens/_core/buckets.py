"""Shape sets: a deliberate few buckets, or many sizes that buckets would tame.

A function whose retraces are all shape changes of one axis has compiled one
entry per size. Two very different programs look like that:

* sizes padded to a bucket (16, 32, 48: multiples of 16) are a *choice*: a
  small bounded set, each compiled once, is the cheap way to serve variable
  lengths. Those compiles are not lost (:func:`bucketed`). Only a step that
  is a power of two of at least 8 is taken as that evidence: raw lengths from
  a data grid (100, 150, 220) share a step too, and are shown as retraces.
* many raw sizes (13, 17, 21, ...) each compile once and keep coming; the fix
  is to bucket them, and the recorded sizes say which buckets
  (:func:`propose`): the axis, the bucket sizes, how many compiles they
  leave, and how much padding they add over the sizes seen.

Pure functions of the report's events (``shape`` reasons' ``before``/
``after``), taken as plain objects: ``report`` uses this module, so it
imports nothing of it; no JAX here, tested with made-up figures.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .kinds import EventKind, ReasonKind

#: A bounded set is this many distinct sizes at least (two could be a ragged last batch) ...
BUCKETED_MIN_SIZES = 3
#: ... all multiples of a bucket step of at least this.
BUCKET_MIN_STEP = 8
#: Propose buckets from this many distinct sizes ...
PROPOSE_MIN_SIZES = 4
#: ... with at most this share of padding over the sizes seen.
MAX_PADDING = 0.25
#: ... saving at least this many compiles.
MIN_SAVED_COMPILES = 2
#: Bucket steps tried: multiples of each, and powers of two.
STEPS = (8, 16, 32, 64, 128, 256)

_DIMS = re.compile(r"\[([\d,\s]*)\]")


@dataclasses.dataclass(frozen=True)
class SizeSet:
    """The sizes one axis of one argument took, in the order they were compiled."""

    path: str
    axis: int
    sizes: tuple[int, ...]

    @property
    def distinct(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.sizes)))


@dataclasses.dataclass(frozen=True)
class Proposal:
    """Buckets for a :class:`SizeSet`: the sizes to pad to, compiles left, padding added."""

    path: str
    axis: int
    buckets: tuple[int, ...]
    compiles_before: int
    padding: float


def _shape(text: str) -> tuple[int, ...] | None:
    m = _DIMS.search(text)
    if m is None:
        return None
    parts = [p for p in m.group(1).replace(" ", "").split(",") if p]
    return tuple(int(p) for p in parts)


def size_sets(events: Iterable[Any]) -> list[SizeSet]:
    """One :class:`SizeSet` per path whose shape retraces all change the same single axis."""
    shapes: dict[str, list[tuple[int, ...]]] = {}
    for e in events:
        for r in e.reasons:
            if r.kind is not ReasonKind.SHAPE:
                continue
            before, after = _shape(r.before), _shape(r.after)
            if before is None or after is None or len(before) != len(after):
                continue
            seen = shapes.setdefault(r.path, [before])
            seen.append(after)
    out = []
    for path, seen in shapes.items():
        if len({len(s) for s in seen}) != 1:
            continue
        axes = [i for i in range(len(seen[0])) if len({s[i] for s in seen}) > 1]
        if len(axes) == 1:
            out.append(SizeSet(path, axes[0], tuple(s[axes[0]] for s in seen)))
    return out


def bucket_step(sizes: Sequence[int]) -> int | None:
    """The step of a deliberate bucket set (16 for 16, 32, 48), or None.

    Evidence, not coincidence: padding goes to multiples of a power of two (8, 16, 32,
    ...), so a common step that is not one (100, 150, 220 share 10) is raw sizes from the
    data, shown as retraces."""
    distinct = sorted(set(sizes))
    if len(distinct) < BUCKETED_MIN_SIZES:
        return None
    step = math.gcd(*distinct)
    power_of_two = step & (step - 1) == 0
    return step if step >= BUCKET_MIN_STEP and power_of_two else None


def bucketed(events: Sequence[Any]) -> list[SizeSet]:
    """The size sets of a function that are deliberate buckets, when every retrace of it is
    a shape change of such a set compiled once per size (else empty: nothing is excused)."""
    retraces = [
        e
        for e in events
        if e.kind is EventKind.RETRACE or (e.kind is EventKind.COMPILE and e.reasons)
    ]
    if not retraces:
        return []
    sets = size_sets(retraces)
    chosen = [s for s in sets if bucket_step(s.sizes) is not None]
    paths = {s.path for s in chosen}
    for e in retraces:
        if not e.reasons or any(
            r.kind is not ReasonKind.SHAPE or r.path not in paths for r in e.reasons
        ):
            return []
    if any(len(set(s.sizes)) != len(s.sizes) for s in chosen):
        return []  # a size compiled twice is not a bucket served from the cache
    return chosen


def _buckets(sizes: Sequence[int], step: int | None) -> tuple[int, ...]:
    if step is None:  # powers of two
        return tuple(sorted({1 << max(0, (s - 1).bit_length()) for s in sizes}))
    return tuple(sorted({-(-s // step) * step for s in sizes}))


def _padding(sizes: Sequence[int], buckets: Sequence[int]) -> float:
    padded = [min(b for b in buckets if b >= s) for s in sizes]
    return 1 - sum(sizes) / sum(padded) if sum(padded) else 0.0


def propose(size_set: SizeSet) -> Proposal | None:
    """The fewest buckets covering the sizes seen with at most ``MAX_PADDING`` padding, when
    they save compiles (None otherwise, or below ``PROPOSE_MIN_SIZES`` distinct sizes)."""
    distinct = size_set.distinct
    if len(distinct) < PROPOSE_MIN_SIZES or bucket_step(distinct) is not None:
        return None
    best: tuple[int, float, tuple[int, ...]] | None = None
    for step in (*STEPS, None):
        buckets = _buckets(distinct, step)
        padding = _padding(distinct, buckets)
        if padding > MAX_PADDING or len(distinct) - len(buckets) < MIN_SAVED_COMPILES:
            continue
        candidate = (len(buckets), padding, buckets)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    if best is None:
        return None
    return Proposal(size_set.path, size_set.axis, best[2], len(distinct), best[1])


#: A program's own few shapes (a train set and a test set, each evaluated every epoch): at
#: most this many compiled entries ...
REUSED_MAX_SHAPES = 4
#: ... each one served at least this many calls (its compile, then hits).
REUSED_MIN_CALLS = 2


@dataclasses.dataclass(frozen=True)
class SharedShape:
    """One compiled entry of a :func:`reused_shapes` set: where it was first called, with
    what shape of ``path``, and how many calls it served."""

    call_site: str
    path: str
    shape: str
    calls: int


def reused_shapes(fn: Any) -> tuple[SharedShape, ...]:
    """The entries of ``fn`` (a ``FunctionReport``) when its compiles are a few shapes the
    program needs, each compiled once and reused; else empty (nothing is excused).

    The evidence, all from the report: every retrace is a change of an argument's shape
    (the plain ``SHAPE`` fix: not a prefix growing by one, not a library's batches), at
    most ``REUSED_MAX_SHAPES`` entries, each first called from a line of its own (the
    program calls the function on two data sets where it means to: ``accuracy(params,
    train)``, ``accuracy(params, test)``) and each serving at least ``REUSED_MIN_CALLS``
    calls (``call_entries``). One loop that meets a ragged last batch calls from one line,
    and a growing length is never reused: both keep the pad / bucket fix."""
    compiles = list(fn.events)
    retraces = compiles[1:]
    if not retraces or len(compiles) > REUSED_MAX_SHAPES or compiles[0].kind is not EventKind.TRACE:
        return ()
    for e in retraces:
        if e.kind is not EventKind.RETRACE or not e.reasons:
            return ()  # a compile without a trace, a retrace jitlens could not explain
        if not all(r.kind is ReasonKind.SHAPE and str(r.fix_kind) == "shape" for r in e.reasons):
            return ()
    sites = [e.call_site for e in compiles]
    entries = [e.entry for e in compiles]
    if not all(sites) or len(set(sites)) != len(sites) or len(set(entries)) != len(entries):
        return ()
    served = {n: fn.call_entries.count(n) for n in entries}
    if any(n < REUSED_MIN_CALLS for n in served.values()):
        return ()  # unknown (no call timeline) or used once: a shape that keeps changing
    first = retraces[0].reasons[0]
    shapes = [first.before] + [
        next((r.after for r in e.reasons if r.path == first.path), "?") for e in retraces
    ]
    return tuple(
        SharedShape(e.call_site, first.path, shape, served[e.entry])
        for e, shape in zip(compiles, shapes, strict=True)
    )
