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
from .._core.retrace_text import UNCHECKED_HEADER, call_number, fold_key, unchecked_text
from .heading import NOT_INCLUDED
from .svg import entries_table, program_size_html, time_origin, time_span, timeline_svg
from .text import bucketed_text, costliest, notices, percent, reused_text, sorted_functions

LOG = logging.getLogger("jitlens")

#: Reasons shown before the rest of one retrace folds into "… and N more".
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
    "lost s": "the retraces' tracing + lowering + compiling: what fixing them saves",
}
LEGEND = (
    '<p class="legend"><svg width="14" height="14"><circle class="mark hit" cx="7" cy="7" r="4"/>'
    '</svg> cache hit <svg width="14" height="14"><rect class="mark trace" x="2" y="2" width="10" '
    'height="10"/></svg> first trace <svg width="14" height="14"><rect class="mark retrace" x="3" '
    'y="3" width="8" height="8" transform="rotate(45 7 7)"/></svg> retrace '
    '<span class="swatch trace-bar"></span> tracing <span class="swatch lower-bar"></span> '
    'lowering <span class="swatch compile-bar"></span> compiling</p>'
)

CSS = """
:root{--fg:#1d2330;--mute:#667085;--line:#e4e7ec;--bg:#fff;--soft:#f6f7f9;--hit:#5b7bd5;
--trace:#2f9e44;--retrace:#e03131;--compile:#ae3ec9;--tb:#f59f00;--lb:#15aabf;--cb:#7048e8}
*{box-sizing:border-box}body{margin:0 auto;max-width:1220px;padding:24px 32px;color:var(--fg);
background:var(--bg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:0}h3{font-size:14px;margin:16px 0 6px;
color:var(--mute);text-transform:uppercase;letter-spacing:.04em}h4{font-size:14px;margin:0 0 6px}
code,pre,.mono{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.meta,.argv{color:var(--mute);margin:2px 0}.cards{display:flex;gap:12px;margin:14px 0}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:22px}.card span{color:var(--mute);font-size:12px}
.card.warn b{color:var(--retrace)}a{color:inherit}a:hover{color:var(--hit)}
.functions a{text-decoration:none;font-weight:600}
#jl-errors{background:#fff0f0;border:1px solid var(--retrace);padding:8px;white-space:pre-wrap}
table{border-collapse:collapse}table.functions{width:100%;margin-bottom:6px}
.functions th,.functions td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:right}
.functions th:nth-child(-n+2),.functions td:nth-child(-n+2){text-align:left}
.functions tr.internal{display:none;color:var(--mute)}.show-internal .functions tr.internal{
display:table-row}.functions tr.retraced td.lost{color:var(--retrace);font-weight:600}
.functions thead th{font-weight:600;color:var(--mute);font-size:12px}
section.function{border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin:18px 0}
svg.timeline{width:100%;height:auto;display:block;background:var(--soft);border-radius:6px}
.mark.hit{fill:var(--hit);opacity:.75}.mark.trace{fill:var(--trace)}.mark.retrace{
fill:var(--retrace)}.mark.compile{fill:var(--compile)}.trace-bar{fill:var(--tb);
background:var(--tb)}.lower-bar{fill:var(--lb);background:var(--lb)}.compile-bar{
fill:var(--cb);background:var(--cb)}.axis,.tick{stroke:#98a2b3}text.tick{stroke:none;
fill:var(--mute);font-size:10px;text-anchor:middle}.lane-label{fill:var(--mute);font-size:11px}.hl{stroke:#111;stroke-width:2}
.legend{color:var(--mute);font-size:12px}.legend svg{vertical-align:-2px}.swatch{
display:inline-block;width:14px;height:8px;margin-left:8px}
table.entries td,table.entries th{padding:2px 8px;text-align:left;vertical-align:middle;
border-bottom:1px solid var(--line)}table.entries th{color:var(--mute);font-weight:500;
font-size:12px}td.num{text-align:right}td.unknown{color:var(--mute);max-width:36em;
font-size:12px}.lane{stroke:var(--line)}
.dot.hit{fill:var(--hit)}.dot.trace{fill:var(--trace)}.dot.retrace{fill:var(--retrace)}
.dot.compile{fill:var(--compile)}
article.retrace{border-left:3px solid var(--retrace);padding:6px 12px;margin:10px 0;
background:var(--soft);border-radius:0 6px 6px 0}article.stale{border-color:#f08c00;
background:#fff9db}.retrace .split{color:var(--mute);font-weight:400}ul.reasons{margin:0;
padding-left:18px}li.reason{margin:6px 0}.kind{font:600 11px/1 ui-monospace,monospace;
background:#fff;border:1px solid var(--line);border-radius:4px;padding:2px 5px}
mark.path{background:#fff3bf;padding:0 2px;border-radius:3px;font-family:ui-monospace,monospace}
.count{color:var(--mute)}.values code{word-break:break-all}del{background:#ffe3e3;
text-decoration:none}ins{background:#d3f9d8;text-decoration:none}.message{margin:3px 0;
color:#344054}.fix{margin:3px 0;white-space:pre-line}.fix .label{font-weight:700;color:var(--trace)}
details summary{cursor:pointer;color:var(--mute)}
#jl-tip{position:fixed;z-index:10;max-width:560px;padding:6px 9px;border-radius:6px;
background:#1d2330;color:#fff;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;
white-space:pre-wrap;pointer-events:none;box-shadow:0 2px 8px rgba(0,0,0,.25)}
svg.timeline{cursor:crosshair;user-select:none}.brush{fill:rgba(91,123,213,.18);
stroke:var(--hit)}button.jl-reset{font-size:11px;margin-left:8px;text-transform:none;
letter-spacing:0;cursor:pointer}.mark.retrace.expected{fill:var(--mute)}
article.retrace.expected{border-color:var(--mute)}.message code,.fix code{background:#eef1f5;
padding:0 3px;border-radius:3px}
"""

