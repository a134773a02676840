"""One self-contained HTML page of a report: table, timelines, shape entries and explanations."""

from __future__ import annotations

import datetime
import itertools
import logging
import re
from collections.abc import Sequence
from html import escape

from .._core import buckets
from .._core.advice import SAVING_SCOPE
from .._core.report import (
    Event,
    FunctionReport,
    Reason,
    Report,
    StaleHit,
    Unchecked,
    fold_reasons,
    total_traces,
)
from .._core.retrace_text import (
    UNCHECKED_HEADER,
    Change,
    call_number,
    changes,
    fold_key,
    unchecked_text,
    values_text,
)
from .._core.runinfo import RunInfo
from .advice import advice_title, costliest, made_smaller, ranked
from .heading import NOT_INCLUDED
from .html_assets import ADVICE_CSS, CSS, JS, LEGEND
from .svg import entries_table, program_size_html, time_origin, time_span, timeline_svg
from .text import bucketed_text, notices, percent, reused_text, sorted_functions, table_name

LOG = logging.getLogger("jitlens")

#: Changes (leaves that changed alike) shown before the rest of one retrace folds into
#: "… and N more" (a click away: every change is in the page).
MAX_REASONS_SHOWN = 7
#: Longest before / after repr shown whole (a big array's repr can run to megabytes).
MAX_VALUE_CHARS = 2000
#: Distinct before -> after pairs listed for one folded reason.
MAX_VALUE_PAIRS = 5

TITLE = "jitlens report: {host}"
META = (
    "jitlens {jitlens} · jax {jax} · flax {flax} · {backend} · host {host} · "
    "process {index}/{count} · started {started} · {duration:.1f} s tracked{not_included}"
)
CARD = '<div class="card{warn}"><b>{value}</b><span>{label}</span></div>'
FUNCTION_META = "{kind} · defined at {defined_at} · first called at {call_site}"
RETRACE_HEAD = "{label} at {call_site}{call} · {seconds:.2f} s"
RETRACE_SPLIT = "trace {trace} + lower {lower} + compile {compile}"
LABELS = {"trace": "first trace", "retrace": "retrace #{number}", "compile": "recompile"}
#: A retrace every reason of which is expected (a train/eval mode's first compile): not lost.
EXPECTED_LABEL = "expected retrace #{number} (a new mode)"
AXIS_NOTE = (
    "Time axis: seconds since the first jitted call{at}. "
    "Drag across a timeline to zoom in; double-click or “reset zoom” to see it all; "
    "hover a mark for the call, its signature and its trace / lower / compile times."
)
MORE = "… and {n} more differences"
COUNT = "in {n} retraces"
NO_REASON = "no difference found between the new cache key and the compiled ones ({n} retraces)"
NO_REASON_COMPILE = (
    "an equal key compiled again from the cached trace, not a retrace: a transformed program "
    "of the function or an ahead-of-time compile"
)
ALSO = ", +{n} difference(s) shown above"
STALE_HEAD = "stale cache hit at {call_site} (call #{index})"
FALLBACK = "<!DOCTYPE html><meta charset='utf-8'><title>jitlens report</title><pre>{raw}</pre>"
COLUMNS = (
    "function", "kind", "calls", "traces", "compiles", "cache hits",
    "hit rate", "trace s", "compile s", "lost s",
)  # fmt: skip
#: What the seconds columns add up (shown on hover).
COLUMN_TITLES = {
    "trace s": "tracing the Python function, every trace",
    "compile s": "lowering + compiling, every trace",
    "lost s": (
        "compiling again: the retraces' and the recompiles' tracing + lowering + compiling, "
        "what fixing them saves"
    ),
}

#: The card of compiles from a cached trace, by whether there is one.
RECOMPILES_CARD = {True: "recompile without a retrace", False: "recompiles without a retrace"}
ADVICE_HEAD = "Advice: what else costs time, most valuable first"
ADVICE_SAVING = "saves ~{seconds:.2f} s"
ADVICE_UNKNOWN = "saving not measurable"


