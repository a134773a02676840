"""``jitlens check``: each example's exact verdict, the sandbox's failure modes, the CLI, the text.

Every grading runs a child process (JAX import + compiles), so all of them are
started at once by one module-scoped fixture and shared by the asserts; the cheats (and the
environment probe) share one grading (one case each), the six failing examples one child (in
turn, each judged apart), the hostile behaviours one model shape, the children one persistent
compilation cache, and the CLI's own process is a fork of ``fork_python``'s server.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import importlib
import json
import os
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import jitlens
from conftest import SUITE_PATH
from jitlens import CheckError, CheckResult, check_jit_forward
from jitlens._exercise import check as _check
from jitlens._exercise import dependence
from jitlens._exercise import sandbox as _sandbox
from jitlens._exercise.check import BAD_INPUTS, BadInput, CheckCase, _locate, default_cases
from jitlens._exercise.child import make_x, reference
from jitlens._exercise.criteria import CheckFinding, CriterionResult, judge, judge_probe
from jitlens._exercise.render import render_check
from jitlens._exercise.sandbox import Outcome

# One worker grades everything (the fixture is module-scoped): CI runs `--dist loadgroup`.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("check")]

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "exercise"
FIXTURES = ROOT / "tests" / "fixtures"
REQUIRED = ("numbers", "jit_used", "calls_repeated", "cache_hits", "data_flow")

#: Status of numbers / JIT used / calls repeated / cache hits / data flow on each default case.
VERDICTS: dict[str, dict[str, tuple[str, ...]]] = {
    "solution": {k: ("pass",) * 6 for k in REQUIRED},
    "eager_shortcut": {"numbers": ("pass",) * 6} | {k: ("fail",) * 6 for k in REQUIRED[1:]},
    "single_call": {k: ("pass",) * 6 for k in REQUIRED}
    | {"calls_repeated": ("fail",) * 4 + ("pass", "fail")},
    "wrapper_in_loop": {k: ("pass",) * 6 for k in REQUIRED}
    | {"cache_hits": ("fail",) * 4 + ("pass", "fail")},
    "wrong_initializer": {k: ("pass",) * 6 for k in REQUIRED} | {"numbers": ("fail",) * 6},
    "unflattened": {k: ("pass",) * 6 for k in REQUIRED} | {"numbers": ("fail",) * 6},
    "raw_jax_jit": {k: ("pass",) * 6 for k in REQUIRED}
    | {"jit_used": ("fail",) * 6, "data_flow": ("fail",) * 6},
}

#: Solutions that game the counts, graded on the first default case (num_calls = 5): the
#: criterion each must fail, and the reason it must give.
CHEATS: dict[str, tuple[str, str]] = {
    "cheat_dummy_input": ("data_flow", "no call of `fwd` received x: no argument equals the input"),
    "cheat_identity": (
        "data_flow",
        "no call of `ident` received the model's parameters: no argument holds a kernel",
    ),
    "cheat_disable_jit": (
        "cache_hits",
        "1 trace in 5 calls, 0 cache hits: 4 calls were neither traced nor served from the "
        "compiled cache (they ran eagerly under jax.disable_jit())",
    ),
    "cheat_numpy_first": ("data_flow", "returned the output of call 1 of 5, not of the last"),
    "cheat_first_reshaped": ("data_flow", "returned the output of call 1 of 5, not of the last"),
    # issue 44: the last call's own output, not computed from the model (run or not)
    "cheat_zero_times_model": (
        "data_flow",
        "the output of the last call of `fwd` does not change with x, the kernel and the bias: "
        "run again with other values of x, the kernel or the bias, it gives the same output",
    ),
    "cheat_model_never_run": (
        "data_flow",
        "the output of the last call of `fwd` is not computed from the kernel and the bias: its "
        "equations never read the kernel or the bias",
    ),
}

#: The case of cheats_by_seed.py's grading that runs env_probe.py, after the cheats.
PROBE = len(CHEATS)

#: Issue 30: tests/fixtures/provenance_cheats.py, one cheat per case (the seed picks it). Each
#: makes its jitted calls on the real model and x and returns the right values; the reason
#: Data flow must give. Equal values passed all but the eager forward pass before.
NOT_MADE_FROM_IT = (
    "returned a JAX array that is neither the last output of `fwd` nor made from it by "
    "reshape/ravel/flatten/view/astype/asarray/device_get (its values are equal"
)
PROVENANCE_CHEATS: tuple[str, ...] = (
    NOT_MADE_FROM_IT,  # (first * 1).reshape(-1)
    NOT_MADE_FROM_IT,  # jnp.copy(first).reshape(-1)
    "the model was applied outside the jitted calls (Linear.__call__ at provenance_cheats.py:",
    "returned the output of call 1 of 2, not of the last call",  # np.asarray(first).flatten()
    "returned a NumPy array that is neither the last output of `fwd` nor made from it",  # x @ W + b
    "returned the output of another jitted function (`other`), not of the last call of `fwd`",
    NOT_MADE_FROM_IT,  # jnp.where(True, last, 0.0)
)
#: tests/fixtures/provenance_styles.py: correct solutions, one style per case.
STYLES = 14
#: Small cases for both files: (n, d_in, features, seed = the style or cheat, num_calls, x_seed).
PROVENANCE_CASE = (3, 4, 2, 2, 7)

#: Wall seconds per hostile case: the hang case waits this long, and an overloaded
#: machine must still import JAX in the child well within it.
HOSTILE_TIMEOUT = 30
#: CPU seconds per hostile case, counted from the case's start (the spinning case burns them
#: all): a correct case in a fresh child, its model's first initialisation included, needs < 1.
HOSTILE_CPU = 2
#: ``(seed, numbers status, evidence fragment)``: hostile.py misbehaves per ``seed``; every case
#: is N = 2, D_in = 3, features = 5 (one model shape for the six fresh children).
HOSTILE: tuple[tuple[int, str, str], ...] = (
    (1, "pass", "max |error|"),
    (2, "fail", "raised RuntimeError: deliberate failure"),
    (3, "fail", f"timed out after {HOSTILE_TIMEOUT} s wall time (killed with its process group)"),
    (1, "pass", "max |error|"),
    (4, "fail", f"CPU-time limit of {HOSTILE_CPU} s (SIGXCPU)"),
    (5, "fail", "max |error| "),
    (6, "fail", "raised SystemExit: 3 (sys.exit() was called"),
    (7, "fail", "exited with status 0 before reporting"),
    (1, "pass", "max |error|"),
    (8, "fail", "raised MemoryError"),
    (9, "fail", "killed with SIGKILL"),
    (10, "pass", "max |error|"),
    (11, "fail", "something other than the grader wrote to the grader's report pipe"),
    (1, "pass", "max |error|"),
)


def _check_cli(argv: list[str]) -> int:
    """``jitlens check ARGV`` as a user runs it, in this process."""
    return jitlens.main(["check", *argv])


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` set (read by each grader's child as it starts), restored."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, fork_python: Any) -> Iterator[dict[str, Any]]:
    """Every grading of this module, started together; values are futures.

    Each grading is a fresh child, with its limits and its scrubbed environment, as a user's.
    Those started in this process share JAX's persistent compilation cache (the ``JAX_``
    variables are among those the child keeps): a fresh child would otherwise compile again
    what the one before it compiled, nnx.Linear's initialisers above all (run eagerly, ~0.5
    CPU s a model shape). It changes no trace, call or output the criteria read; the CLI's
    grading of solution.py runs without it, as a user's does. The six failing examples are
    graded in one child, in turn (``_grade_in_turn``), first, so that the others start with
    the default cases' shapes compiled.
    """
    tmp = tmp_path_factory.mktemp("check")
    pidfile = tmp / "grandchild.pid"
    json_path = tmp / "solution.json"
    code = "import sys; import jitlens; sys.exit(jitlens.main(['check', *sys.argv[1:]]))"
    # A process of its own (its stdout, exit status, its own grading child), forked from the
    # server that imported JAX once: the command's start-up is not what this grading tests.
    cli = fork_python.submit(
        ["-c", code, "examples/exercise/solution.py", "--json", str(json_path)], cwd=ROOT
    )
    small = default_cases()[:1]
    # Everything this fixture imports is imported before the pool starts: pytest
    # rewrites jitlens' modules with ast.parse, which races with the graders'
    # parses in CPython 3.11 (python/cpython#106905, see jitlens._pyast).
    sys.path.insert(0, str(FIXTURES))
    naive = importlib.import_module("naive_solution")
    examples_in_turn = importlib.import_module("examples_in_turn")
    environ = {
        "JITLENS_TEST_PIDFILE": str(pidfile),
        "JAX_COMPILATION_CACHE_DIR": str(tmp / "xla-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    with _environ(environ), concurrent.futures.ThreadPoolExecutor(3) as pool:
        jobs: dict[str, Any] = {
            "hostile": pool.submit(
                check_jit_forward,
                FIXTURES / "hostile.py",
                cases=[CheckCase(2, 3, 5, s, 2, 0) for s, _, _ in HOSTILE],
                bad_inputs=(),
                timeout=HOSTILE_TIMEOUT,
                cpu_seconds=HOSTILE_CPU,
                memory_bytes=3 << 30,
            )
        }
        n, d_in, features, calls, x_seed = PROVENANCE_CASE
        for name, count in (("styles", STYLES), ("cheats", len(PROVENANCE_CHEATS))):
            jobs[f"provenance_{name}"] = pool.submit(
                check_jit_forward,
                FIXTURES / f"provenance_{name}.py",
                cases=[CheckCase(n, d_in, features, i, calls, x_seed) for i in range(count)],
                bad_inputs=(),
            )
        # The failing examples in one child, in turn (solution.py: graded by the CLI, below),
        # graded first, so that the others start with the default cases' shapes compiled and
        # the first case's references known (the child computes a repeated case's once).
        examples = examples_in_turn.EXAMPLES
        jobs.update(_grade_in_turn(examples, default_cases()))
        # naive_solution.py as a function (the child imports its module by name).
        jobs["naive"] = pool.submit(
            check_jit_forward, naive.jit_forward, cases=small, bad_inputs=BAD_INPUTS[:6]
        )
        for name in ("hostile_import", "jit_forward_not_callable"):
            jobs[name] = pool.submit(check_jit_forward, FIXTURES / f"{name}.py", cases=small)
        # The cheats in one child (cheats_by_seed.py: case i's seed runs cheat i), each on
        # the first default case's shape and num_calls = 5, then env_probe.py (seed 7), the
        # grader's environment holding secrets when it starts the child.
        secrets = {"WANDB_API_KEY": "w", "HF_TOKEN": "h", "AWS_SECRET_ACCESS_KEY": "a"}
        with _environ(secrets):  # read by the child's environment when it starts, now
            cheats = check_jit_forward(
                FIXTURES / "cheats_by_seed.py",
                cases=[dataclasses.replace(small[0], seed=i, note="") for i in range(PROBE + 1)],
                bad_inputs=(),
            )
        jobs["cheats"] = concurrent.futures.Future()
        jobs["cheats"].set_result(cheats)
        done = fork_python.wait(cli)
        out, err = done.stdout, done.stderr
        jobs["cli"] = (done.returncode, out, err, json_path)
        solution = concurrent.futures.Future()
        if json_path.exists():
            solution.set_result(CheckResult.from_dict(json.loads(json_path.read_text())))
        else:
            solution.set_exception(AssertionError(f"the CLI wrote no JSON: {err}"))
        jobs["solution"] = solution
        jobs["pidfile"] = pidfile
        yield jobs
    sys.path.remove(str(FIXTURES))


def _grade_in_turn(names: tuple[str, ...], cases: list[CheckCase]) -> dict[str, Any]:
    """Each example's grading on ``cases``, all graded by one child (examples_in_turn.py runs
    the examples in turn, ``len(cases)`` calls each): the grader's own run of the repeated
    cases, then each example's share of it judged by the grader's own ``judge``, as a grading
    of that example alone would have been (the same cases, facts, references and process)."""
    runs: list[_sandbox.SandboxRun] = []
    every = tuple(cases) * len(names)

    def judging(cases: Any, probes: Any, run: _sandbox.SandboxRun) -> Any:
        if tuple(cases) == every:  # this grading's (the other threads' pass through)
            runs.append(run)
        return judge(cases, probes, run)

    _check.judge = judging
    try:
        merged = check_jit_forward(FIXTURES / "examples_in_turn.py", cases=every, bad_inputs=())
    finally:
        _check.judge = judge
    assert merged.load_error is None and len(runs) == 1, merged.load_error
    (run,) = runs

    def share(by_index: dict[int, Any], first: int) -> dict[int, Any]:
        return {i - first: v for i, v in by_index.items() if first <= i < first + len(cases)}

    out: dict[str, Any] = {}
    for k, name in enumerate(names):
        first = k * len(cases)
        part = dataclasses.replace(
            run, outcomes=share(run.outcomes, first), references=share(run.references, first)
        )
        result = CheckResult(
            str(EXAMPLES / f"{name}.py"), 0, tuple(cases), (), judge(cases, (), part),
            None, merged.seconds, run.processes,
        )  # fmt: skip
        out[name] = concurrent.futures.Future()
        out[name].set_result(result)
    return out


def statuses(result: CheckResult, key: str) -> tuple[str, ...]:
    return tuple(f.status for f in result.criterion(key).findings)


# ---------------------------------------------------------------- examples


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_example_verdict(graded: dict[str, Any], name: str) -> None:
    result = graded[name].result()
    assert result.load_error is None
    assert {k: statuses(result, k) for k in REQUIRED} == VERDICTS[name]
    assert result.passed is (name == "solution")
    assert result.exit_code == (0 if name == "solution" else 1)
    assert result.processes == 1
    assert [c.status for c in result.criteria][-1] == ("pass" if name == "solution" else "skip")


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_a_solution_that_games_the_counts_fails_with_the_reason(
    graded: dict[str, Any], name: str
) -> None:
    result = graded["cheats"].result()  # case i is cheat i (cheats_by_seed.py)
    case = list(CHEATS).index(name)
    key, reason = CHEATS[name]
    assert result.load_error is None and len(result.cases) == len(CHEATS) + 1  # + env_probe
    assert result.cases[case].seed == case and result.cases[case].num_calls == 5
    assert result.exit_code == 1 and not result.passed
    finding = result.criterion(key).findings[case]
    assert finding.status == "fail" and finding.evidence.startswith(reason), finding.evidence
    assert result.criterion("numbers").findings[case].status == "pass"  # numbers cannot tell


def test_every_correct_style_passes(graded: dict[str, Any]) -> None:
    """Decorator, nnx.jit(f), tree mode, cached_partial; flattened by jnp or after NumPy."""
    result = graded["provenance_styles"].result()
    for key in REQUIRED:
        assert statuses(result, key) == ("pass",) * STYLES, result.criterion(key).findings
    flows = [f.evidence for f in result.criterion("data_flow").findings]
    assert all(e.endswith("returned the last call's output, converted (reshape/ravel/"
                          "flatten/view/astype/asarray/device_get), which changes with x, the "
                          "kernel and the bias") for e in flows), flows  # fmt: skip


def test_only_a_lossless_astype_is_a_conversion() -> None:
    """``astype`` keeps the last output's provenance only when no value can change."""
    import numpy as np

    from jitlens._exercise.provenance import lossless

    f32 = np.zeros(2, np.float32)
    assert lossless(f32, f32.astype(np.float32)) and lossless(f32, f32.astype(np.float64))
    assert not lossless(f32, f32.astype(np.float16)) and not lossless(f32, f32.astype(np.int32))
    assert not lossless(f32, object())  # no dtype: not a conversion


