"""Two real JAX processes on loopback, tracked by `jitlens run`, merged by `jitlens merge`.

The processes join with ``jax.distributed.initialize`` over 127.0.0.1 and use
gloo CPU collectives, one device each (see multiprocess_child.py). Everything
is bounded: the children carry a watchdog, each pair has a deadline, and both
children are killed in a ``finally`` whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jitlens
from jitlens import MergedReport, load_report, merge_reports

# One group: under `pytest -n N --dist loadgroup` the two pairs of processes start only once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

CHILD = Path(__file__).with_name("multiprocess_child.py")
REPORT_TEMPLATE = "report-{process_index}.json"
#: ``jitlens run --gather``'s merged view, written by process 0.
MERGED = "merged.json"
#: Deadline of both pairs of processes (start, compile, run, write the reports);
#: about 10 s on an idle 2-core machine; the margin is for a machine under load.
RUN_TIMEOUT = 120.0
#: The children end themselves a little after the parent would give up on them.
WATCHDOG_SECONDS = RUN_TIMEOUT + 5


def _merge_cli(argv: list[str]) -> int:
    """``jitlens merge ARGV`` as a user runs it, in this process."""
    return jitlens.main(["merge", *argv])


FAILED = "{what}\n" + "\n".join(f"--- process {i} log ---\n{{log{i}}}" for i in (0, 1))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: Issue 30: process 1 dies (``os._exit``) or hangs before the gather. ``name -> (peer, under
#: jitlens run)``; the plain-python pair is the exit status process 0 must keep.
PEER_RUNS: dict[str, tuple[str, bool]] = {
    "dead": ("dead", True),
    "exited": ("exited", True),
    "hung": ("hung", True),
    "dead-plain": ("dead", False),
}
#: Seconds process 0 waits for the others' reports (JITLENS_GATHER_TIMEOUT) in the peer runs.
GATHER_TIMEOUT = 5
#: jax.distributed's heartbeat timeout in the peer runs: after it JAX itself ends process 0
#: (SIGABRT), so it must outlast a cold start's self-check; its shutdown barrier stays at 10 s.
PEER_HEARTBEAT = 60


def _env(port: int, process_id: int, mode: str, peer: str = "", end: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env.update(
        JAX_PLATFORMS="cpu",
        JITLENS_MP_PORT=str(port),
        JITLENS_MP_PROCESS_ID=str(process_id),
        JITLENS_MP_MODE=mode,
        JITLENS_MP_WATCHDOG=str(WATCHDOG_SECONDS),
        JITLENS_MP_END=end,
    )
    if peer:
        env.update(
            JITLENS_MP_PEER=peer,
            JITLENS_MP_HEARTBEAT=str(PEER_HEARTBEAT),
            JITLENS_GATHER_TIMEOUT=str(GATHER_TIMEOUT),
        )
    return env


def _failure(workdir: Path, what: str) -> str:
    logs = {
        f"log{i}": (workdir / f"process-{i}.log").read_text(errors="replace")[-4000:]
        for i in (0, 1)
    }
    return FAILED.format(what=what, **logs)


@contextlib.contextmanager
def _children(
    workdir: Path,
    mode: str,
    peer: str = "",
    jitlens: bool = True,
    end: str = "",
    gather: bool | None = None,
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Both processes, started together and always killed on the way out (``--gather`` where
    ``gather``, by default in the ``gather`` mode)."""
    gather = mode == "gather" if gather is None else gather
    port = _free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in (0, 1):
            with open(workdir / f"process-{i}.log", "wb") as log:
                run = ["-m", "jitlens", "run", "--json", REPORT_TEMPLATE]
                run += ["--gather", MERGED] if gather else []
                procs.append(
                    subprocess.Popen(
                        [sys.executable, *(run if jitlens else []), str(CHILD)],
                        cwd=workdir, env=_env(port, i, mode, peer, end),
                        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    )
                )  # fmt: skip
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)


def _wait(workdir: Path, mode: str, procs: list[subprocess.Popen[bytes]], deadline: float) -> None:
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pytest.fail(_failure(workdir, f"{mode}: the processes ran over {RUN_TIMEOUT} s"))
    codes = [proc.returncode for proc in procs]
    if codes != [0, 0]:
        pytest.fail(_failure(workdir, f"{mode}: exit statuses {codes}"))


def _merge(workdir: Path) -> MergedReport:
    paths = [workdir / REPORT_TEMPLATE.format(process_index=i) for i in (0, 1)]
    return merge_reports([load_report(p) for p in paths], sources=[p.name for p in paths])


class PeerRun:
    """A pair whose process 1 died or hung: process 0's exit status, log and folder."""

    def __init__(self, workdir: Path, status: int | None) -> None:
        self.workdir = workdir
        self.status = status
        self.log = (workdir / "process-0.log").read_text(errors="replace")


