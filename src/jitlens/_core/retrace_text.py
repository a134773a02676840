"""Plain text of one retrace: the lines every output shares (logs, guard errors, renderers).

A retrace is shown as a header (call site, which retrace, seconds, call index)
and its changes, most decisive first: every changed leaf with before -> after and
its fix (:class:`Change`: leaves that changed alike share one). Each :class:`~.lines.Line` says what it is (its :class:`~.lines.Role`);
the terminal renderer styles it by that, log records and ``RecompileError``
messages print it as it is.
"""

from __future__ import annotations

import dataclasses
import logging
import textwrap
from collections.abc import Sequence

from . import buckets
from .kinds import EventKind
from .lines import Line, Role
from .report import Event, FunctionReport, Reason, StaleHit, Unchecked

LOG = logging.getLogger("jitlens")
#: Changes (leaves that changed alike, :class:`Change`) listed under one retrace in text; the
#: rest are counted and named, and the JSON and HTML list them all.
MAX_CHANGES_SHOWN = 16
#: Paths named for one change; the rest are counted.
MAX_PATHS_SHOWN = 12
MORE_PATHS = " and {n} more"
#: A change's head and values share a line up to this width when no width is given.
ONE_LINE_WIDTH = 100
#: Longest ``before``/``after`` repr shown in full; longer ones are cut in the middle.
MAX_VALUE_CHARS = 70
UNKNOWN = "?"
RETRACE_HEADER = "{call_site}  {label}{seconds}{call}{also}"
RETRACE_LABELS = {
    "trace": "first trace",
    "retrace": "retrace #{number}",
    "compile": "recompile",
    "stopped": "stopped by a compile budget",
}
#: Calls are numbered from 1, as retraces are: call #6 is the sixth call (``call_index`` 5).
CALL_SUFFIX = " (call #{index})"
ALSO_SUFFIX = ", +{n} difference(s) shown above"
REASON_HEAD = "{path}  {kind}{count}"
REASON_LINE = "{path}  {kind}{count}: {values}"
REASON_COUNT = "  (in {n} {noun})"
OTHER_VALUES = "  (+{n} other value{s})"
NO_REASON = "no difference found between the new cache key and the compiled ones ({n} retrace(s))"
#: A compile with no trace and no difference: JAX compiled another program from the cached
#: trace (jax.grad / jax.hessian / vmap of the jitted function run eagerly compiles the
#: transformed program; ``.lower().compile()`` compiles ahead of time). Not a retrace.
NO_REASON_COMPILE = (
    "an equal key compiled again from the cached trace, not a retrace: a transformed program "
    "of the function (jax.grad / jax.hessian / vmap of it run outside jit) or an ahead-of-time "
    "compile ({n} compile(s))"
)


def no_reason(kind: str, n: int) -> str:
    """What an event without a reason says: a retrace's or a compile's words (``Event.kind``)."""
    return (NO_REASON_COMPILE if kind == "compile" else NO_REASON).format(n=n)


FIX_LINE = "fix: {fix}"
MORE_LINE = "… and {n} more difference{s} ({paths}), all in `--json` / `--html`"
STALE_HEADER = "warning: stale cache hit at {call_site} (call #{index})"
RETRACE_TITLE = "{qualname} ({kind}) {header}"
FALLBACK = "jitlens could not render this report; raw data follows.\n{raw}"
#: A reason, how many retraces had it, and the values it took.
Folded = tuple[Reason, int, str]


def shorten(value: str, limit: int = MAX_VALUE_CHARS) -> str:
    """One line of at most ``limit`` characters, cut in the middle (``abc…xyz``)."""
    value = " ".join(value.split())
    if len(value) <= limit:
        return value
    half = (limit - 1) // 2
    return value[:half] + "…" + value[len(value) - half :]


def values_text(reason: Reason, others: Sequence[Reason] = ()) -> str:
    """``before -> after``, or the chain of them when a folded reason saw several values."""
    pairs = list(dict.fromkeys(f"{r.before} -> {r.after}" for r in (reason, *others)))
    if len(pairs) > 1 and sum(len(p) for p in pairs) <= MAX_VALUE_CHARS:
        return " | ".join(pairs)
    first = f"{shorten(reason.before)} -> {shorten(reason.after)}"
    return first + (
        OTHER_VALUES.format(n=len(pairs) - 1, s="" if len(pairs) == 2 else "s")
        if len(pairs) > 1
        else ""
    )


