"""jitlens inside the program's own interpreter: ``JITLENS=1 python prog.py`` and ``jitlens run``.

Imported at interpreter start-up by the ``jitlens_autostart.pth`` file that
installing jitlens puts in site-packages, only when ``JITLENS`` is set. Python
itself then runs the program; jitlens

* imports nothing heavy at start-up: it waits for the program's own
  ``import jax`` (so settings the program makes in ``os.environ`` before it,
  ``JAX_ENABLE_X64`` among them, are read by JAX as under ``python``; shells,
  ``pip`` and every process that never imports JAX pay nothing);
* records as it goes, in a journal (``_track/journal.py``): the calls, traces,
  compiles and reasons a report needs are on disk when they happen, so whatever
  ends the process (SIGKILL, ``os._exit``, a signal, an ``exec``) the report can be
  built from it by whoever outlives the program: ``jitlens run``, its parent, or
  later ``jitlens report JOURNAL``. jitlens catches no ending: no signal handler,
  no wrapper of ``os._exit``, no audit hook, no ``SystemExit`` of its own;
* registers its exit work with ``atexit`` before the program runs, so it runs
  after the program's own ``atexit`` hooks, which Python runs after its
  thread-pool hooks and thread joins: calls made there are in the report.
  JAX's own exit hooks (clear the backends, shut ``jax.distributed`` down) run
  right after the report, as a ``--gather`` needs the processes connected.

The exit work writes the report files and makes the summary. Under ``jitlens run``
(the program's parent, :mod:`.supervise`: settings in ``JITLENS_RUN``, jitlens'
variables out of the program's ``os.environ``) it puts the report and the summary
in the journal, for the parent to show; under ``JITLENS=1`` it shows the summary
on the terminal kept at start-up.

Only the main program is tracked: processes it starts (``multiprocessing``
spawn workers, ``subprocess`` Pythons) see another pid in ``JITLENS_MAIN_PID``
and are left alone unless ``JITLENS_CHILDREN=1``. A program that re-executes
itself (``os.execv``, same pid) is tracked again from the new image's start,
in a journal of its own, and a line says what the report does not hold.
"""

from __future__ import annotations

import _thread
import atexit
import os
import sys

from .environ import CHILDREN, EXIT_LINES, IMAGE, INTERRUPTED, MAIN_PID, RUN

#: The modules loaded before jitlens armed (``__future__`` is jitlens' own: its modules'
#: ``from __future__ import annotations``; Python's start-up never imports it).
_BEFORE = frozenset(sys.modules) - {"__future__"}

TYPE_CHECKING = False
if TYPE_CHECKING:  # (``typing`` is not imported at start-up: a program's typing.py is its own)
    from types import ModuleType
    from typing import Any

# Imported by every Python process of a tracked program's environment (its children
# too, which leave at once): nothing heavy here, and nothing JAX itself does not
# import before tracking starts (``_start``).


REEXECUTED = (
    "jitlens: the program re-executed itself (os.exec*, same process): tracking starts again "
    "from here; the calls made before the exec are in the earlier image's journal, which this "
    "image's report replaces\n"
)
NO_JAX = "jitlens: the program never imported jax: nothing to report, no report file written\n"
UNSEEN = (
    "jitlens: the program imported jax where jitlens could not see it (an import hook of its "
    "own, ahead of jitlens' on sys.meta_path, that finds jax itself): nothing was tracked, no "
    "report file written\n  fix: import jax before the program installs that hook\n"
)

_STARTED = [False]
_LOCK = _thread.allocate_lock()
#: ``sys.path`` when tracking started: where the modules the report needs are found.
_PATH_AT_START: list[str] = []


class _Session:
    """What jitlens does in this process: its settings, and what it set up."""

    def __init__(self, pid: int, run: dict[str, Any] | None, args: Any) -> None:
        self.pid = pid
        self.run = run  # jitlens run's options; None under JITLENS=1
        self.args = args  # the report options, shaped as jitlens run's
        self.tracker: Any = None
        self.live: Any = None
        self.jax_hooks: tuple[Any, ...] = ()
        self.done = False
        #: This image came from an ``os.exec*`` of the tracked program itself.
        self.reexecuted = False
        #: The environment's report paths a tracked child leaves to its parent (their names).
        self.parents_paths: list[str] = []