def _advice_panel(
    functions: Sequence[FunctionReport], ids: dict[int, str], run: RunInfo | None
) -> str:
    """The advice, ranked by estimated saving, each kind in words (empty when there is none):
    the text's (``advice.ranked``), the persistent cache one hint for the run."""
    items = ranked(functions, run)
    if not items:
        return ""
    rows = []
    for subject, fn, a in items:
        shown = (
            ADVICE_UNKNOWN
            if a.estimated_saving_seconds is None
            else ADVICE_SAVING.format(seconds=a.estimated_saving_seconds)
            + SAVING_SCOPE.get(a.kind, "")
        )
        anchor = ids.get(id(fn)) if fn is not None else None
        name = escape(subject)
        link = f'<a href="#{anchor}">{name}</a>' if anchor else name
        rows.append(
            f'<li data-advice="{escape(a.kind)}"><b>{link}</b> <span class="kind">'
            f'{escape(advice_title(a.kind))}</span> <span class="saving">{escape(shown)}</span>'
            f'<div class="message">{escape(a.message)}</div><div class="fix">'
            f'<span class="label">fix:</span> <code>{escape(a.fix)}</code></div></li>'
        )
    return f'<section class="advice"><h3>{ADVICE_HEAD}</h3><ul>{"".join(rows)}</ul></section>'


def _highlight(text: str, path: str) -> str:
    """``text`` escaped, its `backtick` spans as ``<code>`` (as markdown shows them) and every
    whole-word occurrence of ``path`` marked, inside code spans too, never across one."""
    pieces = text.split("`")
    if len(pieces) % 2 == 0:  # an unpaired backtick is a character, not markup
        pieces = [text]
    return "".join(
        f"<code>{_mark_path(piece, path)}</code>" if i % 2 else _mark_path(piece, path)
        for i, piece in enumerate(pieces)
    )


def _mark_path(text: str, path: str) -> str:
    if not path:
        return escape(text)
    pattern = re.compile(r"(?<![\w.\[])" + re.escape(path) + r"(?![\w\[])")
    pieces = pattern.split(text)
    return f'<mark class="path">{escape(path)}</mark>'.join(escape(p) for p in pieces)


def _cut(value: str) -> str:
    """A repr kept readable: the first and last ``MAX_VALUE_CHARS // 2`` characters."""
    if len(value) <= MAX_VALUE_CHARS:
        return value
    half = MAX_VALUE_CHARS // 2
    return f"{value[:half]} … {value[-half:]}"


def _diff(before: str, after: str) -> str:
    """``before → after`` with the part that changed marked as deleted / inserted."""
    before, after = _cut(before), _cut(after)
    prefix = 0
    while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(before), len(after)) - prefix and before[-1 - suffix] == after[-1 - suffix]
    ):
        suffix += 1

    def side(value: str, tag: str) -> str:
        middle = value[prefix : len(value) - suffix]
        changed = f"<{tag}>{escape(middle)}</{tag}>" if middle else ""
        return escape(value[:prefix]) + changed + escape(value[len(value) - suffix :])

    return (
        f'<div class="values"><code class="before">{side(before, "del")}</code> → '
        f'<code class="after">{side(after, "ins")}</code></div>'
    )


def _change_html(
    change: Change, alike: Sequence[Reason], seen: set[str], kinds: set[str], fixed: bool
) -> str:
    """One change: its leaves, their values, its message (once per kind of change) and, under
    the last change it fixes (``fixed``), its fix; a message or fix already shown in the same
    retrace is not repeated."""
    reason = change.reasons[0]
    pairs = list(dict.fromkeys((r.before, r.after) for r in (reason, *alike)))
    where = reason.path or reason.argument
    paths = ", ".join(
        f'<mark class="path">{escape(r.path or r.argument)}</mark>' for r in change.reasons
    )
    counted = (
        f' <span class="count">{COUNT.format(n=change.count)}</span>' if change.count > 1 else ""
    )
    parts = [
        f'<li class="reason" data-kind="{escape(reason.kind)}"><span class="kind">'
        f"{escape(reason.kind)}</span> {paths}{counted}",
        *(_diff(b, a) for b, a in pairs[:MAX_VALUE_PAIRS]),
    ]
    if reason.message and reason.message not in seen and reason.kind not in kinds:
        parts.append(f'<p class="message">{_highlight(reason.message, where)}</p>')
        seen.add(reason.message)
        kinds.add(reason.kind)
    if reason.fix and fixed and reason.fix not in seen:
        first, *code = reason.fix.split("\n")
        label = '<span class="label">fix</span>'
        parts.append(f'<p class="fix">{label} {_highlight(first, where)}</p>')
        if code:  # the lines of code it ends with, as they are, to copy
            parts.append(f'<pre class="code"><code>{escape(chr(10).join(code))}</code></pre>')
        seen.add(reason.fix)
    return "".join(parts) + "</li>"


