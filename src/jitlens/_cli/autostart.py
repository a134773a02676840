"""``JITLENS=1 python train.py``: track and explain retraces with no code change.

Imported at interpreter start-up by the ``jitlens_autostart.pth`` file that
installing jitlens puts in site-packages, only when ``JITLENS`` is set. It
imports nothing heavy: it arms an import hook, and tracking starts when the
program itself imports ``jax`` (so ``pip``, shells and every Python process
that never touches JAX pay nothing and print nothing; a venv with system
site-packages gets its base ``sys.path`` before JAX is imported). Only the
main program is tracked: processes it starts (``multiprocessing`` spawn
workers, ``subprocess`` Pythons) inherit ``JITLENS`` but are left alone
unless ``JITLENS_CHILDREN=1``. Retraces are logged (logger ``jitlens``) as
they happen, the summary goes to stderr at exit when something was jitted,
and ``JITLENS_REPORT`` / ``JITLENS_HTML`` name report files to write.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.abc
import importlib.machinery
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any

#: Set in the environment by the tracked program; its children see another pid.
MAIN_PID = "JITLENS_MAIN_PID"
CHILDREN = "JITLENS_CHILDREN"
_STARTED = [False]
_LOCK = threading.Lock()


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


class _JaxWatcher(importlib.abc.MetaPathFinder):
    """Starts tracking right after the program's own ``import jax`` finishes."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "jax" or _STARTED[0]:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            _remove_watcher()
            _start()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


_WATCHER = _JaxWatcher()


def _remove_watcher() -> None:
    try:
        sys.meta_path.remove(_WATCHER)
    except ValueError:
        pass


def _arm() -> None:
    """At start-up: decide whether this process is tracked, and wait for ``import jax``."""
    from .. import _config
    from .._errors import ConfigError

    try:
        if not _config.get("enabled"):
            return
        _config.get("log_level")
    except ConfigError as exc:
        _warn(f"{exc}; not tracking")
        return
    owner = os.environ.get(MAIN_PID)
    if owner and owner != str(os.getpid()) and not _truthy(os.environ.get(CHILDREN)):
        return  # a child of the tracked program
    os.environ[MAIN_PID] = str(os.getpid())
    _check_report_paths()
    if "jax" in sys.modules:
        _start()
    else:
        sys.meta_path.insert(0, _WATCHER)


class _Args:
    """The report paths of the environment, shaped like ``jitlens run``'s options."""

    def __init__(self, cwd: str | None = None) -> None:
        from .. import _config
        from .outputs import anchor_outputs

        self.json = _config.get("report") or None
        self.html = _config.get("html") or None
        self.trace = None
        anchor_outputs(self, cwd)  # relative paths: where the program started


#: How the environment's report paths are named in messages.
_ENV_NAMES = {"json": "JITLENS_REPORT", "html": "JITLENS_HTML"}


def _check_report_paths() -> None:
    """A bad ``JITLENS_REPORT`` / ``JITLENS_HTML`` stops the program before it runs (exit 2)."""
    from .._render.outputs import OutputError, check_outputs
    from .outputs import outputs_of

    try:
        outputs = outputs_of(_Args())
        script = (getattr(sys, "argv", None) or [""])[0]
        inputs = [(script, f"the script {script}")] if os.path.isfile(script) else []
        named = [dataclasses.replace(o, label=f"{_ENV_NAMES[o.kind]}={o.given}") for o in outputs]
        check_outputs(named, inputs)
    except OutputError as exc:
        _warn(str(exc))
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(2)
    except Exception as exc:  # never break the program over a check
        _warn(f"could not check the report paths ({type(exc).__name__}: {exc})")


def _warn(text: str) -> None:
    try:
        sys.stderr.write(f"jitlens: {text}\n")
    except Exception:
        pass


def _start() -> None:
    with _LOCK:
        if _STARTED[0]:
            return
        _STARTED[0] = True
    try:
        from .. import _config
        from .._errors import ConfigError

        try:
            if not _config.get("enabled"):
                return
            level = _config.get("log_level")
        except ConfigError as exc:
            _warn(f"{exc}; not tracking")
            return
        from .._track.tracker import Tracker

        log = logging.getLogger("jitlens")
        if level != "off" and not log.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(message)s"))
            log.addHandler(handler)
            log.setLevel(getattr(logging, level.upper()))
            log.propagate = False
        tracker = Tracker(include_internal=_config.get("include_internal"), timeline=True)
        tracker.start()
        atexit.register(_finish, tracker, os.getpid(), os.getcwd())
    except Exception as exc:  # never break the program that imported jax
        _warn(f"could not start tracking ({type(exc).__name__}: {exc}); your program is unaffected")


def _finish(tracker: Any, pid: int, cwd: str | None = None) -> None:
    if os.getpid() != pid:  # a forked child running atexit: not the tracked program
        return
    try:
        from .._render.text import render_text
        from .outputs import write_outputs

        tracker.stop()
        report = tracker.report()
        args = _Args(cwd)
        written = write_outputs(report, args)
        if report.functions and not getattr(sys.stderr, "closed", False):
            sys.stderr.write("\n" + render_text(report) + "\n")
        for path in written:
            _warn(f"wrote {path}")
    except Exception as exc:
        _warn(f"could not write the report ({type(exc).__name__}: {exc})")


_arm()