SESSION: list[_Session | None] = [None]


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


class _JaxWatcher:
    """Starts tracking right after the program's own ``import jax`` finishes.

    A meta path finder (``find_spec`` is all ``sys.meta_path`` asks of one), placed
    right before Python's own ``PathFinder`` (what the program finds first in
    ``sys.meta_path`` is what python put there). It leaves as soon as it has found
    ``jax``, and leaves jax's loader as the finders after it made it: ``jax.__loader__``
    is Python's own (or the program's import hook's, as under ``python``).
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "jax" or _STARTED[0]:
            return None
        spec = _find_spec(name, path, target)
        _remove_watcher()
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader

        def exec_module(module: ModuleType) -> None:
            try:
                del loader.exec_module  # the loader is its finder's own again
            except AttributeError:
                pass
            loader.exec_module(module)
            if _jitlens_importing():
                # jitlens' own import of jax (the program used jitlens' API, track() or
                # max_traces, before it imported jax): tracking needs jitlens whole, so it
                # starts once jitlens' modules are in (``resume``)
                _PENDING[0] = True
                return
            _start()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _find_spec(name: str, path: Any, target: Any) -> Any:
    """What the finders after the watcher find, in order."""
    finders = list(sys.meta_path)
    mine = next((i for i, f in enumerate(finders) if f is _WATCHER), -1)
    for finder in finders[mine + 1 :]:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = find(name, path, target)
        if spec is not None:
            return spec
    return None


_WATCHER = _JaxWatcher()


def _remove_watcher() -> None:
    try:
        sys.meta_path.remove(_WATCHER)
    except ValueError:
        pass


def _place_watcher() -> None:
    """The watcher goes right before Python's ``PathFinder`` (last, if there is none)."""
    at = next(
        (i for i, f in enumerate(sys.meta_path) if getattr(f, "__name__", "") == "PathFinder"),
        len(sys.meta_path),
    )
    sys.meta_path.insert(at, _WATCHER)


#: jax was imported by jitlens' own modules while they were being imported: tracking starts
#: once they are all in.
_PENDING = [False]


def resume() -> None:
    """Start tracking put off while jitlens' own modules imported jax, once they are all in
    (called by ``jitlens.__getattr__`` after it imports a piece of jitlens' API); never raises."""
    try:
        if _PENDING[0] and not _jitlens_importing():
            _PENDING[0] = False
            _start()
    except BaseException:
        pass


def _jitlens_importing() -> bool:
    """Is one of jitlens' modules (other than this one) being imported right now?"""
    try:
        for name, module in list(sys.modules.items()):
            if name.startswith("jitlens.") and name != __name__:
                if getattr(getattr(module, "__spec__", None), "_initializing", False):
                    return True
    except Exception:
        pass
    return False


def _hide(names: tuple[str, ...]) -> None:
    """Take jitlens' variables out of the program's ``os.environ``, as under ``python`` (no
    ``unsetenv``: the process environment keeps them, so that ``os.execv`` of the program
    itself is tracked again, and the program's children find ``JITLENS_MAIN_PID`` not
    theirs)."""
    try:
        data, encode = os.environ._data, os.environ.encodekey  # type: ignore[attr-defined]
        for name in names:
            data.pop(encode(name), None)
    except Exception:
        pass


