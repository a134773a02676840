"""The HTML report: self-contained, escaped, and with countable marks for every call."""

from __future__ import annotations

import dataclasses
import logging
import re

import pytest

import html_dom
import jitlens
import report_samples
from jitlens import Advice, Event, Reason, Report

XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture(scope="module")
def page() -> str:
    return report_samples.sample_report().to_html()


@pytest.fixture(scope="module")
def dom(page: str) -> html_dom.Node:
    return html_dom.parse(page)


def _timeline(dom: html_dom.Node, name: str) -> html_dom.Node:
    return dom.find("svg", "timeline", data_function=name)


def test_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page


def test_the_duration_says_what_it_covers(page: str) -> None:
    """Not the process's run time (a shell's `time`): from the start of tracking."""
    assert "· 4.2 s tracked (Python and jax start-up not included)" in page


def test_user_strings_are_escaped(page: str, dom: html_dom.Node) -> None:
    assert report_samples.XSS not in page
    assert page.count(XSS_ESCAPED) == 3  # argv, the reason's before value, the entry it made
    assert len(dom.find_all("script")) == 1
    assert report_samples.XSS in dom.find("article", "retrace", id="fn1-ev1").text()


def test_names_in_attributes_are_escaped() -> None:
    report = report_samples.sample_report()
    forward = dataclasses.replace(report.function("forward"), qualname='<lambda> "x"')
    page = dataclasses.replace(report, functions=(forward,)).to_html()
    assert 'data-function="&lt;lambda&gt; &quot;x&quot;"' in page
    dom = html_dom.parse(page)
    assert dom.find("section", "function").attrs["data-function"] == '<lambda> "x"'


def test_function_table(dom: html_dom.Node) -> None:
    rows = dom.find("table", "functions").find_all("tr", data_function="step")
    assert [c.text() for c in rows[0].find_all("td")][:7] == [
        "step", "jax.jit", "?", "3", "3", "?", "?",
    ]  # fmt: skip
    body = dom.find("table", "functions").find("tbody")
    names = [r.attrs["data-function"] for r in body.find_all("tr")]
    assert names == ["Trainer.loss", "step", "forward", "evaluate", "nnx.graph._split_merge"]
    assert "internal" in body.find_all("tr")[-1].classes


@pytest.mark.parametrize(
    ("name", "hits", "traces", "retraces"),
    [("Trainer.loss", 2, 1, 4), ("forward", 0, 1, 2), ("evaluate", 3, 1, 0), ("step", 0, 1, 2)],
)
def test_timeline_has_one_mark_per_call(
    dom: html_dom.Node, name: str, hits: int, traces: int, retraces: int
) -> None:
    svg = _timeline(dom, name)
    assert len(svg.find_all("circle", "mark hit")) == hits
    assert len(svg.find_all("rect", "mark trace")) == traces
    assert len(svg.find_all("rect", "mark retrace")) == retraces
    bars = svg.find_all("rect", "bar")
    assert len(svg.find_all("rect", "trace-bar")) == traces + retraces
    assert len(bars) >= traces + retraces


def test_retrace_marks_link_to_their_explanation(dom: html_dom.Node) -> None:
    ids = {a.attrs["id"] for a in dom.find_all("article", "retrace") if "id" in a.attrs}
    links = [a.attrs["href"][1:] for a in _timeline(dom, "forward").find_all("a")]
    assert links == ["fn2-ev1", "fn2-ev1"]  # both retraces are explained by the first
    assert set(links) <= ids


def test_shape_specialization_matrix(dom: html_dom.Node) -> None:
    table = dom.find("table", "entries", data_function="Trainer.loss")
    rows = table.find_all("tr", "entry")
    assert [r.find("code", "signature").text() for r in rows] == [
        "x: f32[4,4]", "x: f32[2,4]", "x: f32[5,4]", "x: f32[6,4]", "x: bf16[4,4]",
    ]  # fmt: skip
    calls = [[int(d.attrs["data-call"]) for d in r.find_all("circle", "dot")] for r in rows]
    assert calls == [[0, 1, 5], [2], [3], [4], [6]]
    assert len(rows[0].find_all("circle", "dot hit")) == 2
    step = dom.find("table", "entries", data_function="step")
    assert "not recorded" in step.text()


