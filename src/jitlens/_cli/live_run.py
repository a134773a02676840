"""``jitlens run``'s live options: retraces on stderr as they happen, and the fail-fast stance.

Kept apart from ``run.py`` (which hands the program to ``python``): this
module adds ``--fail-on-retrace`` and ``--max-traces N``, and while the
program runs it

* shows the ``jitlens`` logger's records on the terminal (each function's first
  retraces explained in full, then folded: ``_track/live.py``), unless
  ``--quiet`` or ``JITLENS_LOG=off``, or the program's own handler is already
  on that logger;
* opens the program-wide budget (``_track/scopes.ProgramScope``): the first
  retrace over it raises :class:`jitlens.RecompileError` at the user's call,
  before JAX traces again, naming the function, the path that changed and a
  fix. The program dies of it (exit 1, the reports written at exit). A
  program that catches it and goes on to exit 0 is ended with status 1; a
  status it chose itself (an uncaught exception, ``sys.exit(5)``, a signal,
  ``os._exit``) stands, as under ``python``.

``atexit`` cannot see the status a ``SystemExit`` carries (Python has taken it
before the hooks run), so while a budget is open ``sys.exit`` (and the
``exit()`` / ``quit()`` of scripts) is the program's own function behind a
recorder that notes the status it was given; a ``raise SystemExit(5)`` written
out makes a subclass of ``SystemExit`` that notes its status when Python drops it,
after the program's last frame and before the exit hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    import logging

#: Options of this module that take a value (for ``run.split_argv``).
VALUE_OPTIONS = ("--max-traces",)
USAGE = "[--fail-on-retrace] [--max-traces N]"
SWALLOWED = (
    "jitlens run: the program caught jitlens' RecompileError and went on; "
    "exiting 1 as {flag} asks ({n} violation(s), the first above in the log)"
)
OWN_STATUS = (
    "jitlens run: the program caught jitlens' RecompileError ({n} violation(s), the first above "
    "in the log) and chose its own exit status, {status}: it stands"
)


def exit_status(code: object) -> int:
    """The status a process exits with after ``sys.exit(code)``, as Python's runner computes it
    (``_Py_HandleSystemExit`` in 3.11 to 3.13): ``None`` is 0; an integer is taken as a C
    ``long long`` (one out of that range is -1) and cut to an ``int``, of which the parent sees
    the low 8 bits (``sys.exit(256)`` and ``sys.exit(2**40)`` exit 0, ``sys.exit(-1)`` and
    ``sys.exit(2**70)`` exit 255); anything else is printed and exits 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        value = int.__index__(code)  # an int subclass's own operators are not Python's exit's
        return value & 0xFF if -(2**63) <= value < 2**63 else 255
    return 1


def add_live_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fail-on-retrace",
        action="store_true",
        help="stop the program at the first retrace of any of its jitted functions "
        "(RecompileError at the call, with what changed and a fix; reports still written)",
    )
    p.add_argument(
        "--max-traces",
        type=_budget,
        metavar="N",
        help="stop the program when any one jitted function is traced more than N times",
    )