def _arm() -> None:
    """At start-up: decide whether this process is tracked, and wait for ``import jax``."""
    pid = str(os.getpid())
    owner = os.environ.get(MAIN_PID)
    settings = os.environ.get(RUN)
    children = _truthy(os.environ.get(CHILDREN))
    if settings is not None:  # jitlens run's program (or one of its children)
        _hide(("JITLENS", RUN, MAIN_PID, IMAGE))
    if owner and owner != pid and not children:
        return  # a child of the tracked program
    from .. import _config
    from .._errors import ConfigError

    try:
        if not _config.get("enabled") and settings is None:
            return
        # every setting read once the program runs, checked now: a bad one means no
        # tracking, never a program stopped in the middle of its `import jax`
        _config.get("log_level")
        _config.get("warn_recompiles")
    except ConfigError as exc:
        _warn(f"{exc}; not tracking")
        return
    from .outputs import EnvArgs, check_report_paths, leave_the_parents_paths, run_args

    try:  # a child tracked by JITLENS_CHILDREN=1 never writes over its parent's report files
        mine = not owner or owner == pid
        run = _json_loads(settings) if settings and mine else None
        args = run_args(run) if run is not None else None
    except Exception as exc:
        _warn(f"{RUN} is not jitlens run's ({type(exc).__name__}: {exc}); not tracking")
        return
    parents: list[str] = []
    if args is None:
        try:
            args = EnvArgs()
        except Exception as exc:  # a bad JITLENS_INCLUDE_INTERNAL
            _warn(f"{exc}; not tracking")
            return
        if not mine:
            parents = leave_the_parents_paths(args)
    reexecuted = os.environ.get(IMAGE) == pid
    os.environ[MAIN_PID] = os.environ[IMAGE] = pid  # for the process: its children, an exec
    if run is not None:
        # (not for the program, which python would not show them; under JITLENS=1 they stay,
        # as the user's JITLENS does: a child started with a copy of os.environ is left alone)
        _hide((MAIN_PID, IMAGE))
    from .._track import sink

    if run is not None:
        sink.follow_terminal(run.get("terminal"))
    else:
        sink.open_terminal()
    if reexecuted:
        sink.write(REEXECUTED)
    if run is None:
        check_report_paths(args)
    session = SESSION[0] = _Session(os.getpid(), run, args)
    session.parents_paths = parents
    session.reexecuted = reexecuted
    # the journal's modules now, before the script's folder is on sys.path: its mmap is
    # Python's, not a program's own mmap.py (under JITLENS=1 it opens at `import jax`)
    __import__("jitlens._track.journal")
    if run is not None:
        _open_journal(session)  # now: jitlens run hears of a program that never imports jax
    atexit.register(_at_exit)  # before the program's own hooks: it runs after them
    _place_watcher()
    if "jax" in sys.modules:
        _start()


def _open_journal(session: _Session) -> None:
    from .._core.journal import journal_dir, new_path
    from .._track import journal

    run = session.run or {}
    path = run.get("journal") or new_path(journal_dir(), session.pid)
    settings = {"outputs": dict(getattr(session.args, "given_outputs", {}) or {})}
    if run:
        settings["supervisor"] = run.get("supervisor")
    problem = None
    for n in range(1, 100):  # a re-executed image: a journal of its own, next to the first
        candidate = path if n == 1 else f"{path}.{n}"
        start = journal.start_frame(sys.argv, settings)
        problem = journal.open_journal(candidate, start, 0.0, bool(session.args.include_internal))
        if problem is None or not os.path.exists(candidate):
            break
    if problem is not None:
        _warn(problem + "; the report is written at Python's exit only")


def _json_loads(text: str) -> Any:
    import json

    return json.loads(text)


def _warn(text: str) -> None:
    from .._track import sink

    sink.write(f"jitlens: {text}\n")


def _start() -> None:
    """The program imported jax: track from here (never raises into its import)."""
    with _LOCK:
        if _STARTED[0]:
            return
        _STARTED[0] = True
    session = SESSION[0]
    if session is None:
        return
    # site-packages are all on sys.path by now (a venv's system ones come after the .pth files)
    _PATH_AT_START[:] = [p for p in sys.path if isinstance(p, str)]
    before = frozenset(sys.modules)
    try:
        from .. import _compat, _config
        from .._track import journal
        from .._track.tracker import Tracker
        from . import live_run

        run = session.run or {}
        session.live = live_run.LiveRun(
            quiet=bool(run.get("quiet")),
            fail_on_retrace=bool(run.get("fail_on_retrace")),
            max_traces=run.get("max_traces"),
            fail_on_recompile=bool(run.get("fail_on_recompile")),
            max_compiles=run.get("max_compiles"),
        )
        include_internal = session.args.include_internal or _config.get("include_internal")
        tracker = Tracker(include_internal=include_internal, timeline=True)
        if session.run is None:
            _open_journal(session)
        tracker.start()
        journal.started(tracker.started_at())
        session.tracker = tracker
        problem = session.live.start()
        if problem is not None:  # a budget that cannot count refuses to run the program
            _warn(problem)
            _refuse(session)
        if any(
            "://" in str(getattr(session.args, k, None) or "") for k in ("json", "html", "trace")
        ):
            from .._render.outputs import prepare_urls
            from .outputs import outputs_of

            prepare_urls(outputs_of(session.args))  # written at exit, where imports fail
        session.jax_hooks = tuple(_compat.exit_hooks())
        for hook in session.jax_hooks:  # run right after the report (see _at_exit)
            atexit.unregister(hook)
    except Exception as exc:  # never break the program that imported jax
        _warn(f"could not start tracking ({type(exc).__name__}: {exc}); your program is unaffected")
    _forget_start_up_imports(before)  # (the journal's mmap, which jax does not import)