def test_aot_compiles_and_unknown_entries() -> None:
    report = report_samples.sample_report()
    loss = report.function("Trainer.loss")
    aot = Event(
        None, "compile", "aot.py:3", "x: f32[9,4]", time=1.49, compile_seconds=0.01, entry=5
    )
    entries = (*loss.call_entries[:-2], -1, -1)  # a hit and a retrace the tracker could not tie
    loss = dataclasses.replace(loss, events=(*loss.events, aot), call_entries=entries)
    dom = html_dom.parse(dataclasses.replace(report, functions=(loss,)).to_html())
    svg = _timeline(dom, "Trainer.loss")
    assert len(svg.find_all("circle", "mark hit")) == 2  # the AOT compile took no call
    assert len(svg.find_all("rect", "mark compile")) == 1
    rows = dom.find("table", "entries").find_all("tr", "entry")
    assert [r.attrs["data-entry"] for r in rows] == ["0", "1", "2", "3", "4", "5", "-1"]
    assert [int(d.attrs["data-call"]) for d in rows[-1].find_all("circle", "dot")] == [5]
    assert [int(d.attrs["data-call"]) for d in rows[4].find_all("circle", "dot")] == [6]
    assert "could not tie" in rows[-1].text()


def test_reasons_fixes_and_paths(dom: html_dom.Node) -> None:
    forward = dom.find("section", "function", data_function="forward")
    reason = forward.find("li", "reason")
    assert reason.find_all("mark", "path")[0].text() == "model.avg_pool"
    assert "in 2 retraces" in reason.text()
    assert "fix call nnx.avg_pool(x, window_shape=(2, 2)" in reason.text()
    assert reason.find("code", "before").find("del").text() == "e8b8"  # 0x7f3a1d2e8b80
    step = dom.find("section", "function", data_function="step")
    more = step.find("article", id="fn1-ev2")
    (alike,) = more.find_all("li", "reason")  # five leaves of one change: one item naming them
    assert [m.text() for m in alike.find_all("mark", "path")][:2] == [
        "batch['tokens']",
        "batch['mask']",
    ]
    assert len(alike.find_all("mark", "path")) == 5
    assert more.text().count("pad the batch") == 1  # one fix for five alike reasons


def test_many_reasons_fold_into_details() -> None:
    report = report_samples.sample_report()
    step = report.function("step")
    reasons = tuple(  # fifteen leaves, each of its own new shape: fifteen changes
        dataclasses.replace(r, path=f"{r.path}[{i}]", after=f"f32[{i},{j}]")
        for i in range(3)
        for j, r in enumerate(step.events[2].reasons)
    )
    many = dataclasses.replace(step.events[2], reasons=reasons)
    step = dataclasses.replace(step, events=(*step.events[:2], many))
    dom = html_dom.parse(dataclasses.replace(report, functions=(step,)).to_html())
    article = dom.find("article", id="fn0-ev2")
    assert "… and 8 more differences" in article.find("summary").text()


def test_unexplained_and_partly_repeated_retraces() -> None:
    report = report_samples.sample_report()
    loss = report.function("Trainer.loss")
    silent = dataclasses.replace(loss.events[1], reasons=())
    both = dataclasses.replace(
        loss.events[4], reasons=(*loss.events[2].reasons, *loss.events[4].reasons)
    )
    events = (loss.events[0], silent, loss.events[2], silent, both)
    dom = html_dom.parse(
        dataclasses.replace(report, functions=(dataclasses.replace(loss, events=events),)).to_html()
    )
    articles = dom.find_all("article", "retrace")
    assert len(articles) == 3
    assert "(2 retraces)" in articles[0].text()
    assert "+1 difference(s) shown above" in articles[2].find("h4").text()
    assert len(articles[2].find_all("li", "reason")) == 1