def _changes_html(ordered: Sequence[tuple[Reason, int, list[Reason]]]) -> list[str]:
    """The changes of one retrace (``retrace_text.changes``: leaves that changed alike are one),
    each fix under the last change it fixes, as the text shows them."""
    alike = {id(r): others for r, _, others in ordered}
    every = changes([(r, n, values_text(r, others)) for r, n, others in ordered])
    seen: set[str] = set()
    kinds: set[str] = set()
    items = []
    for i, change in enumerate(every):
        fix = change.reasons[0].fix
        fixed = i == len(every) - 1 or every[i + 1].reasons[0].fix != fix
        items.append(_change_html(change, alike[id(change.reasons[0])], seen, kinds, fixed))
    return items


def _duration(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.0f} ms"


def _retrace_html(
    fn: FunctionReport, event: Event, number: int, anchor: str, items: list[str], extra: int = 0
) -> str:
    """One retrace; ``extra`` counts its differences shown above, or (with no items) the
    retraces jitlens could not explain."""
    head = RETRACE_HEAD.format(
        label=(EXPECTED_LABEL if event.expected else LABELS.get(event.kind, event.kind)).format(
            number=number
        ),
        call_site=event.call_site or fn.first_call_site,
        call="" if event.call_index is None else f" (call #{event.call_index + 1})",
        seconds=event.seconds,
    ) + (ALSO.format(n=extra) if items and extra else "")
    split = RETRACE_SPLIT.format(
        trace=_duration(event.trace_seconds),
        lower=_duration(event.lower_seconds),
        compile=_duration(event.compile_seconds),
    )
    shown, rest = items[:MAX_REASONS_SHOWN], items[MAX_REASONS_SHOWN:]
    more = (
        f"<details><summary>{escape(MORE.format(n=len(rest)))}</summary>"
        f'<ul class="reasons">{"".join(rest)}</ul></details>'
        if rest
        else ""
    )
    none = NO_REASON_COMPILE if event.kind == "compile" else NO_REASON
    body = "".join(shown) or f'<li class="reason">{escape(none.format(n=extra))}</li>'
    return (
        f'<article class="retrace{" expected" * event.expected}" id="{anchor}"><h4>{escape(head)} '
        f'<span class="split">({escape(split)})</span></h4><ul class="reasons">{body}</ul>'
        f"{more}</article>"
    )


def _explanations(fi: int, fn: FunctionReport) -> tuple[str, dict[int, str]]:
    """Folded retrace articles of one function and, per event index, the anchor explaining it."""
    retraces = [e for e in fn.events if e.kind != "trace"]
    every = [r for e in retraces for r in e.reasons]
    key: dict[int, str] = {}
    for i, e in enumerate(fn.events):
        key.setdefault(id(e), f"fn{fi}-ev{i}")  # an event listed twice keeps its first place
    own: dict[int, list[tuple[Reason, int, list[Reason]]]] = {}
    home: dict[tuple[str, str, str, str], str] = {}
    for reason, count, first in fold_reasons(retraces):
        alike = [r for r in every if fold_key(r) == fold_key(reason) and r is not reason]
        own.setdefault(id(first), []).append((reason, count, alike))
        home[fold_key(reason)] = key[id(first)]
    articles: list[str] = []
    anchors: dict[int, str] = {}
    unexplained = ""
    silent = sum(1 for e in retraces if not e.reasons)
    numbers = itertools.count(1)
    for i, event in enumerate(fn.events):
        number = next(numbers) if event.kind == "retrace" else 0
        if event.kind == "trace":
            continue
        if not event.reasons:
            if not unexplained:
                unexplained = key[id(event)]
                articles.append(_retrace_html(fn, event, number, unexplained, [], silent))
            anchors[i] = unexplained
            continue
        anchors[i] = home[fold_key(event.reasons[0])]
        if id(event) in own:
            ordered = own.pop(id(event))  # the explainer's order: what removes the trace first
            items = _changes_html(ordered)
            also = len(event.reasons) - len(ordered)
            articles.append(_retrace_html(fn, event, number, key[id(event)], items, also))
    note = "".join(
        f'<p class="legend">{escape(bucketed_text(b))}</p>' for b in buckets.bucketed(fn.events)
    )
    shared = buckets.reused_shapes(fn)
    note += f'<p class="legend">{escape(reused_text(shared))}</p>' if shared else ""
    return note + "".join(articles), anchors


