"""Every way a program can end, under plain ``python``, ``jitlens run`` and ``JITLENS=1``.

jitlens catches no ending (issue 49): it records as it goes, in a journal, and
``jitlens run`` (the program's parent) builds the report from it however the
program ended. Each ending here was written to break that promise, and each runs
as a user runs it, in fresh processes: the program's stdout (its own counters, and
what it observes of its process: signal handlers, import hooks, environment,
``SystemExit``, ``os._exit``, recursion depth) and its exit status must be plain
python's; the report must hold the traces and calls its counters say it made, and
say how it ended when that was not Python's own exit. Under ``JITLENS=1`` (nobody
outlives the program) such an ending leaves the journal, read back here.

Python's answer for an ending comes from a fork of the suite's server that imported JAX
(``fork_python``: the ending is the kernel's or the program's, not the interpreter's
start-up), and what the program sees of its process (its ``SEES`` line: the same in
every mode) from one fresh interpreter, which also gives the one ending only a fresh
interpreter shows: an uncaught ``KeyboardInterrupt`` (Python dies of SIGINT at its exit;
a fork reports it as an exception, status 1).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, run_python
from jitlens import main

pytestmark = pytest.mark.xdist_group("endings")

PROG = r"""
import atexit, os, signal, sys, threading, time

mode = sys.argv[1]
T, C = [0], [0]


def observe():
    handlers = [str(signal.getsignal(s)) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)]
    asked = ("JITLENS_REPORT", "JITLENS_JOURNAL_DIR")  # the user's own settings
    env = sorted(
        k for k in os.environ if k.startswith("JITLENS_") and k not in asked or k == "PYTHONPATH"
    )

    def depth(n=0):
        try:
            return depth(n + 1)
        except RecursionError:
            return n

    import mmap  # the program's own mmap.py, next to it (jitlens' journal maps a file too)

    print("SEES", handlers, type(sys.meta_path[0]).__name__, env, "sitecustomize" in sys.modules,
          SystemExit.__module__, type(os._exit).__name__, depth(), mmap.__name__, mmap.OWN,
          flush=True)


def truth():
    print("TRUTH", T[0], C[0], flush=True)


if mode == "thread_import":  # jax imported (and tracking started) in a thread
    box = []
    threading.Thread(target=lambda: box.append(__import__("jax"))).start()
    while not box:
        time.sleep(0.01)
import jax, jax.numpy as jnp


@jax.jit
def f(x):
    T[0] += 1
    return x + 1


def call(n):
    C[0] += 1
    return f(jnp.ones(n))


call(1); call(2); call(2)
observe()


def wait():  # short sleeps: a signal JAX's threads take wakes no long sleep of the main thread
    for _ in range(600):
        time.sleep(0.1)


def checkpoint(signum, frame):  # saves, then dies of the signal as if unhandled
    truth()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def saved(signum, frame):
    print("checkpoint saved", flush=True)
    sys.exit(0)


STOP, previous = [], None


def chain(signum, frame):  # a library's handler: its own work, then the one it replaced
    print("graceful", flush=True)
    if callable(previous):  # SIG_DFL under python: not called
        previous(signum, frame)
    STOP.append(signum)


if mode in ("SIGTERM", "SIGHUP", "SIGKILL"):
    truth()
    os.kill(os.getpid(), getattr(signal, mode))
    wait()
elif mode == "raise_signal":
    truth()
    signal.raise_signal(signal.SIGTERM)
elif mode == "thread_import":  # ... and the signal sent to the main thread itself
    truth()
    signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)
    wait()
elif mode == "checkpoint":
    signal.signal(signal.SIGTERM, checkpoint)
    os.kill(os.getpid(), signal.SIGTERM)
    wait()
elif mode == "default_only":  # install my handler only if the default is in place
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, saved)
    call(3)
    truth()
    os.kill(os.getpid(), signal.SIGTERM)
    wait()
elif mode == "chain":  # the program ends gracefully through Python's exit
    previous = signal.signal(signal.SIGTERM, chain)
    os.kill(os.getpid(), signal.SIGTERM)
    while not STOP:
        time.sleep(0.01)
    call(8)
    truth()
    sys.exit(3)
elif mode == "own_exit":
    signal.signal(signal.SIGTERM, lambda s, fr: (call(4), truth(), os._exit(7)))
    os.kill(os.getpid(), signal.SIGTERM)
    wait()
