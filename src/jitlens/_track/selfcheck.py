"""The self-check: can jitlens count and explain on the installed JAX/Flax?

Two halves; nothing of either runs as a process of the program:

* **Once per set of installed versions, never in a program.** The canary
  (:mod:`.canary`: jitted functions whose figures are checked against counters
  in their bodies) runs in ``jitlens selfcheck`` (a process of its own, started
  by the user or CI, never by a tracked program: a child of the program is
  visible to it, to its ``os.wait()``, its SIGCHLD handler, its ``psutil``
  leak checks, and inherits its environment and folder). Its verdict is kept
  in jitlens' cache folder under a key made of the versions of Python, jax,
  jaxlib, flax, equinox and jitlens itself; a tracked run with the same
  versions reads it as untrusted input (a regular file, bounded, printable).
  Without one, the in-process checks below stand alone (round 3 measured them
  catching 12 of 12 injected faults).
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

import hashlib
import json
import os
import pathlib
import tempfile
import threading
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
from .._record import record
from . import sink
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
UNCHECKED_WARNING = (
    "jitlens: {why}, and no self-check has run on them: run `jitlens selfcheck` once to check "
    "that jitlens counts right here (see docs/reference/versions.md)."
)
CANNOT_COUNT = (
    "{source}: cannot count traces on jax {jax} / flax {flax}: {why}. A compile budget "
    "that cannot count would pass silently, so it refuses to run. Use a tested pair "
    "({tested}), or drop the budget on this environment."
)
#: The largest verdict file read (a real one is a few hundred bytes).
VERDICT_LIMIT = 64 * 1024
#: Compile budgets (guards, scopes, the pytest marker) open now.
BUDGETS_OPEN = [0]


@record
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
    """jitlens' own code, by file sizes and times: an edited jitlens checks again.

    Read at every tracked start: ``os.walk`` and ``os.stat``, not ``pathlib``'s
    ``rglob`` (a few ms more per start, for the same key).
    """
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        rel = os.path.relpath(folder, root)
        for name in files:
            if name.endswith(".py"):
                found.append((name if rel == "." else os.path.join(rel, name), folder, name))
    h = hashlib.sha256()
    for relative, folder, name in sorted(found, key=lambda f: f[0].split(os.sep)):
        try:
            st = os.stat(os.path.join(folder, name))
        except OSError:
            continue
        h.update(f"{relative}:{st.st_size}:{st.st_mtime_ns};".encode())
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
    """The kept verdict, read as untrusted input (``None``: none, or not one jitlens would write).

    Anyone who can write to the cache folder can put a file there: only a
    regular file (a FIFO would block every tracked run) of bounded size whose
    problems are a short list of short printable lines is taken; anything else
    is ignored, never printed.
    """
    from .._core.files import read_regular

    if path is None and not _any_verdict():
        return None  # jitlens selfcheck never ran here: no key to compute (os.walk, metadata)
    path = path if path is not None else _verdict_path()
    if path is None:
        return None
    try:
        data = json.loads(read_regular(path, limit=VERDICT_LIMIT, what="a self-check verdict"))
        problems = data["problems"]
    except Exception:
        return None
    if not isinstance(problems, list) or len(problems) > 20:
        return None
    for p in problems:
        if not isinstance(p, str) or len(p) > 500 or not p.isprintable():
            return None
    return tuple(problems)


def _any_verdict() -> bool:
    """Is any verdict kept in the cache folder (whatever its versions)?"""
    folder = _cache_dir()
    try:
        with os.scandir(folder) as entries:
            return any(e.name.startswith("selfcheck-") for e in entries)
    except (OSError, TypeError):
        return False


def write_verdict(problems: tuple[str, ...]) -> str | None:
    """Keep the verdict in the cache folder; returns why it could not be kept (``None``: kept)."""
    path = _verdict_path()
    if path is None:
        return "no cache folder"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".selfcheck-", suffix=".tmp")
        with os.fdopen(fd, "w") as out:
            json.dump({"problems": list(problems), "versions": installed_versions()}, out)
        os.replace(tmp, path)
    except Exception as exc:  # a read-only home: the check runs again next time
        log.debug("jitlens: cannot keep the self-check's verdict: %s", exc)
        return f"{path.parent}: {getattr(exc, 'strerror', None) or type(exc).__name__}"
    return None


def _skip_canary() -> bool:
    raw = os.environ.get("JITLENS_SELF_CHECK", "1").strip().lower()
    return raw in ("0", "false", "no", "off")


# ------------------------------------------------------------------ public


def run(wait: bool = False) -> SelfCheck:
    """The self-check: probe now, and read the canary's verdict if ``jitlens selfcheck`` kept one.

    Nothing is started: the canary runs only in ``jitlens selfcheck`` (and CI),
    never as a process of the program. ``wait`` is kept for callers that must
    not pass on counts nobody checked (compile budgets): the verdict is a file
    read, there is nothing to wait for.
    """
    with _LOCK:
        if _STATE["caps"] is None:
            _STATE["caps"] = probe()
            caps = _STATE["caps"]
            cached = None if _skip_canary() or not caps.can_count_traces else _read_cached()
            _STATE["canary"] = (cached, True) if cached is not None else ((), False)
            _warn()
        elif _STATE["caps"].missing != probe().missing:  # a library imported since
            _STATE["caps"] = probe()
            _warn()
        return _result()


def _result() -> SelfCheck:
    canary = _STATE["canary"] or ((), False)
    return SelfCheck(_STATE["caps"], canary[0], canary[1], _STATE["runtime"])


def result(wait: bool = False) -> SelfCheck | None:
    """The self-check's result so far, if it ran in this process."""
    if _STATE["caps"] is None:
        return None
    return _result()


def pending() -> bool:
    """Is a verdict still to come? Never: nothing runs in the background."""
    return False


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
    elif caps.untested:
        template = UNTESTED_WARNING if check.canary_ran else UNCHECKED_WARNING
        text = template.format(why=caps.untested)
    else:
        return
    key = frozenset(problems) | {caps.untested or ""}
    if key <= _STATE["warned"]:
        return
    _STATE["warned"] = _STATE["warned"] | key
    sink.warn(text, JitlensCompatWarning, stacklevel=_compat.user_stacklevel())


def counting_problem(wait: bool = True) -> str | None:
    """Why traces cannot be counted here, or None when they can."""
    check = run(wait=wait)
    if check.traces_known:
        return None
    if not check.capabilities.can_count_traces:
        missing = [p for p, loss in check.capabilities.missing if TRACE_COUNTS in loss]
        return f"{', '.join(missing)} is missing"
    return "; ".join((*check.canary_problems, *check.runtime_problems))


def verdict_file() -> pathlib.Path | None:
    """Where the verdict for the installed versions is kept."""
    return _verdict_path()