ADVICE_CSS = """
section.advice{border:1px solid var(--line);border-left:3px solid var(--hit);border-radius:8px;
padding:10px 18px;margin:18px 0}section.advice li{margin:8px 0}.saving{font-weight:700;
color:var(--trace)}svg.cost{display:block;max-width:100%;height:auto}svg.cost text{
font:12px ui-monospace,SFMono-Regular,Menlo,monospace;fill:currentColor;white-space:pre}
"""
ADVICE_HEAD = "Advice: what else costs time, most valuable first"
ADVICE_SAVING = "saves ~{seconds:.2f} s"
ADVICE_UNKNOWN = "saving not measurable"


def _advice_panel(functions: Sequence[FunctionReport], ids: dict[int, str]) -> str:
    """The advice of every function, ranked by estimated saving (empty when there is none)."""
    items = [(fn, a) for fn in functions for a in fn.advice]
    if not items:
        return ""
    items.sort(key=lambda p: (p[1].kind != "disable_jit", -(p[1].estimated_saving_seconds or 0.0)))
    rows = []
    for fn, a in items:
        saving = (
            ADVICE_UNKNOWN
            if a.estimated_saving_seconds is None
            else ADVICE_SAVING.format(seconds=a.estimated_saving_seconds)
            + SAVING_SCOPE.get(a.kind, "")
        )
        anchor = ids.get(id(fn))
        name = escape(fn.qualname)
        link = f'<a href="#{anchor}">{name}</a>' if anchor else name
        rows.append(
            f'<li data-advice="{escape(a.kind)}"><b>{link}</b> <span class="kind">'
            f'{escape(a.kind)}</span> <span class="saving">{escape(saving)}</span>'
            f'<div class="message">{escape(a.message)}</div><div class="fix">'
            f'<span class="label">fix:</span> <code>{escape(a.fix)}</code></div></li>'
        )
    return f'<section class="advice"><h3>{ADVICE_HEAD}</h3><ul>{"".join(rows)}</ul></section>'