def _reason_lines(change: Change, width: int | None, detailed: bool, noun: str) -> list[Line]:
    """A change's head (its paths, kind and count) and its values: one line when it fits the
    width, else the values on a line of their own; with ``detailed``, its message under them."""
    reason = change.reasons[0]
    counted = REASON_COUNT.format(n=change.count, noun=noun) if change.count > 1 else ""
    paths = _paths(change)
    line = REASON_LINE.format(path=paths, kind=reason.kind, count=counted, values=change.values)
    room = width or ONE_LINE_WIDTH
    if detailed or len(line) + 2 > room:
        head = REASON_HEAD.format(path=paths, kind=reason.kind, count=counted)
        lines: list[Line] = [Line(2, head, Role.SUBJECT)]
        before, after = shorten(reason.before), shorten(reason.after)
        if len(change.values) + 4 > room and change.values == f"{before} -> {after}":
            # too long for one line: the after value under the before, the arrow leading it
            lines += [Line(4, before, Role.EVIDENCE), Line(4, f"-> {after}", Role.EVIDENCE)]
        else:
            lines.append(Line(4, change.values, Role.EVIDENCE))
    else:
        lines = [Line(2, line, Role.SUBJECT)]
    if detailed and reason.message:
        lines.append(Line(4, reason.message, Role.CAUSE))
    return lines


def _paths(change: Change) -> str:
    """The paths of a change's leaves, the first ``MAX_PATHS_SHOWN`` of them named."""
    named = [r.path or r.argument for r in change.reasons]
    shown = ", ".join(named[:MAX_PATHS_SHOWN])
    more = len(named) - MAX_PATHS_SHOWN
    return shown + (MORE_PATHS.format(n=more) if more > 0 else "")


def call_number(call_index: int | None) -> str:
    """The call as people count: ``call_index`` 0 (the JSON's, from 0) is call #1."""
    return UNKNOWN if call_index is None else str(call_index + 1)


def fix_lines(fix: str, indent: int) -> list[Line]:
    """The ``fix:`` line of ``fix`` at ``indent``, and the lines of code it ends with (a fix
    that shows a few lines to put in a class), each on its own line under it."""
    first, *code = fix.split("\n")
    return [
        Line(indent, FIX_LINE.format(fix=first), Role.FIX),
        *(Line(indent + 4, line, Role.CODE) for line in code),
    ]


def _retrace_number(fn: FunctionReport, event: Event) -> int:
    """1-based among the function's retraces; the next one if ``event`` is not recorded yet."""
    retraces = [e for e in fn.events if e.kind is EventKind.RETRACE]
    same = [i for i, e in enumerate(retraces, 1) if e is event]
    return same[0] if same else len(retraces) + 1


def retrace_lines(
    fn: FunctionReport,
    event: Event,
    reasons: Sequence[Folded],
    also: int = 0,
    width: int | None = None,
) -> list[Line]:
    """The header and every change of one retrace: its leaves, before -> after and its fix.

    The most decisive change comes first with its cause (the first change of each kind says
    why); leaves that changed alike are one change naming them all, a fix is shown once, under
    the last change it fixes, and past ``MAX_CHANGES_SHOWN`` changes the rest are counted and
    named (``… and N more differences``). ``width``: the width the lines will be wrapped at (a
    change's values go on a line of their own when its head and values do not fit one).
    """
    return retrace_block(fn, event, reasons, also, width)[0]


