"""jitlens inside the program's own interpreter: ``JITLENS=1 python prog.py`` and ``jitlens run``.

Imported at interpreter start-up by the ``jitlens_autostart.pth`` file that
installing jitlens puts in site-packages, only when ``JITLENS`` is set (or by
the bootstrap ``sitecustomize`` ``jitlens run`` puts on ``PYTHONPATH`` where
that file is not processed). Python itself then runs the program; jitlens

* imports nothing heavy at start-up: it waits for the program's own
  ``import jax`` (so settings the program makes in ``os.environ`` before it,
  ``JAX_ENABLE_X64`` among them, are read by JAX as under ``python``; shells,
  ``pip`` and every process that never imports JAX pay nothing);
* keeps the terminal (descriptor 2 as it is now, :mod:`jitlens._track.sink`):
  the live retrace lines, its warnings and the summary go there, never into
  the program's ``sys.stderr`` replacement or its ``warnings`` records;
* registers its exit work with ``atexit`` before the program runs, so it runs
  after the program's own ``atexit`` hooks, which Python runs after its
  thread-pool hooks and thread joins: calls made there are in the report, and
  jitlens never waits on a thread Python would have stopped. JAX's own exit
  hooks (clear the backends, shut ``jax.distributed`` down) run right after
  the report, as a ``--gather`` needs the processes connected;
* writes the report before the endings that run no ``atexit`` hook: SIGTERM and
  SIGHUP, ``os._exit``, ``os.exec*``, a signal the program sends itself with its
  default action (:mod:`.signals`, :func:`_ending`). Python has no hook after
  ``atexit`` (``threading``'s exit hooks run before the program's ``atexit``
  hooks, the finalisation audit events after), so an ``atexit`` hook of the
  program's calling ``os._exit`` is caught at the ``os._exit``.

Only the main program is tracked: processes it starts (``multiprocessing``
spawn workers, ``subprocess`` Pythons) inherit the environment but see another
pid in ``JITLENS_MAIN_PID`` and are left alone unless ``JITLENS_CHILDREN=1``.
A program that re-executes itself (``os.execv``, same pid) is tracked again
from the new image's start, and a line says what the report does not hold.
Under ``JITLENS=1`` the summary goes to the terminal at exit when something
was jitted, and ``JITLENS_REPORT`` / ``JITLENS_HTML`` name report files;
under ``jitlens run`` the options come in ``JITLENS_RUN`` (:mod:`.run`).
"""

from __future__ import annotations

import _thread
import atexit
import os
import sys
from typing import TYPE_CHECKING, Any

from .environ import BOOTSTRAP as BOOTSTRAP
from .environ import CHILDREN, IMAGE, MAIN_PID, RUN

#: The modules loaded before jitlens armed (``__future__`` is jitlens' own: its modules'
#: ``from __future__ import annotations``; Python's start-up never imports it).
_BEFORE = frozenset(sys.modules) - {"__future__"}

if TYPE_CHECKING:
    from types import ModuleType

# Imported by every Python process of a tracked program's environment (its children
# too, which leave at once): nothing heavy here, and nothing JAX itself does not
# import before tracking starts (``_start``).

#: The exit summary stays under 60 lines for any program (all of it: --json / --html).
EXIT_LINES = 56

REEXECUTED = (
    "jitlens: the program re-executed itself (os.exec*, same process): tracking starts again "
    "from here; the calls made before the exec are in the report written then, which this "
    "image's report replaces\n"
)
NO_JAX = "jitlens: the program never imported jax: nothing to report, no report file written\n"
UNSEEN = (
    "jitlens: the program imported jax where jitlens could not see it (an import hook of its "
    "own, with importlib.import_module): nothing was tracked, no report file written\n"
)
#: In the report (its warnings) when the program did not reach Python's exit.
ENDED = (
    "the program was ended by {how} before Python's exit was done: this report holds the calls "
    "made until then"
)
INTERRUPTED = "jitlens: interrupted (Ctrl-C) while writing the report; the rest was not written\n"

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
        self.finish: Any = None
        self.exit_code: int | None = None  # jitlens run's own verdict on the program (budgets)
        self.exit_message: str | None = None
        #: The environment's report paths a tracked child leaves to its parent (their names).
        self.parents_paths: list[str] = []


