"""The self-check: can jitlens count and explain on the installed JAX/Flax?

Two halves, neither of which runs anything in the program's process:

* **Once per set of installed versions, out of process.** The canary
  (:mod:`.canary`: jitted functions whose figures are checked against counters
  in their bodies) runs in a child process, on the CPU, at low priority, and
  its verdict is kept in jitlens' cache folder under a key made of the
  versions of Python, jax, jaxlib, flax, equinox and jitlens itself. The
  program never sees it: not its monitoring listeners, its compile log, its
  profiler, its ``jax.jit`` patches, its threads or its ``sys.modules``. A
  later run with the same versions reads the verdict (a file read).
* **Always, in process, from the program's own events.** :func:`~jitlens._compat.probe.probe`
  looks up each private piece; while the program runs, the engine checks that
  what JAX announces fits together (:func:`runtime_problem`): a trace whose
  frame cannot be read, a compile of a function no trace announced, a
  front-end's trace that its adapter recognises but cannot unpack. Each such
  problem turns the figures it affects unknown, with one warning.

On a problem, one :class:`~jitlens.JitlensCompatWarning` names the versions and
what is unavailable; figures jitlens cannot measure become unknown (``null``
in JSON, ``?`` in text) and compile budgets raise instead of passing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import warnings
from typing import Any

from .. import _compat, _config
from .._compat.probe import (
    COMPILE_COUNTS,
    TRACE_COUNTS,
    Capabilities,
    installed_versions,
    probe,
    tested_range,
)
from .._errors import JitlensCompatWarning
from .state import log

COMPAT_WARNING = (
    "jitlens: on jax {jax} / flax {flax}, {what}{untested}. What jitlens cannot measure is "
    "shown as '?' (null in JSON), and compile budgets raise instead of passing. For every "
    "figure, use a tested pair: {tested}."
)
UNTESTED_WARNING = (
    "jitlens: {why}; jitlens' self-check passed, but figures on untested versions deserve "
    "a second look (see Supported versions in jitlens' documentation: docs/reference/versions.md)."
)
CANNOT_COUNT = (
    "{source}: cannot count traces on jax {jax} / flax {flax}: {why}. A compile budget "
    "that cannot count would pass silently, so it refuses to run. Use a tested pair "
    "({tested}), or drop the budget on this environment."
)
#: Seconds the canary's child may take (it usually takes 2-4 s, most of it importing JAX).
CANARY_TIMEOUT = 120.0
#: Compile budgets (guards, scopes, the pytest marker) open now.
BUDGETS_OPEN = [0]
#: Set in the canary's own process: it must not start another canary.
IN_CANARY = [False]


@dataclasses.dataclass(frozen=True)
class SelfCheck:
    """What the self-check found: the probe, the canary's verdict, the program's own events."""

    capabilities: Capabilities
    #: Problems found by the canary (empty: it passed, or it has not reported yet).
    canary_problems: tuple[str, ...] = ()
    canary_ran: bool = False
    #: Problems seen in the program's own events (:func:`runtime_problem`).
    runtime_problems: tuple[str, ...] = ()

    @property
    def traces_known(self) -> bool:
        return (
            self.capabilities.can_count_traces
            and not self.canary_problems
            and not self.runtime_problems
        )

    @property
    def compiles_known(self) -> bool:
        return not any(loss == COMPILE_COUNTS for _p, loss in self.capabilities.missing)

    def problems(self) -> list[str]:
        out = [
            f"{piece} is missing ({loss} unavailable)" for piece, loss in self.capabilities.missing
        ]
        return out + list(self.canary_problems) + list(self.runtime_problems)


_LOCK = threading.RLock()
_STATE: dict[str, Any] = {
    "caps": None,  # the probe's Capabilities, once run
    "canary": None,  # (problems, ran) once the verdict is known
    "child": None,  # the canary's child process while it runs
    "runtime": (),  # problems seen in the program's own events
    "warned": frozenset(),  # problems already announced
}


# ------------------------------------------------------------------ the verdict's cache


def _cache_dir() -> pathlib.Path | None:
    configured = _config.get("cache_dir")
    if configured:
        return pathlib.Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "jitlens"


def _jitlens_fingerprint() -> str:
    """jitlens' own code, by file sizes and times: an edited jitlens checks again."""
    root = pathlib.Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"{p.relative_to(root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]