def test_stale_hit_is_a_warning(dom: html_dom.Node) -> None:
    stale = dom.find("section", "function", data_function="evaluate").find("article", "stale")
    assert "stale cache hit at eval.py:40 (call #3)" in stale.text()
    assert "model.dropout.deterministic" in stale.find("mark", "path").text()


def test_empty_report() -> None:
    page = report_samples.empty_report().to_html()
    assert "<b>0</b><span>jitted functions</span>" in page and "</html>" in page


def test_internal_failure_falls_back_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    report = report_samples.sample_report()
    broken: Report = dataclasses.replace(report, functions=(*report.functions, None))  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="jitlens"):
        page = broken.to_html()
    assert page.startswith("<!DOCTYPE html>") and "<pre>" in page
    assert report_samples.XSS not in page
    assert any("HTML report failed" in r.message for r in caplog.records)


def test_repr_html_is_the_page_in_a_frame() -> None:
    """In a notebook the page's styles and scripts stay inside their own document."""
    import html

    report = report_samples.sample_report()
    shown = report._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and "<style" not in shown
    srcdoc = shown.split('srcdoc="', 1)[1].split('" style=', 1)[0]
    assert html.unescape(srcdoc) == report.to_html()


def test_odd_but_possible_data_renders_without_falling_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    report = report_samples.sample_report()
    loss = report.function("Trainer.loss")
    huge = dataclasses.replace(
        loss.events[1].reasons[0], kind="something_new", before="x" * 100_000, path=""
    )
    events = (
        dataclasses.replace(loss.events[0], time=-1.0, trace_seconds=float("nan")),
        dataclasses.replace(loss.events[1], reasons=(huge,), entry=99, call_index=None),
        dataclasses.replace(loss.events[2], time=float("inf")),
    )
    odd = dataclasses.replace(
        loss, qualname="", events=events, call_entries=loss.call_entries[:3], calls=0
    )
    report = dataclasses.replace(report, functions=(odd,), duration_seconds=float("nan"))
    with caplog.at_level(logging.ERROR, logger="jitlens"):
        page = report.to_html()
        text = report.to_text(width=80)
        trace = report.to_trace_events()
    assert not caplog.records
    assert "<pre>" not in page and "could not render" not in text
    assert len(page) < 50_000 and len(text) < 5_000
    assert len(trace["traceEvents"]) > 4


def test_backticks_are_code_and_the_path_is_marked_inside_them() -> None:
    report = report_samples.sample_report()
    loss = report.function("Trainer.loss")
    reason = Reason(
        "identity_static", "model", "model.avg_pool", "a", "b",
        "`model.avg_pool` is a functools.partial; model.avg_pool compares by identity.",
        "Call `nnx.avg_pool(x)` in `__call__`, or `self.avg_pool = nnx.data(...)`; 1 ` left.",
    )  # fmt: skip
    event = dataclasses.replace(loss.events[1], reasons=(reason,))
    loss = dataclasses.replace(loss, events=(loss.events[0], event))
    dom = html_dom.parse(dataclasses.replace(report, functions=(loss,)).to_html())
    item = dom.find("li", "reason")
    message = item.find("p", "message")
    codes = message.find_all("code")
    assert [c.text() for c in codes] == ["model.avg_pool"]
    assert codes[0].find("mark", "path").text() == "model.avg_pool"  # marked inside the span
    assert len(message.find_all("mark", "path")) == 2  # and outside it
    assert "`" not in message.text()
    fix = item.find("p", "fix")
    assert fix.find_all("code") == []  # an odd number of backticks: shown as typed
    assert fix.text().count("`") == 7


#: The fix of a train/eval mode's first compile, as jitlens words it.
MODE_FIX = (
    "Expected once per mode. If it flips every step, switch modes outside the hot loop, or keep "
    "one jitted function per mode; don't toggle `{attr}` inside the step."
)


