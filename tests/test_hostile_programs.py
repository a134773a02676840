"""Programs written to break jitlens, each compared with plain ``python`` as ground truth.

The program's stdout, its exit status and what it writes to its own files must
be what ``python`` gives; jitlens' counts must equal the counters in the jitted
bodies. Each JAX start-up costs seconds, so one program holds several hostile
moves and runs once per mode (this round's program read from stdin, which closes
every descriptor and reopens its own files, is now part of test_hostile_programs3's
program, with its tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import jitlens
from conftest import run_python

pytestmark = pytest.mark.xdist_group("hostile_programs")


@pytest.mark.slow
def test_python_dash_c_runs_under_jitlens_run_as_under_python(tmp_path, fork_python):
    code = "import sys, jax; print(sys.argv, repr(sys.path[0])); jax.jit(abs)(-1); sys.exit(4)"
    plain = fork_python(["-c", code, "a", "-b"], cwd=tmp_path)  # python's answer: no start-up read
    tracked = run_python(["-m", "jitlens", "run", "--quiet", "-c", code, "a", "-b"], cwd=tmp_path)
    assert plain.returncode == tracked.returncode == 4, tracked.stderr
    assert plain.stdout == tracked.stdout == "['-c', 'a', '-b'] ''\n"
    assert tracked.stderr == plain.stderr


def test_dash_c_without_its_command_is_a_usage_error(capsys):
    assert jitlens.main(["run", "-c"]) == 2
    assert "argument -c: expected one argument" in capsys.readouterr().err


def test_a_budget_on_something_not_callable_is_refused_at_once():
    """As ``jax.jit(3)``: a guard of ``3`` used to be made, and failed at its first call."""
    for make in (lambda: jitlens.max_traces(3, 1), lambda: jitlens.max_traces(1)("x")):
        with pytest.raises(TypeError, match="max_traces: expected a callable value"):
            make()


def test_every_x_option_of_the_interpreter_reaches_the_program(tmp_path):
    """``python -X warn_default_encoding -m jitlens run prog.py``: subprocess' list of the
    interpreter's flags leaves out warn_default_encoding, pycache_prefix, no_debug_ranges,
    int_max_str_digits... and the program lost its EncodingWarnings."""
    (tmp_path / "xo.py").write_text("import sys; print(sorted(sys._xoptions.items()), sys.flags)")
    flags = ["-X", "warn_default_encoding", "-X", "pycache_prefix=pc", "-X", "no_debug_ranges"]
    flags += ["-X", "int_max_str_digits=1000", "-X", "dev", "-W", "error::UserWarning", "-OO"]
    plain = run_python([*flags, "xo.py"], cwd=tmp_path)
    tracked = run_python([*flags, "-m", "jitlens", "run", "xo.py"], cwd=tmp_path)
    assert plain.returncode == tracked.returncode == 0, tracked.stderr
    assert "warn_default_encoding=1" in plain.stdout and "pycache_prefix" in plain.stdout
    assert tracked.stdout == plain.stdout


def test_the_programs_own_modules_named_like_standard_ones_are_the_ones_it_imports(tmp_path):
    """A ``token.py`` (a tokenizer project) or ``json.py`` next to the script: python imports
    the program's; jitlens had loaded the standard ones while arming (its terminal's
    ``linecache``, ``jitlens run``'s settings in JSON), so the program got those."""
    names = ("token", "tokenize", "linecache", "json")
    for name in names:
        (tmp_path / f"{name}.py").write_text(f"MINE = {name!r}\n")
    (tmp_path / "prog.py").write_text(
        f"import {', '.join(names)}\nprint([getattr(m, 'MINE', None) for m in ({', '.join(names)})])\n"
    )
    elsewhere = tmp_path / "elsewhere"  # `python -m jitlens` puts its cwd first on its own path
    elsewhere.mkdir()
    prog = str(tmp_path / "prog.py")
    plain = run_python([prog], cwd=elsewhere)
    assert plain.stdout == f"{list(names)}\n"
    for args, env in ((["-m", "jitlens", "run", prog], {}), ([prog], {"JITLENS": "1"})):
        tracked = run_python(args, cwd=elsewhere, env=env)
        assert (tracked.returncode, tracked.stdout) == (0, plain.stdout), (args, tracked.stderr)
    # ... while the modules whose state the process shares stay one module: a second
    # `threading` (the start-up hook imports it) would split which threads exit waits for
    probe = (
        "import threading, jax, jitlens._track.registry as r\n"  # (tracking starts with jax)
        "print(r.threading is threading)\n"
    )
    one = run_python(["-c", probe], cwd=elsewhere, env={"JITLENS": "1"})
    assert one.stdout == "True\n", one.stderr