def verdict_key() -> str:
    """The cache key of the canary's verdict: every version it depends on."""
    parts = {**installed_versions(), "jitlens_code": _jitlens_fingerprint()}
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _verdict_path() -> pathlib.Path | None:
    folder = _cache_dir()
    return folder / f"selfcheck-{verdict_key()}.json" if folder is not None else None


def _read_cached(path: pathlib.Path | None = None) -> tuple[str, ...] | None:
    path = path if path is not None else _verdict_path()
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
        problems = data["problems"]
        if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
            return None
        return tuple(problems)
    except Exception:
        return None


def write_verdict(problems: tuple[str, ...]) -> None:
    """Keep the canary's verdict for these versions (called in the canary's own process)."""
    _write_cached(problems)


def _write_cached(problems: tuple[str, ...]) -> None:
    path = _verdict_path()
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".selfcheck-", suffix=".tmp")
        with os.fdopen(fd, "w") as out:
            json.dump({"problems": list(problems), "versions": installed_versions()}, out)
        os.replace(tmp, path)
    except Exception as exc:  # a read-only home: the check runs again next time
        log.debug("jitlens: cannot keep the self-check's verdict: %s", exc)


# ------------------------------------------------------------------ the child


def _child_env() -> dict[str, str]:
    """The program's environment minus what would make the child visible or heavy."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JITLENS", "JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE"))
        and k not in ("JAX_LOG_COMPILES", "JAX_EXPLAIN_CACHE_MISSES", "JAX_TRACEBACK_FILTERING")
    }
    env["JAX_PLATFORMS"] = "cpu"  # never the program's accelerators
    env["JITLENS_SELF_CHECK"] = "child"
    folder = _cache_dir()
    if folder is not None:  # where the parent will look for the verdict
        env["JITLENS_CACHE_DIR"] = str(folder)
    src = str(pathlib.Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    return env


class _Child:
    """The canary's process: it writes its verdict to the cache folder itself.

    Started with ``os.posix_spawn`` where there is one (no ``Popen`` object: a
    program that ends before the canary does leaves it running, undisturbed, to
    keep its verdict for the next run, with no "still running" warning), else
    with ``subprocess.Popen``.
    """

    def __init__(self) -> None:
        import time

        cmd = [sys.executable, "-m", "jitlens._track.canary"]
        env = _child_env()
        #: Where the child keeps its verdict (HOME may change before it is read: pytester).
        self.verdict = _verdict_path()
        self.started = time.monotonic()
        self.proc: Any = None
        self.pid: int | None = None
        if hasattr(os, "posix_spawn"):
            devnull = os.open(os.devnull, os.O_RDWR)
            try:
                actions = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
                self.pid = os.posix_spawn(
                    sys.executable, cmd, env, file_actions=actions, setsid=True
                )
            finally:
                os.close(devnull)
        else:  # pragma: no cover - Windows
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=tempfile.gettempdir(),
            )

    def exit_status(self) -> int | None:
        """The child's exit status once it ended, else None (reaped, never a zombie)."""
        if self.proc is not None:
            return self.proc.poll()  # pragma: no cover - Windows
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)  # type: ignore[arg-type]
        except ChildProcessError:  # reaped by someone else (a SIGCHLD handler)
            return 0
        return os.waitstatus_to_exitcode(status) if pid else None

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            if self.proc is not None:
                self.proc.kill()  # pragma: no cover - Windows
            elif self.pid is not None:
                os.kill(self.pid, 9)


def _start_child() -> _Child:
    return _Child()


def _collect(child: _Child, timeout: float | None) -> tuple[str, ...] | None:
    """The child's problems, read from the verdict it kept; None while it still runs."""
    import time

    deadline = time.monotonic() + (timeout or 0)
    while True:
        status = child.exit_status()
        if status is not None:
            kept = _read_cached(child.verdict)
            if kept is not None:
                return kept
            return (f"the canary's process failed (exit {status})",)
        if time.monotonic() >= deadline:
            if timeout:
                child.kill()
                child.exit_status()
                return (f"the canary did not finish within {timeout:.0f} s",)
            return None
        time.sleep(0.02)


