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
VALUE_OPTIONS = ("--max-traces", "--max-compiles")
USAGE = (
    "[--fail-on-retrace] [--max-traces N]\n"
    "                   [--fail-on-recompile] [--max-compiles N]"
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
    p.add_argument(
        "--fail-on-recompile",
        action="store_true",
        help="stop the program at the second compile of any of its jitted functions, also one "
        "JAX makes from a trace it has (a new sharding or placement: no retrace)",
    )
    p.add_argument(
        "--max-compiles",
        type=_budget,
        metavar="N",
        help="stop the program when any one jitted function is compiled more than N times",
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

    def __init__(
        self,
        quiet: bool,
        fail_on_retrace: bool,
        max_traces: int | None,
        fail_on_recompile: bool = False,
        max_compiles: int | None = None,
    ) -> None:
        self.quiet = quiet
        self.fail_on_retrace = fail_on_retrace
        self.max_traces = max_traces
        self.fail_on_recompile = fail_on_recompile
        self.max_compiles = max_compiles
        self.handler: logging.Handler | None = None
        self.saved: tuple[int, bool] | None = None
        #: (the budget's context manager, its scope, the option that opened it)
        self.scopes: list[tuple[Any, Any, str]] = []

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
        for flag, cm in self._budgets():
            try:
                self.scopes.append((cm, cm.__enter__(), flag))
            except JitlensError as exc:
                return f"jitlens run: {exc}"
        return None

    def _budgets(self) -> list[tuple[str, Any]]:
        """The budgets the options ask for: traces (``scopes.program_scope``), compiles
        (``compile_budget.compile_scope``)."""
        found: list[tuple[str, Any]] = []
        if self.fail_on_retrace or self.max_traces is not None:
            from .._track.scopes import program_scope

            flag = "--fail-on-retrace" if self.fail_on_retrace else "--max-traces"
            found.append((flag, program_scope(bool(self.fail_on_retrace), self.max_traces)))
        if self.fail_on_recompile or self.max_compiles is not None:
            from .._track.compile_budget import RECOMPILE_IN_RUN, compile_scope

            flag = "--fail-on-recompile" if self.fail_on_recompile else "--max-compiles"
            source = f"jitlens run {flag}"
            head = RECOMPILE_IN_RUN if self.fail_on_recompile else ""
            found.append((flag, compile_scope(self.max_compiles or 1, source=source, head=head)))
        return found

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
        if not self.scopes:
            return None
        from .._errors import JitlensError

        scopes, self.scopes = self.scopes, []
        verdict: tuple[int, str] | None = None
        for cm, _scope, flag in reversed(scopes):
            try:
                cm.__exit__(None, None, None)
            except JitlensError as exc:  # the self-check found it cannot be counted
                verdict = (-1, f"{flag}: {exc}")
        if verdict is not None:
            return verdict
        n = sum(len(scope.violations) for _, scope, _ in scopes)
        flags = [flag for _, scope, flag in scopes if scope.violations] or [scopes[0][2]]
        return n, flags[0]
