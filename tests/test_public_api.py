"""The public surface tests and users stand on: kinds as enums, ``Report.to_text``, doctests.

Also the rule that keeps the next refactor from rewriting the suite: tests go through
``jitlens``' public names, and the few modules that must reach inside are listed here.
"""

from __future__ import annotations

import ast
import dataclasses
import doctest
import enum
import importlib
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jitlens
from report_samples import empty_report, sample_report

TESTS = Path(__file__).resolve().parent

#: Modules whose docstring examples are run here: pure functions of report data (no JAX).
DOCTESTED = (
    "jitlens._config",
    "jitlens._core.kinds",
    "jitlens._core.report",
    "jitlens._core.lines",
    "jitlens._core.retrace_text",
    "jitlens._core.advice",
    "jitlens._render.text",
    "jitlens._render.perfetto",
)

#: Test modules that import private jitlens names, each for a reason no public name can
#: serve. Everything else stands on ``jitlens``' public names, the report's typed data, a
#: command run as the user runs it (``jitlens.main([...])``) or the report JSON, so that a
#: refactor of the insides does not rewrite it. A module may reach inside only to pin
#: (a) a rule on made-up inputs no program produces on cue, (b) a fault or a boundary of
#: jitlens itself, or (c) the insides' own tables (templates, generated pages). At most 10
#: (issue 31); a new module of those kinds takes a free slot, anything else goes public.
PRIVATE_IMPORTS_ALLOWED = {
    # (a) rules on made-up inputs
    "test_advice.py": "every advice kind's rule on made-up timings, cache states, compile costs",
    "test_check.py": "the grader's judgements on made-up probes and its reference cache",
    "test_libraries.py": "library rewordings on hand-made reasons (no keras import here)",
    "test_render_text.py": "one retrace as the live log and a guard error print it",
    # (b) faults and boundaries of jitlens itself
    "test_robustness.py": "fault injection, installed hooks, unseen calls, no-guess rules",
    "test_equinox.py": "a broken front-end description and the Equinox probe",
    "test_run_as_python.py": "the self-check verdict file's name, to put a FIFO there",
    # (c) the insides' own tables
    "test_fixes.py": "which fix template printed each fix, applied to a program",
    "test_docs.py": "the generated pages cover the code's own tables",
    "test_record.py": "each record's shared repr/eq/hash equal what dataclasses generates",
}
MAX_PRIVATE_IMPORTERS = 10


