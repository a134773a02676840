"""Inline SVG pieces of the HTML report: call timeline, shape matrix, program-size bars."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from .._core.cost import CompileCost
from .._core.kinds import EventKind
from .._core.report import Event, FunctionReport
from .._core.retrace_text import changes, values_text

#: Drawing size of a timeline in SVG user units; the page scales it to its width.
WIDTH = 960
MARGIN = 12
#: Room on the left of a timeline for its lane labels.
LEFT = 64
#: Most call marks drawn per function; ``call_times`` is capped upstream too.
MAX_MARKS = 5000
STRIP_WIDTH = 560
#: Report times are rounded to microseconds; a call may seem to end just before its trace began.
TIME_SLACK = 2e-6

#: Tooltips (``data-tip``, shown by the page's script; calls are numbered from 1).
HIT_TIP = "call #{call}: cache hit{entry}\n{signature}\nat {time} s"
EVENT_TIP = (
    "call #{call}: {label}{entry}\n{signature}\n"
    "trace {trace} s + lower {lower} s + compile {compile} s\nat {time} s"
)
BAR_TIP = "{phase} {seconds} s (from {start} s)"
ENTRY_SUFFIX = " → entry #{entry}"
#: The row of calls no compiled entry can be tied to, in words: with two or more entries seen,
#: the hits went to one of them (their per-call signatures were alike: jitlens files a hit by
#: argument shapes, static numbers and model objects, not by what only a compile reads)...
UNKNOWN_AMONG = (
    "cache hits served by one of the entries above; jitlens could not tie them to one: those "
    "entries take the same argument shapes, static numbers and model objects, and differ in what "
    "only a compile reads (a model's static attribute, an object's contents)"
)
#: ... else by an entry it did not see compiled.
UNKNOWN_UNSEEN = (
    "cache hits jitlens could not tie to an entry it saw compiled (one compiled before tracking "
    "began, or by another wrapper of the same function, or alike to the entry above)"
)
NO_CALL_TIMES = "call times were not recorded for this function"
#: What an entry's list of changes is (on hover).
MADE_TITLE = "what this entry was compiled for, against the closest entry compiled before it"
AXIS_LABEL = "{t:g} s"
CALL_AXIS = "calls #{first} … #{last} in order →"
LABELS = {"trace": "first trace", "retrace": "retrace #{number}", "compile": "recompile"}
PHASES = ("trace", "lower", "compile")


def _finite(value: float) -> float:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def _s(value: float) -> str:
    return f"{_finite(value):.3f}".rstrip("0").rstrip(".") or "0"


def _ticks(span: float) -> list[float]:
    raw = span / 6
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(int(span / step) + 1)]


def time_span(functions: tuple[FunctionReport, ...], duration: float) -> float:
    """The end of the common time axis of every timeline: the report, or the last thing in it."""
    ends = [_finite(duration)]
    for fn in functions:
        ends += [_finite(t) for t in fn.call_times]
        ends += [_finite(e.time) + _finite(e.seconds) for e in fn.events]
    return max(max(ends), 1e-3)


def time_origin(functions: Sequence[FunctionReport], end: float) -> float:
    """The start of the common axis: the first jitted call (imports before it are not drawn).

    A program that spends 11 of its 12 seconds importing would otherwise squeeze
    every call into the right edge.
    """
    starts = [_finite(t) for fn in functions for t in fn.call_times[:1]]
    starts += [_finite(e.time) for fn in functions for e in fn.events]
    starts = [t for t in starts if 0 <= t < end]
    return min(starts, default=0.0)


def call_events(fn: FunctionReport) -> dict[int, Event]:
    """The call (index into ``call_times``) that ran each trace.

    ``Event.call_index`` counts the wrapper's calls from its creation and
    ``call_times[0]`` is call ``first_call_index``, so the match is exact.
    Events with no ``call_index`` came from no tracked call (an AOT compile, a
    wrapper made before tracking) and match none.
    """
    matched: dict[int, Event] = {}
    for event in fn.events:
        if event.call_index is None:
            continue
        call = event.call_index - fn.first_call_index
        if 0 <= call < len(fn.call_times) and call not in matched:
            matched[call] = event
    return matched


def _mark(
    cls: str, x: float, y: float, t: float, tip: str, href: str | None, call: int | None
) -> str:
    data = f' data-t="{_finite(t):.6f}" data-tip="{escape(tip)}"'
    data += "" if call is None else f' data-call="{call}"'
    if cls == "hit":
        return f'<circle class="mark hit" cx="{x:.1f}" cy="{y}" r="3.5"{data}></circle>'
    rotate = f' transform="rotate(45 {x:.1f} {y})"' if cls == "retrace" else ""
    shape = (
        f'<rect class="mark {escape(cls)}" x="{x - 4.5:.1f}" y="{y - 4.5}" width="9" height="9"'
        f"{rotate}{data}></rect>"
    )
    return f'<a href="#{escape(href)}">{shape}</a>' if href else shape


def _event_tip(event: Event, number: int, origin: float) -> str:
    return EVENT_TIP.format(
        call="?" if event.call_index is None else event.call_index + 1,
        label=LABELS.get(event.kind, event.kind).format(number=number),
        signature=event.signature or "?",
        time=_s(event.time - origin),
        entry=ENTRY_SUFFIX.format(entry=event.entry),
        trace=_s(event.trace_seconds),
        lower=_s(event.lower_seconds),
        compile=_s(event.compile_seconds),
    )


def timeline_svg(
    fn: FunctionReport, span: float, anchors: Mapping[int, str], origin: float = 0.0
) -> str:
    """Calls over time (hits as dots, traces as squares, retraces as diamonds) above
    their trace / lower / compile bars; ``anchors`` maps an event's index to its explanation.

    The axis runs from ``origin`` (the first jitted call) to ``span``; every
    mark and bar carries its time (``data-t``, ``data-d``) and a tooltip
    (``data-tip``), so the page's script can zoom into a brushed range and
    show what each mark is.
    """
    origin = min(max(_finite(origin), 0.0), span)
    scale = (WIDTH - LEFT - MARGIN) / max(span - origin, 1e-3)

    def x(t: float) -> float:
        return LEFT + (min(max(_finite(t), origin), span) - origin) * scale

    matched = call_events(fn)
    call_of = {id(event): call for call, event in matched.items()}
    index_of = {id(e): i for i, e in enumerate(fn.events)}
    signatures = _entry_signatures(fn, [])
    entries = fn.call_entries
    parts: list[str] = []
    for call, t in enumerate(fn.call_times[:MAX_MARKS]):
        if call not in matched:
            entry = entries[call] if call < len(entries) else None
            tip = HIT_TIP.format(
                call=fn.first_call_index + call + 1,
                entry="" if entry is None else ENTRY_SUFFIX.format(entry=entry),
                signature=signatures.get(entry, "?") if entry is not None else "?",
                time=_s(t - origin),
            )
            parts.append(_mark("hit", x(t), 18, t, tip, None, call))
    numbers = _retrace_numbers(fn)
    for event in fn.events:
        href = anchors.get(index_of[id(event)])
        tip = _event_tip(event, numbers.get(id(event), 0), origin)
        cls = event.kind + (
            " expected" if event.kind is EventKind.RETRACE and event.expected else ""
        )
        parts.append(_mark(cls, x(event.time), 18, event.time, tip, href, call_of.get(id(event))))
    for event in fn.events:
        start = _finite(event.time)
        for phase in PHASES:
            seconds = _finite(getattr(event, f"{phase}_seconds"))
            if seconds <= 0:
                continue
            width = max(seconds * scale, 1.0)
            tip = BAR_TIP.format(phase=phase, seconds=_s(seconds), start=_s(start - origin))
            parts.append(
                f'<rect class="bar {phase}-bar" x="{x(start):.1f}" y="32" width="{width:.1f}" '
                f'height="10" data-t="{start:.6f}" data-d="{seconds:.6f}" '
                f'data-tip="{escape(tip)}"></rect>'
            )
            start += seconds
    ticks = "".join(
        f'<line class="tick" x1="{x(origin + t):.1f}" x2="{x(origin + t):.1f}" y1="48" y2="52"/>'
        f'<text class="tick" x="{x(origin + t):.1f}" y="63">{AXIS_LABEL.format(t=round(t, 6))}</text>'
        for t in _ticks(max(span - origin, 1e-3))
    )
    return (
        f'<svg class="timeline" data-function="{escape(fn.qualname)}" viewBox="0 0 {WIDTH} 68" '
        f'data-t0="{origin:.6f}" data-t1="{span:.6f}" data-left="{LEFT}" '
        f'data-right="{WIDTH - MARGIN}" role="img" '
        f'aria-label="calls of {escape(fn.qualname)} over time">'
        f'<text class="lane-label" x="{MARGIN}" y="22">calls</text>'
        f'<text class="lane-label" x="{MARGIN}" y="41">compiles</text>'
        f'<line class="axis" x1="{LEFT}" x2="{WIDTH - MARGIN}" y1="48" y2="48"/>'
        f'<g class="ticks">{ticks}</g>' + "".join(parts) + "</svg>"
    )


def _retrace_numbers(fn: FunctionReport) -> dict[int, int]:
    """Each retrace's number among the function's retraces, from 1."""
    retraces = [e for e in fn.events if e.kind is EventKind.RETRACE]
    return {id(e): i for i, e in enumerate(retraces, 1)}


def _entry_signatures(fn: FunctionReport, went_to: list[int]) -> dict[int, str]:
    signatures: dict[int, str] = {}
    for event in fn.events:
        signatures.setdefault(event.entry, event.signature)
    seen = sum(1 for entry in signatures if entry >= 0)
    for entry in went_to:
        unknown = UNKNOWN_AMONG if seen > 1 else UNKNOWN_UNSEEN
        signatures.setdefault(entry, unknown if entry < 0 else "?")
    return dict(sorted(signatures.items(), key=lambda item: (item[0] < 0, item[0])))


def _what_made(fn: FunctionReport) -> dict[int, str]:
    """What each entry was compiled for, beyond its signature: the changes of the event that made
    it (``before -> after`` of each leaf: a sharding that only a compile reads is no part of the
    signature, and two entries alike but for it looked the same)."""
    made: dict[int, str] = {}
    for event in fn.events:
        if event.entry < 0 or event.entry in made or not event.reasons:
            continue
        folded = [(r, 1, values_text(r)) for r in event.reasons]  # each side cut at 70
        items = "".join(
            f'<li><span class="kind">{escape(c.reasons[0].kind)}</span> '
            + ", ".join(
                f'<mark class="path">{escape(r.path or r.argument)}</mark>' for r in c.reasons
            )
            + f": <code>{escape(c.values)}</code></li>"
            for c in changes(folded)
        )
        made[event.entry] = f'<ul class="made" title="{escape(MADE_TITLE)}">{items}</ul>'
    return made


def _strip_cell(strip: str, calls: int, rows: int, first: bool) -> str:
    if calls:
        return f'<td class="strip">{strip}</td>'
    return f'<td class="strip" rowspan="{rows}">{escape(NO_CALL_TIMES)}</td>' if first else ""


def entries_table(fn: FunctionReport) -> str:
    """One row per compiled entry (signature) with a dot for every call that went to it."""
    matched = call_events(fn)
    n = min(len(fn.call_entries), len(fn.call_times), MAX_MARKS)
    # A call whose entry is unknown but that traced went to the entry its trace made.
    went_to = [
        fn.call_entries[i] if fn.call_entries[i] >= 0 or i not in matched else matched[i].entry
        for i in range(n)
    ]
    signatures = _entry_signatures(fn, went_to)
    step = (STRIP_WIDTH - 2 * MARGIN) / max(n - 1, 1)
    radius = min(max(step * 0.4, 1.2), 5.0)
    traces = {
        e: sum(1 for ev in fn.events if ev.entry == e and ev.kind != "compile") for e in signatures
    }
    compiles = {e: sum(1 for ev in fn.events if ev.entry == e and ev.compiled) for e in signatures}
    made = _what_made(fn)
    rows: list[str] = []
    for entry, signature in signatures.items():
        dots: list[str] = []
        for call in range(n):
            if went_to[call] != entry:
                continue
            event = matched.get(call)
            cls = "hit" if event is None else escape(event.kind)
            title = f"call #{fn.first_call_index + call + 1}: "
            title += "cache hit" if event is None else cls
            dots.append(
                f'<circle class="dot {cls}" data-call="{call}" cx="{MARGIN + call * step:.1f}" '
                f'cy="9" r="{radius:.1f}" data-tip="{escape(title)}"></circle>'
            )
        calls = went_to.count(entry)
        strip = (
            f'<svg class="dots" width="{STRIP_WIDTH}" height="18" viewBox="0 0 {STRIP_WIDTH} 18">'
            f'<line class="lane" x1="{MARGIN}" x2="{STRIP_WIDTH - MARGIN}" y1="9" y2="9"/>'
            + "".join(dots)
            + "</svg>"
        )
        shown = (
            f'<td><code class="signature">{escape(signature) or "?"}</code>{made.get(entry, "")}</td>'
            if entry >= 0
            else f'<td class="unknown">{escape(signature)}</td>'  # words, not a signature
        )
        rows.append(
            f'<tr class="entry" data-entry="{entry}"><td class="num">{f"#{entry}" if entry >= 0 else "?"}</td>'
            f"{shown}"
            f'<td class="num">{calls if n else "?"}</td><td class="num">{traces[entry]}</td>'
            f'<td class="num">{compiles[entry]}</td>'
            f"{_strip_cell(strip, n, len(signatures), entry == next(iter(signatures)))}</tr>"
        )
    first = fn.first_call_index + 1
    axis = escape(CALL_AXIS.format(first=first, last=first + n - 1)) if n else ""
    return (
        f'<table class="entries" data-function="{escape(fn.qualname)}"><thead><tr>'
        f"<th>entry</th><th>signature</th><th>calls</th><th>traces</th><th>compiles</th>"
        f"<th>{axis}</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


#: The program-size bars (issue 34): one bar per user line, width = its share of equations.
COST_BAR_WIDTH = 360
COST_ROW = 18
COST_TIP = "{where} in {function}: {eqns:,} of {total:,} equations ({share:.0%})"
COST_LOOP_TIP = "{kind} loop at {where}: {n} iterations, {body:,} equations each"


def cost_bars_svg(cost: CompileCost) -> str:
    """The lines that make a program big, as horizontal bars (inclusive: a call line
    counts the equations of what it called, as in a flame graph's frame)."""
    total = max(cost.eqns, 1)
    loops = {(lp.file, lp.line): lp for lp in cost.loops}
    rows = []
    for i, line in enumerate(cost.lines):
        share = min(1.0, line.eqns / total)
        where = f"{line.file}:{line.line}"
        tip = COST_TIP.format(
            where=where, function=line.function, eqns=line.eqns, total=total, share=share
        )
        loop = loops.get((line.file, line.line))
        if loop is not None:
            tip += "\n" + COST_LOOP_TIP.format(
                kind=loop.kind, where=where, n=loop.iterations, body=loop.body_eqns
            )
        y = i * COST_ROW
        label = f"{share:>4.0%}  {where}  {line.function}"
        rows.append(
            f'<g class="cost-line" data-line="{escape(where)}" data-tip="{escape(tip)}">'
            f'<rect class="compile-bar" x="0" y="{y + 3}" height="{COST_ROW - 6}" '
            f'width="{max(1.0, share * COST_BAR_WIDTH):.1f}"/>'
            f'<text x="{COST_BAR_WIDTH + 8}" y="{y + COST_ROW - 5}">{escape(label)}</text></g>'
        )
    height = max(COST_ROW, COST_ROW * len(rows))
    width = COST_BAR_WIDTH + 560
    return (
        f'<svg class="cost" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f"{''.join(rows)}</svg>"
    )


PROGRAM_HEAD = "Program size: the lines that make the longest compile big"
PROGRAM_META = (
    "{seconds:.2f} s to trace, lower and compile {eqns:,} equations (read in {read:.0f} ms){consts}"
)
PROGRAM_CONST = "{name} {shape} {dtype}, {size:.1f} MiB"
#: ... an array no variable holds (built while tracing), by the line that reads it.
PROGRAM_CONST_AT = "(read at {where})"
PROGRAM_LOOP = "{where}{via}: {kind} x{n}, {eqns:,} equations"


def program_size_html(e: Event | None) -> str:
    """A function's costliest read compile as bars per line, its loops and constants."""
    if e is None or e.cost is None:
        return ""
    cost = e.cost
    consts = "; ".join(
        PROGRAM_CONST.format(
            name=c.name
            or (PROGRAM_CONST_AT.format(where=f"{c.file}:{c.line}") if c.line else "(unnamed)"),
            shape="x".join(map(str, c.shape)),
            dtype=c.dtype,
            size=c.nbytes / 2**20,
        )
        for c in cost.consts
    )
    loops = "; ".join(
        PROGRAM_LOOP.format(
            where=f"{lp.file}:{lp.line}",
            via=f" (in {lp.via})" if lp.via else "",
            kind=lp.kind,
            n=lp.iterations,
            eqns=lp.eqns,
        )
        for lp in cost.loops
    )
    meta = PROGRAM_META.format(
        seconds=e.seconds,
        eqns=cost.eqns,
        read=cost.collect_seconds * 1e3,
        consts=(f"; loops unrolled: {loops}" if loops else "")
        + (f"; captured constants: {consts}" if consts else ""),
    )
    return (
        f'<h3>{escape(PROGRAM_HEAD)}</h3><p class="meta">{escape(meta)}</p>'
        f'<div class="program">{cost_bars_svg(cost)}</div>'
    )