SESSION: list[_Session | None] = [None]


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


class _JaxWatcher:
    """Starts tracking right after the program's own ``import jax`` finishes.

    A meta path finder (``find_spec`` is all ``sys.meta_path`` asks of one). It
    leaves as soon as it has found ``jax``, and leaves jax's loader as the finders
    after it made it: ``jax.__loader__`` is Python's own (or the program's import
    hook's, as under ``python``).

    A program may put its own import hook first (typeguard's ``install_import_hook()``,
    a tracer, a lazy importer), one that finds every module itself: the watcher would
    never be asked for ``jax``. The ``import`` audit event, raised before ``sys.meta_path``
    is searched, puts the watcher back in front for that one import (:func:`_audit`).
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "jax" or _STARTED[0]:
            return None
        _remove_watcher()
        spec = _find_spec(name, path, target)
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
                # starts at the next import once jitlens' modules are in (see _audit)
                _PENDING[0] = True
                return
            _start()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _find_spec(name: str, path: Any, target: Any) -> Any:
    """What the program's finders (all of ``sys.meta_path`` but the watcher) find, in order."""
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_spec", None)
        if finder is _WATCHER or find is None:
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


#: jax was imported by jitlens' own modules while they were being imported: tracking starts
#: at the first import after they are all in.
_PENDING = [False]


def resume() -> None:
    """Start tracking put off while jitlens' own modules imported jax, once they are all in
    (called by ``jitlens.__getattr__`` after it imports a piece of jitlens' API, and at the
    next import of the process); never raises."""
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


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """An audit hook: before Python searches ``sys.meta_path`` for ``jax``, the watcher is first;
    and the start jitlens' own import of jax put off (:data:`_PENDING`) happens at the first
    import after jitlens' modules are in.

    Runs for every audited event of the process (hooks cannot be removed), so it
    returns at the first test; it never raises (an audit hook's exception aborts
    the operation it audits)."""
    if event != "import" or _STARTED[0]:
        # equality, not a set: the hook runs at every id() call (an audit event), and a hash
        # of the event's name (a new string each time) costs more than three length checks
        if event == "os.kill" or event == "os.exec" or event == "os.killpg":
            _ending(event, args)
        return
    if _PENDING[0]:
        resume()
        return
    try:
        if args[0] == "jax" and sys.meta_path[0] is not _WATCHER:
            _remove_watcher()
            sys.meta_path.insert(0, _WATCHER)
    except Exception:
        pass


def _ending(event: str, args: tuple[Any, ...]) -> None:
    """The program is about to end its process without Python's exit: write the report first.

    ``os.execv`` (and the other ``os.exec*``) replaces the process with another program,
    and a signal the program sends itself whose action is the default one (a handler that
    puts ``SIG_DFL`` back and kills the process again, as checkpointing code does; SIGKILL)
    ends it at once: no ``atexit`` hook runs. Their audit events come before the call; an
    exec that will fail (no such executable) or a signal the process ignores, blocks or
    handles ends nothing, and writes nothing. Never raises (that would abort the call).
    """
    try:
        session = SESSION[0]
        finish = session.finish if session is not None else None
        if finish is None or finish.started or os.getpid() != session.pid:  # type: ignore[union-attr]
            return
        if event == "os.exec":
            if not os.access(args[0], os.X_OK):
                return
            how = "an os.exec* call (the process became another program)"
        else:
            how = _self_kill(event, args[0], args[-1])
            if how is None:
                return
        finish.within(how)
    except BaseException:
        pass


def _self_kill(event: str, target: int, signum: int) -> str | None:
    """The signal's name when ``os.kill(target, signum)`` / ``os.killpg`` kills this process now."""
    import signal

    me = os.getpid()
    group = os.getpgrp()
    if event == "os.kill":
        mine = target in (me, 0, -group)
    else:
        mine = target in (0, group)
    if not mine or signum == 0:
        return None
    name = signal.Signals(signum).name
    if name == "SIGKILL" or (
        name not in _HARMLESS
        and signal.getsignal(signum) is signal.SIG_DFL
        and signum not in signal.pthread_sigmask(signal.SIG_BLOCK, ())
    ):
        return name
    return None