def _refuse(session: _Session) -> None:
    """A budget that cannot count: the program does not run (status 2), as ``jitlens run``
    refuses a bad option before it starts."""
    from .._track import journal

    journal.close(delete=True)
    session.done = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(2)


def _at_exit() -> None:
    """The last ``atexit`` hook: the report, then JAX's own exit hooks."""
    session = SESSION[0]
    if session is None:
        return
    if os.getpid() != session.pid:
        # A forked child that returned: no report of its own, but JAX's exit hooks run
        # in it as under python (jitlens took them off the list the child inherited)
        _run_jax_hooks(session)
        return
    if session.done:
        return
    session.done = True
    from .._track import journal

    journal.exiting()
    if session.tracker is None:
        _not_tracked(session)
        return
    interrupted = isinstance(getattr(sys, "last_value", None), KeyboardInterrupt)
    try:
        with _importable():
            _write_report(session)
    except KeyboardInterrupt:  # Ctrl-C while jitlens writes: stop writing, keep the status
        from .._track import journal as written
        from .._track import sink

        written.interrupted()  # (jitlens run does not write it again from the journal)
        sink.write(INTERRUPTED)
    finally:
        if interrupted:
            _still_interrupted()
        _run_jax_hooks(session)


def _still_interrupted() -> None:
    """After an uncaught ``KeyboardInterrupt`` Python ends by SIGINT (130 in a shell) unless an
    exit hook evaluated a string (``exec(str)``, as ``dataclasses`` does), which clears that
    mark: jitlens' report may have. A string raising KeyboardInterrupt marks it again."""
    try:
        exec("raise KeyboardInterrupt")
    except KeyboardInterrupt:
        pass


def _not_tracked(session: _Session) -> None:
    """The program never imported jax (or jitlens did not see it): say so, once."""
    from .._track import journal, sink

    run = session.run
    said = None
    if "jax" in sys.modules:  # imported, never seen: not "never imported", not silence
        said = UNSEEN
    elif run is not None and not _failed():
        said = NO_JAX
    if said is not None and not (run or {}).get("quiet") and not session.reexecuted:
        sink.write(said)
    journal.close(delete=run is None)  # jitlens run's parent reads the journal's lines


class _importable:
    """For the length of the report, the folders of ``sys.path`` at start-up are searched too:
    the report imports its renderers then, and a program may have emptied ``sys.path``
    (``sys.path[:] = [here]``). The program's own ``sys.path`` comes back after."""

    def __enter__(self) -> None:
        self.saved = sys.path
        try:
            now = list(sys.path)
            sys.path = now + [p for p in _PATH_AT_START if p not in now]
        except Exception:
            pass

    def __exit__(self, *exc: object) -> None:
        sys.path = self.saved


def _run_jax_hooks(session: _Session) -> None:
    """JAX's own ``atexit`` hooks, run as ``atexit`` would have: in its order, each one's
    exception (a Ctrl-C among them) reported and the next one run."""
    for hook in reversed(session.jax_hooks):
        try:
            hook()
        except BaseException as exc:
            try:
                import traceback

                sys.stderr.write(f"Exception ignored in atexit callback: {hook!r}\n")
                traceback.print_exception(exc, file=sys.stderr)
            except BaseException:
                pass


def _failed() -> bool:
    """Did the program end with an uncaught exception (Python keeps it in ``sys.last_value``)?"""
    return getattr(sys, "last_value", None) is not None


