"""Run untrusted code in child processes with limits; believe only what arrives on a private pipe.

One child runs all items (JAX's import and compiles dominate, so sharing it
keeps a check fast); the parent times each item and, when an item hangs or
kills its process, records that item as failed, kills the whole process group
and starts a fresh child for the items left. The child's stdout and stderr are
drained and only their tails kept, so a solution that prints megabytes costs
nothing but time. This stops accidents and casual cheating (printing a fake
verdict, ``sys.exit``, ``os._exit``, forks, runaway memory); code running inside
the child can still lie about itself, so use OS isolation for hostile code.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

GIB = 1 << 30
#: How much of the child's stdout/stderr is kept for messages.
TAIL_BYTES = 4096
#: A report line longer than this was not written by the grader.
MAX_LINE = 16 << 20

TIMEOUT_MSG = "timed out after {seconds:g} s wall time (killed with its process group)"
LOAD_TIMEOUT_MSG = (
    "importing the solution (with JAX and the references) took longer than {seconds:g} s; "
    "the module must not run the work at import time"
)
TAMPERED_MSG = (
    "something other than the grader wrote to the grader's report pipe ({evidence}); "
    "the solution must not write to file descriptors it did not open"
)
EXIT_MSG = "the process exited with status {code} before reporting (os._exit or a native exit?)"
SIGNAL_MSGS: dict[str, str] = {
    "SIGXCPU": "the process hit its CPU-time limit of {cpu:g} s (SIGXCPU)",
    "SIGKILL": "the process was killed with SIGKILL (by the solution itself, or out of memory)",
    "SIGABRT": (
        "the process aborted (SIGABRT), e.g. an allocation failed under the "
        "{memory} address-space limit"
    ),
    "SIGSEGV": "the process crashed (SIGSEGV)",
}
OTHER_SIGNAL_MSG = "the process was killed by {name}"
NOT_RUN_MSG = "not run: {why}"
LOAD_RAISED_MSG = "importing it raised {type}: {message}"
LOAD_DIED_MSG = "while importing it, {why}"

_TIMEOUT, _EXIT = "timeout", "exit"


@dataclasses.dataclass(frozen=True)
class Limits:
    """Limits of one child: wall time per item, CPU time, address space."""

    timeout: float = 60.0
    load_timeout: float = 60.0
    cpu_seconds: float | None = None
    memory_bytes: int | None = 4 * GIB

    def item_cpu(self, timeout: float) -> float:
        return self.cpu_seconds if self.cpu_seconds is not None else 2.0 * timeout


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What became of one item: ``ok`` (with the child's result) or why not."""

    status: str  # "ok" | "timeout" | "died" | "tampered" | "not_run"
    result: Mapping[str, Any]
    detail: str = ""
    seconds: float = 0.0


@dataclasses.dataclass
class SandboxRun:
    """Everything the children reported, keyed by item index."""

    load_error: str | None = None
    outcomes: dict[int, Outcome] = dataclasses.field(default_factory=dict)
    references: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    processes: int = 0
    output_bytes: int = 0


#: Variables the child keeps (the solution is untrusted: no tokens, no credentials).
KEPT_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES")
#: Prefixes of the variables the child keeps: JAX/XLA settings, locale, jitlens' own.
KEPT_PREFIXES = ("JAX_", "XLA_", "LC_", "JITLENS_", "TF_CPP_", "NVIDIA_")


def child_environment(home: str) -> dict[str, str]:
    """The child's environment: an allow-list of the grader's, ``HOME`` a fresh folder.

    Cloud, W&B and Hugging Face tokens (and anything else not listed) stay
    with the grader; ``PYTHONPATH`` is only what it takes to import jitlens.
    """
    env = {
        k: v for k, v in os.environ.items() if k in KEPT_VARIABLES or k.startswith(KEPT_PREFIXES)
    }
    env.pop("JITLENS", None)  # the child tracks on its own terms, never by autostart
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env.update(HOME=home, TMPDIR=home, PYTHONPATH=root)
    return env