def _wait_for_process_0(
    workdir: Path, name: str, procs: list[subprocess.Popen[bytes]], deadline: float
) -> PeerRun:
    """Process 0's end (bounded: a hang fails the test); process 1 is then killed if alive."""
    try:
        procs[0].wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pytest.fail(_failure(workdir, f"{name}: process 0 ran over {RUN_TIMEOUT} s"))
    if procs[1].poll() is None:
        procs[1].kill()
    return PeerRun(workdir, procs[0].returncode)


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, MergedReport] | PeerRun]:
    """Every pair at once (their start-up is mostly waiting), each in its own directory. The
    ``same`` pair also ends by ``jax.distributed.shutdown()`` under ``--gather`` (the
    ``shutdown`` run): its reports are read the same either way, and a pair of JAX processes
    costs about 3 CPU seconds."""
    root = tmp_path_factory.mktemp("multiprocess")
    modes = ("same", "diverge", "gather")
    out: dict[str, tuple[Path, MergedReport] | PeerRun] = {}
    with contextlib.ExitStack() as stack:
        started = {}
        for mode in modes:
            (root / mode).mkdir()
            end, gather = ("shutdown", True) if mode == "same" else ("", None)
            started[mode] = stack.enter_context(
                _children(root / mode, mode, end=end, gather=gather)
            )
        for name, (peer, jitlens) in PEER_RUNS.items():
            (root / name).mkdir()
            started[name] = stack.enter_context(
                _children(root / name, "gather", peer=peer, jitlens=jitlens)
            )
        deadline = time.monotonic() + RUN_TIMEOUT
        for mode in modes:
            _wait(root / mode, mode, started[mode], deadline)
        for name in PEER_RUNS:
            out[name] = _wait_for_process_0(root / name, name, started[name], deadline)
    out.update({mode: (root / mode, _merge(root / mode)) for mode in modes})
    out["shutdown"] = out["same"]
    return out


def test_reports_carry_their_process_index(runs: dict[str, tuple[Path, MergedReport]]) -> None:
    for _, merged in (runs[mode] for mode in ("same", "diverge", "gather", "shutdown")):
        assert merged.process_indices == (0, 1)
        assert merged.process_count == 2
        assert merged.missing_processes == ()


def test_identical_processes_are_consistent(runs: dict[str, tuple[Path, MergedReport]]) -> None:
    _, merged = runs["same"]
    assert merged.consistent, str(merged)
    by_name = {f.name: f for f in merged.functions}
    assert {"normalize", "loss"} <= set(by_name)
    for name, calls in (("normalize", 3), ("loss", 3)):
        for rec in by_name[name].reports:
            assert rec is not None and (rec.calls, rec.traces) == (calls, 1)


def test_a_different_batch_shape_on_one_process_is_a_divergence(
    runs: dict[str, tuple[Path, MergedReport]],
) -> None:
    _, merged = runs["diverge"]
    assert not merged.consistent
    (div,) = merged.divergences
    assert (div.kind, div.name, div.processes, div.call_index) == ("traces", "normalize", (0, 1), 1)
    quiet, retraced = div.branches
    assert (quiet.processes, quiet.kind) == ((0,), "none")
    assert (retraced.processes, retraced.kind, retraced.call_index) == ((1,), "retrace", 1)
    assert "12" in retraced.signature
    shape = [r for r in retraced.reasons if r.kind == "shape"]
    assert shape and "12" in shape[0].after, retraced.reasons
    loss = next(f for f in merged.functions if f.name == "loss")
    assert not loss.diverged


def test_cli_merge_exit_status(
    runs: dict[str, tuple[Path, MergedReport]], capsys: pytest.CaptureFixture[str]
) -> None:
    for mode, expected in (("same", 0), ("diverge", 1)):
        workdir, _ = runs[mode]
        paths = [str(workdir / REPORT_TEMPLATE.format(process_index=i)) for i in (0, 1)]
        html = workdir / "merged.html"
        assert _merge_cli([*paths, "--html", str(html)]) == expected
        assert html.read_text().startswith("<!DOCTYPE html>")
    out = capsys.readouterr().out
    assert "consistent" in out and "DIVERGED" in out


def test_gather_writes_every_report_and_the_merged_view_on_process_0(
    runs: dict[str, tuple[Path, MergedReport]],
) -> None:
    workdir, merged = runs["gather"]
    logs = [(workdir / f"process-{i}.log").read_text() for i in (0, 1)]
    assert "wrote report-1.json" in logs[0] and "wrote merged.json" in logs[0], logs[0]
    # process 1 wrote its own report first, then sent it; the merged view is process 0's
    assert "wrote report-1.json" in logs[1] and "merged" not in logs[1], logs[1]
    view = json.loads((workdir / MERGED).read_text())
    assert view["consistent"] is True and [p["process_index"] for p in view["processes"]] == [0, 1]
    assert view["cache_differences"] == merged.to_dict()["cache_differences"]


