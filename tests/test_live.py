"""Issue 24: retraces seen as they happen, the fail-fast stance, the runaway warning,
the user's own profile, structured log records."""

from __future__ import annotations

import glob
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

# one worker runs the module: its fixture's subprocess runs once
pytestmark = pytest.mark.xdist_group("live")

# Retraces 6 times (x changes shape every call); the program keeps its own
# counter inside the jitted body (the truth), takes its own jax.profiler trace
# and forwards jitlens' log records through its own handler.
LIVE_PROGRAM = """
import json, logging, sys
import jax, jax.numpy as jnp

EVENTS = []

class Forward(logging.Handler):
    def emit(self, record):
        EVENTS.append(record.jitlens)

handler = Forward(level=logging.DEBUG)
logging.getLogger("jitlens").addHandler(handler)

T = [0]

@jax.jit
def step(x):
    T[0] += 1
    return x * 2

with jax.profiler.trace(sys.argv[1]):
    for n in range(1, 8):
        step(jnp.ones(n)).block_until_ready()
        print(f"after call {n}", flush=True)
logging.getLogger("jitlens").setLevel(logging.DEBUG)  # the folded retraces too, from here
step(jnp.ones(9))
print("TRACES", T[0], flush=True)
print("EVENTS", json.dumps(EVENTS), flush=True)

def with_callback(x):
    jax.debug.callback(lambda v: None, x)
    return x + 1

def plain(x):
    return x + 1

slow, fast = jax.jit(with_callback), jax.jit(plain)
for _ in range(150):
    slow(jnp.ones(2))
    fast(jnp.ones(2))
jax.effects_barrier()
"""