def describe_status(returncode: int, limits: Limits, cpu: float) -> str:
    if returncode >= 0:
        return EXIT_MSG.format(code=returncode)
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    memory = f"{limits.memory_bytes / GIB:g} GiB" if limits.memory_bytes else "no"
    template = SIGNAL_MSGS.get(name, OTHER_SIGNAL_MSG)
    return template.format(cpu=cpu, memory=memory, name=name)


class _Child:
    """One child process, its pipes and its process group."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.token = secrets.token_hex(16)
        cfg_r, cfg_w = os.pipe()
        self.report_fd, rep_w = os.pipe()
        self.home = tempfile.mkdtemp(prefix="jitlens-check-")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jitlens._exercise.child", str(cfg_r), str(rep_w)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(cfg_r, rep_w),
                start_new_session=True,
                env=child_environment(self.home),
                cwd=self.home,
            )
        finally:
            os.close(cfg_r)
            os.close(rep_w)
        with contextlib.suppress(BrokenPipeError), os.fdopen(cfg_w, "wb") as fh:
            fh.write(json.dumps({**config, "token": self.token}).encode())
        self.sel = selectors.DefaultSelector()
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(self.proc.pid)
            self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for name, fd in (("report", self.report_fd), ("stdout", self.proc.stdout.fileno())):
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ, name)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.sel.register(self.proc.stderr.fileno(), selectors.EVENT_READ, "stderr")
        self.buffer = bytearray()
        self.lines: collections.deque[bytes] = collections.deque()
        self.stderr_tail = b""
        self.output_bytes = 0
        self.exited = False
        self.closed = False

    def _read(self, fd: int, name: str) -> int:
        """Read what is there: the byte count, 0 when nothing is (yet) there or at the end."""
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return 0
        except OSError:
            chunk = b""
        if not chunk:
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(fd)
            return 0
        if name == "report":
            *complete, rest = chunk.split(b"\n")
            if complete:  # only new bytes are searched: a flood without newlines stays linear
                self.lines.append(bytes(self.buffer) + complete[0])
                self.lines.extend(complete[1:])
                self.buffer = bytearray(rest)
            else:
                self.buffer += rest
            if len(self.buffer) > MAX_LINE:
                self.lines.append(b"<an unterminated line of more than 16 MiB>")
                self.buffer.clear()
        else:
            self.output_bytes += len(chunk)
            if name == "stderr":
                self.stderr_tail = (self.stderr_tail + chunk)[-TAIL_BYTES:]
        return len(chunk)

    def _drain(self) -> None:
        """Read what the pipes still hold, without waiting: a grandchild may keep them open."""
        for key in list(self.sel.get_map().values()):
            if key.data != "exit":
                for _ in range(MAX_LINE >> 16):
                    if not self._read(key.fd, key.data):
                        break

    def next_message(self, deadline: float) -> dict[str, Any] | str:
        """The next message, ``"timeout"`` at the deadline, ``"exit"`` once it died."""
        while True:
            if self.lines:
                return self._parse(self.lines.popleft())
            if self.exited:
                return _EXIT
            left = deadline - time.monotonic()
            if left <= 0:
                return _TIMEOUT
            wait = left if self.pidfd is not None else min(left, 0.05)
            for key, _ in self.sel.select(wait):
                if key.data == "exit":
                    self.exited = True
                elif key.fd in self.sel.get_map():
                    self._read(key.fd, key.data)
            if self.pidfd is None and self.proc.poll() is not None:
                self.exited = True
            if self.exited:
                self._drain()

    def _parse(self, line: bytes) -> dict[str, Any]:
        try:
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.pop("token", None) == self.token:
                return msg
            evidence = "a message without the session token"
        except ValueError:
            evidence = f"{len(line)} bytes that are not a grader message: {line[:60]!r}"
        return {"type": "tampered", "evidence": evidence}

    def stderr_lines(self, n: int = 3) -> str:
        lines = self.stderr_tail.decode(errors="replace").strip().splitlines()
        return " | ".join(line.strip() for line in lines[-n:])

    def kill(self) -> int:
        """Kill the whole process group (grandchildren included) and reap the child."""
        if self.closed:
            return self.proc.wait()
        self.closed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait()
        self._drain()
        self.sel.close()
        for fd in (self.pidfd, self.report_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        shutil.rmtree(self.home, ignore_errors=True)
        return code


def run(
    solution: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    limits: Limits,
    references: Mapping[int, dict[str, Any]] | None = None,
) -> SandboxRun:
    """Run ``items`` (each with ``index`` and ``timeout``) in as few children as possible.

    ``references`` already known (by item index) are not computed again.
    """
    out = SandboxRun(references=dict(references or {}))
    pending = [dict(item) for item in items]
    for item in pending:
        item.setdefault("cpu_seconds", limits.item_cpu(item["timeout"]))
    while pending:
        config = {
            "solution": dict(solution),
            "items": pending,
            "sys_path": [p or os.getcwd() for p in sys.path],  # the child runs elsewhere
            "have_references": sorted(out.references),
            "limits": {
                "memory_bytes": limits.memory_bytes,
                "parent_pid": os.getpid(),
                "load_cpu_seconds": 2.0 * limits.load_timeout,
            },
        }
        child = _Child(config)
        out.processes += 1
        try:
            stop = _drive(child, pending, limits, out)
        finally:
            child.kill()
            out.output_bytes += child.output_bytes
        if stop:
            break
    return out


def _drive(child: _Child, pending: list[dict[str, Any]], limits: Limits, out: SandboxRun) -> bool:
    """Follow one child until it finishes, dies or hangs; True when nothing more can run."""
    deadline = time.monotonic() + limits.load_timeout
    loaded, started = False, time.monotonic()
    first = out.processes == 1

    def give_up_loading(why: str) -> bool:
        if first:
            out.load_error = why
        else:
            for item in pending:
                out.outcomes[item["index"]] = Outcome("not_run", {}, NOT_RUN_MSG.format(why=why))
            pending.clear()
        return True

    def fail_current(status: str, why: str) -> bool:
        item = pending.pop(0)
        out.outcomes[item["index"]] = Outcome(status, {}, why, time.monotonic() - started)
        return not pending

    while True:
        msg = child.next_message(deadline)
        if msg == _TIMEOUT:
            if not loaded:
                return give_up_loading(LOAD_TIMEOUT_MSG.format(seconds=limits.load_timeout))
            return fail_current("timeout", TIMEOUT_MSG.format(seconds=pending[0]["timeout"]))
        if msg == _EXIT:
            code = child.kill()
            cpu = pending[0]["cpu_seconds"] if loaded else 2.0 * limits.load_timeout
            why = describe_status(code, limits, cpu)
            if child.stderr_lines():
                why += f"; stderr ends: {child.stderr_lines()}"
            if not loaded:
                return give_up_loading(LOAD_DIED_MSG.format(why=why))
            return fail_current("died", why)
        assert isinstance(msg, dict)
        kind = msg.get("type")
        if kind == "tampered":
            why = TAMPERED_MSG.format(evidence=msg["evidence"])
            return give_up_loading(why) if not loaded else fail_current("tampered", why)
        if kind in ("ready", "reference"):
            # JAX's import and each reference are the grader's work: each restarts the clock.
            deadline = time.monotonic() + limits.load_timeout
            if kind == "reference":
                out.references[msg.pop("index")] = msg
        elif kind == "load_error":
            err = msg["error"]
            if not err["type"]:
                return give_up_loading(err["message"])
            why = LOAD_RAISED_MSG.format(type=err["type"], message=err["message"])
            return give_up_loading(f"{why}\n{err['traceback'].rstrip()}")
        elif kind in ("loaded", "result"):
            if kind == "result":
                item = pending.pop(0)
                out.outcomes[item["index"]] = Outcome("ok", msg, "", time.monotonic() - started)
                child.stderr_tail = b""  # what a later death shows is that case's stderr
            loaded, started = True, time.monotonic()
            if not pending:
                return True
            deadline = started + pending[0]["timeout"]
        elif kind == "done":
            for item in pending:
                out.outcomes[item["index"]] = Outcome("not_run", {}, "the child stopped early")
            pending.clear()
            return True