JS = """
(function(){
var errors=document.getElementById("jl-errors");
window.onerror=function(msg,src,line){errors.hidden=false;
errors.textContent+=msg+" ("+line+")\\n";};
var box=document.getElementById("jl-show-internal");
if(box){box.addEventListener("change",function(){
document.body.classList.toggle("show-internal",box.checked);});}
document.querySelectorAll("section.function").forEach(function(sec){
sec.addEventListener("mouseover",function(ev){var c=ev.target.getAttribute("data-call");
sec.querySelectorAll(".hl").forEach(function(e){e.classList.remove("hl");});
if(c!==null){sec.querySelectorAll('[data-call="'+c+'"]').forEach(function(e){
e.classList.add("hl");});}});});
var tip=document.getElementById("jl-tip");
function showTip(ev){var t=ev.target.closest?ev.target.closest("[data-tip]"):null;
if(!t){tip.hidden=true;return;}tip.textContent=t.getAttribute("data-tip");tip.hidden=false;
var x=ev.clientX+14,y=ev.clientY+14;var w=tip.offsetWidth,h=tip.offsetHeight;
if(x+w>window.innerWidth-4){x=Math.max(4,ev.clientX-w-14);}
if(y+h>window.innerHeight-4){y=Math.max(4,ev.clientY-h-14);}
tip.style.left=x+"px";tip.style.top=y+"px";}
document.addEventListener("mouseover",showTip);document.addEventListener("mousemove",function(ev){
if(!tip.hidden){showTip(ev);}});
var svgs=[].slice.call(document.querySelectorAll("svg.timeline")),NS=svgs.length?svgs[0].namespaceURI:null;
var full=svgs.length?[+svgs[0].getAttribute("data-t0"),+svgs[0].getAttribute("data-t1")]:[0,1];
var view=full.slice();
function fmt(t){return (Math.round(t*1e6)/1e6)+" s";}
function ticks(a,b){var raw=(b-a)/6,m=Math.pow(10,Math.floor(Math.log10(raw))),step=10*m;
[1,2,5,10].some(function(k){if(k*m>=raw){step=k*m;return true;}return false;});
var out=[];for(var t=Math.ceil((a-full[0])/step)*step;full[0]+t<=b+1e-12;t+=step){out.push(t);}
return out;}
function layout(svg){var a=view[0],b=view[1],L=+svg.getAttribute("data-left"),
R=+svg.getAttribute("data-right"),k=(R-L)/Math.max(b-a,1e-9);
function X(t){return L+(t-a)*k;}
svg.querySelectorAll("[data-t]").forEach(function(e){var t=+e.getAttribute("data-t"),
d=+(e.getAttribute("data-d")||0),out=t+d<a||t>b;e.style.display=out?"none":"";
if(out){return;}if(e.tagName==="circle"){e.setAttribute("cx",X(t).toFixed(1));return;}
if(e.classList.contains("bar")){var x0=X(Math.max(t,a)),x1=X(Math.min(t+d,b));
e.setAttribute("x",x0.toFixed(1));e.setAttribute("width",Math.max(x1-x0,1).toFixed(1));return;}
var x=X(t);e.setAttribute("x",(x-4.5).toFixed(1));
if(e.classList.contains("retrace")){e.setAttribute("transform","rotate(45 "+x.toFixed(1)+" 18)");}});
var g=svg.querySelector("g.ticks");while(g.firstChild){g.removeChild(g.firstChild);}
ticks(a,b).forEach(function(t){var x=X(full[0]+t).toFixed(1),l=document.createElementNS(NS,"line"),
s=document.createElementNS(NS,"text");l.setAttribute("class","tick");l.setAttribute("x1",x);
l.setAttribute("x2",x);l.setAttribute("y1","48");l.setAttribute("y2","52");
s.setAttribute("class","tick");s.setAttribute("x",x);s.setAttribute("y","63");
s.textContent=fmt(t);g.appendChild(l);g.appendChild(s);});
svg.setAttribute("data-view",a.toFixed(6)+" "+b.toFixed(6));}
function zoom(a,b){view=[Math.max(a,full[0]),Math.min(b,full[1])];svgs.forEach(layout);}
window.jitlensZoom=zoom;
function svgX(svg,ev){var p=svg.createSVGPoint();p.x=ev.clientX;p.y=ev.clientY;
return p.matrixTransform(svg.getScreenCTM().inverse()).x;}
function timeAt(svg,x){var L=+svg.getAttribute("data-left"),R=+svg.getAttribute("data-right");
return view[0]+(Math.min(Math.max(x,L),R)-L)/(R-L)*(view[1]-view[0]);}
svgs.forEach(function(svg){var start=null,brush=null;
svg.addEventListener("mousedown",function(ev){if(ev.button!==0){return;}start=svgX(svg,ev);
brush=document.createElementNS(NS,"rect");brush.setAttribute("class","brush");
brush.setAttribute("y","4");brush.setAttribute("height","46");brush.setAttribute("x",start);
brush.setAttribute("width","0");svg.appendChild(brush);ev.preventDefault();});
svg.addEventListener("mousemove",function(ev){if(start===null){return;}var x=svgX(svg,ev);
brush.setAttribute("x",Math.min(x,start));brush.setAttribute("width",Math.abs(x-start));});
function end(ev){if(start===null){return;}var x=svgX(svg,ev),a=start;start=null;
svg.removeChild(brush);if(Math.abs(x-a)>4){zoom(timeAt(svg,Math.min(a,x)),timeAt(svg,Math.max(a,x)));
ev.preventDefault();}}
svg.addEventListener("mouseup",end);svg.addEventListener("mouseleave",function(ev){
if(start!==null){end(ev);}});
svg.addEventListener("dblclick",function(){zoom(full[0],full[1]);});});
document.querySelectorAll("button.jl-reset").forEach(function(b){
b.addEventListener("click",function(){zoom(full[0],full[1]);});});
svgs.forEach(function(svg){svg.setAttribute("data-view",view[0].toFixed(6)+" "+view[1].toFixed(6));});
document.body.setAttribute("data-rendered","ok");
})();
"""


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


