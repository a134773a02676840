"""The text of a :class:`~jitlens._diff.model.ReportDiff`: the verdict, what changed outside the
program, then each function that changed, worst first.

Plain lines (no colour, no table): the output is read in CI logs and pinned by golden tests.
"""

from __future__ import annotations

import logging
import textwrap

from .._core.kinds import NoteKind
from .._core.retrace_text import shorten
from . import model as _model
from .model import ChangeKind, Counts, EntryChange, FunctionDiff, ReportDiff

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
#: Entries that changed the same paths in the same way as the one above, folded into a line.
MORE_ALIKE = {
    "new": "  {n} more new entries, the same paths changed{values}",
    "vanished": "  {n} more entries gone",
    "cache_miss": "  {n} more compiled again",
    "cache_hit": "  {n} more read from the persistent cache",
}
ALIKE_VALUES = ": {path} -> {values}"
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


def _alike(ch: EntryChange) -> tuple[object, ...]:
    return (ch.kind, tuple((r.path, r.kind, r.before) for r in ch.reasons))


def _folded(entries: tuple[EntryChange, ...]) -> list[list[EntryChange]]:
    """Runs of entries alike (one static taking a new value per call: 4 new entries, each
    ``lr  static_value``), so the first is spelled out and the rest counted."""
    runs: list[list[EntryChange]] = []
    for ch in entries:
        if runs and _alike(runs[-1][0]) == _alike(ch):
            runs[-1].append(ch)
        else:
            runs.append([ch])
    return runs


def _more(first: EntryChange, rest: list[EntryChange]) -> str:
    """The folded entries' count, and the values of the path that took a new one in each."""
    values = ""
    for path in (r.path for r in first.reasons) if first.kind is ChangeKind.NEW else ():
        afters = [r.after for ch in (first, *rest) for r in ch.reasons if r.path == path]
        if len(set(afters)) > 1:
            shown = shorten(", ".join(afters[1:]), VALUE_WIDTH)
            values = ALIKE_VALUES.format(path=path, values=shown)
            break
    return MORE_ALIKE[first.kind].format(n=len(rest), values=values)


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
    for first, *rest in _folded(fn.entries):
        lines += _entry(first)
        if rest:
            lines.append(_more(first, rest))
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


def wrapped(lines: list[str], width: int | None) -> list[str]:
    """``lines`` no wider than ``width`` (``None``: as they are), each continued 2 deeper."""
    if width is None:
        return lines
    out: list[str] = []
    for line in (part for text in lines for part in text.split("\n")):
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out += textwrap.wrap(
            line, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
        ) or [""]
    return out


def render_diff_text(d: ReportDiff, color: bool | None = False, width: int | None = None) -> str:
    """The diff as plain text (``color`` is accepted for symmetry and ignored); ``width`` wraps
    it for a terminal (``jitlens diff``), ``None`` keeps one line per item (``str()``, logs)."""
    try:
        return "\n".join(wrapped(diff_lines(d), width)) + "\n"
    except Exception as exc:  # a renderer never raises into the caller
        LOG.warning("jitlens: could not render the diff (%s: %s)", type(exc).__name__, exc)
        return repr(d) + "\n"


_model.TEXT[0] = render_diff_text