def _budget(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _terminal_handler() -> logging.Handler:
    """A handler writing each record to jitlens' terminal (``_track.sink``), not the program's
    ``sys.stderr``. Made here: ``jitlens run`` itself (which only reads the options of this
    module) does not import ``logging``."""
    import logging

    class TerminalHandler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            from .._track import sink

            try:
                sink.write(self.format(record) + "\n")
            except Exception:
                self.handleError(record)

    return TerminalHandler()


class LiveRun:
    """What :meth:`start` installed; :meth:`stop` removes it and gives jitlens' verdict."""

    def __init__(self, quiet: bool, fail_on_retrace: bool, max_traces: int | None) -> None:
        self.quiet = quiet
        self.fail_on_retrace = fail_on_retrace
        self.max_traces = max_traces
        self.handler: logging.Handler | None = None
        self.saved: tuple[int, bool] | None = None
        self.scope_cm: Any = None
        self.scope: Any = None
        self.exits: list[tuple[Any, str, Any, Any]] = []  # (module, name, real, its recorder)
        self.requested: list[object] = []  # the status of the program's last sys.exit()

    def start(self) -> str | None:
        """Show jitlens' log on the terminal and open the budget asked for.

        Returns why the program may not run (a setting is invalid, or the
        budget cannot count on this JAX), else ``None``.
        """
        import logging

        from .. import _config
        from .._errors import JitlensError

        log = logging.getLogger("jitlens")
        try:
            level = _config.get("log_level")
            _config.get("warn_recompiles")
        except JitlensError as exc:
            return f"jitlens run: {exc}"
        if not self.quiet and level != "off" and not log.handlers:
            self.saved = (log.level, log.propagate)
            self.handler = _terminal_handler()
            self.handler.setFormatter(logging.Formatter("%(message)s"))
            log.addHandler(self.handler)
            log.setLevel(getattr(logging, level.upper()))
            log.propagate = False  # the program's root handlers would print it twice
        if self.fail_on_retrace or self.max_traces is not None:
            from .._track.scopes import program_scope

            cm = program_scope(bool(self.fail_on_retrace), self.max_traces)
            try:
                self.scope = cm.__enter__()
            except JitlensError as exc:
                return f"jitlens run: {exc}"
            self.scope_cm = cm
            self._record_exit()
        return None

    def _record_exit(self) -> None:
        """Note the status given to ``sys.exit`` / ``exit`` / ``quit``, then call the real one."""
        import builtins
        import functools
        import sys
        import threading

        requested = self.requested
        for owner, name in ((sys, "exit"), (builtins, "exit"), (builtins, "quit")):
            real = getattr(owner, name, None)
            if real is None:  # python -S: no exit() / quit()
                continue

            def recorder(status: object = None, /, real: Any = real) -> None:
                if threading.current_thread() is threading.main_thread():
                    requested[:] = [status]  # elsewhere it ends a thread, not the program
                real(status)

            functools.update_wrapper(recorder, real, updated=())
            self.exits.append((owner, name, real, recorder))
            setattr(owner, name, recorder)
        self._record_raised_exit()

    def _record_raised_exit(self) -> None:
        """Note the status of a ``raise SystemExit(5)`` that ends the program: the name
        ``SystemExit`` is, while the budget is open, a subclass whose instance notes its code
        when it is deleted with no frame of the program left (Python drops the exception just
        before the exit hooks run; one the program caught is deleted inside its frames)."""
        import builtins
        import threading

        from .. import _compat

        requested, main, real = self.requested, threading.main_thread(), builtins.SystemExit

        class SystemExit(real):  # type: ignore[valid-type,misc]
            def __del__(self) -> None:
                try:
                    if threading.current_thread() is main and _compat.caller(1) is None:
                        requested[:] = [self.code]
                except Exception:  # never into the program's exit
                    pass

        SystemExit.__module__, SystemExit.__doc__ = real.__module__, real.__doc__
        self.exits.append((builtins, "SystemExit", real, SystemExit))
        builtins.SystemExit = SystemExit  # type: ignore[misc]

    def _restore_exit(self) -> int | None:
        """Put the program's exit functions back; the exit status it asked for, if it did."""
        for owner, name, real, recorder in self.exits:
            if getattr(owner, name, None) is recorder:
                setattr(owner, name, real)
        self.exits = []
        if not self.requested:
            return None
        return exit_status(self.requested[0])

    def stop(self, failed: bool) -> tuple[int | None, str] | None:
        """Close the budget; ``(exit status, why)`` when jitlens must fail a program that did not
        (``(None, why)``: the program's own status stands, jitlens only says why)."""
        import logging

        log = logging.getLogger("jitlens")
        if self.handler is not None:
            log.removeHandler(self.handler)
            if self.saved is not None:
                log.setLevel(self.saved[0])
                log.propagate = self.saved[1]
            self.handler = None
        if self.scope_cm is None:
            return None
        from .._errors import JitlensError

        cm, self.scope_cm = self.scope_cm, None
        status = self._restore_exit()
        try:
            cm.__exit__(None, None, None)
        except JitlensError as exc:  # the self-check found traces cannot be counted
            return 2, f"jitlens run: {exc}"
        violations = self.scope.violations
        if not violations or failed:  # an uncaught exception: python's traceback and status
            return None
        if status:  # python exits with it: the program's own choice
            return None, OWN_STATUS.format(n=len(violations), status=status)
        flag = "--fail-on-retrace" if self.fail_on_retrace else "--max-traces"
        return 1, SWALLOWED.format(flag=flag, n=len(violations))