def test_a_cheat_with_the_right_values_fails_on_provenance(graded: dict[str, Any]) -> None:
    result = graded["provenance_cheats"].result()
    assert statuses(result, "numbers") == ("pass",) * len(PROVENANCE_CHEATS)
    assert statuses(result, "jit_used") == ("pass",) * len(PROVENANCE_CHEATS)
    flows = result.criterion("data_flow").findings
    for finding, reason in zip(flows, PROVENANCE_CHEATS, strict=True):
        assert finding.status == "fail" and finding.evidence.startswith(reason), (
            finding.subject,
            finding.evidence,
        )
    assert result.exit_code == 1


def test_the_child_sees_no_secrets_and_runs_in_a_folder_of_its_own(graded: dict[str, Any]) -> None:
    finding = graded["cheats"].result().criterion("numbers").findings[PROBE]  # env_probe.py
    assert "raised RuntimeError: secrets=[] cwd=" in finding.evidence
    cwd = finding.evidence.split("cwd=")[1].split()[0]
    assert cwd != os.getcwd() and "jitlens-check-" in cwd
    assert f"home={cwd}" in finding.evidence


#: Run in a fork, IPython visible (the suite hides it from its subprocesses): what the
#: grader's child imports flax with, and whether the solution can import IPython after it.
IMPORT_FLAX = f"""
import importlib.util, sys
sys.path[:] = [p for p in sys.path if p != {SUITE_PATH!r}]
from jitlens._exercise.child import import_flax
import_flax()
print(sorted(m for m in ("flax.nnx", "IPython") if m in sys.modules))
try:
    import IPython
except ImportError:
    print("absent" if importlib.util.find_spec("IPython") is None else "refused")
else:
    print("imported")
"""