def test_a_modes_first_compile_is_expected_not_lost() -> None:
    report = report_samples.sample_report()
    step = report.function("step")
    mode = Reason("static_value", "model", "model.dropout.deterministic", "False", "True",
                  "flipped", MODE_FIX.format(attr="deterministic"), expected=True)  # fmt: skip
    events = (step.events[0], dataclasses.replace(step.events[1], reasons=(mode,)))
    step = dataclasses.replace(step, events=events)
    assert step.retraces == 1 and step.seconds_lost == 0
    dom = html_dom.parse(dataclasses.replace(report, functions=(step,)).to_html())
    row = dom.find("table", "functions").find("tbody").find("tr")
    assert "retraced" not in row.classes  # no red "lost" figure
    article = dom.find("article", "retrace")
    assert "expected" in article.classes
    assert "expected retrace #1 (a new mode)" in article.text()
    assert dom.find("svg", "timeline").find_all("rect", "mark retrace expected")


def test_expected_is_data_and_older_reports_still_read_it() -> None:
    """A retrace is expected because its reasons say so as data (``Reason.expected``), not
    because of how a fix begins; a report written before the flag is read as it meant."""
    worded = Reason("static_value", "m", "m.train", "False", "True", "flipped", MODE_FIX)
    assert not worded.expected  # the words alone decide nothing

    def read(reason: dict) -> Reason:
        data = report_samples.sample_report().to_dict()
        (event,) = [e for f in data["functions"] for e in f["events"] if e["reasons"]][:1]
        event["reasons"] = [reason]
        report = jitlens.Report.from_dict(data)
        return next(r for f in report.functions for e in f.events for r in e.reasons)

    old = {k: v for k, v in dataclasses.asdict(worded).items() if k != "expected"}
    assert read(old).expected  # before the flag: its fix said so
    assert not read({**old, "expected": False}).expected
    assert not read({**old, "fix": "Pass it as an array."}).expected


def test_figures_read_as_english() -> None:
    report = report_samples.sample_report()
    loss = dataclasses.replace(report.function("Trainer.loss"), calls=941, cache_hits=938)
    dom = html_dom.parse(dataclasses.replace(report, functions=(loss,)).to_html())
    cards = [c.text() for c in dom.find_all("div", "card")]
    assert cards[0] == "1jitted function"
    cells = [c.text() for c in dom.find("table", "functions").find("tbody").find_all("td")]
    assert cells[6] == "99.7%"  # 938/941, not "100%"


def test_the_cause_and_its_fix_come_before_the_advice() -> None:
    """Issue 26: the advice panel used to open the page and the retraces to sit under the
    timeline and the compiled entries; the cause and its fix now lead each function."""
    report = report_samples.sample_report()
    loss = report.function("Trainer.loss")
    advised = dataclasses.replace(
        loss, advice=(Advice("compile_cache", "cache off", "set it", 9.0),)
    )
    others = tuple(f for f in report.functions if f is not loss)
    page = dataclasses.replace(report, functions=(advised, *others)).to_html()
    fix = loss.events[1].reasons[0].fix
    assert page.index(fix) < page.index('<section class="advice">')
    section = page[page.index('data-function="Trainer.loss"') :]
    assert section.index("<h3>Retraces</h3>") < section.index("<h3>Timeline")
    assert section.index("<h3>Retraces</h3>") < section.index("<h3>Compiled entries</h3>")


def test_a_deliberate_bucket_set_is_said_so_and_not_lost() -> None:
    report = report_samples.sample_report()
    step = report.function("step")
    shape = Reason("shape", "x", "x", "f32[16,4]", "f32[32,4]", "x changed shape.", "pad x.")
    events = (
        step.events[0],
        dataclasses.replace(step.events[1], reasons=(shape,)),
        dataclasses.replace(
            step.events[2],
            reasons=(dataclasses.replace(shape, before="f32[32,4]", after="f32[48,4]"),),
        ),
    )
    fn = dataclasses.replace(step, events=events)
    page = dataclasses.replace(report, functions=(fn,)).to_html()
    assert "took 16, 32, 48 (multiples of 16)" in page and fn.seconds_lost == 0.0
