"""The journal: written as things happen, read back after any ending (issue 49).

A training loop killed by SIGKILL at random points under ``jitlens run`` leaves a
report whose figures are the program's own counters (kept in a file the program maps,
which survives its death as the journal does). The reader takes hostile files: a
frame cut short, a size field that lies, a file that is not a journal. (A program that
closes the journal's descriptors and opens its own files at their numbers: its test is in
test_hostile_programs3.py, on the runs of the stdin program that does that among its moves.
The next tracked run building the report a ``JITLENS=1`` run killed by SIGKILL left: in
test_endings.py, on that file's SIGKILL ending.)
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import run_python
from jitlens import main

pytestmark = pytest.mark.xdist_group("journal")

LOOP = r"""
import mmap, os, random, sys, threading, time

seed, where, truth = int(sys.argv[1]), sys.argv[2], sys.argv[3]
fd = os.open(truth, os.O_RDWR | os.O_CREAT)
os.ftruncate(fd, 16)
V = memoryview(mmap.mmap(fd, 16)).cast("q")  # [traces, calls]: kept when the process dies
rng = random.Random(seed)
kill_at = rng.randint(2, 5) if where == "body" else rng.randint(20, 150)

import jax, jax.numpy as jnp


@jax.jit
def step(x, w):
    V[0] += 1
    if where == "body" and V[0] == kill_at:  # killed while JAX traces
        os.kill(os.getpid(), 9)
    return jnp.tanh(x @ w).sum()