def _private_imports(path: Path) -> set[str]:
    """``jitlens._x`` names ``path`` imports (program text in strings runs elsewhere: not
    counted)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("jitlens._"):
                names.update(f"{node.module}.{a.name}" for a in node.names)
            elif node.module == "jitlens":
                names.update(
                    f"jitlens.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                )
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("jitlens._"))
    return names


def test_only_the_listed_test_modules_import_private_names() -> None:
    assert len(PRIVATE_IMPORTS_ALLOWED) <= MAX_PRIVATE_IMPORTERS
    assert all(why.strip() for why in PRIVATE_IMPORTS_ALLOWED.values())
    found = {p.name for p in TESTS.glob("*.py") if _private_imports(p)}
    new = sorted(found - set(PRIVATE_IMPORTS_ALLOWED))
    assert not new, f"test modules importing private jitlens names, not listed: {new}"
    present = {name for name in PRIVATE_IMPORTS_ALLOWED if (TESTS / name).exists()}
    cleaned = sorted(present - found)
    assert not cleaned, f"no longer import private names: take them off the list: {cleaned}"


def test_the_private_import_finder_sees_every_spelling(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text(
        "import jitlens\nfrom jitlens import Report, __version__\n"
        "CODE = 'from jitlens._core import report'\n"  # program text run elsewhere
    )
    assert _private_imports(module) == set()
    module.write_text(
        "import jitlens._track.calls\nfrom jitlens import _config\n"
        "def f():\n    from jitlens._core.report import Reason\n"
    )
    assert _private_imports(module) == {
        "jitlens._track.calls",
        "jitlens._config",
        "jitlens._core.report.Reason",
    }


# ------------------------------------------------------------------ kinds


def test_kinds_are_str_enums_in_their_documented_order() -> None:
    assert [k.value for k in jitlens.ReasonKind] == [
        "new_function",
        "config",
        "signature",
        "pytree_structure",
        "graph_structure",
        "static_value",
        "identity_static",
        "mutated_static",
        "static_type",
        "variable_metadata",
        "shape",
        "dtype",
        "weak_type",
        "sharding",
        "cache_cleared",
        "unknown",
    ]
    assert [k.value for k in jitlens.EventKind] == ["trace", "retrace", "compile", "stopped"]
    assert [k.value for k in jitlens.AdviceKind] == [
        "dispatch",
        "compile_cache",
        "entries",
        "disable_jit",
        "buckets",
        "fast_path",
        "unrolled_loop",
        "captured_constant",
        "compile_bound",
        "many_leaves",
    ]
    for kinds in (jitlens.ReasonKind, jitlens.EventKind, jitlens.AdviceKind):
        assert issubclass(kinds, enum.StrEnum)
        for kind in kinds:
            assert kind == kind.value and f"{kind}" == kind.value and hash(kind) == hash(kind.value)
            assert repr(kind) == repr(kind.value)  # a printed list of kinds reads as before


def test_a_plain_string_kind_becomes_its_member() -> None:
    r = jitlens.Reason("shape", "x", "x", "f32[2]", "f32[3]", "m", "f")
    assert r.kind is jitlens.ReasonKind.SHAPE and r.kind == "shape"
    assert jitlens.Event(0, "retrace", "a.py:1", "").kind is jitlens.EventKind.RETRACE
    assert jitlens.Advice("entries", "m", "f").kind is jitlens.AdviceKind.ENTRIES
    with pytest.raises(ValueError):
        jitlens.Event(0, "retraced", "a.py:1", "")  # a report file says which kinds it may hold


def test_a_reason_kind_of_a_newer_jitlens_is_read_and_shown() -> None:
    data = sample_report().to_dict()
    (name, event) = next(
        (f["qualname"], e) for f in data["functions"] for e in f["events"] if e["reasons"]
    )
    event["reasons"] = [{**event["reasons"][0], "kind": "something_new"}, *event["reasons"]]
    report = jitlens.Report.from_dict(data)
    kinds = [r.kind for e in report.function(name).events for r in e.reasons]
    assert "something_new" in kinds and type(kinds[0]) is str
    assert "something_new" in report.to_text(width=100)
    assert report.to_json() == jitlens.Report.from_dict(json.loads(report.to_json())).to_json()


def _plain(value: object) -> object:
    """``value`` with every enum member made its plain string (the JSON before the enums)."""
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return str.__str__(value)
    return value


def test_the_json_is_the_same_with_enum_kinds() -> None:
    report = sample_report()
    kinds = {type(e.kind) for f in report.functions for e in f.events}
    assert kinds == {jitlens.EventKind}
    data = report.to_dict()
    assert report.to_json() == json.dumps(_plain(data), indent=1, allow_nan=False)
    assert '"kind": "identity_static"' in report.to_json()
    again = jitlens.Report.from_dict(json.loads(report.to_json()))
    assert again == report and again.to_json() == report.to_json()


def test_reasons_of_one_retrace_come_most_decisive_first() -> None:
    with jitlens.track() as t:
        step = jax.jit(lambda x, n: x * n, static_argnums=1)
        step(jnp.ones(2, jnp.float32), 1)
        step(jnp.ones(3, jnp.int32), 2)  # static value, shape and dtype at once
    (event,) = [e for e in t.report().function("<lambda>").events if e.reasons]
    kinds = [r.kind for r in event.reasons]
    order = list(jitlens.ReasonKind)
    assert kinds == sorted(kinds, key=order.index) and len(set(kinds)) >= 2, kinds


# ------------------------------------------------------------------ Report.to_text


def test_to_text_is_str_and_takes_width_and_colour() -> None:
    report = sample_report()
    plain = report.to_text(width=100)
    assert "\x1b[" not in plain and "\x1b[" in report.to_text(width=100, color=True)
    assert all(len(line) <= 80 for line in report.to_text(width=80).splitlines())
    assert report.to_text(width=80) != plain  # the width is honoured, not just capped
    assert "_split_merge" not in plain
    assert "_split_merge" in report.to_text(width=100, include_internal=True)
    short = report.to_text(width=100, max_lines=12)
    assert len(short.splitlines()) <= 12 < len(plain.splitlines())
    assert empty_report().to_text() == (
        "jitlens: no jitted function was called (cpu on devbox, 0.5 s tracked).\n"
    )


def test_to_text_never_raises() -> None:
    broken = dataclasses.replace(sample_report(), functions=("not a function",))
    assert "could not render" in broken.to_text(width=100)


@pytest.mark.parametrize("name", DOCTESTED)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failed == 0 and attempted > 0


def test_new_public_names_have_docstrings() -> None:
    for name in ("Advice", "StaleHit", "ReasonKind", "EventKind", "AdviceKind", "main"):
        assert name in jitlens.__all__
        assert (getattr(jitlens, name).__doc__ or "").strip(), name
    for name in ("settings", "AuditError", "CheckError"):
        assert name in jitlens.__all__
        assert (getattr(jitlens, name).__doc__ or "").strip(), name
    for method in (
        jitlens.Report.to_text,
        jitlens.Report.to_html,
        jitlens.Report.to_trace_events,
        jitlens.Report.from_dict,
        jitlens.MergedReport.to_text,
        jitlens.MergedReport.to_html,
    ):
        assert (method.__doc__ or "").strip(), method


def test_a_report_renders_itself_in_every_format() -> None:
    """What ``jitlens report --html/--trace`` write, from the report object itself."""
    report = sample_report()
    page = report.to_html()
    assert page.startswith("<!DOCTYPE html>") and "forward" in page
    trace = report.to_trace_events()
    threads = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {t.split()[0] for t in threads} == {f.qualname for f in report.functions}
    json.dumps(trace, allow_nan=False)
    assert jitlens.Report.from_dict(json.loads(report.to_json())) == report


def test_settings_are_scoped_checked_and_shown() -> None:
    with jitlens.settings(warn_recompiles="3") as outer:
        assert outer["warn_recompiles"] == 3
        with jitlens.settings(warn_recompiles="off", log_level="warning") as inner:
            assert (inner["warn_recompiles"], inner["log_level"]) == (0, "warning")
        with jitlens.settings() as back:
            assert back["warn_recompiles"] == 3  # the inner block's values ended with it
    with pytest.raises(jitlens.ConfigError, match="an integer >= 0, or off"):
        with jitlens.settings(warn_recompiles="-1"):
            pytest.fail("a bad value must fail on entry")
    with pytest.raises(jitlens.ConfigError, match="unknown jitlens setting 'colour'"):
        with jitlens.settings(colour="on"):
            pytest.fail("an unknown name must fail on entry")