def retrace_block(
    fn: FunctionReport,
    event: Event,
    reasons: Sequence[Folded],
    also: int = 0,
    width: int | None = None,
    number: int | None = None,
) -> tuple[list[Line], list[Folded]]:
    """:func:`retrace_lines`, and the reasons past ``MAX_CHANGES_SHOWN`` (a report shows those
    a later retrace has under that retrace, so that a distinct retrace never vanishes)."""
    if number is None:
        number = _retrace_number(fn, event)
    label = RETRACE_LABELS.get(event.kind, event.kind).format(number=number)
    header = RETRACE_HEADER.format(
        call_site=event.call_site or fn.first_call_site,
        label=label,
        # a guard reports at trace start, before anything was timed
        seconds=f", {event.seconds:.2f} s" if event.seconds else "",
        call=CALL_SUFFIX.format(index=call_number(event.call_index))
        if event.call_index is not None
        else "",
        also=ALSO_SUFFIX.format(n=also) if also else "",
    )
    lines: list[Line] = [Line(0, header, Role.EVENT)]
    every = changes(reasons)
    shown, rest = every[:MAX_CHANGES_SHOWN], every[MAX_CHANGES_SHOWN:]
    kinds: set[str] = set()
    fixes: set[str] = set()
    for i, change in enumerate(shown):
        reason = change.reasons[0]
        detailed = reason.kind not in kinds  # the why of each kind of change, once
        kinds.add(reason.kind)
        lines += _reason_lines(change, width, detailed, _noun(fn, reason))
        last = i == len(shown) - 1 or shown[i + 1].reasons[0].fix != reason.fix
        if reason.fix and last and reason.fix not in fixes:  # under the last change it fixes
            lines += fix_lines(reason.fix, 4)
            fixes.add(reason.fix)
    if not rest:
        return lines, []
    cut = [r for c in rest for r in c.reasons]
    paths = ", ".join(shorten(r.path or r.argument, 24) for r in cut[:3])
    paths += ", …" if len(cut) > 3 else ""
    lines.append(
        Line(
            2, MORE_LINE.format(n=len(cut), s="" if len(cut) == 1 else "s", paths=paths), Role.NOTE
        )
    )
    return lines, [(r, c.count, c.values) for c in rest for r in c.reasons]


@dataclasses.dataclass(frozen=True)
class Change:
    """Leaves of one retrace that changed alike: one kind, the same values, the same fix (the
    model's parameter and its optimizer's momentum placed otherwise; five batch fields of one new
    shape). What every output of a retrace shows, all of it: the text, the live log, a budget's
    error and the HTML list each change's leaves, before -> after and its fix."""

    reasons: tuple[Reason, ...]
    #: How many retraces had it (folded across a function's retraces; 1 for one retrace).
    count: int
    #: ``before -> after``, or the chain of them (:func:`values_text`).
    values: str


def changes(reasons: Sequence[Folded]) -> list[Change]:
    """``reasons`` (in the explainer's order: what removes the retrace first) as changes: leaves
    with one kind, values and fix together, and changes sharing one fix next to each other, at
    the place of the first (the fix is shown once, under the last of them)."""
    groups: dict[tuple[str, str, str, int], list[Reason]] = {}
    counts: dict[tuple[str, str, str, int], tuple[int, str]] = {}
    for reason, count, values in reasons:
        key = (reason.kind, values, reason.fix, count)
        groups.setdefault(key, []).append(reason)
        counts[key] = (count, values)
    made = [Change(tuple(rs), *counts[key]) for key, rs in groups.items()]
    by_fix: dict[str, list[Change]] = {}
    for change in made:
        by_fix.setdefault(change.reasons[0].fix or str(id(change)), []).append(change)
    return [change for alike in by_fix.values() for change in alike]


def _wrapped(indent: int, text: str, width: int | None) -> str:
    pad = " " * indent
    if width is None:
        return pad + text
    return textwrap.fill(
        text, max(width, 40), initial_indent=pad, subsequent_indent=pad + "  ",
        break_on_hyphens=False,
    )  # fmt: skip


def _noun(fn: FunctionReport, reason: Reason) -> str:
    """``recompiles`` when some of the events sharing ``reason`` compiled without a retrace."""
    if not fn.recompiles:
        return "retraces"
    key = fold_key(reason)
    kinds = {e.kind for e in fn.events for r in e.reasons if fold_key(r) == key}
    return "recompiles" if EventKind.COMPILE in kinds else "retraces"


def fold_key(reason: Reason) -> tuple[str, str, str, str]:
    """What makes two reasons the same for ``_report.fold_reasons`` (``Reason.fold_key``)."""
    return reason.fold_key()


