"""``jitlens run``'s live options: retraces on stderr as they happen, and the fail-fast stance.

Kept apart from ``run.py`` (which runs the program as ``python`` would): this
module adds ``--fail-on-retrace`` and ``--max-traces N``, and while the
program runs it

* shows the ``jitlens`` logger's records on stderr (each function's first
  retraces explained in full, then folded: ``_track/live.py``), unless
  ``--quiet`` or ``JITLENS_LOG=off``, or the program's own handler is already
  on that logger;
* opens the program-wide budget (``_track/scopes.ProgramScope``): the first
  retrace over it raises :class:`jitlens.RecompileError` at the user's call,
  before JAX traces again, naming the function, the path that changed and a
  fix. The program dies of it (exit 1, the reports written by ``run.py``); a
  program that catches and swallows it still exits non-zero.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

#: Options of this module that take a value (for ``run.split_argv``).
VALUE_OPTIONS = ("--max-traces",)
USAGE = "[--fail-on-retrace] [--max-traces N]"
SWALLOWED = (
    "jitlens run: the program caught jitlens' RecompileError and went on; "
    "exiting 1 as {flag} asks ({n} violation(s), the first above in the log)"
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
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


class _StderrHandler(logging.Handler):
    """Writes each record to the ``sys.stderr`` of the moment, flushed (it may be replaced)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


class LiveRun:
    """What :func:`start` installed; :meth:`stop` removes it and settles the exit code."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self.handler: logging.Handler | None = None
        self.saved: tuple[int, bool] | None = None
        self.scope_cm: Any = None
        self.scope: Any = None

    def start(self, outcome: Any) -> bool:
        """Show jitlens' log on stderr and open the budget asked for, before the program runs.

        False when a setting is invalid or the budget cannot count on this JAX
        (``outcome`` then says why, exit 2).
        """
        from .. import _config
        from .._errors import JitlensError

        args, log = self.args, logging.getLogger("jitlens")
        try:  # a bad setting fails at once, before the program runs
            level = _config.get("log_level")
            _config.get("warn_recompiles")
        except JitlensError as exc:
            outcome.code, outcome.exit_message = 2, f"jitlens run: {exc}"
            return False
        if not args.quiet and level != "off" and not log.handlers:
            self.saved = (log.level, log.propagate)
            self.handler = _StderrHandler()
            self.handler.setFormatter(logging.Formatter("%(message)s"))
            log.addHandler(self.handler)
            log.setLevel(getattr(logging, level.upper()))
            log.propagate = False  # the program's root handlers would print it twice
        if args.fail_on_retrace or args.max_traces is not None:
            from .._track.scopes import program_scope

            cm = program_scope(bool(args.fail_on_retrace), args.max_traces)
            try:
                self.scope = cm.__enter__()
            except JitlensError as exc:
                outcome.code, outcome.exit_message = 2, f"jitlens run: {exc}"
                return False
            self.scope_cm = cm
        return True

    def stop(self, outcome: Any) -> None:
        log = logging.getLogger("jitlens")
        if self.handler is not None:
            log.removeHandler(self.handler)
            if self.saved is not None:
                log.setLevel(self.saved[0])
                log.propagate = self.saved[1]
            self.handler = None
        if self.scope_cm is not None:
            from .._errors import JitlensError

            cm, self.scope_cm = self.scope_cm, None
            try:
                cm.__exit__(None, None, None)
            except JitlensError as exc:  # the self-check found traces cannot be counted
                outcome.code = outcome.code or 2
                outcome.exit_message = f"jitlens run: {exc}"
                return
            violations = self.scope.violations
            if violations and outcome.code == 0 and outcome.exception is None:
                flag = "--fail-on-retrace" if self.args.fail_on_retrace else "--max-traces"
                outcome.code = 1
                outcome.exit_message = SWALLOWED.format(flag=flag, n=len(violations))