elif mode == "posix":  # os._exit by its other names: one function, nobody's wrapper
    import posix
    from os import _exit

    print("one _exit", _exit is posix._exit is os._exit, flush=True)
    truth()
    posix._exit(6)
elif mode == "thread_exit":
    threading.Thread(target=lambda: (call(5), truth(), os._exit(8))).start()
    wait()
elif mode == "atexit_exit":  # registered after jitlens' hook: runs first, never returns
    atexit.register(lambda: (call(3), truth(), os._exit(4)))
elif mode == "abort":
    truth()
    os.abort()
elif mode == "sigpipe":  # a reader that went away, with SIGPIPE's default action back
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    r, w = os.pipe()
    os.close(r)
    truth()
    os.write(w, b"lost")
elif mode == "sigint_default":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    truth()
    os.kill(os.getpid(), signal.SIGINT)
    wait()
elif mode == "goes_on":  # the program goes on where it could have ended, then exits by argparse
    for bad in ("/", os.devnull, "x" * 5000):  # an exec that cannot run
        try:
            os.execv(bad, [bad])
        except OSError as exc:
            print("exec failed", type(exc).__name__, flush=True)
    call(3)
    try:
        sys.exit(3)
    except SystemExit as exc:
        print("caught", exc.code, flush=True)
    import argparse, code

    code.InteractiveConsole().push("raise KeyboardInterrupt")  # Ctrl-C shown in a console
    call(4)
    truth()
    argparse.ArgumentParser(prog="p").parse_args(["--nope"])
elif mode == "execv":
    truth()
    os.execv(sys.executable, [sys.executable, "-c", "print('exec ok')"])
elif mode == "keyboard_interrupt":
    truth()
    raise KeyboardInterrupt
elif mode == "late_imports_refused":  # the program's own audit hook forbids late imports
    def no_imports(event, args):
        if event == "import":
            raise RuntimeError(f"import {args[0]} refused")

    sys.addaudithook(no_imports)
    call(3); call(3)
    truth()
"""

#: mode -> (exit status under python, the report says "ended by ..." (None: Python's exit))
ENDINGS: dict[str, tuple[int, str | None]] = {
    "SIGTERM": (-signal.SIGTERM, "by SIGTERM"),
    "SIGHUP": (-signal.SIGHUP, "by SIGHUP"),
    "SIGKILL": (-signal.SIGKILL, "by SIGKILL"),
    "raise_signal": (-signal.SIGTERM, "by SIGTERM"),
    "thread_import": (-signal.SIGTERM, "by SIGTERM"),
    "checkpoint": (-signal.SIGTERM, "by SIGTERM"),
    "default_only": (0, None),
    "chain": (3, None),
    "own_exit": (7, "with status 7"),
    "posix": (6, "with status 6"),
    "thread_exit": (8, "with status 8"),
    "atexit_exit": (4, "with status 4"),
    "abort": (-signal.SIGABRT, "by SIGABRT"),
    "sigpipe": (-signal.SIGPIPE, "by SIGPIPE"),
    "sigint_default": (-signal.SIGINT, "by SIGINT"),
    "goes_on": (2, None),
    "execv": (0, "by an os.exec* call"),
    "keyboard_interrupt": (-signal.SIGINT, None),
    "late_imports_refused": (0, None),
}
#: Endings also run under ``JITLENS=1``, where nobody outlives the program but its journal.
UNDER_ENV = ("SIGKILL", "own_exit", "default_only", "goes_on", "thread_import")


#: The ending whose python answer comes from a fresh interpreter (see the module's docstring).
FRESH = "keyboard_interrupt"
#: The report the SIGKILL ending asks for under ``JITLENS=1`` (``JITLENS_REPORT``).
ASKED = "SIGKILL-env-asked.json"


def _sees(stdout: str) -> str | None:
    """The program's ``SEES`` line: what it observes of its process (``None``: it printed none;
    the comparison with the tracked run then says so)."""
    return next((line for line in stdout.splitlines() if line.startswith("SEES ")), None)


def _run(tmp, mode: str, runner: str):
    journals = tmp / f"journal-{mode}-{runner}"
    env = {"JITLENS_JOURNAL_DIR": str(journals)}
    if runner == "python":
        return run_python(["prog.py", mode], cwd=tmp, env=env, timeout=180), None, journals
    report = tmp / f"{mode}-{runner}.json"
    if runner == "run":
        command = ["-m", "jitlens", "run", "--json", str(report), "prog.py", mode]
        return run_python(command, cwd=tmp, env=env, timeout=180), report, journals
    # (SIGKILL: the report it asks for is the one the next tracked run writes from its journal)
    asked = tmp / ASKED if mode == "SIGKILL" else report
    env.update({"JITLENS": "1", "JITLENS_REPORT": str(asked)})
    return run_python(["prog.py", mode], cwd=tmp, env=env, timeout=180), report, journals


@pytest.fixture(scope="module")
def endings(tmp_path_factory, fork_python):
    """Each ending's runs: ``(mode, runner)`` -> (process, report path, journal folder). The
    ``python`` runs of the endings but :data:`FRESH` are forks whose ``SEES`` line is the fresh
    interpreter's (a fork runs the program a few frames deeper: its recursion depth)."""
    tmp = tmp_path_factory.mktemp("endings")
    (tmp / "prog.py").write_text(PROG)
    (tmp / "mmap.py").write_text("OWN = True\n")
    forked = {
        m: fork_python.submit(["prog.py", m], cwd=tmp, timeout=180) for m in ENDINGS if m != FRESH
    }
    runs = [(FRESH, "python")] + [(m, "run") for m in ENDINGS] + [(m, "env") for m in UNDER_ENV]
    with ThreadPoolExecutor(4) as pool:  # fresh processes, waited on together
        done = dict(zip(runs, pool.map(lambda r: _run(tmp, *r), runs), strict=True))
    sees = _sees(done[FRESH, "python"][0].stdout)
    for mode, handle in forked.items():
        proc = fork_python.wait(handle)
        forked_sees = _sees(proc.stdout)
        if sees is not None and forked_sees is not None:
            proc.stdout = proc.stdout.replace(forked_sees, sees)
        done[mode, "python"] = (proc, None, None)
    return done