#: Signals whose default action does not end the process (nothing to write for them).
_HARMLESS = frozenset(
    {"SIGCHLD", "SIGCONT", "SIGURG", "SIGWINCH", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU"}
)


def _arm() -> None:
    """At start-up: decide whether this process is tracked, and wait for ``import jax``."""
    pid = str(os.getpid())
    owner = os.environ.get(MAIN_PID)
    if owner and owner != pid and not _truthy(os.environ.get(CHILDREN)):
        return  # a child of the tracked program
    from .. import _config
    from .._errors import ConfigError

    try:
        if not _config.get("enabled"):
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
        run = _json_loads(os.environ[RUN]) if os.environ.get(RUN) and mine else None
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
    os.environ[MAIN_PID] = pid
    reexecuted = os.environ.get(IMAGE) == pid
    os.environ[IMAGE] = pid
    from .._track import sink

    sink.open_terminal()
    if reexecuted:
        sink.write(REEXECUTED)
    if run is None:
        check_report_paths(args)
    SESSION[0] = _Session(os.getpid(), run, args)
    SESSION[0].parents_paths = parents
    atexit.register(_at_exit)  # before the program's own hooks: it runs after them
    if "jax" in sys.modules:
        _start()
    else:
        sys.meta_path.insert(0, _WATCHER)
        try:
            sys.addaudithook(_audit)
        except Exception:  # a hook of the program's refused it: the watcher alone
            pass


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
    try:
        from .. import _compat, _config
        from .._track.tracker import Tracker
        from . import live_run
        from .signals import Finish, install, watch_os_exit

        run = session.run or {}
        session.live = live_run.LiveRun(
            quiet=bool(run.get("quiet")),
            fail_on_retrace=bool(run.get("fail_on_retrace")),
            max_traces=run.get("max_traces"),
        )
        include_internal = session.args.include_internal or _config.get("include_internal")
        tracker = Tracker(include_internal=include_internal, timeline=True)
        tracker.start()
        session.tracker = tracker
        problem = session.live.start()
        if problem is not None:  # a budget that cannot count refuses to run the program
            _warn(problem)
            _flush_and_exit(2)
        if any(
            "://" in str(getattr(session.args, k, None) or "") for k in ("json", "html", "trace")
        ):
            from .._render.outputs import prepare_urls
            from .outputs import outputs_of

            prepare_urls(outputs_of(session.args))  # written at exit, where imports fail
        session.jax_hooks = tuple(_compat.exit_hooks())
        for hook in session.jax_hooks:  # run right after the report (see _at_exit)
            atexit.unregister(hook)
        session.finish = Finish(lambda: _finish(session))
        install(session.finish)  # SIGTERM / SIGHUP: the report, then the signal's death
        watch_os_exit(session.finish, session.pid)  # os._exit skips atexit: the report first
    except Exception as exc:  # never break the program that imported jax
        _warn(f"could not start tracking ({type(exc).__name__}: {exc}); your program is unaffected")


def _flush_and_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


def _at_exit() -> None:
    """The last ``atexit`` hook: the report, then JAX's own exit hooks, then jitlens' verdict."""
    session = SESSION[0]
    if session is None:
        return
    if os.getpid() != session.pid:
        # A forked child that returned: no report of its own, but JAX's exit hooks run
        # in it as under python (jitlens took them off the list the child inherited)
        _run_jax_hooks(session)
        return
    if session.finish is None:
        run = session.run
        if _STARTED[0] or (run or {}).get("quiet"):
            return
        from .._track import sink

        if "jax" in sys.modules:  # imported, never seen: not "never imported", not silence
            sink.write(UNSEEN)
        elif run is not None and not _failed():
            sink.write(NO_JAX)
        return
    try:
        session.finish()
    except KeyboardInterrupt:  # Ctrl-C while jitlens writes: stop writing, keep the status
        from .._track import sink

        sink.write(INTERRUPTED)
    finally:
        _run_jax_hooks(session)
    if session.exit_code is not None:
        _flush_and_exit(session.exit_code)
    if isinstance(getattr(sys, "last_value", None), KeyboardInterrupt):
        # Python dies of SIGINT after an uncaught KeyboardInterrupt, unless code run during
        # finalisation clears its flag (the report's rendering does): die of it here
        import signal

        from .signals import die_of

        die_of(signal.SIGINT)


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


def _finish(session: _Session) -> None:
    """Write the report files and the summary (once: see ``signals.Finish``)."""
    with _importable():
        _write_report(session)


def _write_report(session: _Session) -> None:
    from .._track import sink

    failed = _failed()
    # a signal or os._exit ends the program with its own status: no verdict of jitlens' stands
    ending = session.finish.ending if session.finish is not None else None
    verdict = session.live.stop(failed) if session.live is not None else None
    if verdict is not None and session.run is not None and ending is None:
        session.exit_code, session.exit_message = verdict
    try:
        session.tracker.stop()
        report = session.tracker.report()
        if ending is not None:
            import dataclasses

            said = (*report.warnings, ENDED.format(how=ending))
            report = dataclasses.replace(report, warnings=said)
    except Exception as exc:  # never turn a program's result into a jitlens failure
        _warn(f"could not take the report ({type(exc).__name__}: {exc})")
        return
    args = session.args
    try:
        if getattr(args, "gather", None):  # issue 23: one merged report on process 0
            from .gather import write_gathered
            from .outputs import shown, write_outputs

            clean = not failed and session.exit_code is None
            written = write_gathered(report, args, clean, write_outputs, shown)
        else:
            from .outputs import write_outputs

            written = write_outputs(report, args)
    except Exception as exc:
        _warn(f"could not write the report ({type(exc).__name__}: {exc})")
        written = []
    if not args.quiet:
        _summary(session, report, failed)
        sink.write("".join(f"jitlens: wrote {path}\n" for path in written))
        if session.parents_paths and report.functions:
            from .outputs import PARENTS_PATH

            names = " or ".join(session.parents_paths)
            sink.write(PARENTS_PATH.format(pid=session.pid, names=names))
    if session.exit_message:
        sink.write(session.exit_message + "\n")


class _Terminal:
    """What ``want_color`` asks of a stream: is jitlens' terminal a tty?"""

    def isatty(self) -> bool:
        from .._track import sink

        return sink.isatty()


def _summary(session: _Session, report: Any, failed: bool) -> None:
    from .._track import sink

    try:
        from .._render.text import render_text

        if session.run is None:  # JITLENS=1: a summary only when something was jitted
            if report.functions:
                sink.write("\n" + render_text(report) + "\n")
            return
        if report.functions or not failed:
            from .._render.color import want_color

            text = render_text(
                report,
                color=want_color(session.run.get("color") or "auto", _Terminal()),  # type: ignore[arg-type]
                include_internal=session.args.include_internal,
                max_lines=EXIT_LINES,
            )
            sink.write("\n" + text + "\n")
    except Exception as exc:
        _warn(f"could not print the summary ({type(exc).__name__}: {exc})")


def _forget_start_up_imports() -> None:
    """Drop from ``sys.modules`` the standard modules jitlens imported while arming (``json``,
    ``linecache``, ``tokenize``, ``token``, ``__future__``): the program's own ``token.py`` or
    ``json.py`` next to its script must be the module its ``import`` finds, as under
    ``python``, not the standard one jitlens happened to load first. jitlens keeps its
    references; the program's next ``import json`` loads the module afresh."""
    try:
        for name in set(sys.modules) - _BEFORE:
            if name.partition(".")[0] in _FORGOTTEN:
                sys.modules.pop(name, None)
    except Exception:
        pass


#: The standard modules :func:`_forget_start_up_imports` drops: stateless ones a program may
#: shadow with a file of its own. Not ``threading`` or ``weakref`` (the hook imports them
#: too): a second copy of those splits the process' state (which threads exit waits for).
_FORGOTTEN = frozenset({"json", "linecache", "tokenize", "token", "__future__", "fnmatch"})


try:
    _arm()
finally:
    _forget_start_up_imports()