def _reason_html(reason: Reason, count: int, alike: Sequence[Reason], seen: set[str]) -> str:
    """One reason; a message or fix already shown in the same retrace is not repeated."""
    pairs = list(dict.fromkeys((r.before, r.after) for r in (reason, *alike)))
    where = reason.path or reason.argument
    counted = f' <span class="count">{COUNT.format(n=count)}</span>' if count > 1 else ""
    parts = [
        f'<li class="reason" data-kind="{escape(reason.kind)}"><span class="kind">'
        f'{escape(reason.kind)}</span> <mark class="path">{escape(where)}</mark>{counted}',
        *(_diff(b, a) for b, a in pairs[:MAX_VALUE_PAIRS]),
    ]
    if reason.message and reason.message not in seen:
        parts.append(f'<p class="message">{_highlight(reason.message, where)}</p>')
    if reason.fix and reason.fix not in seen:
        label = '<span class="label">fix</span>'
        parts.append(f'<p class="fix">{label} {_highlight(reason.fix, where)}</p>')
    seen.update((reason.message, reason.fix))
    return "".join(parts) + "</li>"


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
            seen: set[str] = set()
            items = [_reason_html(r, n, alike, seen) for r, n, alike in ordered]
            also = len(event.reasons) - len(items)
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
        fn.qualname,
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
    explained = f"<h3>Retraces</h3>{articles}" if articles else ""
    warnings = f"<h3>Warnings</h3>{stale}" if stale else ""
    program = program_size_html(costliest(fn))  # issue 34
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
    stale = sum(len(f.stale_hits) for f in users)
    figures = (
        (str(len(users)), "jitted function" + "s" * (len(users) != 1), False),
        (total_traces(users), "trace" + "s" * (total_traces(users) != "1"), False),
        (str(retraces), "retrace" + "s" * (retraces != 1), retraces > 0),
        (f"{lost:.2f} s", "lost to retraces", lost > 0),
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
        f"{_table(everything, ids)}{toggle}{LEGEND}{note}{sections}{_advice_panel(users, ids)}"
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
