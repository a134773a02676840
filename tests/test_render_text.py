"""Golden text of the terminal renderer: colour off, width 100, addresses normalised."""

from __future__ import annotations

import ast
import dataclasses
import io
import itertools
import logging
import pathlib
import re
import sys

import pytest

import report_samples
from jitlens._core.report import Event, Reason
from jitlens._core.retrace_text import MAX_CHANGES_SHOWN, render_retrace

GOLDEN = """\
jitlens: 4 jitted functions, 12 traces, 1.13 s lost to recompiles (1 internal hidden)
 function      kind                calls  traces  compiles  hits  hit %  trace s  compile s  lost s
────────────────────────────────────────────────────────────────────────────────────────────────────
 Trainer.loss  jax.jit                 7       5         5     2    29%     0.15       0.40    0.47
 step          jax.jit                 ?       3         3     ?      ?     0.16       0.34    0.35
 forward       nnx.jit                 3       3         3     0     0%     0.26       0.21    0.31
 evaluate      nnx.cached_partial      4       1         1     3    75%     0.04       0.01    0.00
cpu on devbox, process 0/1, 4.2 s tracked (Python and jax start-up not included)
hits = cache hits; compile s = lowering + compiling; lost s = seconds spent compiling again
persistent compilation cache: 1 program loaded instead of compiled (evaluate)

Trainer.loss  retraced 4x, 0.47 s lost   (defined at train.py:30)
  train.py:88  retrace #1, 0.10 s (call #13)
    x.shape[0]  shape  (in 3 retraces)
      4 -> 2 | 4 -> 5 | 5 -> 6
      the last batch is ragged: 2 rows instead of 4.
      fix: pad the batch to a fixed size (drop_remainder=True) or mark the dimension dynamic.
  train.py:88  retrace #4, 0.14 s (call #17)
    x  dtype
      float32 -> bfloat16
      a new dtype compiles a new program.
      fix: cast once where the data is loaded: x.astype(jnp.float32).

step  retraced 2x, 0.35 s lost   (defined at loop.py:5)
  loop.py:19  retrace #1, 0.16 s
    mode  static_value
      <script>alert(1)</script> -> 'eval'
      static argument 'mode' changed value.
      fix: pass mode as a traced flag, or compile both once up front.
  loop.py:12  retrace #2, 0.19 s
    batch['tokens'], batch['mask'], batch['labels'], batch['weights'], batch['positions']  shape
      f32[32,128] -> f32[17,128]
      a new shape compiles a new program.
      fix: pad the batch to a fixed size (drop_remainder=True) or mark the dimension dynamic.

forward  retraced 2x, 0.31 s lost   (defined at case.py:44)
  case.py:54  retrace #1, 0.15 s (call #2)
    model.avg_pool  identity_static  (in 2 retraces)
      functools.partial(<function avg_po… strides=(2, 2)) at 0x…
      -> functools.partial(<function avg_po… strides=(2, 2)) at 0x…
      functools.partial compares by identity; every new model holds a new one, so its GraphDef never
      equals the cached one.
      fix: call nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2)) in __call__ instead of storing
      the partial on the module.

evaluate  1 stale cache hit(s)   (defined at eval.py:31)
  warning: stale cache hit at eval.py:40 (call #3)
    model.dropout.deterministic: False -> True
      nnx.cached_partial served a call whose static attribute changed after caching.
      fix: call nnx.cached_partial(evaluate, model) again after model.eval().
"""

GOLDEN_RETRACE = """\
step (jax.jit) loop.py:12  retrace #2, 0.19 s
  batch['tokens'], batch['mask'], batch['labels'], batch['weights'], batch['positions']  shape
    f32[32,128] -> f32[17,128]
    a new shape compiles a new program.
    fix: pad the batch to a fixed size (drop_remainder=True) or mark the dimension dynamic."""