def stale_lines(fn: FunctionReport, stale: StaleHit) -> list[Line]:
    header = STALE_HEADER.format(
        call_site=stale.call_site or fn.first_call_site, index=call_number(stale.call_index)
    )
    values = f"{shorten(stale.before)} -> {shorten(stale.after)}"
    lines: list[Line] = [
        Line(0, header, Role.ALERT),
        Line(2, f"{stale.path or stale.argument}: {values}", Role.SUBJECT),
    ]
    if stale.message:
        lines.append(Line(4, stale.message, Role.CAUSE))
    if stale.fix:
        lines.append(Line(4, FIX_LINE.format(fix=stale.fix), Role.FIX))
    return lines


#: A static a hit passed that jitlens could not check (``Unchecked``): every output's words.
UNCHECKED_HEADER = "warning: not checked at {call_site} (call #{index}): `{path}`"
UNCHECKED_TEXT = {
    "too_big": (
        "jitlens could not check `{path}` for a change in place (call #{index}): it holds more "
        "than {limit} values, more than a check reads. If it is changed in place after its "
        "compile, {kind} serves the old compile with no retrace (a stale result): {remedy}."
    ),
}
#: ... for a ``why`` this jitlens has no words for (a report from a later one).
UNCHECKED_OTHER = "jitlens could not check `{path}` (call #{index}): {why}."
#: ... when the report keeps no remedy (written before it did).
UNCHECKED_REMEDY = "assign a new object instead of changing it"


def unchecked_text(kind: str, u: Unchecked) -> str:
    """What a static jitlens could not check means, and the remedy, for a ``kind`` of jit."""
    remedy = u.remedy or UNCHECKED_REMEDY
    limit = UNKNOWN if u.limit is None else f"{u.limit:,}"
    return UNCHECKED_TEXT.get(u.why, UNCHECKED_OTHER).format(
        path=u.path,
        index=call_number(u.call_index),
        limit=limit,
        kind=kind,
        why=u.why,
        remedy=remedy,
    )


def unchecked_lines(fn: FunctionReport, u: Unchecked) -> list[Line]:
    header = UNCHECKED_HEADER.format(
        call_site=u.call_site or fn.first_call_site, index=call_number(u.call_index), path=u.path
    )
    return [Line(0, header, Role.ALERT), Line(4, unchecked_text(fn.kind, u), Role.CAUSE)]


def fallback(report: object) -> str:
    try:
        raw = repr(report)
    except Exception:
        raw = object.__repr__(report)
    return FALLBACK.format(raw=raw)


def render_retrace(
    fn: FunctionReport, event: Event, width: int | None = None, number: int | None = None
) -> str:
    """One retrace as plain text for a log record or an error message: every change, its fix.

    ``number``: the retrace's number where the caller numbered it (default: its place
    among the function's retraces).

    ``width``: wrap every line at this many characters (a terminal's), continuation lines
    indented under their line; ``None`` leaves lines whole.

    Example:
        >>> from jitlens._core.report import Event, FunctionReport
        >>> fn = FunctionReport("f", "f", "jax.jit", "a.py:1", "a.py:2", 2, 2, 2, 0, 0, 0.0, 0.0, 0.0)
        >>> print(render_retrace(fn, Event(1, "retrace", "a.py:2", "x: f32[3]")))
        f (jax.jit) a.py:2  retrace #1 (call #2)
          no difference found between the new cache key and the compiled ones (1 retrace(s))
    """
    try:
        folded = [(r, 1, values_text(r)) for r in event.reasons]
        lines = retrace_block(fn, event, folded, width=width, number=number)[0]
        head = RETRACE_TITLE.format(qualname=fn.qualname, kind=fn.kind, header=lines[0].text)
        body = lines[1:]
        chosen = buckets.bucketed(fn.events) if event.kind is EventKind.RETRACE else []
        if chosen:  # the retraces so far are a deliberate bucket set: said as the summary says
            from .reasons import bucketed

            body = [Line(2, bucketed(s).make(), Role.OK) for s in chosen]
        if not event.reasons and event.kind != EventKind.TRACE:
            body.append(Line(2, no_reason(event.kind, 1), Role.NOTE))
        return "\n".join(
            [
                _wrapped(0, head, width),
                *(_wrapped(b.indent, b.text, None if b.role is Role.CODE else width) for b in body),
            ]
        )
    except Exception:
        LOG.exception("jitlens: rendering a retrace failed")
        return fallback(event)