def _truth(stdout: str) -> list[int]:
    line = next(line for line in stdout.splitlines() if line.startswith("TRUTH"))
    return [int(x) for x in line.split()[1:]]


def _report_of(report_path, journals):
    """The report a run left: its file, or (nobody outlived the program) its journal's, read as
    a user reads it (``jitlens report JOURNAL --json PATH``)."""
    if not report_path.exists():
        (left,) = journals.iterdir()
        assert main(["report", str(left), "--json", str(report_path)]) == 0
    return json.loads(report_path.read_text())


@pytest.mark.parametrize("mode", list(ENDINGS))
def test_the_program_ends_as_under_python_and_its_report_holds_what_it_counted(endings, mode):
    status, ended_by = ENDINGS[mode]
    plain = endings[mode, "python"][0]
    assert plain.returncode == status, plain.stderr
    for runner in ("run", "env"):
        if (mode, runner) not in endings:
            continue
        proc, report_path, journals = endings[mode, runner]
        assert proc.returncode == status, (runner, proc.stderr)
        seen = proc.stdout
        if runner == "env":  # JITLENS=1 is the user's, and the pid of the program beside it
            seen = re.sub(r"'JITLENS_(IMAGE|MAIN_PID)'(, )?", "", seen)
        assert seen == plain.stdout, runner  # its counters, and what it saw of itself
        report = _report_of(report_path, journals)
        (row,) = [f for f in report["functions"] if f["name"] == "f"]
        assert [row["traces"], row["calls"]] == _truth(plain.stdout), (runner, row)
        said = [w for w in report["warnings"] if "before Python's exit" in w]
        assert len(said) == (ended_by is not None), (runner, report["warnings"])
        if ended_by is not None:  # (under JITLENS=1 nobody saw how)
            how = ended_by if runner == "run" else "in a way nobody saw"
            assert f"ended {how}" in said[0], (runner, said)
        if runner == "run":
            assert "jitlens: 1 jitted function" in proc.stderr, proc.stderr
            assert not list(journals.glob("*")), "jitlens run leaves no journal behind"
        elif ended_by is None:
            assert not list(journals.glob("*")), "a clean end leaves no journal behind"