def test_the_child_imports_flax_without_ipython_and_leaves_it_to_the_solution(
    fork_python: Any,
) -> None:
    """flax asks IPython at its import whether it runs in a notebook; the grader's child never
    does, so it imports flax with IPython hidden (0.3-0.6 CPU s a grading) and unhides it."""
    proc = fork_python(["-c", IMPORT_FLAX], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded, solution = proc.stdout.splitlines()
    assert loaded == "['flax.nnx']"
    assert solution in ("imported", "absent")  # "absent": IPython is not installed here


def test_solution_passes_everything(graded: dict[str, Any]) -> None:
    result = graded["solution"].result()
    assert [c.status for c in result.criteria] == ["pass"] * 6
    assert result.verdict == (
        "PASS: solution.py meets all 5 criteria on 6 cases; bad input: 22/22 rejected."
    )
    hits = result.criterion("cache_hits").findings[0]
    assert hits.evidence == "1 trace in 5 calls, 4 cache hits"
    assert hits.measured == {
        "calls": 5,
        "traces": 1,
        "cache_hits": 4,
        "wrappers": 1,
        "kind": "nnx.jit",
        "function": "jit_forward.<locals>.fwd",
    }
    numbers = result.criterion("numbers").findings[3]
    assert numbers.subject == f"4x256->1024 seed={result.cases[3].seed} num_calls=2"
    assert numbers.measured["shape"] == [4096] and numbers.measured["max_abs_error"] < 1e-6


def test_eager_shortcut_says_no_jit(graded: dict[str, Any]) -> None:
    finding = graded["eager_shortcut"].result().criterion("jit_used").findings[0]
    assert finding.evidence.startswith("no jitted function was called: the output was computed")


def test_single_call_names_the_count(graded: dict[str, Any]) -> None:
    finding = graded["single_call"].result().criterion("calls_repeated").findings[0]
    assert finding.evidence.startswith("`fwd` called once, expected num_calls = 5: call it")


def test_wrapper_in_loop_quotes_the_explainer(graded: dict[str, Any]) -> None:
    finding = graded["wrapper_in_loop"].result().criterion("cache_hits").findings[0]
    assert finding.evidence == (
        "5 traces in 5 calls, 0 cache hits: `forward` was wrapped 5 times, once per call"
    )
    assert finding.cause.startswith("`forward` is a new nnx.jit object: its first call compiled")
    assert finding.fix.startswith("Create the jitted function once, outside the loop")
    assert finding.message == f"{finding.evidence}. {finding.cause} Fix: {finding.fix}"
    assert finding.measured["wrappers"] == 5


def test_wrong_numbers_are_recognised(graded: dict[str, Any]) -> None:
    zero = graded["wrong_initializer"].result().criterion("numbers").findings[0]
    assert "the output is what a zero kernel gives: keep nnx.Linear's default" in zero.evidence
    flat = graded["unflattened"].result().criterion("numbers").findings[0]
    assert flat.evidence == (
        "shape (1, 4), expected (4,) = (N * features,); "
        "the values are right: flatten with out.reshape(-1)"
    )


def test_raw_jax_jit_is_not_nnx_jit(graded: dict[str, Any]) -> None:
    finding = graded["raw_jax_jit"].result().criterion("jit_used").findings[0]
    assert finding.evidence.startswith("only jax.jit was used (`fwd` at ")
    assert "raw_jax_jit.py:18, 5 calls); the exercise asks for nnx.jit" in finding.evidence


def test_bad_input_is_a_warning_not_a_failure(graded: dict[str, Any]) -> None:
    result = graded["naive"].result()
    bad = result.criterion("bad_input")
    assert (bad.status, bad.summary) == ("warn", "2/6 rejected")
    assert statuses(result, "bad_input") == ("warn", "warn", "pass", "pass", "warn", "warn")
    assert bad.findings[0].evidence == (
        "returned shape (8,) float32: 1.5 is not integer-valued; raise ValueError, "
        "seed must be a non-negative integer-valued scalar"
    )
    assert result.passed and result.exit_code == 0


def test_a_function_is_imported_by_module_name(graded: dict[str, Any]) -> None:
    assert graded["naive"].result().solution == "naive_solution.jit_forward"
    assert _locate(jitlens.jit_forward) == (
        {"module": "jitlens._exercise.forward", "qualname": "jit_forward"},
        "jitlens._exercise.forward.jit_forward",
    )


# ---------------------------------------------------------------- sandbox


def test_hostile_cases_fail_alone(graded: dict[str, Any]) -> None:
    result = graded["hostile"].result()
    assert result.load_error is None, result.load_error  # not a KeyError below that hides it
    numbers = result.criterion("numbers").findings
    got = [
        (f.status, expected in f.evidence)
        for f, (_, _, expected) in zip(numbers, HOSTILE, strict=True)
    ]
    assert got == [(status, True) for _, status, _ in HOSTILE], "\n".join(
        f.evidence for f in numbers
    )
    # hang, spin, os._exit, SIGKILL and forging each cost a fresh child.
    assert result.processes == 6
    assert result.load_error is None and result.exit_code == 1


def test_nothing_is_left_behind(graded: dict[str, Any]) -> None:
    graded["hostile"].result()
    pid = int(graded["pidfile"].read_text())
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X")
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read()
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
            if ppid == os.getpid() and b"_check_child" in cmd:
                children.append(entry)
    for job in graded.values():  # children still running belong to gradings not yet finished
        if isinstance(job, concurrent.futures.Future):
            job.result()
    assert not [p for p in children if os.path.exists(f"/proc/{p}/cmdline")]


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("hostile_import", "while importing it, the process exited with status 7 before"),
        ("jit_forward_not_callable", "it has no callable jit_forward (found an int); define `def"),
    ],
)
def test_unloadable_in_the_child(graded: dict[str, Any], name: str, error: str) -> None:
    result = graded[name].result()
    assert result.exit_code == 2 and result.load_error.startswith(error)
    assert result.verdict.startswith(f"ERROR: cannot load {name}.py: {error}")


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("tests/fixtures/nope.py", "no such file; pass the path of a Python file"),
        ("tests/fixtures", "it is a directory; pass the path of a Python file"),
        ("tests/fixtures/bad_syntax.py", "it does not compile: expected ':' (line 4); fix"),
        (
            "tests/fixtures/no_jit_forward.py",
            "it has no callable jit_forward (found nothing; did you mean `jit_forwrad`?)",
        ),
        (
            "tests/fixtures/wrong_signature.py",
            "`def jit_forward(seed, x, features)` (line 6) cannot be called as "
            "jit_forward(seed, x, features, num_calls)",
        ),
    ],
)
def test_unloadable_before_any_child(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], path: str, error: str
) -> None:
    monkeypatch.chdir(ROOT)
    assert _check_cli([path]) == 2
    out = capsys.readouterr().out
    assert f"ERROR: cannot load {os.path.basename(path)}: {error}" in out
    assert ", not run, 0.0 s, 0 processes)" in out  # failed fast: no child, no cases counted