w = jnp.ones((4, 4))
for i in range(4000):
    if i == 1 and where == "thread":  # at a moment nobody chose: a trace, a compile, a hit...
        delay = rng.uniform(0.0, 0.6)  # (the loop retraces for its first ~0.6 s, hits between)
        threading.Thread(target=lambda: (time.sleep(delay), os.kill(os.getpid(), 9))).start()
    n = 2 + (i // 25) % 7  # a new shape every 25 steps: retraces, and cache hits between
    V[1] += 1
    step(jnp.ones((n, 4)), w)
    if where == "between" and V[1] == kill_at:
        os.kill(os.getpid(), 9)
"""

KILLS = [(1, "body"), (2, "between"), (3, "thread"), (4, "thread"), (5, "thread"), (6, "thread")]


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("killed")
    (tmp / "loop.py").write_text(LOOP)

    def one(kill):
        seed, where = kill
        truth, report = tmp / f"truth-{seed}", tmp / f"r-{seed}.json"
        command = ["-m", "jitlens", "run", "--json", str(report), "loop.py", str(seed), where]
        proc = run_python([*command, str(truth)], cwd=tmp)
        traces, calls = struct.unpack("<qq", truth.read_bytes())
        return proc, (traces, calls), json.loads(report.read_text()) if report.exists() else None

    with ThreadPoolExecutor(3) as pool:
        return dict(zip(KILLS, pool.map(one, KILLS), strict=True))


@pytest.mark.parametrize("kill", KILLS, ids=[f"{w}-{s}" for s, w in KILLS])
def test_a_loop_killed_at_random_points_leaves_its_counted_figures(killed, kill):
    proc, (traces, calls), report = killed[kill]
    assert report is not None, (proc.stderr, traces, calls)
    (row,) = [f for f in report["functions"] if f["name"] == "step"]
    if proc.returncode == 0:  # the loop ended before the thread's moment: Python's own exit
        assert [row["traces"], row["calls"]] == [traces, calls]
        return
    assert proc.returncode == -9, proc.stderr
    assert any("ended by SIGKILL" in w for w in report["warnings"]), report["warnings"]
    # A call's count is stored at its calls 1, 2, 4, ..., 32 and every 64th, and at each trace
    # and compile: the calls since are the ones not seen.
    assert calls - 64 < row["calls"] <= calls, (row["calls"], calls)
    if kill[1] != "thread":  # killed at a line of the program's: its traces exactly
        assert row["traces"] == traces
        return
    # Killed at any instruction: a trace is in the journal from its start, a moment before
    # its body counts it.
    assert traces <= row["traces"] <= traces + 1, (row["traces"], traces)
    assert row["compiles"] <= row["traces"]
    events = [e for e in row["events"] if e["kind"] == "retrace"]
    assert all(e["reasons"] for e in events)  # each retrace with its reason, as it happened


#: The journal's layout (``_core/journal.py``): a header page, int64 call slots to the next
#: page, then frames of <u32 size> <JSON> <u32 crc32>.
MAGIC, LAYOUT, PAGE = b"JITLENS-JOURNAL\0", 1, 4096


def _journal(*frames: dict, cut: int = 0, slots: int = 8) -> bytes:
    head = struct.pack("<16sII", MAGIC, LAYOUT, slots).ljust(PAGE, b"\0")
    counts = struct.pack("<8q", 0, 0, 41, 0, 0, 0, 0, 0)  # slot 2: its call index 41
    data = head + counts.ljust(-(-slots * 8 // PAGE) * PAGE, b"\0")
    for frame in frames:
        body = json.dumps(frame).encode()
        data += struct.pack("<I", len(body)) + body + struct.pack("<I", zlib.crc32(body))
    return data[: len(data) - cut]


START = {"t": "start", "pid": 2**22 + 1, "host": "h", "argv": ["train.py"], "started_at": 1.0}
FN = {
    "t": "fn",
    "id": 2,
    "slot": 2,
    "not_hits": 2,
    "tail_from": 0,
    "tail": [
        {"call_index": 0, "kind": "trace", "call_site": "train.py:9", "signature": "x: f32[1]"},
        {"call_index": 1, "kind": "retrace", "call_site": "train.py:9", "signature": "x: f32[2]"},
    ],
    "fn": {
        "name": "step",
        "qualname": "step",
        "kind": "jax.jit",
        "defined_at": "train.py:3",
        "first_call_site": "",
        "calls": 5,
        "traces": 2,
        "compiles": 2,
        "cache_hits": 3,
        "persistent_cache_hits": 0,
        "trace_seconds": 0.0,
        "lower_seconds": 0.0,
        "compile_seconds": 0.0,
    },
}


def _report(tmp_path, data: bytes) -> tuple[int, str, dict | None]:
    path, out = tmp_path / "j.jitlens-journal", tmp_path / "r.json"
    path.write_bytes(data)
    code = main(["report", str(path), "--json", str(out)])
    return code, str(path), json.loads(out.read_text()) if out.exists() else None


def test_the_mapped_calls_and_the_frames_make_the_report(tmp_path):
    code, _, report = _report(tmp_path, _journal(START, FN))
    assert code == 0
    (row,) = report["functions"]
    assert (row["calls"], row["cache_hits"], row["traces"]) == (42, 40, 2)  # calls from the map
    assert [e["kind"] for e in row["events"]] == ["trace", "retrace"]
    assert "in a way nobody saw" in report["warnings"][-1]


def test_a_frame_cut_short_ends_the_reading_and_the_rest_stands(tmp_path):
    later = {**FN, "tail_from": 2, "tail": [{**FN["tail"][1], "call_index": 7}]}
    code, _, report = _report(tmp_path, _journal(START, FN, later, cut=5))
    assert code == 0
    (row,) = report["functions"]
    assert len(row["events"]) == 2  # the torn frame's event is not there
    assert "the last frame cut short" in report["warnings"][-1]


@pytest.mark.parametrize(
    "data",
    [
        b"not a journal at all",
        b"JITLENS-JOURNAL\0" + struct.pack("<II", 99, 8),
        b"",
    ],
    ids=["other", "layout", "empty"],
)
def test_a_file_that_is_not_a_journal_is_read_as_a_report_and_refused_cleanly(
    tmp_path, capsys, data
):
    code, _, report = _report(tmp_path, data)
    assert code == 2 and report is None
    assert "Traceback" not in capsys.readouterr().err


def test_a_size_field_that_lies_or_a_checksum_that_fails_reads_no_further(tmp_path):
    lying = _journal(START) + struct.pack("<I", 2**31) + b"{}"
    code, _, report = _report(tmp_path, lying)
    assert code == 0 and report["functions"] == []
    body = json.dumps(FN).encode()
    forged = _journal(START) + struct.pack("<I", len(body)) + body + struct.pack("<I", 0)
    code, _, report = _report(tmp_path, forged)
    assert code == 0 and report["functions"] == []


def test_a_journal_left_behind_is_listed_and_its_process_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JITLENS_JOURNAL_DIR", str(tmp_path))
    (tmp_path / "20260101-000000-7.jitlens-journal").write_bytes(_journal(START, FN))
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert f"pid {START['pid']}" in out and "train.py" in out
    assert "jitlens report " + str(tmp_path) in out


def test_a_running_program_s_journal_is_listed_as_running(tmp_path, monkeypatch, capsys):
    """The process that writes it is alive (here: this test's own): not one to recover."""
    monkeypatch.setenv("JITLENS_JOURNAL_DIR", str(tmp_path))
    path = tmp_path / "20260101-000000-1.jitlens-journal"
    path.write_bytes(_journal({**START, "pid": os.getpid()}, FN))
    assert main(["report"]) == 0
    assert "still running" in capsys.readouterr().out
    assert path.exists()


KILLED_SESSION = """
import os, signal
import jax, jax.numpy as jnp

def test_killed():
    f = jax.jit(lambda x: x + 1)
    f(jnp.ones(1)); f(jnp.ones(2))
    os.kill(os.getpid(), signal.SIGKILL)  # a CI job's timeout, the OOM killer
"""


def test_a_pytest_session_killed_leaves_its_journal_and_the_next_session_reports_it(tmp_path):
    (tmp_path / "test_killed.py").write_text(KILLED_SESSION)
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    pass\n")
    journals = tmp_path / "journals"
    env = {"JITLENS_JOURNAL_DIR": str(journals)}
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    args += ["-p", "no:hypothesispytest"]  # (its plugin's start-up: 1 CPU s of each pytest)
    killed = run_python(
        [*args, "--jitlens-report", "r.json", "test_killed.py"], cwd=tmp_path, env=env
    )
    assert killed.returncode == -9 and not (tmp_path / "r.json").exists()
    assert len(list(journals.iterdir())) == 1
    fine = run_python([*args, "--jitlens", "test_fine.py"], cwd=tmp_path, env=env)
    assert fine.returncode == 0, fine.stdout
    assert "an earlier run (pid" in fine.stdout and "wrote" in fine.stdout, fine.stdout
    (row,) = [f for f in json.loads((tmp_path / "r.json").read_text())["functions"]]
    assert (row["traces"], row["calls"]) == (2, 2)
    assert list(journals.iterdir()) == []