def test_jitlens_main_run_inside_a_program_relays_the_childs_bytes_unchanged(tmp_path, capfdbinary):
    """``jitlens.main(["run", ...])`` (a notebook, a test) runs the program as a child and
    relays its output: binary written to ``sys.stdout.buffer`` came back as U+FFFD."""
    (tmp_path / "raw.py").write_text(
        "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe raw \\xc3\\xa9\\n')\n"
        "sys.stderr.write('err \\u00e9\\n')\nsys.exit(6)\n"
    )
    assert jitlens.main(["run", "--quiet", str(tmp_path / "raw.py")]) == 6
    out, err = capfdbinary.readouterr()
    assert (out, err) == (b"\xff\xfe raw \xc3\xa9\n", "err é\n".encode())


HASHES = """
import os, sys
import jax, jax.numpy as jnp

CORE = os.sep.join(("", "jitlens", "_core", ""))

def by_jitlens():  # called by jitlens' key and explanation code (not JAX through its wrapper)
    f = sys._getframe(2)
    while f is not None:
        if CORE in f.f_code.co_filename:
            return True
        f = f.f_back
    return False

class Counted:  # a static whose __hash__ and __eq__ count their calls (a user's, with a side effect)
    calls = {"hash": 0, "eq": 0, "hash by jitlens": 0, "eq by jitlens": 0}
    def __init__(self, v):
        self.v = v
    def __hash__(self):
        Counted.calls["hash"] += 1
        Counted.calls["hash by jitlens"] += by_jitlens()
        return 5
    def __eq__(self, other):
        Counted.calls["eq"] += 1
        Counted.calls["eq by jitlens"] += by_jitlens()
        return isinstance(other, Counted) and other.v == self.v
    def __repr__(self):  # its own: jitlens calls it only to word a retrace
        return f"Counted({self.v})"

def calls():
    f = jax.jit(lambda x, s: x + 1, static_argnums=1)
    for k in Counted.calls:
        Counted.calls[k] = 0
    f(jnp.ones(2), Counted(1))
    f(jnp.ones(2), Counted(1))  # a cache hit
    hits = dict(Counted.calls)
    f(jnp.ones(2), Counted(2))  # a retrace: jitlens names the static that changed
    return hits, dict(Counted.calls)

plain = calls()  # before jitlens is imported: nothing of it installed
import jitlens
with jitlens.track() as t:
    tracked = calls()
(fn,) = [f for f in t.report().functions if f.traces]
reason = fn.events[-1].reasons[0]
print(plain[1]["hash"], tracked[1]["hash"])
print(*(tracked[i][f"{k} by jitlens"] for i in (0, 1) for k in ("hash", "eq")))
print(fn.traces, reason.kind, reason.path, reason.before, reason.after)
"""


def test_a_statics_hash_runs_as_often_as_under_plain_jax(tmp_path, fork_python):
    """A user's ``__hash__`` runs as often as plain JAX runs it (jitlens fingerprints the
    static from its fields, not its hash), and its ``__eq__`` never by jitlens (what changed
    is found from the fields, read as stored); the retrace is explained as before."""
    proc = fork_python(["-c", HASHES], cwd=tmp_path)  # jitlens imported only by the program
    assert proc.returncode == 0, proc.stderr
    counts, by_jitlens, explained = proc.stdout.splitlines()
    plain, tracked = counts.split()
    assert tracked == plain, counts
    # JAX's own count of __eq__ calls varies from run to run (its caches): jitlens' is exact
    # before: 1 hash per trace (7 in all where JAX makes 5), 4 then 1 call of __eq__ at the
    # retrace
    assert by_jitlens.split() == ["0", "0", "0", "0"], by_jitlens
    assert explained == "2 static_value s.v 1 2", explained  # as before


SIGPIPE_PROGRAM = """
import signal, sys
import jax, jax.numpy as jnp
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as CLI tools do
f = jax.jit(lambda x: x + 1)
f(jnp.ones(1)); f(jnp.ones(2))  # a retrace: jitlens' live line goes to the closed pipe
print("done")
"""


