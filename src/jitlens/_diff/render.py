"""The text of a :class:`~jitlens._diff.model.ReportDiff`: the verdict, what changed outside the
program, then each function that changed, worst first.

Plain lines (no colour, no table): the output is read in CI logs and pinned by golden tests.
"""

from __future__ import annotations

import logging

from .._core.kinds import NoteKind
from .._core.retrace_text import shorten
from . import model as _model
from .model import Counts, EntryChange, FunctionDiff, ReportDiff

LOG = logging.getLogger("jitlens")

#: Longest value shown in one line (signatures, flag values).
VALUE_WIDTH = 100

TITLE = "jitlens diff: {before} -> {after}: {verdict}"
VERDICT_WORSE = "{n} function(s) gained traces or compiles"
VERDICT_OK = "nothing got worse"
VERDICT_BETTER = "nothing got worse; {n} function(s) traced or compiled less"
RUN_HEADER = "outside the program (what the persistent-cache key hashes):"
RUN_NONE = "outside the program: same versions, XLA flags, key config and devices"
RUN_LINE = "  {what}: {before} -> {after}{note}"
NOT_IN_KEY = "  (not in the key)"
NOTES_HEADER = "the persistent cache could not help {side}:"
NOTE_LINE = "  {message}\n    fix: {fix}"
FUNCTION_HEADER = "{status}  {qualname} ({defined_at}){moved}"
MOVED = ", was {before}"
COUNTS_LINE = "  traces {tb} -> {ta}, compiles {cb} -> {ca}, from the persistent cache {hb} -> {ha}"
MESSAGE_LINE = "  {message}"
FIX_LINE = "  fix: {fix}"
ENTRY_LINES: dict[str, str] = {
    "new": "  new entry: {signature}{closest}",
    "vanished": "  gone entry: {signature}",
    "cache_miss": "  compiled again (BEFORE read it from the persistent cache): {signature}",
    "cache_hit": "  read from the persistent cache (BEFORE compiled it): {signature}",
}
CLOSEST = "  (closest in BEFORE: {signature})"
REASON_LINE = "    {path}  {kind}: {before} -> {after}"
STATUS_WORDS = {
    "worse": "WORSE",
    "better": "better",
    "changed": "changed",
    "same": "same",
    "new": "new",
    "gone": "gone",
}
UNCHANGED = "{n} function(s) unchanged"
#: Run notes the diff itself answers ("none of the old entries matched": here is why).
DIFF_EXPLAINS = (NoteKind.NO_HITS,)


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


def _counts(b: Counts | None, a: Counts | None) -> str:
    def get(c: Counts | None, field: str) -> str:
        return "-" if c is None else _n(getattr(c, field))

    return COUNTS_LINE.format(
        tb=get(b, "traces"),
        ta=get(a, "traces"),
        cb=get(b, "compiles"),
        ca=get(a, "compiles"),
        hb=get(b, "persistent_cache_hits"),
        ha=get(a, "persistent_cache_hits"),
    )


def _entry(ch: EntryChange) -> list[str]:
    closest = CLOSEST.format(signature=shorten(ch.closest, VALUE_WIDTH)) if ch.closest else ""
    lines = [
        ENTRY_LINES[ch.kind].format(signature=shorten(ch.signature, VALUE_WIDTH), closest=closest)
    ]
    for r in ch.reasons:
        lines.append(
            REASON_LINE.format(
                path=r.path,
                kind=r.kind,
                before=shorten(r.before, VALUE_WIDTH),
                after=shorten(r.after, VALUE_WIDTH),
            )
        )
    return lines


def function_lines(fn: FunctionDiff) -> list[str]:
    moved = MOVED.format(before=fn.defined_at_before) if fn.defined_at_before else ""
    lines = [
        FUNCTION_HEADER.format(
            status=STATUS_WORDS[fn.status],
            qualname=fn.qualname,
            defined_at=fn.defined_at,
            moved=moved,
        ),
        _counts(fn.before, fn.after),
    ]
    for ch in fn.entries:
        lines += _entry(ch)
    if fn.message:
        lines.append(MESSAGE_LINE.format(message=fn.message))
    if fn.fix:
        lines.append(FIX_LINE.format(fix=fn.fix))
    return lines


def diff_lines(d: ReportDiff) -> list[str]:
    worse = d.worse
    better = [f for f in d.functions if f.status == "better"]
    if worse:
        verdict = VERDICT_WORSE.format(n=len(worse))
    else:
        verdict = VERDICT_BETTER.format(n=len(better)) if better else VERDICT_OK
    lines = [TITLE.format(before=d.before_source, after=d.after_source, verdict=verdict)]
    lines += list(d.unknowns)
    if d.run_changes:
        lines.append(RUN_HEADER)
        for c in d.run_changes:
            lines.append(
                RUN_LINE.format(
                    what=c.what,
                    before=shorten(c.before, VALUE_WIDTH),
                    after=shorten(c.after, VALUE_WIDTH),
                    note="" if c.in_key else NOT_IN_KEY,
                )
            )
    elif not d.unknowns:
        lines.append(RUN_NONE)
    for side, all_notes in (("in BEFORE", d.notes_before), ("in AFTER", d.notes_after)):
        notes = [n for n in all_notes if n.kind not in DIFF_EXPLAINS]
        if notes:
            lines.append(NOTES_HEADER.format(side=side))
            lines += [NOTE_LINE.format(message=n.message, fix=n.fix) for n in notes]
    same = 0
    for fn in d.functions:
        if fn.status == "same" and not fn.message:
            same += 1
            continue
        lines.append("")
        lines += function_lines(fn)
    if same:
        lines += ["", UNCHANGED.format(n=same)]
    return lines


def render_diff_text(d: ReportDiff, color: bool | None = False) -> str:
    """The diff as plain text (``color`` is accepted for symmetry and ignored)."""
    try:
        return "\n".join(diff_lines(d)) + "\n"
    except Exception as exc:  # a renderer never raises into the caller
        LOG.warning("jitlens: could not render the diff (%s: %s)", type(exc).__name__, exc)
        return repr(d) + "\n"


_model.TEXT[0] = render_diff_text
