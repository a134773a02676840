"""Journals left behind: a tracked program that ended without its report, read afterwards.

Under ``jitlens run`` the program's parent reads its journal the moment it ends.
Under ``JITLENS=1`` and the pytest plugin nobody outlives the program: a normal
exit writes the report and deletes the journal, and any other ending (SIGKILL from
the OOM killer or a scheduler, ``os._exit``, a signal) leaves it in the journal
folder. ``jitlens report JOURNAL`` builds its report; ``jitlens report`` lists them;
the next ``jitlens run``, ``JITLENS=1`` program or pytest session with jitlens
builds the report of each journal whose process is gone and says so in one line
(:func:`recover`), writing the files that run had asked for.
"""

from __future__ import annotations

import os
import time

from .._core.journal import (
    SUFFIX,
    UNSEEN_ENDING,
    Journal,
    JournalError,
    journal_dir,
    read,
    report_from_journal,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

RUNNING = "still running: this report is its journal so far"
NONE_LEFT = "jitlens report: no journal left in {folder}: every tracked run wrote its report\n"
LISTED = "{path}\n  pid {pid}, started {when}: {argv}\n  {state}\n"
READ_IT = "read its report: jitlens report {path}"
RECOVERED = (
    "jitlens: an earlier run (pid {pid}: {argv}, started {when}) ended without its report; "
    "built from its journal: {what}\n"
)


def report_of_journal(path: str, include_internal: bool = False) -> Any:
    """The report a journal holds: its program's own, or one built from its frames."""
    journal = read(path)
    if journal.final is not None:
        return report_from_journal(journal, None, include_internal)
    how = RUNNING if running(journal) else UNSEEN_ENDING
    return report_from_journal(journal, how, include_internal)


def running(journal: Journal) -> bool:
    """Is the journal's process, or the ``jitlens run`` above it, still alive?"""
    start = journal.start
    if _alive(start.get("pid"), start.get("proc_start")):
        return True
    supervisor = (start.get("settings") or {}).get("supervisor")
    return _alive(supervisor, None)


def _alive(pid: Any, started: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # someone else's process: alive
    if started is None:
        return True
    from .._track.journal import process_start

    now = process_start(pid)
    return now is None or now == started


def _journals(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if SUFFIX in n]


def list_journals(out: TextIO) -> int:
    """``jitlens report`` without a report: the journals left, and how to read each."""
    folder = journal_dir()
    found = _journals(folder)
    if not found:
        out.write(NONE_LEFT.format(folder=folder))
        return 0
    for path in found:
        try:
            journal = read(path)
        except JournalError as exc:
            out.write(f"{path}\n  not readable: {exc}\n")
            continue
        state = "still running" if running(journal) else READ_IT.format(path=path)
        out.write(LISTED.format(path=path, state=state, **_who(journal)))
    return 0


def _who(journal: Journal) -> dict[str, str]:
    start = journal.start
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(start.get("started_at", 0))))
    argv = " ".join(str(a) for a in start.get("argv") or ()) or "?"
    return {"pid": str(start.get("pid", "?")), "when": when, "argv": argv}


def recover(write: Any, own: str | None = None) -> None:
    """Build the report of every journal whose process is gone (not ``own``), write the files
    its run asked for, say so in one line through ``write``, and delete the journal. Two
    sessions never both take one: a journal is renamed before it is read. Never raises."""
    try:
        for path in _journals(journal_dir()):
            if path == own or path.endswith(".taken"):
                continue
            try:
                _recover_one(path, write)
            except Exception as exc:
                write(f"jitlens: could not read the journal {path} ({type(exc).__name__}: {exc})\n")
    except Exception:
        pass


def _recover_one(path: str, write: Any) -> None:
    journal = read(path)
    if running(journal):
        return
    taken = path + ".taken"
    try:
        os.rename(path, taken)  # another session took it first: its own
    except OSError:
        return
    report = report_from_journal(journal, None if journal.final else UNSEEN_ENDING)
    written = _write_asked(report, journal)
    what = (
        "wrote " + ", ".join(written)
        if written
        else f"{len(report.functions)} function(s); read it: jitlens report {path}"
    )
    write(RECOVERED.format(what=what, **_who(journal)))
    if written:
        os.unlink(taken)
    else:
        os.rename(taken, path)


def _write_asked(report: Any, journal: Journal) -> list[str]:
    """The report files the run had asked for (``--json``, ``JITLENS_REPORT``...), at the paths
    it gave (relative ones where it started)."""
    from .._render.outputs import Output, is_url, write_outputs
    from .._track.process import ProcessInfo

    asked = (journal.start.get("settings") or {}).get("outputs") or {}
    cwd = str(journal.start.get("cwd") or "")
    outputs = []
    for kind, given in asked.items():
        if kind in ("json", "html", "trace") and isinstance(given, str) and given:
            path = given if is_url(given) or os.path.isabs(given) else os.path.join(cwd, given)
            outputs.append(Output(kind, given, path))
    if not outputs:
        return []
    pid = journal.start.get("pid")
    info = ProcessInfo(report.process_index, report.process_count, report.host, pid)
    return write_outputs(report, outputs, info=info)