def _poll(wait: bool) -> None:
    """Take the child's verdict if it is there (``wait``: until it is)."""
    child = _STATE["child"]
    if child is None:
        return
    problems = _collect(child, CANARY_TIMEOUT if wait else 0)
    if problems is None:
        return
    _STATE["child"] = None
    _STATE["canary"] = (problems, True)
    _warn()


def _skip_canary() -> bool:
    raw = os.environ.get("JITLENS_SELF_CHECK", "1").strip().lower()
    return raw in ("0", "false", "no", "off", "child") or IN_CANARY[0]


# ------------------------------------------------------------------ public


def run(wait: bool = False) -> SelfCheck:
    """The self-check: probe now; the canary's verdict from the cache, or its child started.

    ``wait``: block until the verdict is known (compile budgets, which must not
    pass on counts nobody checked).
    """
    with _LOCK:
        if _STATE["caps"] is None:
            _STATE["caps"] = probe()
            caps = _STATE["caps"]
            if _skip_canary() or not caps.can_count_traces:
                _STATE["canary"] = ((), False)
            else:
                cached = _read_cached()
                if cached is not None:
                    _STATE["canary"] = (cached, True)
                else:
                    try:
                        _STATE["child"] = _start_child()
                    except Exception as exc:
                        _STATE["canary"] = ((f"the canary could not start ({exc})",), True)
            _warn()
        elif _STATE["caps"].missing != probe().missing:  # a library imported since
            _STATE["caps"] = probe()
            _warn()
        _poll(wait)
        return _result()


def _result() -> SelfCheck:
    canary = _STATE["canary"] or ((), False)
    return SelfCheck(_STATE["caps"], canary[0], canary[1], _STATE["runtime"])


def result(wait: bool = False) -> SelfCheck | None:
    """The self-check's result so far, if it ran in this process (``wait``: for the canary)."""
    if _STATE["caps"] is None:
        return None
    if _STATE["child"] is not None:
        with _LOCK:
            _poll(wait)
    return _result()


def pending() -> bool:
    """Is the canary's verdict still to come?"""
    return _STATE["child"] is not None


def runtime_problem(text: str) -> None:
    """The program's own events do not fit together: ``text`` says what jitlens cannot see.

    Figures that depend on it become unknown from now on (and were suspect
    before), compile budgets raise, and one warning says so.
    """
    with _LOCK:
        if text in _STATE["runtime"]:
            return
        _STATE["runtime"] = (*_STATE["runtime"], text)
        if _STATE["caps"] is None:
            _STATE["caps"] = probe()
    _warn()


def _warn() -> None:
    check = _result()
    caps = check.capabilities
    problems = check.problems()
    if problems:
        text = COMPAT_WARNING.format(
            jax=caps.jax_version,
            flax=caps.flax_version,
            what="; ".join(problems),
            untested=f" — {caps.untested}" if caps.untested else "",
            tested=tested_range(),
        )
    elif caps.untested and check.canary_ran:
        text = UNTESTED_WARNING.format(why=caps.untested)
    else:
        return
    key = frozenset(problems) | {caps.untested or ""}
    if key <= _STATE["warned"]:
        return
    _STATE["warned"] = _STATE["warned"] | key
    try:
        warnings.warn(text, JitlensCompatWarning, stacklevel=_compat.user_stacklevel())
    except Exception:  # -W error: say it, don't raise it into the program
        log.warning(text)


def counting_problem(wait: bool = True) -> str | None:
    """Why traces cannot be counted here, or None when they can."""
    check = run(wait=wait)
    if check.traces_known:
        return None
    if not check.capabilities.can_count_traces:
        missing = [p for p, loss in check.capabilities.missing if TRACE_COUNTS in loss]
        return f"{', '.join(missing)} is missing"
    return "; ".join((*check.canary_problems, *check.runtime_problems))