def _merged(args, cwd, env=None, timeout=240):
    """Run ``python ARGS`` with stderr and stdout in one pipe, in the order they were written."""
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("live")
    (d / "prog.py").write_text(textwrap.dedent(LIVE_PROGRAM))
    proc = _merged(
        ["-m", "jitlens", "run", "--json", "r.json", "prog.py", str(d / "profile")],
        cwd=d,
        env={"JITLENS_WARN_RECOMPILES": "7", "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stdout
    return d, proc.stdout


def test_each_retrace_is_explained_before_the_programs_next_line(live_run):
    _d, out = live_run
    assert "TRACES 8" in out
    # retrace #1 happens in call 2: its explanation comes before "after call 2"
    first = out.index("step (jax.jit)")
    assert out.index("after call 1") < first < out.index("after call 2")
    assert "x  shape" in out[first : out.index("after call 2")]
    assert "f32[1] -> f32[2]" in out[first : out.index("after call 2")]
    summary = out.index("jitlens: 3 jitted functions")
    assert summary > out.index("EVENTS")  # the summary at exit stays
    # COLUMNS=80 (a terminal's width): the explanation wraps there; it ran to ~250 before
    block = out[first - len("jitlens: ") : out.index("after call 2")].splitlines()
    assert len(block) > 3 and max(map(len, block)) <= 80, block


def test_a_runaway_function_is_folded_not_flooding_the_log(live_run):
    _d, out = live_run
    live = out[: out.index("jitlens: 3 jitted functions")]
    assert live.count("step (jax.jit)") == 3  # the first three in full
    assert live.count("jitlens: `step` retrace #4") == 1
    assert "further retraces of `step` are folded" in live
    for folded in ("#5", "#6"):
        assert f"`step` retrace {folded}" not in live  # DEBUG: not on stderr at INFO


def test_the_runaway_warning_fires_once_with_the_folded_reason(live_run):
    _d, out = live_run
    assert out.count("RunawayRecompileWarning") == 1
    warning = out[out.index("RunawayRecompileWarning") - 400 :]
    assert "`step` (jax.jit" in warning
    assert "recompiled 7 times (JITLENS_WARN_RECOMPILES=7): x shape in 7 of them" in warning
    assert "fix: Keep shapes fixed" in warning


def test_the_programs_own_profile_holds_each_retrace_with_its_reason(live_run):
    d, _out = live_run
    (pb,) = glob.glob(str(d / "profile" / "**" / "*.xplane.pb"), recursive=True)
    assert b"jitlens: retrace step (x shape)" in open(pb, "rb").read()
    (tj,) = glob.glob(str(d / "profile" / "**" / "*.trace.json.gz"), recursive=True)
    events = json.loads(gzip.open(tj).read())["traceEvents"]
    marks = [e for e in events if e.get("name") == "jitlens: retrace step (x shape)"]
    assert len(marks) == 6  # retraces 1..6 happened inside the profiled block
    assert {m["args"]["change"] for m in marks} >= {"f32[1] -> f32[2]", "f32[6] -> f32[7]"}
    # the whole fix (a comma would end a TraceMe value: they become semicolons)
    assert all(m["args"]["fix"].endswith("so each compiles once.") for m in marks)
    assert all(m["dur"] > 0 for m in marks)  # spans the retrace: trace to compile end


def test_a_handler_receives_the_data_of_each_event(live_run):
    _d, out = live_run
    line = next(x for x in out.splitlines() if x.startswith("EVENTS "))
    events = json.loads(line[len("EVENTS ") :])
    retraces = [e for e in events if e["event"] == "retrace"]
    assert [e["retrace"] for e in retraces] == [1, 2, 3, 4, 7]  # #5, #6 at DEBUG, level was INFO
    first = retraces[0]
    assert first["function"] == "step" and first["jit_kind"] == "jax.jit"
    assert first["call_index"] == 1
    assert first["reasons"] == [
        {"kind": "shape", "argument": "x", "path": "x", "before": "f32[1]", "after": "f32[2]"}
    ]
    assert first["seconds"] > 0 and first["compile_seconds"] > 0
    # the runaway event goes to handlers at DEBUG (the warning is what stderr shows)
    (runaway,) = [e for e in events if e["event"] == "runaway"]
    assert runaway["function"] == "step" and runaway["compiles"] == 8


def test_a_host_callback_is_reported_as_missing_the_fast_path_and_a_plain_jit_is_not(live_run):
    d, _out = live_run
    functions = {f["name"]: f for f in json.loads((d / "r.json").read_text())["functions"]}
    slow, fast = functions["with_callback"], functions["plain"]
    assert (slow["cache_hits"], slow["python_dispatch_calls"]) == (149, 149)
    assert slow["python_dispatch_cause"] == "host_callback"
    assert [a["kind"] for a in slow["advice"]] == ["fast_path"]
    assert (fast["cache_hits"], fast["python_dispatch_calls"], fast["advice"]) == (149, 0, [])


FAIL_PROGRAM = """
import time
import jax, jax.numpy as jnp

@jax.jit
def step(x):
    return x + 1

start = time.time()
i = 0
while time.time() - start < 30:          # a 30 s job
    step(jnp.ones(3 if i < 5 else 4))    # the batch shape changes at call 6
    print("step", i, flush=True)
    i += 1
    time.sleep(0.05)
print("FINISHED")
"""


def test_fail_on_retrace_stops_a_long_job_with_the_cause_and_the_reports(tmp_path):
    (tmp_path / "job.py").write_text(textwrap.dedent(FAIL_PROGRAM))
    reports = ["--json", "r.json", "--html", "r.html", "--trace", "r.trace.json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitlens", "run", "--fail-on-retrace", *reports, "job.py"],
        cwd=tmp_path,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = proc.stdout.readline()  # the job's first step: imports (slow on a busy machine) done
    out, err = proc.communicate(timeout=240)
    assert first == "step 0\n", err
    assert proc.returncode == 1, err
    # stopped at call 6, the retrace, before its step printed (the job would run 30 s more)
    assert "FINISHED" not in out and out.splitlines()[-1] == "step 4", out[-300:]
    assert "jitlens.RecompileError: jitlens: `step` was traced again" in err
    assert "--fail-on-retrace" in err
    assert "x  shape" in err and "f32[3] -> f32[4]" in err and "fix: Keep shapes fixed" in err
    assert err.index("Traceback") < err.index("jitlens: wrote")  # python's traceback, then atexit
    data = json.loads((tmp_path / "r.json").read_text())
    (step,) = [f for f in data["functions"] if f["name"] == "step"]
    assert step["traces"] == 1  # the forbidden retrace was stopped before JAX traced
    assert (tmp_path / "r.html").stat().st_size > 0
    assert json.loads((tmp_path / "r.trace.json").read_text())


BUDGET_PROGRAM = """
import jax, jax.numpy as jnp

T = [0]

@jax.jit
def step(x):
    T[0] += 1
    return x + 1

for n in (1, 2, 3, 4):
    try:
        step(jnp.ones(n))
    except Exception as exc:  # a program that swallows everything
        print("caught", type(exc).__name__)
print("TRACES", T[0])
"""


def test_max_traces_is_a_program_wide_budget_and_swallowing_it_still_fails(tmp_path, capsys):
    import jitlens

    (tmp_path / "budget.py").write_text(textwrap.dedent(BUDGET_PROGRAM))
    code = jitlens.main(["run", "--max-traces", "2", str(tmp_path / "budget.py")])
    out, err = capsys.readouterr()
    assert "TRACES 2" in out  # calls 3 and 4 were stopped before JAX traced
    assert out.count("caught RecompileError") == 2
    assert code == 1
    assert "the program caught jitlens' RecompileError" in err


def test_bad_budget_is_refused_before_the_program_runs(tmp_path, capsys):
    import jitlens

    (tmp_path / "never.py").write_text("print('RAN')\n")
    assert jitlens.main(["run", "--max-traces", "0", str(tmp_path / "never.py")]) == 2
    out, err = capsys.readouterr()
    assert "expected an integer >= 1" in err and "RAN" not in out


def test_warn_recompiles_setting_is_validated(monkeypatch):
    import jitlens

    with jitlens.settings() as now:
        assert now["warn_recompiles"] == 8  # the default
    with jitlens.settings(warn_recompiles="off") as now:
        assert now["warn_recompiles"] == 0
    monkeypatch.setenv("JITLENS_WARN_RECOMPILES", "4")
    with jitlens.settings() as now:
        assert now["warn_recompiles"] == 4  # the environment over the default
    with jitlens.settings(warn_recompiles="3") as now:
        assert now["warn_recompiles"] == 3  # a scoped setting over the environment
        with jitlens.settings(warn_recompiles=5) as inner:
            assert inner["warn_recompiles"] == 5  # the innermost scope first
    with pytest.raises(jitlens.ConfigError, match="an integer >= 0, or off"):
        with jitlens.settings(warn_recompiles="-1"):
            pytest.fail("a bad value is refused on entry")


def test_a_bad_setting_stops_jitlens_run_before_the_program(tmp_path, capsys, monkeypatch):
    import jitlens

    (tmp_path / "never.py").write_text("print('RAN')\n")
    monkeypatch.setenv("JITLENS_WARN_RECOMPILES", "lots")
    assert jitlens.main(["run", str(tmp_path / "never.py")]) == 2
    out, err = capsys.readouterr()
    assert "RAN" not in out
    assert "JITLENS_WARN_RECOMPILES='lots' is not valid" in err


def test_the_runaway_warning_is_once_per_function_and_off_by_a_setting():
    import warnings

    import jax
    import jax.numpy as jnp

    import jitlens

    def run(setting):
        body = []

        def grow(x):
            body.append(1)
            return x + 1

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with jitlens.settings(warn_recompiles=setting), jitlens.track() as t:
                f = jax.jit(grow)
                for n in range(1, 6):
                    f(jnp.ones(n))
        assert len(body) == t.stats(f).traces == 5  # the truth: five runs of the body
        return [w for w in caught if issubclass(w.category, jitlens.RunawayRecompileWarning)]

    (once,) = run("2")  # recompiles 2, 3 and 4: one warning
    assert ".grow` (jax.jit" in str(once.message) and "recompiled 2 times" in str(once.message)
    assert once.filename == __file__  # at the user's call
    assert run("off") == []


# A keras model compiled again per learning rate (keras jits a new train step per compile),
# and a jax.jit of a new lambda per loop: wrappers of one code, folded into one row at exit.
# The program prints the number of the call each new wrapper's first call is (the truth).
WRAPPERS_PROGRAM = """
import os
os.environ["KERAS_BACKEND"] = "jax"
import jax, jax.numpy as jnp, keras, numpy as np

STEPS = [0]

class Count(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        STEPS[0] += 1

X, Y = np.ones((64, 3), "float32"), np.ones((64, 1), "float32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
for lr in (0.1, 0.01, 0.001):
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
    print("TRUTH keras", STEPS[0] + 1, flush=True)
    model.fit(X, Y, batch_size=32, epochs=1, verbose=0, shuffle=False, callbacks=[Count()])
CALLS = [0]
for _ in range(3):
    f = jax.jit(lambda x: x + 1)
    print("TRUTH lambda", CALLS[0] + 1, flush=True)
    for _ in range(2):
        CALLS[0] += 1
        f(jnp.ones(3))
"""


def test_a_new_wrapper_s_live_line_numbers_calls_as_the_summary_does(tmp_path):
    """Each new wrapper's retrace is call #3, #5 of the code (not #1 of the wrapper), live
    and at exit alike, and the retraces are numbered across the wrappers too."""
    if importlib.util.find_spec("keras") is None:  # not imported here: it would pick a backend
        pytest.skip("keras is not installed")
    prog = tmp_path / "wrappers.py"
    prog.write_text(WRAPPERS_PROGRAM)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "COLUMNS": "200", "JITLENS_COLOR": "never"}
    proc = subprocess.run(
        [sys.executable, "-m", "jitlens", "run", "--color", "never", str(prog)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth: dict[str, list[int]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("TRUTH "):
            _, name, number = line.split()
            truth.setdefault(name, []).append(int(number))
    assert truth == {"keras": [1, 3, 5], "lambda": [1, 3, 5]}, proc.stdout
    live, _, summary = proc.stderr.partition("jitted function")
    for name, title in (("keras", "keras: Sequential.fit train step"), ("lambda", "<lambda>")):
        heads = [line for line in live.splitlines() if line.startswith(f"jitlens: {title} (")]
        numbers = [
            (line.split("retrace #")[1].split(",")[0], line.rsplit("(call #", 1)[1].rstrip(")"))
            for line in heads
        ]
        assert numbers == [(str(k), str(n)) for k, n in enumerate(truth[name][1:], 1)], heads
        # the summary's folded row says the first retrace was the same call
        said = [line for line in summary.splitlines() if "retrace #1, " in line]
        assert any(line.endswith(f"(call #{truth[name][1]})") for line in said), summary


def test_threads_retracing_at_once_number_each_retrace_once_in_order():
    """Six threads retrace one function at once (a barrier lines them up): the live log
    numbers each retrace once, in the order its lines come out, the first three in full and
    the later ones folded, and its count equals the body's own. Before: numbers out of
    order, and a retrace numbered #4 both in full and folded."""
    import logging
    import threading

    import jax
    import jax.numpy as jnp

    import jitlens

    body, lines = [], []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append((record.jitlens["retrace"], record.getMessage()))

    def grow(x):
        body.append(1)
        return x * 2

    handler = Keep(level=logging.DEBUG)
    logger = logging.getLogger("jitlens")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with jitlens.track() as t:
            f = jax.jit(grow)
            f(jnp.ones(1))  # the first trace: not a retrace
            barrier = threading.Barrier(6)

            def call(n):
                barrier.wait()
                f(jnp.ones(n)).block_until_ready()

            threads = [threading.Thread(target=call, args=(n,)) for n in range(2, 8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    retraces = [(n, text) for n, text in lines if n is not None]
    assert len(body) == t.stats(f).traces == 7
    assert [n for n, _ in retraces] == [1, 2, 3, 4, 5, 6]
    for n, text in retraces:
        full = "grow (jax.jit)" in text
        assert full == (n <= 3), text
        # the number it prints is its own, once
        said = text.count(f"retrace #{n}")
        assert said == 1 and text.count("retrace #") == 1, text


def test_the_runaway_warning_counts_a_jit_rebuilt_every_iteration_across_its_wrappers():
    """``jax.jit(lambda ...)`` inside the loop (a new wrapper per epoch, a common bug) compiles
    the same code every iteration: the warning counts its compiles across the wrappers, as
    the summary folds them. Functions of their own code are counted apart. Before: each
    wrapper compiled once, so the warning never fired."""
    import warnings

    import jax
    import jax.numpy as jnp

    import jitlens

    body = []

    def epoch(i):
        step = jax.jit(lambda x: body.append(1) or x + i)  # rebuilt: the bug
        return step(jnp.ones(3))

    def one(x):
        body.append(1)
        return x + 1

    def two(x):
        body.append(1)
        return x - 1

    def three(x):
        body.append(1)
        return x * 2

    def four(x):
        body.append(1)
        return x / 2

    def runaway(loop):
        body.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with jitlens.settings(warn_recompiles="3"), jitlens.track() as t:
                loop()
        traces = sum(f.traces for f in t.report().functions)
        return (
            len(body),
            traces,
            [
                str(w.message)
                for w in caught
                if issubclass(w.category, jitlens.RunawayRecompileWarning)
            ],
        )

    n, traces, (warned,) = runaway(lambda: [epoch(i) for i in range(6)])
    assert n == traces == 6  # the truth: six runs of the body
    assert "<lambda>` (jax.jit" in warned, warned
    assert "recompiled 3 times (JITLENS_WARN_RECOMPILES=3): <lambda> new_function in 3" in warned
    assert "\n  fix: " in warned, warned  # the folded reason's own fix
    n, traces, none = runaway(
        lambda: [f(jnp.ones(3)) for f in map(jax.jit, (one, two, three, four))]
    )
    assert (n, traces, none) == (4, 4, [])


RECOMPILE_PROGRAM = """
import jax, jax.numpy as jnp

T = [0]


@jax.jit
def f(x):
    T[0] += 1
    return x * 2


x = jnp.ones(4)
f(x)
f(jax.device_put(x, jax.devices()[1]))  # committed to another device: a compile, no retrace
print("DONE", T[0], flush=True)
"""


@pytest.mark.parametrize(
    ("options", "status"),
    [
        (["--fail-on-recompile"], 1),
        (["--max-compiles", "1"], 1),
        # two compiles within the budget; no retrace: a trace budget lets it pass, as it should
        # (one run shows both: either budget stopping it would end it with status 1)
        (["--max-compiles", "2", "--fail-on-retrace"], 0),
    ],
)
def test_a_compile_budget_stops_a_recompile_without_a_retrace(tmp_path, options, status):
    (tmp_path / "prog.py").write_text(RECOMPILE_PROGRAM)
    # (the suite's XLA_FLAGS kept: its cheaper compiles)
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    env = {"XLA_FLAGS": flags.strip(), "COLUMNS": "100"}
    command = ["-m", "jitlens", "run", "--json", "r.json", *options, "prog.py"]
    proc = subprocess.run(
        [sys.executable, *command],
        cwd=tmp_path, env={**os.environ, "JAX_PLATFORMS": "cpu", **env},
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == status, proc.stderr
    (row,) = [f for f in json.loads((tmp_path / "r.json").read_text())["functions"]]
    assert row["traces"] == 1
    if status:
        assert "DONE" not in proc.stdout
        assert "jitlens.RecompileError" in proc.stderr and options[0] in proc.stderr
        assert row["compiles"] == 1 and len(row["stopped"]) == 1  # stopped before XLA ran
    else:
        assert proc.stdout == "DONE 1\n" and row["compiles"] == 2