def test_python_s_own_words_reach_the_user_unchanged(endings):
    for mode in ("goes_on", "keyboard_interrupt"):  # argparse's usage, a console's traceback
        plain = endings[mode, "python"][0]
        tracked = endings[mode, "run"][0]
        python_lines = [line for line in plain.stderr.splitlines() if line.strip()]
        assert python_lines and all(line in tracked.stderr for line in python_lines), mode
    assert endings["execv", "python"][0].stdout.endswith("exec ok\n")


CAUGHT = """
import sys
import jax, jax.numpy as jnp
import jitlens

f = jax.jit(lambda x: x + 1)
f(jnp.ones(1))
try:
    f(jnp.ones(2))
except jitlens.RecompileError:
    print("caught", flush=True)
try:
    sys.exit(3)
except SystemExit:  # the program's own SystemExit: caught as under python
    print("exit caught", flush=True)
sys.exit(eval(sys.argv[1]))
"""


@pytest.mark.parametrize(
    ("code", "status", "said"),
    [
        ("2**63", 255, "chose its own exit status, 255: it stands"),
        ("2**40", 1, "exiting 1 as --fail-on-retrace asks"),
        # sys.exit() after a SystemExit caught, and a message (status 1, the message said):
        # test_run_words' programs that end by sys.exit() and by SystemExit('bye')
    ],
)
def test_a_swallowed_budget_fails_a_program_that_exits_0_and_python_s_status_stands(
    tmp_path, code, status, said
):
    (tmp_path / "caught.py").write_text(CAUGHT)
    command = ["-m", "jitlens", "run", "--fail-on-retrace", "caught.py", code]
    proc = run_python(command, cwd=tmp_path, timeout=120)
    assert proc.returncode == status, proc.stderr
    assert said in proc.stderr
    assert proc.stdout == "caught\nexit caught\n"