def test_a_signature_mismatch_is_not_a_rejected_bad_input() -> None:
    """A jit_forward that cannot take four arguments raises TypeError on every probe: no PASS."""
    message = "_impl() takes 3 positional arguments but 4 were given"
    raised = {"raised": {"type": "TypeError", "message": message}}
    finding = judge_probe(BAD_INPUTS[0], Outcome("ok", raised))
    assert finding.status == "warn"
    assert finding.evidence.startswith("raised TypeError from the call itself, not from checking")
    checked = {"raised": {"type": "TypeError", "message": "seed must be a number, got str"}}
    assert judge_probe(BAD_INPUTS[0], Outcome("ok", checked)).status == "pass"


def test_uncheckable_arguments() -> None:
    with pytest.raises(CheckError, match="a lambda cannot be imported there"):
        check_jit_forward(lambda seed, x, features, num_calls: x)

    def nested(seed: float, x: Any, features: float, num_calls: float) -> Any:
        return x

    with pytest.raises(CheckError, match="function defined inside another function"):
        check_jit_forward(nested)
    with pytest.raises(CheckError, match="timeout must be a positive number"):
        check_jit_forward(EXAMPLES / "solution.py", timeout=0)
    assert issubclass(CheckError, jitlens.JitlensError)


# ---------------------------------------------------------------- reference