def _stale_html(fn: FunctionReport, stale: StaleHit) -> str:
    head = STALE_HEAD.format(
        call_site=stale.call_site or fn.first_call_site, index=stale.call_index + 1
    )
    where = stale.path or stale.argument
    return (
        f'<article class="retrace stale"><h4>⚠ {escape(head)}</h4>'
        f'<mark class="path">{escape(where)}</mark>{_diff(stale.before, stale.after)}'
        f'<p class="message">{_highlight(stale.message, where)}</p>'
        f'<p class="fix"><span class="label">fix</span> {_highlight(stale.fix, where)}</p></article>'
    )


def _unchecked_html(fn: FunctionReport, u: Unchecked) -> str:
    head = UNCHECKED_HEADER.removeprefix("warning: ").format(
        call_site=u.call_site or fn.first_call_site, index=call_number(u.call_index), path=u.path
    )
    return (
        f'<article class="retrace unchecked"><h4>? {escape(head)}</h4>'
        f'<p class="message">{_highlight(unchecked_text(fn.kind, u), u.path)}</p></article>'
    )


def _cells(fn: FunctionReport) -> list[str]:
    rate = fn.hit_rate
    return [
        table_name(fn),
        fn.kind,
        "?" if fn.calls is None else str(fn.calls),
        "?" if fn.traces is None else str(fn.traces),
        "?" if fn.compiles is None else str(fn.compiles),
        "?" if fn.cache_hits is None else str(fn.cache_hits),
        "?" if rate is None else percent(rate),
        f"{fn.trace_seconds:.2f}",
        f"{fn.lower_seconds + fn.compile_seconds:.2f}",
        f"{fn.seconds_lost:.2f}",
    ]


def _table(functions: Sequence[FunctionReport], ids: dict[int, str]) -> str:
    rows: list[str] = []
    for fn in functions:
        cells = [escape(c) for c in _cells(fn)]
        if id(fn) in ids:
            cells[0] = f'<a href="#{ids[id(fn)]}">{cells[0]}</a>'
        classes = " ".join(
            c for c in ("internal" * fn.internal, "retraced" * (fn.seconds_lost > 0)) if c
        )
        tds = "".join(f"<td>{c}</td>" for c in cells[:-1]) + f'<td class="lost">{cells[-1]}</td>'
        rows.append(f'<tr class="{classes}" data-function="{escape(fn.qualname)}">{tds}</tr>')
    head = "".join(
        f'<th title="{escape(COLUMN_TITLES[c])}">{c}</th>'
        if c in COLUMN_TITLES
        else f"<th>{c}</th>"
        for c in COLUMNS
    )
    return f'<table class="functions"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _section(report: Report, fi: int, fn: FunctionReport, span: float, origin: float) -> str:
    articles, anchors = _explanations(fi, fn)
    stale = "".join(_stale_html(fn, s) for s in fn.stale_hits)
    stale += "".join(_unchecked_html(fn, u) for u in fn.unchecked or ())
    meta = FUNCTION_META.format(
        kind=fn.kind, defined_at=fn.defined_at, call_site=fn.first_call_site
    )
    title = "Retraces and recompiles" if fn.recompiles else "Retraces"
    explained = f"<h3>{title}</h3>{articles}" if articles else ""
    warnings = f"<h3>Warnings</h3>{stale}" if stale else ""
    program = program_size_html(costliest(fn)) if made_smaller(fn) else ""  # issue 34
    return (
        f'<section class="function" id="fn{fi}" data-function="{escape(fn.qualname)}">'
        f'<h2>{escape(fn.qualname)}</h2><p class="meta">{escape(meta)}</p>{explained}{warnings}'
        f"{program}"
        f'<h3>Timeline <button type="button" class="jl-reset">reset zoom</button></h3>'
        f"{timeline_svg(fn, span, anchors, origin)}"
        f"<h3>Compiled entries</h3>{entries_table(fn)}</section>"
    )


