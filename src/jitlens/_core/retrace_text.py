"""Plain text of one retrace: the lines every output shares (logs, guard errors, renderers).

A retrace is shown as a header (call site, which retrace, seconds, call index)
and its reasons, most decisive first, at most :data:`MAX_LINES_PER_RETRACE`
lines. Each :class:`~.lines.Line` says what it is (its :class:`~.lines.Role`);
the terminal renderer styles it by that, log records and ``RecompileError``
messages print it as it is.
"""

from __future__ import annotations

import functools
import logging
import textwrap
from collections.abc import Sequence

from . import buckets
from .kinds import EventKind
from .lines import Line, Role
from .report import Event, FunctionReport, Reason, StaleHit, Unchecked

LOG = logging.getLogger("jitlens")
#: Lines one retrace may take (header included), however many reasons it has.
MAX_LINES_PER_RETRACE = 8
#: Longest ``before``/``after`` repr shown in full; longer ones are cut in the middle.
MAX_VALUE_CHARS = 70
UNKNOWN = "?"
RETRACE_HEADER = "{call_site}  {label}{seconds}{call}{also}"
RETRACE_LABELS = {
    "trace": "first trace",
    "retrace": "retrace #{number}",
    "compile": "recompile",
    "stopped": "trace stopped by a compile budget",
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
MORE_LINE = "… and {n} more difference{s} ({paths})"
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


def _first_values(values: str) -> str:
    """A chain of values (``values_text``'s ``a -> b | b -> c``) cut after its first change
    (the reason's count says how many there were)."""
    return values.split(" | ")[0] + " | …"


def _reason_lines(
    reason: Reason, count: int, values: str, detailed: bool, noun: str = "retraces"
) -> list[Line]:
    where = reason.path or reason.argument
    counted = REASON_COUNT.format(n=count, noun=noun) if count > 1 else ""
    if detailed or len(where) + len(values) > MAX_VALUE_CHARS:
        head = REASON_HEAD.format(path=where, kind=reason.kind, count=counted)
        lines: list[Line] = [Line(2, head, Role.SUBJECT), Line(4, values, Role.EVIDENCE)]
    else:
        line = REASON_LINE.format(path=where, kind=reason.kind, count=counted, values=values)
        lines = [Line(2, line, Role.SUBJECT)]
    if detailed and reason.message:
        lines.append(Line(4, reason.message, Role.CAUSE))
    return lines


def call_number(call_index: int | None) -> str:
    """The call as people count: ``call_index`` 0 (the JSON's, from 0) is call #1."""
    return UNKNOWN if call_index is None else str(call_index + 1)


def fix_lines(fix: str, indent: int) -> list[Line]:
    """The ``fix:`` line of ``fix`` at ``indent``, and the lines of code it ends with (a fix
    that shows a few lines to put in a class), each on its own line under it."""
    first, *code = fix.split("\n")
    return [
        Line(indent, FIX_LINE.format(fix=first), Role.FIX),
        *(Line(indent + 4, line, Role.FIX) for line in code),
    ]


def _height(block: Sequence[Line], width: int | None) -> int:
    """Screen lines ``block`` takes when wrapped at ``width`` (``None``: one per line)."""
    if width is None:
        return len(block)
    return sum(_screen_lines(line.text, max(width - line.indent, 20)) for line in block)


@functools.lru_cache(maxsize=4096)  # a report's retraces share their words
def _screen_lines(text: str, room: int) -> int:
    """Screen lines ``text`` takes wrapped at ``room`` (a line that fits is one: no wrap)."""
    if len(text) <= room and "\t" not in text:  # a tab may take up to 8 columns
        return 1
    return max(1, len(textwrap.wrap(text, room)))


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
    """The header and reasons of one retrace, at most ``MAX_LINES_PER_RETRACE`` lines.

    The most decisive reason comes first with its cause; later ones get one line
    each, a fix is shown once however many reasons share it, and what does not
    fit is summed up as ``… and N more differences``. With ``width``, the budget
    counts screen lines after wrapping at that width (the terminal's), so a long
    message or fix costs what it takes on screen. A first reason too tall even
    alone loses its message before anything else.
    """
    return retrace_block(fn, event, reasons, also, width)[0]


def retrace_block(
    fn: FunctionReport,
    event: Event,
    reasons: Sequence[Folded],
    also: int = 0,
    width: int | None = None,
    later: frozenset[tuple[str, str, str, str]] = frozenset(),
    number: int | None = None,
) -> tuple[list[Line], list[Folded]]:
    """:func:`retrace_lines`, and the reasons that did not fit (a report shows them under a
    later retrace that has them too, so that a distinct retrace never vanishes).

    ``later``: fold keys of reasons a later retrace has: one that does not fit here with its
    fix is left to that retrace instead of shrinking to one line."""
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
    ordered = list(reasons)  # the explainer's order: the reason whose fix removes the trace first
    fixes: set[str] = set()
    deferred: list[Folded] = []
    for shown, (reason, count, values) in enumerate(ordered):
        block = _reason_lines(reason, count, values, detailed=shown == 0, noun=_noun(fn, reason))
        if reason.fix and reason.fix not in fixes:
            block.extend(fix_lines(reason.fix, 4))
        room = MAX_LINES_PER_RETRACE - _height(lines, width)
        room -= 1 if shown < len(ordered) - 1 else 0
        if shown == 0 and _height(block, width) > room and len(block) > 1:
            # the values on the head line first: the message (the why) goes last
            merged = [_one_line(reason, count, values, _noun(fn, reason), None), *block[2:]]
            if block[1].text == values and _height(merged, width) < _height(block, width):
                block = merged
        if shown == 0 and _height(block, width) > room and " | " in values:
            # then the chain of values gives way to its first change
            short = _first_values(values)
            cut = [_one_line(reason, count, short, _noun(fn, reason), None)]
            cut += [line for line in block if line.role in (Role.CAUSE, Role.FIX)]
            if _height(cut, width) < _height(block, width):
                block = cut
        if shown == 0 and _height(block, width) > room and reason.message:
            block = [line for line in block if line.text != reason.message]
        if _height(block, width) > room and shown > 0:
            if fold_key(reason) in later:
                deferred.append((reason, count, values))
                continue
            # no room for its fix: one line still says what changed
            block = [_one_line(reason, count, values, _noun(fn, reason))]
        if _height(block, width) > room and shown == 0 and reason.fix:
            # the first reason never gives way whole: one line says what changed, then its
            # fix (a fix with lines of code may take more than the budget)
            fix = [line for line in block if line.role is Role.FIX]
            block = [_one_line(reason, count, values, _noun(fn, reason)), *fix]
            if _height(block, width) > room:
                lines.extend(block)
                fixes.add(reason.fix)
                continue
        if _height(block, width) > room:
            rest = [r.path or r.argument for r, _, _ in ordered[shown:]]
            paths = ", ".join(shorten(p, 24) for p in rest[:3]) + (", …" if len(rest) > 3 else "")
            more = MORE_LINE.format(n=len(rest), s="" if len(rest) == 1 else "s", paths=paths)
            lines.append(Line(2, more, Role.NOTE))
            return lines, [*deferred, *ordered[shown:]]
        if len(block) > 1 or shown == 0:
            fixes.add(reason.fix)
        lines.extend(block)
    return lines, deferred


def _wrapped(indent: int, text: str, width: int | None) -> str:
    pad = " " * indent
    if width is None:
        return pad + text
    return textwrap.fill(
        text, max(width, 40), initial_indent=pad, subsequent_indent=pad + "  ",
        break_on_hyphens=False,
    )  # fmt: skip


def _one_line(reason: Reason, count: int, values: str, noun: str, limit: int | None = 40) -> Line:
    counted = REASON_COUNT.format(n=count, noun=noun) if count > 1 else ""
    where = reason.path or reason.argument
    shown = values if limit is None else shorten(values, limit)
    text = REASON_LINE.format(path=where, kind=reason.kind, count=counted, values=shown)
    return Line(2, text, Role.SUBJECT)


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
    """One retrace as plain text for a log record or an error message (at most 8 lines).

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
        body = [(line.indent, line.text) for line in lines[1:]]
        chosen = buckets.bucketed(fn.events) if event.kind is EventKind.RETRACE else []
        if chosen:  # the retraces so far are a deliberate bucket set: said as the summary says
            from .reasons import bucketed

            body = [(2, bucketed(s).make()) for s in chosen]
        if not event.reasons and event.kind != EventKind.TRACE:
            body.append((2, no_reason(event.kind, 1)))
        return "\n".join([_wrapped(0, head, width), *(_wrapped(i, t, width) for i, t in body)])
    except Exception:
        LOG.exception("jitlens: rendering a retrace failed")
        return fallback(event)