def _write_report(session: _Session) -> None:
    from .._track import journal, sink

    failed = _failed()
    violations = session.live.stop(failed) if session.live is not None else None
    if violations is not None:
        journal.verdict(*violations)
    try:
        session.tracker.stop()
        report = session.tracker.report()
    except Exception as exc:  # never turn a program's result into a jitlens failure
        _warn(f"could not take the report ({type(exc).__name__}: {exc})")
        return
    args = session.args
    written: list[str] = []
    text: str | None = None
    try:
        from .outputs import write_outputs

        if getattr(args, "gather", None):  # issue 23: one merged report on process 0
            from .gather import write_gathered
            from .outputs import shown

            clean = not failed and not violations
            written = write_gathered(report, args, clean, write_outputs, shown)
        elif session.run is None:
            written = write_outputs(report, args)
        elif not (journal.current_path() or "").rpartition(".")[2].isdigit():  # made here,
            # where the modules are loaded (else by jitlens run, from the journal: it says what
            # a re-executed image's report holds, the image's journal being PATH.N)
            made = write_outputs(report, args)
            text = "" if args.quiet else _summary_text(session, report, failed, strict=True)
            written = made
    except Exception as exc:
        if session.run is None or getattr(args, "gather", None):
            _warn(f"could not write the report ({type(exc).__name__}: {exc})")
    if session.run is not None and journal.final(report, written, failed, text):
        journal.close(delete=False)  # jitlens run shows the summary
        return
    if not args.quiet:
        _summary(session, report, failed)
        sink.write("".join(f"jitlens: wrote {path}\n" for path in written))
        if session.parents_paths and report.functions:
            from .outputs import PARENTS_PATH

            names = " or ".join(session.parents_paths)
            sink.write(PARENTS_PATH.format(pid=session.pid, names=names))
    own = journal.current_path()
    journal.close(delete=True)
    if session.run is None:
        from .._journals import recover

        recover(sink.write, own)  # earlier runs that ended without their report


def _summary(session: _Session, report: Any, failed: bool) -> None:
    from .._track import sink

    try:
        from .._render.text import render_text

        if session.run is None:  # JITLENS=1: a summary only when something was jitted
            if report.functions:
                sink.write("\n" + render_text(report) + "\n")
            return
        sink.write(_summary_text(session, report, failed))
    except Exception as exc:
        _warn(f"could not print the summary ({type(exc).__name__}: {exc})")


def _summary_text(session: _Session, report: Any, failed: bool, strict: bool = False) -> str:
    """``jitlens run``'s summary, made in the program (``strict``: a failure raises, for the
    parent to make it instead of a warning here)."""
    from .outputs import summary_text

    try:
        return summary_text(report, session.run or {}, session.args, failed, EXIT_LINES)
    except Exception as exc:
        if strict:
            raise
        _warn(f"could not print the summary ({type(exc).__name__}: {exc})")
        return ""


def _forget_start_up_imports(before: frozenset[str] = _BEFORE) -> None:
    """Drop from ``sys.modules`` the standard modules jitlens imported while arming (``json``,
    ``mmap``, ``struct``...): the program's own ``json.py`` or ``mmap.py`` next to its script
    must be the module its ``import`` finds, as under ``python``, not the standard one
    jitlens happened to load first. jitlens keeps its references; the program's next
    ``import json`` loads the module afresh."""
    try:
        for name in set(sys.modules) - before:
            if name.partition(".")[0] in _FORGOTTEN:
                sys.modules.pop(name, None)
    except Exception:
        pass


#: The standard modules :func:`_forget_start_up_imports` drops: stateless ones a program may
#: shadow with a file of its own. Not ``threading`` or ``weakref`` (the hook imports them
#: too): a second copy of those splits the process' state (which threads exit waits for).
_FORGOTTEN = frozenset(
    {"json", "linecache", "tokenize", "token", "__future__", "fnmatch", "mmap", "struct", "zlib"}
)


try:
    _arm()
except Exception as exc:  # never stop the interpreter's start-up over jitlens
    _warn(f"could not arm ({type(exc).__name__}: {exc}); not tracking")
finally:
    _forget_start_up_imports()