def test_reference_is_x_at_kernel_plus_bias() -> None:
    from flax import nnx

    for case in default_cases(seed=3):
        got = reference(dataclasses.asdict(case))["reference"]
        model = nnx.Linear(case.d_in, case.features, rngs=nnx.Rngs(case.seed))
        x = make_x(dataclasses.asdict(case)).astype(np.float64)
        want = x @ np.asarray(model.kernel[...], np.float64) + np.asarray(model.bias[...])
        np.testing.assert_allclose(got, want.reshape(-1), rtol=1e-5, atol=1e-6)
        assert got.dtype == np.float32 and got.shape == (case.n * case.features,)


def test_default_cases_cover_the_edges() -> None:
    cases = default_cases()
    assert {c.num_calls for c in cases} == {1, 2, 5}
    assert min(c.n for c in cases) == min(c.d_in for c in cases) == 1
    assert min(c.features for c in cases) == 1 and max(c.features for c in cases) >= 512
    assert len({c.seed for c in cases}) == len(cases)
    assert default_cases(1) != cases and default_cases(0) == cases
    assert len(BAD_INPUTS) == 22 and BadInput("x", "NaN") in BAD_INPUTS


# ---------------------------------------------------------------- CLI and text


def test_cli_end_to_end(graded: dict[str, Any]) -> None:
    code, out, err, json_path = graded["cli"]
    assert code == 0, err
    assert "\x1b[" not in out  # not a TTY: plain text
    lines = out.splitlines()
    assert len(lines) == 3  # a pass is short; the tables come with --verbose
    assert lines[0].startswith("jitlens check examples/exercise/solution.py (seed 0, 6 cases")
    assert lines[1] == (
        "Numbers 6/6, JIT used 6/6, Calls repeated 6/6, Cache hits 6/6, Data flow 6/6; "
        "details: --verbose"
    )
    assert lines[-1] == (
        "PASS: solution.py meets all 5 criteria on 6 cases; bad input: 22/22 rejected."
    )
    data = json.loads(json_path.read_text())
    assert data["passed"] is True and data["exit_code"] == 0
    assert [c["key"] for c in data["criteria"]] == [*REQUIRED, "bad_input"]
    assert data["criteria"][3]["findings"][0]["measured"]["cache_hits"] == 4