def _normalised(text: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x…", text)


def _reason(i: int) -> Reason:
    return Reason("shape", "batch", f"batch[{i}]", "f32[8]", "f32[3]", "new shape.", f"fix {i}")


def test_golden_report() -> None:
    text = report_samples.sample_report().to_text(width=100)
    assert _normalised(text) == GOLDEN


def test_golden_retrace_names_every_leaf_that_changed_alike() -> None:
    """Five fields of one new shape and one fix: one change naming them all, not three lines and
    "… and 2 more" (issue 47: the user fixed the one leaf shown and the step compiled twice)."""
    step = report_samples.sample_report().function("step")
    assert render_retrace(step, step.events[2]) == GOLDEN_RETRACE


def _reason_values(i: int) -> Reason:
    """A leaf of its own values and its own fix: no two of them are one change."""
    return Reason(
        "shape", "batch", f"batch[{i}]", f"f32[{i + 8}]", "f32[3]", "new shape.", f"fix {i}"
    )


@pytest.mark.parametrize("n", [1, 2, 3, 9, MAX_CHANGES_SHOWN, MAX_CHANGES_SHOWN + 1, 40])
def test_every_changed_leaf_shows_before_after_and_its_fix(n: int) -> None:
    """Each of the first ``MAX_CHANGES_SHOWN`` leaves: its path, ``before -> after`` whole and its
    fix; past them the rest are counted and named, never cut to an after value alone."""
    step = report_samples.sample_report().function("step")
    event = dataclasses.replace(step.events[2], reasons=tuple(_reason_values(i) for i in range(n)))
    text = render_retrace(step, event, width=100)
    shown = min(n, MAX_CHANGES_SHOWN)
    for i in range(shown):
        assert f"batch[{i}]  shape" in text and f"f32[{i + 8}] -> f32[3]" in text, text
        assert f"fix: fix {i}\n" in text + "\n", text
    more = [line for line in text.splitlines() if "more difference" in line]
    hidden = int(more[0].split("and ")[1].split()[0]) if more else 0
    assert shown + hidden == n
    assert not more or "all in `--json` / `--html`" in more[0]


def test_long_values_put_the_after_value_under_the_before_with_its_arrow() -> None:
    """A report at width 100: each leaf's values stay whole, ``->`` leading the after value."""
    report = report_samples.sample_report()
    step = report.function("step")
    long = [
        Reason("identity_static", "model", f"model.block{i}.pool", "partial " * 7 + str(i),
               "partial " * 7 + "new", "compares by identity; " * 8, f"fix {i}: " + "do this " * 25)
        for i in range(3)
    ]  # fmt: skip
    wide = dataclasses.replace(step.events[2], reasons=tuple(long))
    step = dataclasses.replace(step, events=(*step.events[:2], wide))
    report = dataclasses.replace(report, functions=(step,))
    lines = report.to_text(width=100).splitlines()
    start = next(i for i, line in enumerate(lines) if "retrace #2" in line)
    block = lines[start:]
    for i in range(3):
        at = next(
            j
            for j, line in enumerate(block)
            if line.strip() == f"model.block{i}.pool  identity_static"
        )
        assert block[at + 1].strip() == "partial " * 6 + f"partial {i}", block
        assert block[at + 2].strip() == "-> " + "partial " * 7 + "new", block
        assert any(line.strip().startswith(f"fix: fix {i}: do this") for line in block[at:])


def test_a_change_past_the_cap_is_named_in_the_report_too() -> None:
    report = report_samples.sample_report()
    step = report.function("step")
    wide = dataclasses.replace(step.events[2], reasons=tuple(_reason(i) for i in range(30)))
    step = dataclasses.replace(step, events=(*step.events[:2], wide))
    report = dataclasses.replace(report, functions=(step,))
    lines = report.to_text(width=100).splitlines()
    start = next(i for i, line in enumerate(lines) if "retrace #2" in line)
    block = lines[start:]
    assert sum(1 for line in block if line.strip().startswith("fix: fix")) == MAX_CHANGES_SHOWN
    assert f"… and {30 - MAX_CHANGES_SHOWN} more differences" in block[-1]


def test_identical_reasons_fold_into_one_line_with_a_count() -> None:
    text = report_samples.sample_report().to_text(width=100)
    assert text.count("model.avg_pool  identity_static") == 1
    assert "model.avg_pool  identity_static  (in 2 retraces)" in text
    assert "case.py:54  retrace #1" in text and "case.py:54  retrace #2" not in text


def test_unknown_calls_show_a_question_mark() -> None:
    text = report_samples.sample_report().to_text(width=100)
    row = next(line for line in text.splitlines() if line.startswith(" step "))
    assert row.split()[2:4] == ["?", "3"]


def test_sorted_by_seconds_lost_then_traces() -> None:
    text = report_samples.sample_report().to_text(width=100)
    names = [line.split()[0] for line in text.splitlines()[3:7]]
    assert names == ["Trainer.loss", "step", "forward", "evaluate"]


def test_internal_functions_only_on_request() -> None:
    report = report_samples.sample_report()
    assert "_split_merge" not in report.to_text(width=100)
    shown = report.to_text(width=100, include_internal=True)
    assert "nnx.graph._split_merge" in shown and "(internal)" in shown
    assert "(1 internal hidden)" not in shown


@pytest.mark.parametrize("width", [40, 60, 80, 100, 140])
def test_no_line_is_wider_than_the_width(width: int) -> None:
    text = report_samples.sample_report().to_text(width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "Trainer.loss" in text and "lost" in text


def test_colour_on_request_off_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_samples.sample_report()
    assert "\x1b[" in report.to_text(color=True, width=100)
    assert "\x1b[" not in report.to_text(width=100)
    assert "\x1b[" not in report.to_text(width=100, color=None)  # pytest's stdout is not a TTY
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in report.to_text(width=100, color=None)


def test_str_of_a_report_is_the_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # str() follows the terminal (COLUMNS, a TTY): here, none
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    report = report_samples.sample_report()
    assert str(report) == report.to_text(width=100)


def test_empty_report() -> None:
    text = report_samples.empty_report().to_text()
    assert text == "jitlens: no jitted function was called (cpu on devbox, 0.5 s tracked).\n"


def test_retrace_without_reasons_says_so() -> None:
    forward = report_samples.sample_report().function("forward")
    event = Event(1, "retrace", "case.py:54", "x: f32[2]", time=1.0, compile_seconds=0.5)
    text = render_retrace(forward, event)
    assert text.startswith("forward (nnx.jit) case.py:54  retrace #3, 0.50 s (call #2)")
    assert "no difference found" in text


def test_user_strings_are_not_markup() -> None:
    report = report_samples.sample_report()
    step = report.function("step")
    odd = Reason("static_value", "mode", "mode", "[bold]x[/bold]", ":smile:", "m", "f")
    step = dataclasses.replace(
        step, events=(*step.events[:1], dataclasses.replace(step.events[1], reasons=(odd,)))
    )
    text = dataclasses.replace(report, functions=(step,)).to_text(color=True, width=100)
    assert "[bold]x[/bold] -> :smile:" in text


def _rich_styles_in(source: str) -> list[str]:
    """String constants in ``source`` that read as a rich style (``"bold red"``, ``"dim"``)."""
    from rich.color import ANSI_COLOR_NAMES
    from rich.style import Style

    words = {w for w in Style.STYLE_ATTRIBUTES if len(w) > 2} | set(ANSI_COLOR_NAMES)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parts = [w for w in node.value.split() if w not in ("on", "not")]
            if parts and all(w in words for w in parts):
                found.append(f"line {node.lineno}: {node.value!r}")
    return found


def test_core_says_what_a_line_is_never_how_it_looks() -> None:
    """Styles live in one table of the renderer; ``_core``'s lines carry a ``Role``."""
    import jitlens
    from jitlens._core.lines import Role
    from jitlens._render.text import STYLES

    core = pathlib.Path(jitlens.__file__).parent / "_core"
    sample = 'line = (0, header, "bold red"); more = (2, "... and 3 more", "dim on black")'
    assert len(_rich_styles_in(sample)) == 2
    found = {p.name: _rich_styles_in(p.read_text(encoding="utf-8")) for p in core.rglob("*.py")}
    assert {name: styles for name, styles in found.items() if styles} == {}
    assert set(STYLES) == set(Role)


def test_the_lines_of_a_retrace_say_what_each_is() -> None:
    from jitlens._core.lines import Role
    from jitlens._core.retrace_text import retrace_lines, stale_lines, values_text

    report = report_samples.sample_report()
    loss = report.function("Trainer.loss")
    event = loss.events[1]
    folded = [(r, 1, values_text(r)) for r in event.reasons]
    roles = [line.role for line in retrace_lines(loss, event, folded)]
    assert roles[:5] == [Role.EVENT, Role.SUBJECT, Role.EVIDENCE, Role.CAUSE, Role.FIX]
    evaluate = report.function("evaluate")
    stale = [line.role for line in stale_lines(evaluate, evaluate.stale_hits[0])]
    assert stale == [Role.ALERT, Role.SUBJECT, Role.CAUSE, Role.FIX]


def test_internal_failure_returns_raw_data_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    report = report_samples.sample_report()
    broken = dataclasses.replace(report, functions=(*report.functions, "not a function"))
    with caplog.at_level(logging.ERROR, logger="jitlens"):
        text = broken.to_text()
    assert "could not render" in text and "not a function" in text
    assert any("text report failed" in r.message for r in caplog.records)
    assert "could not render" in render_retrace(None, None)  # type: ignore[arg-type]


def test_a_reason_cut_from_one_retrace_shows_under_the_next_that_has_it() -> None:
    """Two retraces, the second a pure shape change: it is not lost to `… and 1 more` of the
    first (issue 26), and every difference of the first still has its line."""
    step = report_samples.sample_report().function("step")
    long = Reason("static_value", "n", "n", "1", "2", "n changed. " * 12, "keep n fixed. " * 9)
    shape = Reason("shape", "x", "x", "f32[2,4]", "f32[3,4]", "x changed shape.", "pad x. " * 12)
    second = dataclasses.replace(shape, before="f32[3,4]", after="f32[5,4]")
    events = (
        step.events[0],
        dataclasses.replace(step.events[1], reasons=(long, shape)),
        dataclasses.replace(step.events[2], reasons=(second,)),
    )
    report = report_samples.sample_report()
    report = dataclasses.replace(report, functions=(dataclasses.replace(step, events=events),))
    text = report.to_text(width=80)
    assert "more difference" not in text, text
    assert "x  shape" in text and "f32[3,4] -> f32[5,4]" in text, text


def test_the_cause_and_its_fix_come_before_the_advice() -> None:
    from jitlens._core.report import Advice

    report = report_samples.sample_report()
    loss = report.function("Trainer.loss")
    advised = dataclasses.replace(
        loss, advice=(Advice("compile_cache", "cache off", "set it", 9.0),)
    )
    others = tuple(f for f in report.functions if f is not loss)
    text = dataclasses.replace(report, functions=(advised, *others)).to_text()
    assert text.index(loss.events[1].reasons[0].fix[:40]) < text.index(
        "the whole run  persistent compilation cache, saves"
    )


def _one(qualname: str, kind: str = "jax.jit", reasons: tuple[Reason, ...] = ()) -> object:
    report = report_samples.sample_report()
    step = report.function("step")
    events = step.events if not reasons else (
        step.events[0], dataclasses.replace(step.events[1], reasons=reasons)
    )  # fmt: skip
    fn = dataclasses.replace(step, qualname=qualname, kind=kind, events=events)
    return dataclasses.replace(report, functions=(fn,))


@pytest.mark.parametrize("width", [80, 100, 200])
def test_function_names_never_break_mid_word(width: int) -> None:
    """Issue 26: `jax_train_ste` / `p` even at COLUMNS=200."""
    name = "build_update_fn.<locals>.jax_train_step"
    text = _one(name).to_text(width=width)
    assert name in text, text


@pytest.mark.parametrize("width", [80, 81, 82, 83])
def test_the_table_fits_its_width_without_folding_a_short_name(width: int) -> None:
    """The columns kept must fit with rich's edge padding: 2 characters over folded
    `double [gw0]` (the pytest plugin's xdist name) at COLUMNS=80."""
    text = _one("double [gw0]").to_text(width=width)
    table = text.split("\n")[1:4]
    assert [line for line in table if line.startswith(" double [gw0]  ")], text
    assert max(len(line) for line in table) <= width, text


def test_at_80_columns_the_compiles_and_the_why_stay() -> None:
    """Issue 26: at 80 columns the compile column and the Equinox "why" sentence vanished."""
    why = Reason(
        "static_value", "lr", "lr", "0.1", "0.05",
        "`lr` changed value 0.1 -> 0.05: eqx.filter_jit keeps every non-array value (a Python "
        "int/float too) static, unlike jax.jit, so each new value compiles again.",
        "Pass it as an array so it is traced: `jnp.asarray(lr)` at the call (one compile for "
        "every value); keep a Python number only for a few fixed values.",
    )  # fmt: skip
    text = _one("sgd_step", "eqx.filter_jit", (why,)).to_text(width=80)
    head = text.splitlines()[1].split()
    assert "compiles" in head and "compile" in head, head
    assert "unlike jax.jit" in " ".join(text.split()), text
    assert "jnp.asarray(lr)" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_clean_run_says_no_retraces() -> None:
    report = report_samples.sample_report()
    clean = dataclasses.replace(report.function("evaluate"), stale_hits=())
    text = dataclasses.replace(report, functions=(clean,)).to_text()
    assert "no retraces" in text, text
    assert "no retraces" not in report.to_text()


def test_a_logged_retrace_wraps_at_the_width_it_is_given() -> None:
    step = report_samples.sample_report().function("step")
    long = Reason("identity_static", "m", "m.pool", "a", "b", "partial " * 20, "y")
    event = dataclasses.replace(step.events[1], reasons=(long,))
    assert max(len(line) for line in render_retrace(step, event).splitlines()) > 100
    assert max(len(line) for line in render_retrace(step, event, width=76).splitlines()) <= 76


@pytest.mark.parametrize(
    "defined_at", ["train.py:12", "/home/someone/projects/a/long/way/down/train.py:12"]
)
def test_wrappers_folded_into_one_row_keep_the_columns_at_80(defined_at: str) -> None:
    """Issue 35: a script given by absolute path put its path in the folded row's name,
    which wrapped over 4 lines and pushed out kind, hit % and trace s. The row names the
    code and the count, and keeps its columns however long the path is; where it was
    defined is in its explanation."""
    base = report_samples.sample_report()
    step = dataclasses.replace(
        base.function("forward"), name="step", qualname="make.<locals>.step", defined_at=defined_at
    )
    folded = dataclasses.replace(base, functions=(step, dataclasses.replace(step, id=99)))
    text = folded.to_text(color=False, width=80)
    head = text.splitlines()[1]
    nearby = [dataclasses.replace(f, defined_at="train.py:12") for f in folded.functions]
    assert (
        head
        == dataclasses.replace(folded, functions=tuple(nearby))
        .to_text(color=False, width=80)
        .splitlines()[1]
    ), text
    assert "calls  traces  compiles  hits" in head, text
    assert text.splitlines()[3].split()[:3] == ["make.<locals>.step", "\u00d72", "6"], text
    assert f"2 wrappers of `make.<locals>.step` at {defined_at}" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()[:4]) <= 80, text


def test_a_static_that_took_three_values_keeps_its_message_as_one_with_two_does() -> None:
    """A training loop whose static `lr` took 3 new values lost the message (the why) in the
    summary at 66-79 columns, where one with 2 new values kept it: the chain of values was
    shown whole on a line of its own. The values give way first: the first change and a count."""
    import jitlens

    step = report_samples.sample_report().function("step")
    fix = (
        "If `lr` only enters arithmetic, pass it as a traced argument (drop it from "
        "static_argnums/static_argnames); if it sets a shape, a slice, an index, a loop count "
        "or a Python branch it must stay static, each value compiling once."
    )
    values = ["0.1", "0.05", "0.02", "0.01"]

    def run(n: int) -> jitlens.Report:
        events = [step.events[0]]
        for i, (a, b) in enumerate(itertools.pairwise(values[: n + 1])):
            message = (
                f"static `lr` changed value {a} -> {b}; statics are part of the cache key, so "
                "each new value compiles again."
            )
            why = jitlens.Reason("static_value", "lr", "lr", a, b, message, fix)
            events.append(dataclasses.replace(step.events[1], reasons=(why,), entry=i + 1))
        fn = dataclasses.replace(step, events=tuple(events), traces=n + 1, compiles=n + 1)
        return dataclasses.replace(report_samples.sample_report(), functions=(fn,))

    for width in range(60, 101):
        texts = [run(n).to_text(width=width, color=False) for n in (2, 3)]
        kept = ["static `lr` changed value 0.1" in " ".join(t.split()) for t in texts]
        assert kept[1] == kept[0], (width, texts[1])
        assert kept[0] or width < 66, (width, texts[0])


def _reports_to_lay_out() -> list[object]:
    """Reports whose text takes each of the renderer's paths: clean, retraced, folded rows,
    warnings, no function, long and non-ASCII names."""
    base = report_samples.sample_report()
    clean = dataclasses.replace(base.function("evaluate"), stale_hits=())
    forward = base.function("forward")
    folded = dataclasses.replace(forward, name="step", qualname="make.<locals>.step")
    long = dataclasses.replace(clean, qualname="Trainer." + "very_long_name_" * 6, id=7)
    wide = dataclasses.replace(clean, qualname="f\u00fcr_\u8a13\u7df4", id=8)
    return [
        base,
        report_samples.empty_report(),
        report_samples.docs_report(),
        dataclasses.replace(base, functions=(clean,)),
        dataclasses.replace(
            base,
            functions=(clean, dataclasses.replace(forward, events=forward.events[:1], traces=1)),
            warnings=("the self-check could not count traces here",),
        ),
        dataclasses.replace(base, functions=(folded, dataclasses.replace(folded, id=99))),
        dataclasses.replace(base, functions=(clean, long)),
        dataclasses.replace(base, functions=(clean, wide)),
        dataclasses.replace(report_samples.empty_report(), warnings=("a warning " * 15,)),
    ]


@pytest.mark.parametrize("width", [40, 60, 80, 83, 100, 140])
def test_the_text_laid_out_without_rich_is_rich_s_own(width: int) -> None:
    """The exit summary is written without importing rich when nothing needs its layout
    (no line to wrap, a table at its natural width): that text must be exactly the one rich
    lays out, in colour too, and the plain way must be the one taken for a clean run. A
    report with a piece that needs rich gives rich that piece alone: the same text."""
    from jitlens._render import text as T
    from jitlens._render.plain import layout

    plain_taken = 0
    for report in _reports_to_lay_out():
        for include_internal, max_lines in ((False, None), (True, None), (False, 12)):
            pieces = T._pieces(report, width, include_internal, max_lines)  # type: ignore[arg-type]
            by_rich = T._export(T._rich(pieces, False, width), False, max_lines)
            plain = layout(pieces, width)
            if plain is not None:
                plain_taken += 1
                assert T._cut(plain, max_lines) == by_rich, (report, width)
            assert T._render(report, False, width, include_internal, max_lines) == by_rich  # type: ignore[arg-type]
            in_colour = T._export(T._rich(pieces, True, width), True, max_lines)
            assert T._render(report, True, width, include_internal, max_lines) == in_colour  # type: ignore[arg-type]
    assert plain_taken >= (6 if width >= 80 else 0)


def _many(n: int, name_width: int) -> object:
    """A report of ``n`` functions, the first named ``name_width`` characters long."""
    fn = report_samples.sample_report().function("forward")
    names = [f"mod.fn_{i}" for i in range(n)]
    names[0] = ("mod.very_long_name_" * 20)[:name_width]
    functions = tuple(
        dataclasses.replace(fn, name=q, qualname=q, id=i + 1) for i, q in enumerate(names)
    )
    return dataclasses.replace(report_samples.sample_report(), functions=functions)


@pytest.mark.parametrize("name_width", [20, 300])
@pytest.mark.parametrize("color", [False, True])
def test_a_big_table_costs_the_same_per_row_at_any_width(
    name_width: int, color: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: 10,000 functions took 78 s when one name was wider than the terminal (rich
    measures every row of a table again for each) against 14 s otherwise. A table of
    ``BIG_TABLE`` rows or more is laid out without rich at any width, and a piece rich must
    lay out goes to rich alone (a line is wrapped as rich wraps it, without rich, when its
    characters take one cell each): here rich lays out nothing; every line keeps to the width."""
    from rich.console import Console

    from jitlens._render import plain

    report = _many(plain.BIG_TABLE, name_width)
    printed: list[type] = []
    real = Console.print

    def counted(self: Console, *objects: object, **kw: object) -> None:
        printed.extend(type(o) for o in objects)
        real(self, *objects, **kw)

    monkeypatch.setattr(Console, "print", counted)
    text = report.to_text(width=100, color=color)  # type: ignore[attr-defined]
    assert printed == []  # no table, no line: rich lays out nothing
    lines = text.splitlines()
    visible = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
    assert max(len(line) for line in visible) <= 100
    shown = "\n".join(visible)
    assert all(f" mod.fn_{i} " in shown for i in (1, 17, plain.BIG_TABLE - 1))
    # the long name is all there, cut into lines of its column under one another
    long = report.functions[0].qualname  # type: ignore[attr-defined]
    at = next(i for i, v in enumerate(visible) if v.startswith(" mod.very_long_name_"))
    column = [v[1:].split("  ")[0].strip() for v in visible[at : at + 8]]
    assert "".join(column).startswith(long)


def test_a_table_too_big_for_rich_keeps_rich_s_columns() -> None:
    """The big table's header and rows are the columns and cells rich shows for a small one."""
    from jitlens._render import plain

    small = _many(3, 20).to_text(width=100).splitlines()  # type: ignore[attr-defined]
    big = _many(plain.BIG_TABLE, 20).to_text(width=100).splitlines()  # type: ignore[attr-defined]
    assert big[1:3] == small[1:3]  # header and rule
    assert big[3] == small[3]


def test_lines_wrapped_without_rich_are_wrapped_as_rich_wraps_them() -> None:
    """A line too long for its width is wrapped by ``plain.wrap`` as rich wraps it: spaces
    between and after words, words longer than a line, code spans kept whole, every role's
    colour; checked against rich on lines drawn at random."""
    import random

    from jitlens._core.lines import Line, Role
    from jitlens._render import text as T
    from jitlens._render.plain import piece_lines

    rng = random.Random(44)
    words = [
        "a",
        "fix:",
        "`self.act = act`",
        "x" * 70,
        "\u2192",
        "model.layers[3]",
        "\u00d72",
        "\u2026",
    ]
    for _ in range(400):
        parts = [rng.choice(words) if rng.random() < 0.5 else "w" * rng.randint(1, 30)
                 for _ in range(rng.randint(0, 14))]  # fmt: skip
        text = "".join(p + " " * rng.choice((0, 1, 1, 1, 2, 3)) for p in parts)
        text = " " * rng.choice((0, 0, 2)) + text
        width, indent = rng.randint(20, 120), rng.choice((0, 2, 4, 8))
        piece = ("line", Line(indent, text, rng.choice(list(Role))), rng.random() < 0.7)
        for color in (False, True):
            ours = piece_lines(piece, width, color, T.STYLES)
            assert ours is not None
            by_rich = T._export(T._rich([piece], color, width), color)
            assert T._cut(T.unglue("\n".join(ours)), None) == by_rich, (text, width, indent)
