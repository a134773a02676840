"""``jitlens run`` as the program's parent: start it, pass signals on, report however it ended.

The program runs as ``python [its flags] PROGRAM ARGS``, a child with Python's own
start-up, ``sys.path``, shutdown and exit status, and with nothing of jitlens'
that catches its ending: jitlens records as it goes, in a journal
(``_track/journal.py``), and this parent, which outlives it, reads the journal:

* at Python's own exit the program puts its whole report in the journal, and the
  parent writes the files and the summary from it;
* however else it ends (SIGKILL from the OOM killer or a scheduler, ``os._exit``,
  an uncaught signal, ``os.abort()``), the parent builds the report from the
  journal and says how the program ended.

While the program runs, the parent waits with its signals blocked
(``sigtimedwait``): a signal sent to ``jitlens run`` by another process (``kill``,
a container's stop, a batch scheduler) is passed on to the program; one the
terminal sent to the whole foreground group (Ctrl-C, Ctrl-\\\\, a hang-up) reached
the program too, and is not sent twice. Job control (Ctrl-Z) stops and continues
both, as the group they are. Lines jitlens says while the program's descriptor 2
is not the parent's (pytest's ``capfd``, a program's own redirection) come from
the journal and are shown here.

At the end the parent exits as the program did, dying of the program's signal
where the program died of one (as ``timeout`` and ``time`` do), with its core
dump left off; a compile budget the program swallowed and then exited 0 ends
with 1. The one place of jitlens where a signal's action is set is here, in its
own process, to die of the program's signal.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Seconds between two looks at the journal while the program runs (for lines to show).
TICK = 0.1
#: Signals passed on to the program when a process sent them to ``jitlens run``.
FORWARD = tuple(
    getattr(signal, name)
    for name in (
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGTERM",
        "SIGUSR1",
        "SIGUSR2",
        "SIGALRM",
        "SIGPWR",
        "SIGXCPU",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
    )
    if hasattr(signal, name)
)
#: ``si_code`` of a signal the kernel sent (a terminal's Ctrl-C, a hang-up): not passed on.
SI_KERNEL = 0x80
#: Signals whose default action dumps core: the parent dies of them without a core of its own.
_CORES = frozenset(
    getattr(signal, name)
    for name in ("SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV")
    if hasattr(signal, name)
)

SWALLOWED = (
    "jitlens run: the program caught jitlens' RecompileError and went on; "
    "exiting 1 as {flag} asks ({n} violation(s), the first above in the log)"
)
OWN_STATUS = (
    "jitlens run: the program caught jitlens' RecompileError ({n} violation(s), the first above "
    "in the log) and chose its own exit status, {status}: it stands"
)
CANNOT_COUNT = "jitlens run: {why}"
NOTHING = (
    "jitlens: the program ended {how} before a jitted function was traced: nothing to report\n"
)
CANNOT_START = "jitlens run: cannot start {python}: {why}"
NOT_TRACKED = (
    "jitlens run: the program left no journal: jitlens was not active in it "
    "(its interpreter did not process jitlens_autostart.pth)\n"
)
EXECUTED = "by an os.exec* call (the process became another program)"
REEXECUTED = (
    "the program re-executed itself (os.exec*, same process) {n} time(s): this report is of "
    "its last image; the calls before are in the earlier images' journals"
)


def spawn_and_wait(command: list[str], env: dict[str, str]) -> tuple[int, Any]:
    """Start the program and wait for it, passing signals on and showing the journal's lines;
    ``(its exit status as subprocess gives it: -N for a signal, the follower)``."""
    from .._core.journal import Follower

    follower = Follower(env_journal(env))
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:  # inherited: the kernel would reap
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # it, and its status would be lost
    wanted = {*FORWARD, signal.SIGCHLD}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    try:
        try:
            pid = os.posix_spawn(command[0], command, env, setsigmask=old)
        except OSError as exc:
            tell(CANNOT_START.format(python=command[0], why=exc.strerror or exc) + "\n")
            return 127, follower
        exe = _exe(pid)
        status = None
        while status is None:
            try:
                info = signal.sigtimedwait(wanted, TICK)
            except InterruptedError:
                info = None
            if info is not None and info.si_signo != signal.SIGCHLD:
                _pass_on(pid, info)
            status = _ended(pid)
            if status is None and exe is not None and _exe(pid) not in (exe, None):
                follower.exec_seen = True  # it became another program (os.exec*)
            _show(follower.poll())
        while signal.sigtimedwait(wanted, 0) is not None:  # what came after the end: dropped
            pass
        return status, follower
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _exe(pid: int) -> str | None:
    """The program file process ``pid`` runs (Linux), to see an ``os.exec*`` into another."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def env_journal(env: dict[str, str]) -> str:
    import json

    from .environ import RUN

    return str(json.loads(env[RUN])["journal"])


def _pass_on(pid: int, info: Any) -> None:
    """A signal a process sent to ``jitlens run`` goes to the program; one the kernel sent
    (the terminal's, to the whole group) or the program itself sent (to its group) does not."""
    if info.si_code == SI_KERNEL or info.si_pid == pid:
        return
    try:
        os.kill(pid, info.si_signo)
    except OSError:
        pass


def _ended(pid: int) -> int | None:
    """The program's exit status (``-N``: died of signal N), or ``None`` while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # reaped by the kernel: its status is gone
        return 0
    if done == 0:
        return None
    return os.waitstatus_to_exitcode(status)


def tell(text: str) -> None:
    """Words of jitlens' own on its stderr: where that is a pipe nobody reads (``2>&1 | head``)
    or a full disk, the words are lost and nothing else: the status stays the program's."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        try:
            sys.stderr = open(os.devnull, "w")  # (and Python's own flush at exit finds nothing)
        except OSError:
            pass