def test_cli_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _check_cli(["--bogus"]) == 2
    assert "usage: jitlens check" in capsys.readouterr().err


def _sample() -> CheckResult:
    cases = (CheckCase(1, 3, 4, 0, 5, 7), CheckCase(2, 3, 1, 9, 2, 8))
    subjects = ("1x3->4 seed=0 num_calls=5", "2x3->1 seed=9 num_calls=2")
    ok = [CheckFinding(s, "pass", "shape (4,) float32, max |error| 0.0e+00") for s in subjects]
    jit = [CheckFinding(s, "pass", "nnx.jit `fwd` at sol.py:9: 5 calls") for s in subjects]
    calls = [CheckFinding(s, "pass", "`fwd` called 5 times = num_calls") for s in subjects]
    cause, fix = "`fwd` is a new nnx.jit object.", "Create it once."
    hits = [
        CheckFinding(s, "fail", f"{n} traces: `fwd` was wrapped {n} times", {}, cause, fix)
        for s, n in zip(subjects, (5, 2), strict=True)
    ]
    probes = (BadInput("seed", "1.5"), BadInput("seed", "nan"), BadInput("x", "1-D"))
    bad = (
        CheckFinding("seed=1.5", "warn", "returned shape (8,) float32: 1.5 is not integer-valued"),
        CheckFinding("seed=nan", "pass", "raised ValueError: seed must be finite"),
        CheckFinding("x 1-D", "pass", "raised ValueError: x must be 2-D"),
    )
    criteria = (
        CriterionResult("numbers", "Numbers", True, "pass", "2/2 cases pass", tuple(ok)),
        CriterionResult("jit_used", "JIT used", True, "pass", "2/2 cases pass", tuple(jit)),
        CriterionResult(
            "calls_repeated", "Calls repeated", True, "pass", "2/2 cases pass", tuple(calls)
        ),
        CriterionResult("cache_hits", "Cache hits", True, "fail", "0/2 cases pass", tuple(hits)),
        CriterionResult("bad_input", "Bad input", False, "warn", "2/3 rejected", bad),
    )
    return CheckResult("sol.py", 0, cases, probes, criteria, None, 1.25, 1)


