"""``jitlens run``'s live options: retraces on stderr as they happen, and the fail-fast stance.

Kept apart from ``run.py`` (the parent, which only reads the options of this
module): this module adds ``--fail-on-retrace`` and ``--max-traces N``, and while
the program runs it

* shows the ``jitlens`` logger's records on the terminal (each function's first
  retraces explained in full, then folded: ``_track/live.py``), unless
  ``--quiet`` or ``JITLENS_LOG=off``, or the program's own handler is already
  on that logger;
* opens the program-wide budget (``_track/scopes.ProgramScope``): the first
  retrace over it raises :class:`jitlens.RecompileError` at the user's call,
  before JAX traces again, naming the function, the path that changed and a
  fix. Uncaught, the program dies of it (exit 1) as of any exception.

The verdict is ``jitlens run``'s, read from outside: the budget's violations go
into the journal (:meth:`LiveRun.stop`), and the parent, which sees the status
the program exited with, ends with 1 when the program caught the error and went
on to exit 0 (a status the program chose itself, or a signal, stands).
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
        return None

    def stop(self, failed: bool) -> tuple[int, str] | None:
        """Close the budget; ``(violations, the option that set it)``, for ``jitlens run`` to
        judge the program's exit status (``None``: no budget was open)."""
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
        flag = "--fail-on-retrace" if self.fail_on_retrace else "--max-traces"
        try:
            cm.__exit__(None, None, None)
        except JitlensError as exc:  # the self-check found traces cannot be counted
            return -1, f"{flag}: {exc}"
        return len(self.scope.violations), flag