def _show(lines: list[str]) -> None:
    """Lines jitlens said in the program where its descriptor 2 was not the terminal's."""
    if not lines:
        return
    data = "".join(lines).encode(getattr(sys.stderr, "encoding", None) or "utf-8", "replace")
    try:
        while data:
            data = data[os.write(2, data) :]
    except OSError:
        pass


def how_it_ended(status: int) -> str:
    """The program's end in words, for a report built from its journal."""
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"by {name}"
    return f"with status {status} (os._exit, or a crash)"


def die_as(status: int) -> int:
    """Exit as the program did: its status, or death by its signal (no core dump of ours)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    if status >= 0:
        return status
    signum = -status
    try:
        if signum in _CORES:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if signum != signal.SIGKILL:
            signal.signal(signum, signal.SIG_DFL)  # (jitlens run's own process: the docstring)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    except (OSError, ValueError):
        pass
    try:
        os.kill(os.getpid(), signum)
    except OSError:
        pass
    return 128 + signum


def finish(status: int, follower: Any, args: Any) -> int:
    """After the program ended: its report (from the journal), the files, the summary; returns
    the status ``jitlens run`` exits with (see :func:`die_as` for a signal)."""
    from .._core import journal as layout

    journal = follower.close()
    images = _later_images(follower.path)
    exec_ended, image = False, 0
    for n in range(len(images), 0, -1):  # it re-executed itself: the last image that jitted
        later = layout.read(images[n - 1]) if _readable(images[n - 1]) else None
        if later is not None and (later.final or later.functions):
            journal, image = later, n
            break
        exec_ended = True  # (an image that jitted nothing: the report is an earlier one's)
    exec_ended = exec_ended or follower.exec_seen
    if journal is None:
        if status == 0 and not args.quiet:
            tell(NOT_TRACKED)
        return status
    final = journal.final or {}
    written = list(final.get("written") or [])
    made = "text" in final and not image and not exec_ended  # the program made its report
    stopped = journal.interrupted and not final  # a Ctrl-C stopped its writing: no more
    report = None if made or stopped else _report(journal, status, image, args, exec_ended)
    if made and not args.quiet:
        tell(str(final["text"]) + "".join(f"jitlens: wrote {path}\n" for path in written))
    if report is not None:
        if not written:  # (a --gather the program finished wrote its own files)
            from .outputs import write_outputs

            written = write_outputs(report, args, journal.start.get("pid"))
        if not args.quiet:
            _summary(report, args, failed=bool((journal.final or {}).get("failed")))
            tell("".join(f"jitlens: wrote {path}\n" for path in written))
    if report is None and journal.final is None and not journal.exited and not args.quiet:
        tell(NOTHING.format(how=how_it_ended(status)))
    status = _verdict(journal, status)
    for path in (follower.path, *images):
        _unlink(path)
    from .._journals import recover

    recover(tell)  # earlier runs that ended without their report (JITLENS=1)
    return status


def _later_images(path: str) -> list[str]:
    """The journals of the program's later images (``os.execv`` of itself), in order."""
    found = []
    n = 2
    while os.path.exists(f"{path}.{n}"):
        found.append(f"{path}.{n}")
        n += 1
    return found


def _readable(path: str) -> bool:
    from .._core.journal import is_journal

    return is_journal(path)


def _report(journal: Any, status: int, reexecs: int, args: Any, exec_ended: bool) -> Any:
    """The report the journal holds: the program's own at Python's exit, or one built from its
    frames, saying how it ended; ``None`` when there is nothing to report."""
    import dataclasses

    from .._core import journal as layout

    if journal.final is None and not journal.functions:
        return None  # it never imported jax, or jitted nothing before it ended
    try:
        seen = journal.final is not None or (journal.exited and status >= 0)
        how = None if seen else how_it_ended(status)  # (a signal at the exit: said too)
        if exec_ended and journal.final is None:
            how = EXECUTED
        report = layout.report_from_journal(journal, how, bool(args.include_internal))
    except Exception as exc:
        tell(f"jitlens run: cannot read the journal {journal.path} ({exc})\n")
        return None
    if reexecs:
        said = (*report.warnings, REEXECUTED.format(n=reexecs))
        report = dataclasses.replace(report, warnings=said)
    return report


def _summary(report: Any, args: Any, failed: bool) -> None:
    from .environ import EXIT_LINES

    try:
        from .._render.color import want_color
        from .._render.text import render_text

        if not report.functions and failed:
            return
        text = render_text(
            report,
            color=want_color(args.color or "auto", sys.stderr),
            include_internal=args.include_internal,
            max_lines=EXIT_LINES,
        )
        tell("\n" + text + "\n")
    except Exception as exc:
        tell(f"jitlens: could not print the summary ({type(exc).__name__}: {exc})\n")


def _verdict(journal: Any, status: int) -> int:
    """A compile budget's verdict on the program's status: a violation the program caught
    before it exited 0 is a failure; a status it chose itself, or a signal, stands."""
    verdict = journal.verdict
    if not verdict or not verdict.get("violations"):
        return status
    n, flag = int(verdict["violations"]), str(verdict.get("flag", "--max-traces"))
    if n < 0:  # the budget could not count
        tell(CANNOT_COUNT.format(why=flag) + "\n")
        return 2 if status == 0 else status
    failed = bool((journal.final or {}).get("failed"))
    if status == 0:
        tell(SWALLOWED.format(flag=flag, n=n) + "\n")
        return 1
    if status > 0 and not failed:
        tell(OWN_STATUS.format(n=n, status=status) + "\n")
    return status


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