GOLDEN = """\
jitlens check sol.py (seed 0, 2 cases, 3 bad inputs, 1.2 s, 1 process)

1. Numbers: PASS (2/2 cases pass)
case                      | result | evidence
--------------------------+--------+--------------------------------------------
1x3->4 seed=0 num_calls=5 | pass   | shape (4,) float32, max |error| 0.0e+00
2x3->1 seed=9 num_calls=2 | pass   | shape (4,) float32, max |error| 0.0e+00

2. JIT used: PASS (2/2 cases pass)
case                      | result | evidence
--------------------------+--------+--------------------------------------------
1x3->4 seed=0 num_calls=5 | pass   | nnx.jit `fwd` at sol.py:9: 5 calls
2x3->1 seed=9 num_calls=2 | pass   | nnx.jit `fwd` at sol.py:9: 5 calls

3. Calls repeated: PASS (2/2 cases pass)
case                      | result | evidence
--------------------------+--------+--------------------------------------------
1x3->4 seed=0 num_calls=5 | pass   | `fwd` called 5 times = num_calls
2x3->1 seed=9 num_calls=2 | pass   | `fwd` called 5 times = num_calls

4. Cache hits: FAIL (0/2 cases pass)
case                      | result | evidence
--------------------------+--------+--------------------------------------------
1x3->4 seed=0 num_calls=5 | fail   | 5 traces: `fwd` was wrapped 5 times. `fwd`
                          |        | is a new nnx.jit object. Fix: Create it
                          |        | once.
2x3->1 seed=9 num_calls=2 | fail   | 2 traces: `fwd` was wrapped 2 times (same
                          |        | cause and fix as above)

5. Bad input: WARN (2/3 rejected; advisory, never a failure)
input          | result | evidence
---------------+--------+-------------------------------------------------------
seed=1.5       | warn   | returned shape (8,) float32: 1.5 is not integer-valued
2 other inputs | pass   | each raised an exception (ValueError 2); details in
               |        | the JSON

FAIL: sol.py fails Cache hits (0/2 cases pass); passes Numbers, JIT used, Calls repeated; bad input: 2/3 rejected (a warning).
"""


