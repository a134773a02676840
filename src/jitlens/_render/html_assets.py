"""What the HTML report's page is styled and driven with: its CSS, its script, its legend.

Constants only, inlined into every page (``html.render_html``): the page needs no network.
"""

from __future__ import annotations

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
font-size:12px}.lane{stroke:var(--line)}ul.made{margin:2px 0 0;padding-left:16px;font-size:12px;
color:var(--mute)}table.entries{max-width:100%}td.strip{width:45%}svg.dots{width:100%;
max-width:560px;height:auto;display:block}
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
color:var(--trace)}pre.code{margin:2px 0 6px 18px;padding:4px 8px;background:#fff;
border-radius:4px;overflow-x:auto}svg.cost{display:block;max-width:100%;height:auto}svg.cost text{
font:12px ui-monospace,SFMono-Regular,Menlo,monospace;fill:currentColor;white-space:pre}
"""


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
