"""``jitlens diff`` and the report's ``run`` section, against real runs and a real cache folder.

Each run is ``tests/pcache_program.py`` in a process of its own; the program
prints what JAX itself did (its monitoring events per module, a counter in the
jitted body), the folder shows what JAX stored. The runs are shared by every test
(one module-scoped fixture, three rounds of parallel processes): cold, warm (its
repeat), warm with an XLA flag, warm with a new shape, warm from a copy of the
folder (another path), warm from the folder with an entry made unreadable; a
folder whose min entry size keeps everything out (twice); a cache enabled after
the first compile. Cold, warm and the XLA flag's run are ``jitlens run`` in fresh
processes, as a user runs them (the flag is read as JAX's backend starts); the
others only need a fresh tracker and a process of their own, whose JAX starts no
cache before the program sets it: a fresh ``jitlens.track()`` in a fork of the
suite's server that imported JAX (``fork_python``; about 1 CPU s less each).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import jitlens
from conftest import counted
from jitlens import Event, FunctionReport, Report, load_report

pytestmark = pytest.mark.slow

PROGRAM = Path(__file__).with_name("pcache_program.py")
FLAG = "--xla_cpu_enable_fast_math=true"
HUGE = str(10**9)
#: name -> (environment, round): a round starts once the one before it has ended.
RUNS: dict[str, tuple[dict[str, str], int]] = {
    "cold": ({"PCACHE_DIR": "cache"}, 0),
    "never1": ({"PCACHE_DIR": "tiny", "PCACHE_MIN_ENTRY": HUGE}, 0),
    "late": ({"PCACHE_DIR": "late", "PCACHE_LATE": "1"}, 0),
    "warm": ({"PCACHE_DIR": "cache"}, 1),
    "never2": ({"PCACHE_DIR": "tiny", "PCACHE_MIN_ENTRY": HUGE}, 1),
    "flag": ({"PCACHE_DIR": "cache", "XLA_FLAGS": FLAG}, 2),
    "shape": ({"PCACHE_DIR": "cache", "PCACHE_ROWS": "8"}, 2),
    "corrupt": ({"PCACHE_DIR": "cache", "CWD": "other"}, 2),
    "moved": ({"PCACHE_DIR": "moved"}, 2),
}
TIMEOUT = 180.0
#: The runs made by ``jitlens run`` in a fresh process (the others: :data:`TRACKED` in a fork).
FRESH = ("cold", "warm", "flag")
#: ``python -c TRACKED PROGRAM REPORT``: the program under a fresh tracker, its report written.
TRACKED = (
    "import runpy, sys, jitlens\n"
    "with jitlens.track() as t:\n"
    "    runpy.run_path(sys.argv[1], run_name='__main__')\n"
    "open(sys.argv[2], 'w').write(t.report().to_json())\n"
)


class Run:
    def __init__(self, name: str, workdir: Path, out: str) -> None:
        self.name = name
        self.path = workdir / f"{name}.json"
        self.report = load_report(self.path)
        line = next(x for x in out.splitlines() if x.startswith("GROUND "))
        self.ground: dict[str, Any] = json.loads(line[len("GROUND ") :])
        folder = workdir / RUNS[name][0]["PCACHE_DIR"]
        self.folder = sorted(os.listdir(folder)) if folder.exists() else []

    def jax_step(self) -> dict[str, int]:
        return self.ground["modules"]["jit(step)"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, fork_python) -> dict[str, Run]:
    workdir = tmp_path_factory.mktemp("pcache")
    base = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    base["JAX_PLATFORMS"] = "cpu"
    # the fresh runs' XLA flags are the forks' (the server's: the suite's own), or the cache
    # keys of the forked runs and the fresh ones would differ by them
    suite_flags = os.environ.get("XLA_FLAGS", "")
    done: dict[str, Run] = {}
    outputs: dict[str, str] = {}
    for round_ in range(3):
        if round_ == 2:
            # the warm folder copied to another path; and to the same relative path from
            # another directory (the same key), with its entry for `step` made unreadable
            shutil.copytree(workdir / "cache", workdir / "moved")
            shutil.copytree(workdir / "cache", workdir / "other" / "cache")
            (entry,) = (workdir / "other" / "cache").glob("jit_step-*-cache")
            entry.write_bytes(b"not an executable")
        procs, forks = {}, {}
        for name, (env, r) in RUNS.items():
            if r != round_:
                continue
            cwd = workdir / env.get("CWD", "")
            if name not in FRESH:
                forks[name] = fork_python.submit(
                    ["-c", TRACKED, str(PROGRAM), f"{name}.json"], cwd=cwd, env=env, timeout=TIMEOUT
                )
                continue
            cmd = [sys.executable, "-m", "jitlens", "run", "-q", "--json", f"{name}.json"]
            procs[name] = subprocess.Popen(
                [*cmd, str(PROGRAM)],
                cwd=cwd,
                env={**base, **env, "XLA_FLAGS": f"{suite_flags} {env.get('XLA_FLAGS', '')}"},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        deadline = time.monotonic() + TIMEOUT
        for name, handle in forks.items():
            forked = fork_python.wait(handle)
            assert forked.returncode == 0, f"{name}:\n{forked.stdout}{forked.stderr}"
            outputs[name] = forked.stdout
        for name, proc in procs.items():
            try:
                out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for p in procs.values():
                    p.kill()
                pytest.fail(f"{name}: ran over {TIMEOUT} s")
            assert proc.returncode == 0, f"{name}:\n{out}"
            outputs[name] = out
        for name in (*procs, *forks):  # the folders once every run of the round has ended
            done[name] = Run(name, workdir / RUNS[name][0].get("CWD", ""), outputs[name])
    return done


def _diff_cli(argv: list[str]) -> int:
    """``jitlens diff ARGV`` as a user runs it, in this process, unwrapped (one item a line)."""
    return jitlens.main(["diff", *argv, "--width", "10000"])


def _step(report: Report) -> jitlens.FunctionReport:
    return report.function("step")


def _diff(capsys: pytest.CaptureFixture[str], before: Run, after: Run) -> tuple[int, str]:
    code = _diff_cli([str(before.path), str(after.path)])
    return code, capsys.readouterr().out


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_counts_and_cache_outcomes_match_what_jax_did(runs: dict[str, Run]) -> None:
    for name in ("cold", "warm", "flag", "shape", "never2"):
        run = runs[name]
        step, jax_step = _step(run.report), run.jax_step()
        assert step.traces == run.ground["traces"] == 1, name
        assert step.compiles == jax_step["compiles"], name
        assert step.persistent_cache_hits == jax_step["pcache_hits"], name
    cold, warm = runs["cold"].report, runs["warm"].report
    assert [e.persistent_cache for e in _step(cold).events] == ["written"]
    assert [e.persistent_cache for e in _step(warm).events] == ["hit"]
    assert _step(warm).events[0].key == (("x", "f32[4]"), ("scale", "f32[]{weak}"))
    pc = cold.run.persistent_cache
    assert (pc.dir, pc.enabled, pc.used, pc.min_compile_time_secs) == ("cache", True, True, 0.0)
    modules = runs["cold"].ground["modules"]
    # the self-check runs out of process: nothing of it reaches the program's cache
    assert not [k for k in modules if "jitlens_" in k]
    assert pc.writes == sum(m["pcache_writes"] for m in modules.values())
    written = [n for n in pc.entries_written if n.startswith("jit_step-")]
    assert len(written) == 1 and written[0] in runs["cold"].folder
    assert warm.run.persistent_cache.hits >= 1 and warm.run.persistent_cache.writes == 0
    assert warm.run.notes == () and cold.run.notes == ()
    suite = os.environ.get("XLA_FLAGS", "").split()  # the suite's own, in every run's key
    assert runs["flag"].report.run.key_flags == tuple(sorted({*suite, FLAG}))
    assert warm.run.key_flags == tuple(sorted(suite))
    assert Report.from_dict(json.loads(warm.to_json())).run == warm.run


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_persistent_cache_loads_are_not_compiles(runs: dict[str, Run]) -> None:
    """(test_run's) ``jitlens run`` in a second process with a warm on-disk cache: the
    program's one trace is a persistent-cache hit, not a compile."""
    cold, warm = _step(runs["cold"].report), _step(runs["warm"].report)
    assert (cold.traces, cold.compiles, cold.persistent_cache_hits) == (1, 1, 0)
    assert (warm.traces, warm.compiles, warm.persistent_cache_hits) == (1, 0, 1)


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_a_repeat_run_exits_0(runs: dict[str, Run], capsys: pytest.CaptureFixture[str]) -> None:
    assert runs["warm"].jax_step() == {"compiles": 0, "pcache_hits": 1, "pcache_writes": 0}
    code, out = _diff(capsys, runs["cold"], runs["warm"])
    assert code == 0, out
    assert "nothing got worse" in out and "same versions, XLA flags" in out
    assert "better  step" in out and "read from the persistent cache (BEFORE compiled it)" in out
    code, out = _diff(capsys, runs["warm"], runs["warm"])
    assert code == 0 and "1 function(s) unchanged" in out, out


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_the_summary_says_a_second_run_read_the_persistent_cache(runs: dict[str, Run]) -> None:
    """A newcomer's "was the cache hit on my second run?": the warm run's summary showed
    `compiles 0` and nothing else; only `jitlens diff` or the JSON said where it came from."""
    assert runs["warm"].jax_step()["pcache_hits"] == 1  # what JAX itself did
    warm = runs["warm"].report.to_text(width=200)
    assert "persistent compilation cache: 1 program loaded instead of compiled (step)" in warm
    assert "persistent compilation cache" not in runs["cold"].report.to_text(width=200)


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_a_changed_xla_flag_exits_1_naming_the_function_and_the_flag(
    runs: dict[str, Run], capsys: pytest.CaptureFixture[str]
) -> None:
    flag = runs["flag"]
    assert flag.jax_step()["compiles"] == 1 and flag.jax_step()["pcache_hits"] == 0
    assert flag.jax_step()["pcache_writes"] == 1  # JAX wrote it under a new key
    written = {n for n in flag.report.run.persistent_cache.entries_written if "step" in n}
    assert written and not written & set(runs["warm"].folder)
    code, out = _diff(capsys, runs["warm"], flag)
    assert code == 1, out
    assert "WORSE  step" in out
    assert "XLA flag --xla_cpu_enable_fast_math unset -> true" in out
    assert "BEFORE read it from the persistent cache; the key changed with XLA flag" in out
    (worse,) = jitlens.diff(runs["warm"].report, flag.report).worse
    assert (worse.qualname, worse.before.compiles, worse.after.compiles) == ("step", 0, 1)
    assert [e.kind for e in worse.entries] == ["cache_miss"]


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_a_new_input_shape_is_named_with_its_path(
    runs: dict[str, Run], capsys: pytest.CaptureFixture[str]
) -> None:
    shape = runs["shape"]
    assert shape.jax_step()["compiles"] == 1
    result = jitlens.diff(runs["warm"].path, shape.path)
    (worse,) = result.worse
    new = next(e for e in worse.entries if e.kind == "new")
    (reason,) = new.reasons
    assert (reason.kind, reason.path, reason.before, reason.after) == (
        "shape",
        "x",
        "f32[4]",
        "f32[8]",
    )
    assert "x  shape: f32[4] -> f32[8]" in str(result)
    code, _ = _diff(capsys, runs["warm"], shape)
    assert code == 1


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_a_cache_that_never_stores_names_the_setting(
    runs: dict[str, Run], capsys: pytest.CaptureFixture[str]
) -> None:
    never = runs["never2"]
    assert never.folder == [] and never.jax_step()["pcache_writes"] == 0
    assert never.jax_step()["compiles"] == 1  # the second run compiled again
    (note,) = never.report.run.notes
    assert note.setting == "jax_persistent_cache_min_entry_size_bytes"
    assert HUGE in note.message and "-1" in note.fix
    assert "jax_persistent_cache_min_entry_size_bytes" in str(never.report)
    code, out = _diff(capsys, runs["never1"], never)
    assert code == 0, out
    assert "compiled in both runs: nothing was written" in out
    assert "jax_persistent_cache_min_entry_size_bytes=1000000000" in out


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_a_cache_enabled_after_the_first_compile_is_named(runs: dict[str, Run]) -> None:
    late = runs["late"]
    assert not (late.path.parent / "late").exists() and late.jax_step()["compiles"] == 1
    (note,) = late.report.run.notes
    assert (note.kind, note.setting) == ("too_late", "jax_enable_compilation_cache")
    assert "before the first jitted call" in note.fix


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_an_entry_jax_cannot_read_back_is_named(runs: dict[str, Run]) -> None:
    corrupt = runs["corrupt"]
    # JAX found the key, failed to read the entry, compiled and "wrote" it (its cache kept
    # the old file: the next run fails the same way)
    assert corrupt.jax_step() == {"compiles": 1, "pcache_hits": 0, "pcache_writes": 1}
    (entry,) = [n for n in runs["warm"].folder if n.startswith("jit_step-")]
    assert entry in corrupt.folder
    pc = corrupt.report.run.persistent_cache
    assert pc.entries_unreadable == (entry,)
    (note,) = corrupt.report.run.notes
    assert (note.kind, note.setting) == ("unreadable", "jax_raise_persistent_cache_errors")
    assert entry in note.message and "jax#38445" in note.message
    assert runs["warm"].report.run.persistent_cache.entries_unreadable == ()


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_a_copied_cache_folder_is_a_new_key(
    runs: dict[str, Run], capsys: pytest.CaptureFixture[str]
) -> None:
    moved = runs["moved"]
    # JAX itself: the copy held the warm run's entry, yet compiled and wrote another key
    assert moved.jax_step() == {"compiles": 1, "pcache_hits": 0, "pcache_writes": 1}
    assert set(runs["warm"].folder) < set(moved.folder)
    code, out = _diff(capsys, runs["warm"], moved)
    assert code == 1, out
    assert "  jax_compilation_cache_dir: cache -> moved\n" in out  # in the key, no "(not in"
    assert "the key changed with jax_compilation_cache_dir cache -> moved" in out


# ------------------------------------------------------------------ without processes


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert _diff_cli([str(broken), str(tmp_path / "missing.json")]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert _diff_cli([str(broken)]) == 2


@pytest.mark.xdist_group("diff_runs")  # its module fixture runs once
def test_a_line_shift_still_matches(runs: dict[str, Run]) -> None:
    import dataclasses

    warm = runs["warm"].report
    step = _step(warm)
    shifted = dataclasses.replace(step, defined_at=step.defined_at.replace(":", ":1", 1))
    moved = dataclasses.replace(warm, functions=(shifted,))
    (fn,) = jitlens.diff(warm, moved).functions
    assert (fn.status, fn.defined_at_before) == ("same", step.defined_at)


def _report(
    flags: tuple[str, ...],
    rows: int,
    hit: bool,
    traces: int | None = 1,
    key: dict[str, str] | None = None,
) -> Report:
    key = key or {"x": f"f32[{rows}]", "n": "3"}
    event = Event(
        call_index=0,
        kind="trace",
        call_site="train.py:9",
        signature=", ".join(f"{k}: {v}" if k == "x" else f"{k}={v}" for k, v in key.items()),
        compiled=True,
        persistent_cache_hit=hit,
        persistent_cache="hit" if hit else "written",
        key=tuple(key.items()),
    )
    step = FunctionReport(
        "step", "step", "jax.jit", "train.py:4", "train.py:9", 2, traces, 0 if hit else 1, 1,
        int(hit), 0.0, 0.0, 0.0, (event,),
    )  # fmt: skip
    data = Report(2, "0", "0.10.2", "0", "cpu", 0, 1, "h", 0.0, 1.0, (step,)).to_dict()
    data["run"] = {"jax_version": "0.10.2", "jaxlib_version": "0.10.2", "key_flags": list(flags)}
    return Report.from_dict(data)


def test_key_reasons_use_the_run_vocabulary() -> None:
    """A new entry is explained from the saved keys, most decisive difference first."""
    before = _report((), 4, hit=False, key={"batch['x']": "f32[4,3]", "n": "3", "mask": "bool[4]"})
    after = _report((), 4, hit=False, key={"batch['x']": "i32[4,3]", "n": "4"})
    (fn,) = jitlens.diff(before, after).functions
    (entry,) = [e for e in fn.entries if e.kind == "new"]
    reasons = entry.reasons
    assert [(r.kind, r.path, r.before, r.after) for r in reasons] == [
        ("pytree_structure", "mask", "bool[4]", "absent"),
        ("static_value", "n", "3", "4"),
        ("dtype", "batch['x']", "f32[4,3]", "i32[4,3]"),
    ]
    assert reasons[2].argument == "batch"
    # the diff's own reasons are made as every reason is: a template and its parameters,
    # worded when printed (they were strings given whole, with no fix kind)
    assert [r.fix_kind for r in reasons[:2]] == ["diff_structure", "diff_static"]
    assert [r.said[0].id for r in reasons[:2]] == ["diff_structure", "diff_static"]
    assert reasons[1].message == "`n` is 3 in BEFORE and 4 in AFTER; each static value compiles."
    assert reasons[1].fix == (
        "If the runs should share a compile, pass `n` with the value of the baseline run; else "
        "each value compiles once."
    )


def test_jitlens_diff_words_a_static_from_the_templates(tmp_path: Path) -> None:
    """``jitlens diff`` as a user runs it, in a fresh process: a static that differs between
    two runs' keys is worded from ``_core/reasons``' templates."""
    before = _report((), 4, hit=True, key={"x": "f32[4]", "n": "3"})
    after = _report((), 4, hit=False, key={"x": "f32[4]", "n": "4"})
    (tmp_path / "base.json").write_text(before.to_json())
    (tmp_path / "new.json").write_text(after.to_json())
    proc = subprocess.run(
        [sys.executable, "-m", "jitlens", "diff", "base.json", "new.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "n static_value: 3 -> 4" in out, out
    assert (
        "fix: If the runs should share a compile, pass `n` with the value of the baseline run;"
        in out
    ), out


GOLDEN_FLAG = """\
jitlens diff: base.json -> new.json: 1 function(s) gained traces or compiles
outside the program (what the persistent-cache key hashes):
  XLA flag --xla_cpu_enable_fast_math: unset -> true

WORSE  step (train.py:4)
  traces 1 -> 1, compiles 0 -> 1, from the persistent cache 1 -> 0
  compiled again (BEFORE read it from the persistent cache): x: f32[4], n=3
  `step` compiled 0x -> 1x in AFTER: BEFORE read it from the persistent cache; the key changed \
with XLA flag --xla_cpu_enable_fast_math unset -> true
  fix: run with the baseline's XLA flag --xla_cpu_enable_fast_math (unset); or, if the change \
is meant, make this run's report the new baseline (its entries are in the cache now)
"""
GOLDEN_SHAPE = """\
jitlens diff: base.json -> new.json: 1 function(s) gained traces or compiles
outside the program: same versions, XLA flags, key config and devices

WORSE  step (train.py:4)
  traces 1 -> 1, compiles 0 -> 1, from the persistent cache 1 -> 0
  new entry: x: f32[8], n=3  (closest in BEFORE: x: f32[4], n=3)
    x  shape: f32[4] -> f32[8]
  gone entry: x: f32[4], n=3
  `step` compiled 0x -> 1x in AFTER: new entry x: f32[8], n=3: x f32[4] -> f32[8] (shape)
  fix: Keep shapes fixed: pad smaller batches to the largest shape (and mask the padding), or \
bucket lengths to a few sizes so each compiles once.
"""


def test_golden_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    base = _report((), 4, hit=True)

    def against(after: Report) -> jitlens.ReportDiff:
        Path("base.json").write_text(base.to_json())
        Path("new.json").write_text(after.to_json())
        return jitlens.diff("base.json", "new.json")

    flag = against(_report((FLAG,), 4, hit=False))
    assert str(flag) == GOLDEN_FLAG
    shape = against(_report((), 8, hit=False))
    assert str(shape) == GOLDEN_SHAPE
    unknown = jitlens.diff(base, _report((), 4, hit=True, traces=None))
    (fn,) = unknown.functions
    assert (fn.status, fn.message) == (
        "same",
        "cannot compare: AFTER could not count traces on its JAX version (shown as ?)",
    )
    assert json.loads(flag.to_json())["worse"] == 1
    old = jitlens.diff(dataclasses.replace(base, run=None), base)
    assert old.unknowns == (
        "BEFORE has no run section (written by an older jitlens): environments not compared",
    )


def test_nnx_keys_name_the_parameter_path() -> None:
    """In one process: two trackers' reports of an nnx.jit function with models of two sizes."""
    import jax.numpy as jnp
    from flax import nnx

    traces = counted()

    @nnx.jit
    def fwd(model: nnx.Linear, x: jnp.ndarray) -> jnp.ndarray:
        traces.tick()
        return model(x)

    reports = []
    for n in (3, 5):
        with jitlens.track() as t:
            fwd(nnx.Linear(n, 2, rngs=nnx.Rngs(0)), jnp.ones((1, n)))
        reports.append(t.report())
    assert traces.n == 2
    (fn,) = jitlens.diff(*reports).functions
    (new,) = [e for e in fn.entries if e.kind == "new"]
    shapes = {(r.path, r.before, r.after) for r in new.reasons if r.kind == "shape"}
    assert shapes == {
        ("model.kernel.value", "f32[3,2]", "f32[5,2]"),
        ("x", "f32[1,3]", "f32[1,5]"),
    }
    assert ("model.in_features", "3", "5") in {(r.path, r.before, r.after) for r in new.reasons}
    key = dict(reports[0].function("fwd").events[0].key)
    assert key["model.kernel"].startswith("Param(")


TRAIN = """\
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(3))
        self.step = 0


@nnx.jit
def train_step(m, x):
    return m.w * x


m = Model()
for i in range(3):
    m.step = i
    train_step(m, jnp.ones(3))
"""
#: The run's own fix for `m.step`, applied in a renamed copy of the script.
TRAIN_FIXED = TRAIN.replace("self.step = 0", "self.step = nnx.Variable(jnp.asarray(0))").replace(
    "m.step = i", "m.step[...] = i"
)


def test_a_fix_in_a_renamed_copy_matches_and_the_fix_is_the_runs_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 35: functions pair across `train.py` -> `train_fixed.py`; the fix is `jitlens run`'s."""
    import runpy

    paths = {}
    for name, text in (("train", TRAIN), ("train_fixed", TRAIN_FIXED)):
        script = tmp_path / f"{name}.py"
        script.write_text(text)
        with jitlens.track() as t:
            runpy.run_path(str(script))
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(t.report().to_json())
    buggy = load_report(paths["train"]).function("train_step")
    assert (buggy.traces, load_report(paths["train_fixed"]).function("train_step").traces) == (3, 1)
    own_fix = buggy.events[1].reasons[0].fix
    assert "nnx.Variable" in own_fix

    assert _diff_cli([str(paths["train"]), str(paths["train_fixed"])]) == 0
    out = capsys.readouterr().out
    assert "nothing got worse; 1 function(s) traced or compiled less" in out.splitlines()[0]
    assert "better  train_step (" in out and "train_fixed.py:11), was " in out, out
    assert "new\n" not in out and "gone " not in out.replace("gone entry", ""), out

    assert _diff_cli([str(paths["train_fixed"]), str(paths["train"])]) == 1
    out = capsys.readouterr().out
    assert "WORSE  train_step (" in out and f"  fix: {own_fix}\n" in out, out
    assert "2 more new entries like it" in out