@pytest.mark.slow
def test_jitlens_words_to_a_closed_pipe_do_not_kill_a_program_that_restored_sigpipe(tmp_path):
    """``jitlens run prog.py 2>&1 | head -1``: jitlens' next line went to a pipe with no
    reader, and a program that put SIGPIPE's default back died of it (status 141)."""
    (tmp_path / "pipe.py").write_text(SIGPIPE_PROGRAM)
    outs = []
    for args in (["pipe.py"], ["-m", "jitlens", "run", "pipe.py"]):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before anything is written
        try:
            outs.append(
                subprocess.run(
                    [sys.executable, *args],
                    cwd=tmp_path,
                    env={**os.environ, "JAX_PLATFORMS": "cpu"},
                    stdout=subprocess.PIPE,
                    stderr=write,
                    text=True,
                    timeout=120,
                )
            )
        finally:
            os.close(write)
    plain, tracked = outs
    assert (plain.returncode, plain.stdout) == (0, "done\n")
    assert (tracked.returncode, tracked.stdout) == (0, "done\n")


# KeyboardInterrupt (a signal handler's, as from setitimer) landing at each point of a trace:
# from the body after its counter, from a listener on JAX's trace-start event after
# jitlens' own (the body never runs), inside jitlens' own work at trace start, and from a
# listener on the trace-end event before jitlens' own (the body ran). Each for a jit made
# while tracking and one made before. jitlens' traces must equal the bodies' counters.
INTERRUPTS = """
import json
import jax, jax.numpy as jnp
import jax.monitoring as monitoring
import jitlens
from jitlens._track import listeners

RUNS, ARMED, WHERE = {}, [None], [None]

def fire(where):
    if ARMED[0] == where:
        ARMED[0] = None
        raise KeyboardInterrupt
    if ARMED[0] == "body error" and where == "body":  # any error: JAX's cache keeps it
        ARMED[0] = None
        raise ValueError("the user's own")

def make(name):
    RUNS[name] = 0
    def body(x):
        RUNS[name] += 1
        fire("body")
        return x * 2
    body.__qualname__ = body.__name__ = name
    return body

def at_trace_start(event, *args, **kwargs):
    if event == "/jax/core/compile/trace_start" or "trace" in event:
        fire("trace start")

def at_trace_end(event, secs, **kwargs):
    if event == "/jax/core/compile/jaxpr_trace_duration":
        fire("trace end")

describe = listeners.describe_and_explain

def interrupted_describe(*args, **kwargs):
    fire("jitlens")
    return describe(*args, **kwargs)

listeners.describe_and_explain = interrupted_describe
monitoring.register_event_duration_secs_listener(at_trace_end)  # before jitlens' own
points = ["body", "body error", "trace start", "jitlens", "trace end"]
early = {p: jax.jit(make(f"early {p}")) for p in points}  # made before tracking
with jitlens.track() as t:
    monitoring.register_scalar_listener(at_trace_start)  # after jitlens' own
    interrupts = 0
    for p in points:
        for f in (jax.jit(make(f"tracked {p}")), early[p]):
            for n, armed in ((1, False), (2, True), (2, False), (3, False), (3, False)):
                x = jnp.ones(n)
                ARMED[0] = p if armed else None
                try:
                    f(x)
                except (KeyboardInterrupt, ValueError):
                    interrupts += 1
            ARMED[0] = None
    last = jax.jit(make("interrupted last"))  # no trace after it: the report settles it
    ARMED[0] = "trace start"
    try:
        last(jnp.ones(1))
    except KeyboardInterrupt:
        interrupts += 1
    report = t.report()
rows = {fn.qualname: fn.traces for fn in report.functions}
traces = {name: rows.get(name, 0) for name in RUNS}
print(json.dumps({"interrupts": interrupts, "runs": RUNS, "traces": traces}))
"""


def test_a_keyboard_interrupt_anywhere_in_a_trace_leaves_the_counts_true(tmp_path, fork_python):
    proc = fork_python(["-c", INTERRUPTS], cwd=tmp_path)  # jitlens imported only by the program
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["interrupts"] == 11, out  # every point was reached, for both jits
    assert out["traces"] == out["runs"], out