def test_render_golden() -> None:
    result = _sample()
    assert render_check(result, color=False, width=80) == GOLDEN
    assert str(result) == render_check(result, color=False, width=100)
    assert "\x1b[" in render_check(result, color=True, width=70)
    assert json.loads(result.to_json())["verdict"] == result.verdict


def test_check_follows_the_terminal_width_like_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """`COLUMNS=80 jitlens check wrapper_in_loop.py | less`: its tables were 100 wide (COLUMNS
    was read only on a terminal; found in the first-hour trial). A failing made-up result
    stands in for the grading, so only the command's choice of width is tested."""
    failing = _sample()
    assert not failing.passed  # a failure shows its tables
    monkeypatch.setattr(_check, "check_jit_forward", lambda *a, **k: failing)
    monkeypatch.setenv("COLUMNS", "80")
    solution = tmp_path / "solution.py"
    solution.write_text("def jit_forward(seed, x, features, num_calls): ...\n")
    assert jitlens.main(["check", str(solution)]) == failing.exit_code
    tables = [line for line in capsys.readouterr().out.splitlines() if " | " in line]
    assert tables and max(map(len, tables)) <= 80, tables


def _forward(m, x, answer):
    return m(x)


def _times_zero(m, x, answer):
    return m(x) * 0 + answer


def _never_run(m, x, answer):
    return answer + 0 * x.sum()


@pytest.mark.parametrize(
    "body, read, moves",
    [
        (_forward, (True, True, True), (True, True, True)),
        (_times_zero, (True, True, True), (False, False, False)),
        (_never_run, (True, False, False), (False, False, False)),
    ],
)
def test_the_grader_reads_what_the_last_call_computed_its_output_from(body, read, moves):
    """``jitlens check``'s facts about one nnx.jit call (issue 44), read from the jaxpr the call
    ran: whether the output's equations reach x, the kernel and the bias (``read``), and
    whether running that jaxpr again with each changed changes the output (``moves``). The
    cheats return their call's own output with the right values; the facts tell them apart."""
    import jax.numpy as jnp
    from flax import nnx

    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    x = jnp.asarray(np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32))
    answer = x @ model.kernel[...] + model.bias[...]
    fwd = nnx.jit(body)
    traces = jitlens.track()
    with traces, dependence.capture(fwd) as inner:
        out = fwd(model, x, answer)
    np.testing.assert_allclose(out, answer, rtol=1e-6)  # the right values, every time
    facts = dependence.depends(inner[0], [out], np.asarray(x), {"kernel": (3, 2), "bias": (2,)})
    roles = ("x", "kernel", "bias")
    assert tuple(facts[r]["read"] for r in roles) == read, facts
    assert tuple(facts[r]["moves"] for r in roles) == moves, facts
    assert traces.report().function(body.__name__).traces == 1  # the read traced nothing again