def test_merge_flags_a_host_whose_persistent_cache_behaved_differently(
    runs: dict[str, tuple[Path, MergedReport]],
) -> None:
    workdir, merged = runs["gather"]
    assert merged.consistent, str(merged)  # the same programs ran: a cost, not a hang
    by_name = {f.name: f for f in merged.functions}
    p0, p1 = by_name["normalize"].reports
    assert p0 is not None and p1 is not None
    # JAX's own evidence: process 0 wrote entries into its folder, process 1 none
    assert any(n.startswith("jit_normalize-") for n in os.listdir(workdir / "cache-0"))
    assert not [n for n in os.listdir(workdir / "cache-1") if n.endswith("-cache")]
    assert (p0.persistent_cache_hits, p1.persistent_cache_hits) == (1, 0)
    assert [e.persistent_cache for e in p1.events] == ["not_written", "not_written"]
    diffs = {(d.kind, d.what): d for d in merged.cache_differences}
    flagged = diffs[("function", "normalize")]
    assert flagged.groups == ((0,), (1,))
    assert flagged.message == (
        "`normalize` compiled 1x, read 1x from the persistent cache on process 0; "
        "compiled 2x, read 0x from the persistent cache on process 1"
    )
    assert "share one cache" in flagged.fix
    assert ("setting", "jax_compilation_cache_dir") in diffs
    assert "persistent compilation cache: the processes behaved differently" in merged.to_text()


@pytest.mark.parametrize("peer", ["dead", "hung"])
def test_a_dead_or_hung_peer_costs_the_merged_view_its_report_not_process_0s(
    runs: dict[str, Any], peer: str
) -> None:
    """Issue 30: process 0 writes its own report, then the merged view marked incomplete."""
    run = runs[peer]
    own = load_report(run.workdir / REPORT_TEMPLATE.format(process_index=0))
    assert (own.process_index, own.process_count) == (0, 2)
    assert own.function("normalize").calls == 4, run.log  # 3 steps, then one after the clear
    if peer == "dead":  # killed from outside: its jitlens run built its report from the journal
        dead = load_report(run.workdir / REPORT_TEMPLATE.format(process_index=1))
        assert "ended by SIGKILL" in " ".join(dead.warnings), dead.warnings
        assert dead.function("normalize").calls == 4
    view = json.loads((run.workdir / MERGED).read_text())
    assert (view["complete"], view["consistent"], view["missing_processes"]) == (False, False, [1])
    assert view["missing_why"] == [
        f"no report from process 1 within {GATHER_TIMEOUT} s (did not publish its report)"
    ]
    assert [p["process_index"] for p in view["processes"]] == [0]
    # wrapped at the terminal's width (COLUMNS=80 under pytest-xdist): read as one text
    assert "INCOMPLETE, no report from process 1" in " ".join(run.log.split()), run.log
    assert run.log.index("wrote report-0.json") < run.log.index("wrote merged.json"), run.log


def test_a_peer_that_ends_by_os_exit_has_its_report_and_the_merged_view_says_it_is_missing(
    runs: dict[str, Any],
) -> None:
    """``os._exit`` runs no ``atexit`` hook, and jitlens catches none: the peer's own ``jitlens
    run`` builds its report from the journal; it never published one, so the merged view on
    process 0 is marked incomplete, naming it."""
    run = runs["exited"]
    peers = load_report(run.workdir / REPORT_TEMPLATE.format(process_index=1))
    assert "ended with status 7" in " ".join(peers.warnings), peers.warnings
    assert (peers.process_index, peers.process_count) == (1, 2)
    assert peers.function("normalize").calls == 4, run.log
    view = json.loads((run.workdir / MERGED).read_text())
    assert (view["complete"], view["missing_processes"]) == (False, [1]), run.log


def test_a_program_that_shuts_jax_distributed_down_keeps_each_process_s_own_report(
    runs: dict[str, Any],
) -> None:
    """``jax.distributed.shutdown()`` at the script's end: each process's report keeps its
    index (it was read while the job was up), and ``--gather`` says why it did not merge."""
    workdir, merged = runs["shutdown"]
    assert (merged.process_indices, merged.process_count) == ((0, 1), 2)
    assert not (workdir / MERGED).exists()
    for i in (0, 1):
        log = (workdir / f"process-{i}.log").read_text()
        assert "shut jax.distributed down itself" in log, log


def test_process_0_exits_as_it_would_under_plain_python(runs: dict[str, Any]) -> None:
    """JAX ends process 0 when its peer is gone (its shutdown barrier fails); jitlens keeps that."""
    plain, tracked = runs["dead-plain"], runs["dead"]
    assert plain.status is not None and plain.status != 0, plain.log  # JAX's own verdict
    assert tracked.status == plain.status, (tracked.log, plain.log)