def test_jitlens_report_builds_the_report_of_a_journal_left_behind(endings, tmp_path):
    """``JITLENS=1`` and a SIGKILL: the journal stays, and ``jitlens report`` reads it."""
    _proc, _report, journals = endings["SIGKILL", "env"]
    (left,) = journals.iterdir()
    out = tmp_path / "r.json"
    done = run_python(["-m", "jitlens", "report", str(left), "--json", str(out)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "in a way nobody saw" in done.stdout
    (row,) = [f for f in json.loads(out.read_text())["functions"] if f["name"] == "f"]
    assert [row["traces"], row["calls"]] == _truth(endings["SIGKILL", "python"][0].stdout)


def test_the_next_tracked_run_builds_the_report_a_killed_run_left(endings, tmp_path):
    """(From test_journal.) ``JITLENS=1`` and the OOM killer (the SIGKILL ending): nobody
    outlived the program; the next ``jitlens run`` writes the report that run asked for, and
    says so in one line. (On a copy of its journal: the tests above read the journal too.)"""
    _proc, _report, journals = endings["SIGKILL", "env"]
    asked = journals.parent / ASKED
    assert len(list(journals.iterdir())) == 1 and not asked.exists()
    mine = tmp_path / "journals"
    shutil.copytree(journals, mine)
    (tmp_path / "other.py").write_text("print('other')\n")
    env = {"JITLENS_JOURNAL_DIR": str(mine)}
    second = run_python(["-m", "jitlens", "run", "other.py"], cwd=tmp_path, env=env)
    assert second.returncode == 0 and second.stdout == "other\n"
    assert "an earlier run (pid" in second.stderr and "wrote" in second.stderr, second.stderr
    (row,) = [f for f in json.loads(asked.read_text())["functions"] if f["name"] == "f"]
    assert [row["traces"], row["calls"]] == _truth(endings["SIGKILL", "python"][0].stdout)
    assert list(mine.iterdir()) == []


def test_a_signal_sent_to_jitlens_run_reaches_the_program_once(tmp_path):
    """``kill <jitlens run's pid>`` (a container's stop, a scheduler): the program gets it, its
    own handler runs once, and jitlens run ends as the program did."""
    (tmp_path / "wait.py").write_text(
        "import signal, sys, time\nimport jax\n"
        "seen = []\nsignal.signal(signal.SIGTERM, lambda s, f: seen.append(s))\n"
        "print('ready', flush=True)\n"
        "while not seen:\n    time.sleep(0.01)\n"
        "time.sleep(0.5)\nprint('handled', len(seen), flush=True)\nsys.exit(4)\n"
    )
    import os
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "jitlens", "run", "wait.py"],
        cwd=tmp_path,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "JITLENS_JOURNAL_DIR": str(tmp_path / "j")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 4, err
    assert out == "handled 1\n"


DAEMON = """
import os, sys, time
import jax, jax.numpy as jnp
jax.jit(lambda x: x + 1)(jnp.ones(2))
if os.fork() == 0:  # a daemon, as daemonizing code makes one: double fork, stdio on /dev/null
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        with open("daemon.pid", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
        open("daemon.done", "w").close()
    os._exit(0)
while not os.path.exists("daemon.pid"):
    time.sleep(0.01)
print("started", flush=True)
"""


@pytest.mark.parametrize("runner", ["run", "env"])
def test_a_daemon_the_program_leaves_does_not_hold_the_caller_s_pipes(tmp_path, runner):
    """The caller reads the program's output to its end: a daemon that closed its stdio holds
    no descriptor of jitlens' on that pipe (the run waited 2 minutes for it before)."""
    import os
    import sys

    (tmp_path / "daemon.py").write_text(DAEMON)
    command = ["-m", "jitlens", "run", "daemon.py"] if runner == "run" else ["daemon.py"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", **({"JITLENS": "1"} if runner == "env" else {})}
    try:
        proc = subprocess.run(
            [sys.executable, *command], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=100,
        )  # fmt: skip
        assert proc.returncode == 0 and proc.stdout == "started\n", proc.stderr
        assert not (tmp_path / "daemon.done").exists()  # the run ended before the daemon did
    finally:
        os.kill(int((tmp_path / "daemon.pid").read_text()), signal.SIGKILL)


#: Where jitlens' source may set a signal's action, patch ``os._exit`` or ``builtins``, hook
#: Python's audit events or duplicate a descriptor, and why none of them is inside a program
#: it watches under ``jitlens run`` (docs/explanation/how-jitlens-run-works.md).
INTERCEPTIONS_ALLOWED = {
    "_cli/supervise.py": "jitlens run's own process: it dies of the program's signal",
    "_track/sink.py": "JITLENS=1 only (nobody outlives the program to show its lines): a copy "
    "of descriptor 2, closed in every forked process",
    "_audit/limits.py": "jitlens audit's own process, which runs the user's factory: its own "
    "deadline and a guard against the factory ending that process",
}
INTERCEPTION = re.compile(
    r"signal\.signal\(|addaudithook\(|os\._exit\s*=|builtins\.\w+\s*=|sys\.excepthook\s*=|"
    r"os\.dup2?\(|sys\.exit\s*=|sitecustomize"
)


def test_nothing_in_src_intercepts_a_program_s_ending_outside_the_documented_exceptions():
    src = ROOT / "src" / "jitlens"
    found = {
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        for line in path.read_text().splitlines()
        if INTERCEPTION.search(line.split("#", 1)[0])
    }
    assert found <= set(INTERCEPTIONS_ALLOWED), sorted(found - set(INTERCEPTIONS_ALLOWED))


LATE_IMPORTS = """
import sys
import equinox as eqx
import jax, jax.numpy as jnp
from flax import nnx

model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
T = {"nnx": 0, "eqx": 0}


@nnx.jit
def fwd(m, x):
    T["nnx"] += 1
    return m(x)


@eqx.filter_jit
def step(x):
    T["eqx"] += 1
    return x * 2


def no_imports(event, args):  # from here on, nothing new may be imported
    if event == "import":
        raise RuntimeError(f"import {args[0]} refused")


fwd(model, jnp.ones((1, 2))); step(jnp.ones(1))
sys.addaudithook(no_imports)
for n in (1, 2, 2, 3, 3, 3):  # retraces, hits, the stale checks at calls 1, 2, 4
    fwd(model, jnp.ones((n, 2))); step(jnp.ones(n))
print("TRUTH", T["nnx"], T["eqx"], flush=True)
"""


def test_a_program_that_refuses_late_imports_runs_as_under_python(tmp_path, fork_python):
    """jitlens' lazy imports (a retrace's words, the advice, the stale check) refused by the
    program's own audit hook: jitlens steps aside, the program runs on and its report is out."""
    (tmp_path / "late.py").write_text(LATE_IMPORTS)
    plain = fork_python(["late.py"], cwd=tmp_path)  # python's answer: no start-up read
    tracked = run_python(["-m", "jitlens", "run", "--json", "r.json", "late.py"], cwd=tmp_path)
    assert plain.returncode == tracked.returncode == 0, tracked.stderr
    assert tracked.stdout == plain.stdout == "TRUTH 3 3\n"
    rows = {f["name"]: f for f in json.loads((tmp_path / "r.json").read_text())["functions"]}
    assert (rows["fwd"]["traces"], rows["step"]["traces"]) == (3, 3)


def test_a_script_named_like_an_option_and_a_module_imported_again_are_run_and_counted(
    tmp_path, fork_python
):
    """``jitlens run -- -weird.py`` runs that script, as ``python -- -weird.py`` does; a module
    taken out of ``sys.modules`` and imported again makes new jitted functions, counted too."""
    (tmp_path / "mymod.py").write_text("import jax\n\n@jax.jit\ndef f(x):\n    return x + 1\n")
    (tmp_path / "-weird.py").write_text(
        "import sys, jax.numpy as jnp\nimport mymod\nmymod.f(jnp.ones(2))\n"
        "del sys.modules['mymod']\nimport mymod as again\n"
        "for _ in range(3):\n    again.f(jnp.ones(2))\nprint('done')\n"
    )
    # python's answer from a fork of the JAX server (no start-up read): the script it runs
    plain = fork_python(["-weird.py"], cwd=tmp_path)
    tracked = run_python(
        ["-m", "jitlens", "run", "--json", "r.json", "--", "-weird.py"], cwd=tmp_path
    )
    assert plain.returncode == tracked.returncode == 0, tracked.stderr
    assert tracked.stdout == plain.stdout == "done\n"
    rows = json.loads((tmp_path / "r.json").read_text())["functions"]
    assert sorted(f["calls"] for f in rows if f["name"] == "f") == [1, 3]


BUDGETED = """
import argparse, hashlib, os, pickle, sys
import jax, jax.numpy as jnp
f = jax.jit(lambda x: x + 1)
f(jnp.ones(1)); f(jnp.ones(1))
try:
    argparse.ArgumentParser(prog="p").parse_args(["--nope"])
except SystemExit as exc:  # argparse's exit, caught by the program
    print("argparse", exc.code, flush=True)
print("pickles", pickle.loads(pickle.dumps(os._exit)) is os._exit, flush=True)
print("ready", flush=True)
hashlib.pbkdf2_hmac("sha256", b"x", b"y", 200_000_000)  # a long C call (minutes)
print("finished", flush=True)
"""


def test_a_budgeted_program_exits_and_dies_as_under_python(tmp_path):
    """Under ``--fail-on-retrace`` argparse's exit is the program's to catch (jitlens' own
    ``SystemExit`` escaped it), ``os._exit`` pickles (jitlens' wrapper did not), and a SIGTERM
    sent while the program is inside a long C call ends it at once, as under python (jitlens'
    handler waited for the call to return: 7-16 s)."""
    import os
    import sys

    (tmp_path / "prog.py").write_text(BUDGETED)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    ran = {}
    for runner, args in (("python", []), ("run", ["-m", "jitlens", "run", "--fail-on-retrace"])):
        proc = subprocess.Popen(
            [sys.executable, *args, "prog.py"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines = []
        while not lines or lines[-1] != "ready\n":
            lines.append(proc.stdout.readline())
            assert lines[-1], (runner, lines, proc.stderr.read())
        proc.send_signal(signal.SIGTERM)  # to python; to jitlens run, which passes it on
        out, err = proc.communicate(timeout=120)
        ran[runner] = (proc.returncode, "".join(lines) + out, err)
    plain, tracked = ran["python"], ran["run"]
    assert plain[:2] == (-signal.SIGTERM, "argparse 2\npickles True\nready\n"), plain
    assert tracked[:2] == plain[:2], tracked  # no "finished": the C call never returned
    assert "p: error: unrecognized arguments: --nope" in tracked[2]
    said = " ".join(tracked[2].split())  # (the summary wraps at the terminal's width)
    assert "the program ended by SIGTERM, before Python's exit" in said, tracked[2]