def _started(report: Report) -> str:
    try:
        moment = datetime.datetime.fromtimestamp(report.started_at, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError, TypeError):
        return "?"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _page(report: Report) -> str:
    everything = sorted_functions(report, include_internal=True)
    users = [f for f in everything if not f.internal]
    ids = {id(fn): f"fn{i}" for i, fn in enumerate(users)}
    span = time_span(report.functions, report.duration_seconds)
    origin = time_origin(users, span)
    meta = META.format(
        jitlens=report.jitlens_version, jax=report.jax_version, flax=report.flax_version,
        backend=report.backend, host=report.host, index=report.process_index,
        count=report.process_count, started=_started(report), duration=report.duration_seconds,
        not_included=NOT_INCLUDED,
    )  # fmt: skip
    lost = sum(f.seconds_lost for f in users)
    retraces = sum(f.retraces for f in users)
    recompiles = sum(f.recompiles for f in users)
    stale = sum(len(f.stale_hits) for f in users)
    figures = (
        (str(len(users)), "jitted function" + "s" * (len(users) != 1), False),
        (total_traces(users), "trace" + "s" * (total_traces(users) != "1"), False),
        (str(retraces), "retrace" + "s" * (retraces != 1), retraces > 0),
        # a compile from the cached trace (a new sharding) is no retrace, but costs the same
        *([(str(recompiles), RECOMPILES_CARD[recompiles == 1], True)] if recompiles else []),
        (f"{lost:.2f} s", "lost to recompiles", lost > 0),
        (str(stale), "stale cache hits", stale > 0),
    )
    cards = "".join(
        CARD.format(value=escape(v), label=escape(label), warn=" warn" * bool(warn))
        for v, label, warn in figures
    )
    internal = len(everything) - len(users)
    toggle = (
        f'<label><input type="checkbox" id="jl-show-internal"> show {internal} internal '
        f"function{'s' * (internal != 1)}</label>"
        if internal
        else ""
    )
    argv = f'<p class="argv mono">$ {escape(" ".join(report.argv))}</p>' if report.argv else ""
    said = "".join(f'<p class="message">{_highlight(str(t), "")}</p>' for t in notices(report))
    argv += f'<section class="notices"><h3>Warnings</h3>{said}</section>' if said else ""
    sections = "".join(_section(report, i, fn, span, origin) for i, fn in enumerate(users))
    at = f" ({origin:.1f} s after tracking began)" if origin >= 0.05 else ""
    note = f'<p class="legend">{escape(AXIS_NOTE.format(at=at))}</p>' if users else ""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(TITLE.format(host=report.host))}</title><style>{CSS}{ADVICE_CSS}</style>"
        f"</head>"
        f'<body><header><h1>jitlens report</h1><p class="meta">{escape(meta)}</p>{argv}</header>'
        f'<div id="jl-errors" hidden></div><div class="cards">{cards}</div>'
        f"{_table(everything, ids)}{toggle}{LEGEND}{note}{sections}{_advice_panel(users, ids, report.run)}"
        f'<div id="jl-tip" role="tooltip" hidden></div><script>{JS}</script></body></html>'
    )


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page (inline CSS, JS and SVG; no network).

    Every string that came from the user's program is escaped.  Never raises: on
    an internal failure it logs and returns the raw data in a ``<pre>``.

    Example:
        >>> from jitlens._core.report import Report
        >>> page = render_html(Report(1, "0", "0", "0", "cpu", 0, 1, "box", 0.0, 1.0, ()))
        >>> page.startswith("<!DOCTYPE html>")
        True
    """
    try:
        return _page(report)
    except Exception:
        LOG.exception("jitlens: rendering the HTML report failed")
        try:
            raw = repr(report)
        except Exception:
            raw = object.__repr__(report)
        return FALLBACK.format(raw=escape(raw))


#: A report inside another page (a notebook cell): its own document in a frame,
#: so that its styles and scripts neither leak into the page nor get its styles.
#: The frame grows to its page once loaded (and follows it), so that the
#: explanations below the table are not hidden below the fold.
FRAME = (
    '<iframe srcdoc="{doc}" style="width:100%;height:{height}px;border:1px solid #e4e7ec;'
    'border-radius:6px" title="jitlens report" onload="{fit}"></iframe>'
)
#: The frame's onload: its height follows its page's (srcdoc frames share the
#: notebook's origin); where scripts are off, it keeps FRAME_HEIGHT and scrolls.
FRAME_FIT = (
    "var f=this;try{var d=f.contentDocument.documentElement;"
    "var fit=function(){f.style.height=Math.ceil(d.getBoundingClientRect().height+4)+'px'};"
    "fit();if(window.ResizeObserver){new ResizeObserver(fit).observe(d)}}catch(e){}"
)
#: Height of the frame before it is fitted: tall enough for the table and a retrace.
FRAME_HEIGHT = 560


def render_html_frame(report: Report, *, height: int = FRAME_HEIGHT) -> str:
    """The report page inside an ``<iframe srcdoc>``, for notebooks (``Report._repr_html_``)."""
    doc = escape(render_html(report), quote=True)
    return FRAME.format(doc=doc, height=height, fit=escape(FRAME_FIT, quote=True))
