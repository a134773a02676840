"""``jitlens diff``: why did this run compile again when the last one did not?

Two reports of the same program, BEFORE and AFTER. Functions are matched by
``qualname`` and ``defined_at`` (then, for a function whose line moved, by
``qualname`` and file when that is unique on both sides). For each one:

* the compiled entries (signatures) only one run has, and for a new entry
  the key paths that differ from the closest old one (``keys``: shape, dtype,
  weak type, sharding, static value, structure, in ``_core.messages``' words);
* entries both runs have that one read from the persistent cache and the
  other compiled; what changed outside the program that JAX hashes into the
  persistent-cache key (``jax/_src/cache_key.py``: jaxlib, the platform and
  its version, the XLA flags, compile options from the config, the devices);
  when nothing did, the computation itself changed, or the entry left the folder;
* when both runs compiled, why the cache could not help (``_core.pcache``).

A function is *worse* when it gained traces or compiles; ``jitlens diff``
exits 1 then, so CI can keep a baseline report and fail the change that adds
compiles.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from .._core.fold import fold_wrappers
from .._core.kinds import EventKind, ReasonKind
from .._core.report import Event, FunctionReport, Report, load_report
from .._core.runinfo import RunInfo
from .keys import closest, event_key, normalise, run_changes
from .keys import key_reasons as key_reasons
from .model import ChangeKind, Counts, EntryChange, FunctionDiff, ReportDiff, RunChange

GAINED = "`{name}` {what} in AFTER"
CAUSE_ENTRY = "new entry {signature}: {reasons}"
CAUSE_KEY = "BEFORE read it from the persistent cache; the key changed with {changes}"
CAUSE_KEY_NONE = (
    "BEFORE read it from the persistent cache, and the versions, XLA flags, key config and "
    "devices are the same: the computation itself changed (the function's code or what it "
    "calls), or its entry left {folder}"
)
#: New entries spelled out in the message (each is listed above it with its paths, so one
#: is enough to say why; the text folds the rest as well).
ENTRIES_SHOWN = 1
MORE_ENTRIES = "{n} more new {entries} like it"
CAUSE_SAME = "compiled the same entries more often ({signatures})"
CAUSE_NO_CACHE = "compiled in both runs: {note}"
UNKNOWN_COUNTS = "cannot compare: {side} could not count {what} on its JAX version (shown as ?)"
BETTER = "`{name}` {what} in AFTER"
FIX_KEY = (
    "run with the baseline's {what} ({before}); or, if the change is meant, make this run's "
    "report the new baseline (its entries are in the cache now)"
)
FIX_KEY_NONE = (
    "if the code did not change, keep the cache folder between runs and check "
    "jax_compilation_cache_max_size; else make this run's report the new baseline"
)
FIX_SAME = "see `jitlens report AFTER.json` for why each compile came back within the run"


# ------------------------------------------------------------------ matching


#: Above this many candidate pairs of one name, functions pair in order of creation.
MAX_SCORED_PAIRS = 40_000


def _file(defined_at: str) -> str:
    return defined_at.rsplit(":", 1)[0]


def _line(defined_at: str) -> str:
    return defined_at.rsplit(":", 1)[-1]


def _affinity(old: FunctionReport, new: FunctionReport) -> tuple[int, int, int, int, int]:
    """How surely two functions of one qualname are the same one; higher first.

    Same place (file and line), then same file (lines shifted), then the same code as far
    as a report shows it (the compiled entries' signatures: argument names, shapes,
    statics), then the same line (the file renamed or moved), then the nearest line.
    """
    shared = len(
        {normalise(e.signature) for e in old.events} & {normalise(e.signature) for e in new.events}
    )
    try:
        distance = abs(int(_line(old.defined_at)) - int(_line(new.defined_at)))
    except ValueError:
        distance = 1 << 30
    return (
        old.defined_at == new.defined_at,
        _file(old.defined_at) == _file(new.defined_at),
        shared,
        _line(old.defined_at) == _line(new.defined_at),
        -distance,
    )


def _match(
    before: Sequence[FunctionReport], after: Sequence[FunctionReport]
) -> list[tuple[FunctionReport | None, FunctionReport | None]]:
    """Pairs the functions of two runs by an identity that survives a rename or a move.

    Only functions of the same qualified name pair. Those at the same place pair
    first, in order of creation (a wrapper re-created in a loop is many records
    of one place); among the rest of one name, the surest pairs (:func:`_affinity`)
    are taken first, ties in order of creation. So a fix applied in a renamed copy
    of the script (``train.py`` -> ``train_fixed.py``) still compares ``step`` with
    ``step``, and two same-named functions of one file keep their places.
    """
    places: dict[tuple[str, str], list[int]] = {}
    for i, old in enumerate(before):
        places.setdefault((old.qualname, old.defined_at), []).append(i)
    pair_of: dict[int, int] = {}  # after index -> before index
    for j, new in enumerate(after):
        olds = places.get((new.qualname, new.defined_at))
        if olds:
            pair_of[j] = olds.pop(0)
    used = set(pair_of.values())
    left_old: dict[str, list[int]] = {}
    for i, old in enumerate(before):
        if i not in used:
            left_old.setdefault(old.qualname, []).append(i)
    left_new: dict[str, list[int]] = {}
    for j, new in enumerate(after):
        if j not in pair_of:
            left_new.setdefault(new.qualname, []).append(j)
    for name, news in left_new.items():
        olds = left_old.get(name, [])
        if len(olds) * len(news) > MAX_SCORED_PAIRS:  # thousands of one name: by order
            pair_of.update(zip(news, olds, strict=False))
            continue
        scored = sorted(
            ((_affinity(before[i], after[j]), -j, -i, i, j) for j in news for i in olds),
            reverse=True,
        )
        taken: set[int] = set()
        for *_, i, j in scored:
            if i not in taken and j not in pair_of:
                taken.add(i)
                pair_of[j] = i
    used = set(pair_of.values())
    pairs: list[tuple[FunctionReport | None, FunctionReport | None]] = [
        (before[pair_of[j]] if j in pair_of else None, new) for j, new in enumerate(after)
    ]
    pairs += [(old, None) for i, old in enumerate(before) if i not in used]
    return pairs


# ------------------------------------------------------------------ functions


def _counts(fn: FunctionReport) -> Counts:
    return Counts(fn.calls, fn.traces, fn.compiles, fn.persistent_cache_hits)


def _by_signature(fn: FunctionReport) -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = {}
    for e in fn.events:
        out.setdefault(normalise(e.signature), []).append(e)
    return out


def _loaded(events: Sequence[Event]) -> bool:
    compiled = [e for e in events if e.compiled]
    return bool(compiled) and all(e.persistent_cache_hit for e in compiled)


def _entries(before: FunctionReport, after: FunctionReport) -> list[EntryChange]:
    old, new = _by_signature(before), _by_signature(after)
    out = []
    for sig, events in new.items():
        if sig not in old:
            near = closest(events[0], before.events)
            reasons = key_reasons(event_key(near), event_key(events[0])) if near is not None else ()
            out.append(EntryChange(ChangeKind.NEW, sig, near.signature if near else "", reasons))
        elif _loaded(old[sig]) and any(e.compiled and not e.persistent_cache_hit for e in events):
            out.append(EntryChange(ChangeKind.CACHE_MISS, sig))
        elif _loaded(events) and any(e.compiled and not e.persistent_cache_hit for e in old[sig]):
            out.append(EntryChange(ChangeKind.CACHE_HIT, sig))
    out += [EntryChange(ChangeKind.VANISHED, sig) for sig in old if sig not in new]
    return out


def _more(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and a > b


def _what(b: Counts, a: Counts) -> tuple[list[str], list[str]]:
    gained, lost = [], []
    for label, x, y in (("traced", b.traces, a.traces), ("compiled", b.compiles, a.compiles)):
        if _more(y, x):
            gained.append(f"{label} {x}x -> {y}x")
        elif _more(x, y):
            lost.append(f"{label} {x}x -> {y}x")
    return gained, lost


def _function(
    before: FunctionReport,
    after: FunctionReport,
    changes: Sequence[RunChange],
    after_run: RunInfo | None,
) -> FunctionDiff:
    b, a = _counts(before), _counts(after)
    entries = _entries(before, after)
    gained, lost = _what(b, a)
    causes: list[str] = []
    fix = ""
    explained = [ch for ch in entries if ch.kind is ChangeKind.NEW and ch.reasons] if gained else []
    for ch in explained[:ENTRIES_SHOWN]:
        shown = "; ".join(f"{r.path} {r.before} -> {r.after} ({r.kind})" for r in ch.reasons[:3])
        causes.append(CAUSE_ENTRY.format(signature=ch.signature, reasons=shown))
    if len(explained) > ENTRIES_SHOWN:
        more = len(explained) - ENTRIES_SHOWN
        causes.append(MORE_ENTRIES.format(n=more, entries="entry" if more == 1 else "entries"))
    if explained:
        own = (_own_fix(after, ch) for ch in explained)
        fix = next((f for f in own if f), "") or explained[0].reasons[0].fix
    if any(ch.kind is ChangeKind.CACHE_MISS for ch in entries):
        in_key = [c for c in changes if c.in_key]
        if in_key:
            shown = "; ".join(f"{c.what} {c.before} -> {c.after}" for c in in_key[:4])
            causes.append(CAUSE_KEY.format(changes=shown))
            fix = fix or FIX_KEY.format(what=in_key[0].what, before=in_key[0].before)
        else:
            folder = after_run.persistent_cache.dir if after_run else None
            causes.append(CAUSE_KEY_NONE.format(folder=folder or "the cache folder"))
            fix = fix or FIX_KEY_NONE
    if gained and not causes:
        sigs = ", ".join(sorted({normalise(e.signature) for e in after.events})[:3])
        causes.append(CAUSE_SAME.format(signatures=sigs))
        fix = _run_fix(after) or FIX_SAME
    if gained:
        status = "worse"
        head = GAINED.format(name=after.qualname, what=", ".join(gained))
    elif lost:
        status = "better"
        head = BETTER.format(name=after.qualname, what=", ".join(lost))
    else:
        status = "changed" if entries else "same"
        head = _unknown(b, a)
        notes = after_run.notes if after_run is not None else ()
        if not head and notes and a.compiles:
            head = CAUSE_NO_CACHE.format(note=notes[0].message)
            fix = notes[0].fix
    message = head + (": " + "; ".join(causes) if causes and head else "")
    return FunctionDiff(
        name=after.name,
        qualname=after.qualname,
        defined_at=after.defined_at,
        status=status,
        before=b,
        after=a,
        entries=tuple(entries),
        message=message,
        fix=fix,
        defined_at_before=before.defined_at if before.defined_at != after.defined_at else "",
    )


def _own_fix(after: FunctionReport, change: EntryChange) -> str:
    """The fix AFTER's own run gave for the retrace that made this entry, if it gave one.

    The run saw the values and the code (a static's type, the attribute it came
    from, a mode's first compile) where the diff has only two keys' texts: its
    fix is the one ``jitlens run`` printed, so the diff says the same. A reason on
    a path the keys name is preferred; an expected retrace (a mode's first compile)
    has nothing to fix.
    """
    paths = {r.path for r in change.reasons} | {r.argument for r in change.reasons}
    own = [
        r
        for e in after.events
        if normalise(e.signature) == change.signature and e.kind is not EventKind.TRACE
        for r in e.reasons
        if r.fix and not r.expected and r.kind is not ReasonKind.UNKNOWN
    ]
    named = [r for r in own if r.path in paths or r.argument in paths]
    return (named or own)[0].fix if own else ""


def _run_fix(after: FunctionReport) -> str:
    """The first fix AFTER's own run printed for this function's retraces (a jit made anew
    per iteration: "define the function once"), or "" when it printed none."""
    return next(
        (
            r.fix
            for e in after.events
            for r in e.reasons
            if r.fix and not r.expected and r.kind is not ReasonKind.UNKNOWN
        ),
        "",
    )


def _unknown(b: Counts, a: Counts) -> str:
    for side, c in (("BEFORE", b), ("AFTER", a)):
        missing = [w for w in ("traces", "compiles") if getattr(c, w) is None]
        if missing:
            return UNKNOWN_COUNTS.format(side=side, what=" and ".join(missing))
    return ""


def diff_reports(
    before: Report,
    after: Report,
    *,
    sources: Sequence[str] = (),
    include_internal: bool = False,
) -> ReportDiff:
    """Compare two runs' reports: per function, what changed and why.

    Args:
        before: The baseline run's report.
        after: The run to judge.
        sources: Where the two reports came from (file names), for the text.
        include_internal: Also compare JAX's and Flax's own helpers.

    Returns:
        A :class:`~jitlens._diff.model.ReportDiff`; its ``worse`` functions
        gained traces or compiles.

    Example:
        >>> from jitlens._core.report import Report
        >>> r = Report(2, "0", "0", "0", "cpu", 0, 1, "h", 0.0, 1.0, ())
        >>> diff_reports(r, r).worse
        ()

    See also:
        ``jitlens merge`` compares the processes of one run, not two runs.
    """
    names = list(sources) if len(sources) == 2 else ["BEFORE", "AFTER"]

    def rows(r: Report) -> list[FunctionReport]:
        # a jit made anew per iteration is one function of the program, many wrappers of it:
        # folded as `jitlens run` shows it, under its own name, so that each run's wrappers
        # compare as one (3 traces -> 1), not one by one with the rest "gone" or "new"
        shown = [f for f in r.functions if include_internal or not f.internal]
        return [
            dataclasses.replace(f, qualname=f.wrapped_qualname) if f.wrappers > 1 else f
            for f in fold_wrappers(shown)
        ]

    unknowns = [
        f"{name} has no run section (written by an older jitlens): environments not compared"
        for name, r in zip(names, (before, after), strict=True)
        if r.run is None
    ]
    changes = run_changes(before.run, after.run) if before.run and after.run else ()
    functions = []
    for old, new in _match(rows(before), rows(after)):
        if old is not None and new is not None:
            functions.append(_function(old, new, changes, after.run))
        elif new is not None:
            functions.append(_lonely(new, "new"))
        elif old is not None:
            functions.append(_lonely(old, "gone"))
    order = {s: i for i, s in enumerate(("worse", "better", "changed", "new", "gone", "same"))}
    functions.sort(key=lambda f: order[f.status])
    return ReportDiff(
        before_source=names[0],
        after_source=names[1],
        functions=tuple(functions),
        run_changes=tuple(changes),
        notes_before=before.run.notes if before.run else (),
        notes_after=after.run.notes if after.run else (),
        unknowns=tuple(unknowns),
    )


def _lonely(fn: FunctionReport, status: str) -> FunctionDiff:
    counts = _counts(fn)
    return FunctionDiff(
        name=fn.name,
        qualname=fn.qualname,
        defined_at=fn.defined_at,
        status=status,
        before=counts if status == "gone" else None,
        after=counts if status == "new" else None,
    )


def diff(
    before: Report | str | os.PathLike[str],
    after: Report | str | os.PathLike[str],
    *,
    include_internal: bool = False,
) -> ReportDiff:
    """Why did this run compile again when the last one did not? Two runs' reports compared.

    Args:
        before: The baseline run: a :class:`jitlens.Report` or the path of its JSON.
        after: The run to judge, likewise.
        include_internal: Also compare JAX's and Flax's own helpers.

    Returns:
        A ``ReportDiff``: ``str()`` is the text ``jitlens diff`` prints; ``.worse``
        lists the functions that gained traces or compiles (``jitlens diff`` exits 1).

    Raises:
        ReportError: a path that is not a readable jitlens report.

    Example:
        >>> import jitlens
        >>> from jitlens._core.report import Report
        >>> r = Report(2, "0", "0", "0", "cpu", 0, 1, "h", 0.0, 1.0, ())
        >>> jitlens.diff(r, r).worse
        ()

    See also:
        ``jitlens.merge_reports`` compares the processes of one run.
    """
    from . import render as _render  # registers str(ReportDiff)

    del _render
    reports, sources = [], []
    for r in (before, after):
        if isinstance(r, Report):
            reports.append(r)
            sources.append("BEFORE" if not sources else "AFTER")
        else:
            reports.append(load_report(r))
            sources.append(os.fspath(r))
    return diff_reports(reports[0], reports[1], sources=sources, include_internal=include_internal)
