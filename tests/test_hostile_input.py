"""Every command takes untrusted input: FIFOs, deep JSON and huge reports get one line and exit 2.

Commands run in-process through ``main(argv)``; the ones that would hang
before the fix (a FIFO nobody writes to) run in a real process with a
timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from jitlens import main
from report_samples import sample_report

#: Fields a function of a report may leave out (the smallest valid function is ~230 bytes).
OPTIONAL = ("events", "stale_hits", "internal", "id", "call_times", "call_entries", "advice")
#: Each must answer within this many CPU seconds of this process (the 1,000,000-function case
#: included; 101,000 functions take about 2, parsed before they are counted). CPU, not wall:
#: a loaded machine stretches the wall time, not the work.
ANSWER_CPU_SECONDS = 20


def _one_line_exit_2(capsys, argv, *words):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize("command", ["report", "merge", "lint"])
def test_a_fifo_is_refused_not_read_forever(tmp_path, command):
    fifo = tmp_path / ("in.py" if command == "lint" else "in.json")
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "jitlens", command, str(fifo)],
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "not a regular file (a FIFO)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_fifo_inside_a_linted_folder_is_skipped(tmp_path):
    from jitlens import LintSkipWarning, lint_paths

    (tmp_path / "ok.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")
    with pytest.warns(LintSkipWarning, match=r"pipe\.py.*not a regular file \(a FIFO\)"):
        assert lint_paths([str(tmp_path)]) == []


@pytest.mark.parametrize("command", ["report", "merge"])
def test_json_nested_100000_deep_is_one_line_not_a_recursion_error(tmp_path, capsys, command):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    _one_line_exit_2(capsys, [command, str(deep)], "deep.json", "nested deeper")


def _write_many_functions(path, n):
    """A valid report of ``n`` functions, written without holding it in memory."""
    data = sample_report().to_dict()
    one = json.dumps(
        {k: v for k, v in data["functions"][0].items() if k not in OPTIONAL}, separators=(",", ":")
    )
    rest = json.dumps({k: v for k, v in data.items() if k != "functions"})
    with open(path, "w") as fh:
        fh.write(rest[:-1] + ', "functions": [')
        chunk = ",".join([one] * 1000)
        for i in range(n // 1000):
            fh.write(("," if i else "") + chunk)
        fh.write("]}")


#: The most functions a report may hold, as ``jitlens report`` says when it refuses one.
MAX_FUNCTIONS = 100_000


@pytest.mark.parametrize("n", [1_000_000, MAX_FUNCTIONS + 1000])
def test_a_report_with_too_many_functions_is_answered_quickly(tmp_path, capsys, n):
    """1,000,000 functions (230 MB) is refused by its size; 101,000 by its count."""
    big = tmp_path / "big.json"
    _write_many_functions(big, n)
    start = time.process_time()
    _one_line_exit_2(capsys, ["report", str(big)], "big.json", "limit")
    assert time.process_time() - start < ANSWER_CPU_SECONDS
    big.unlink()


#: Characters that act on a terminal (``jitlens._core.files``' list, read here as text).
ACTING = {
    *map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
} - {"\t", "\n"}  # fmt: skip


@pytest.mark.parametrize(
    "acting",
    # raw (JSON takes these as they are; not the C0 controls), then escaped in the JSON text
    ["\x7f", "\x9b", "\u202e", "\u2066", "\\u001b]0;t\\u0007", "\\r", "\\b", "\\u202E"],
)
def test_a_report_is_read_inert_whether_or_not_it_could_act(tmp_path, acting):
    """``jitlens report/merge/diff`` read a report from elsewhere with every string made
    inert; a text in which nothing can decode to an acting character is parsed without the
    hook that does it (which cost 5 of the 6 CPU s of 101,000 functions): the same report."""
    from jitlens import load_report

    data = sample_report().to_dict()
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(data), encoding="utf-8")
    assert load_report(clean).to_dict() == data
    name = data["functions"][0]["qualname"]
    data["functions"][0]["qualname"] = name + "MARK"
    acts = tmp_path / "acts.json"
    acts.write_text(json.dumps(data).replace("MARK", acting), encoding="utf-8")
    shown = load_report(acts).functions[0].qualname
    assert shown.startswith(name) and shown != name and not ACTING & set(shown), shown


def test_merge_may_not_overwrite_its_inputs(tmp_path, capsys):
    report = tmp_path / "r0.json"
    report.write_text(sample_report().to_json())
    before = report.read_text()
    _one_line_exit_2(capsys, ["merge", str(report), "--html", str(report)], "the report")
    assert report.read_text() == before


def test_diff_may_not_overwrite_its_inputs(tmp_path, capsys):
    """Issue 30: `jitlens diff BEFORE AFTER --json BEFORE` would replace the CI baseline."""
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    for path in (before, after):
        path.write_text(sample_report().to_json())
    texts = [before.read_text(), after.read_text()]
    for target in (before, after):
        _one_line_exit_2(
            capsys, ["diff", str(before), str(after), "--json", str(target)], "the report"
        )
    link = tmp_path / "link.json"
    link.symlink_to(before)  # the same file by another name
    _one_line_exit_2(capsys, ["diff", str(before), str(after), "--json", str(link)], "the report")
    assert [before.read_text(), after.read_text()] == texts
    assert main(["diff", str(before), str(after), "--json", str(tmp_path / "d.json")]) == 0
    assert json.loads((tmp_path / "d.json").read_text())["schema"] == "jitlens.diff"


def _edited(change):
    data = sample_report().to_dict()
    change(data, data["functions"][0])
    return json.dumps(data)


#: Figures no run produces, each with a word the one-line refusal must contain.
IMPOSSIBLE = {
    "negative calls": (lambda r, f: f.update(calls=-3), "calls"),
    "negative traces": (lambda r, f: f.update(traces=-1), "traces"),
    "negative compiles": (lambda r, f: f.update(compiles=-1), "compiles"),
    "hits beyond calls": (lambda r, f: f.update(calls=2, cache_hits=5), "cache_hits 5 > calls 2"),
    "negative seconds": (lambda r, f: f.update(compile_seconds=-0.5), "compile_seconds"),
    "infinite seconds": (lambda r, f: f.update(trace_seconds=float("inf")), "trace_seconds"),
    "process 3 of 2": (lambda r, f: r.update(process_index=3, process_count=2), "process_index"),
    "negative event": (
        lambda r, f: f["events"][0].update(compile_seconds=-1.0),
        "events[0].compile_seconds",
    ),
}


@pytest.mark.parametrize("command", ["diff", "report", "merge"])
def test_a_report_with_impossible_figures_is_refused(tmp_path, capsys, command):
    good = tmp_path / "good.json"
    good.write_text(sample_report().to_json())
    assert sample_report().functions[0].events, "the sample needs an event"
    for name, (change, word) in IMPOSSIBLE.items():
        bad = tmp_path / "bad.json"
        bad.write_text(_edited(change))
        argv = [command, str(good), str(bad)] if command != "report" else [command, str(bad)]
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2, (name, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (name, err)
        assert "bad.json" in err and word in err and "no run produces" in err, (name, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{r}", "--color", "always"],
        ["report", "{r}", "--color"],
        ["merge", "{r}", "--color=always"],
        ["merge", "{r}", "--color"],
    ],
)
def test_one_color_option_on_every_command(tmp_path, capsys, argv):
    path = tmp_path / "r.json"
    path.write_text(sample_report().to_json())
    argv = [a.format(r=path) for a in argv]
    main(argv)
    assert "\x1b[" in capsys.readouterr().out
    for never in (["--color", "never"], ["--color=never"], ["--no-color"]):
        main([*argv[:2], *never])
        assert "\x1b[" not in capsys.readouterr().out


def test_every_command_documents_the_same_color_option(capsys):
    for command in ("run", "report", "merge", "check", "audit"):
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert "--color [{auto,always,never}]" in out, (command, out)
