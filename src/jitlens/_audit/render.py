"""Render an :class:`jitlens.AuditResult`: a rich table with colour, wrapped plain text without."""

from __future__ import annotations

import io
import textwrap

from .._render.text import glue_code, unglue, wrap_at_joints
from . import model
from .model import AuditFinding, AuditResult, Evidence

HEADER = "jitlens audit {target}: built twice; {roots}; {statics} statics compared"
SUMMARY = "{errors} error{es}, {warnings} warning{ws}, {infos} info."
ERRORS_FOOTER = "Each error recompiles every {jit} function for each new instance (exit 1)."
CLEAN = "No recompile traps found: two fresh builds give equal cache keys."
EVIDENCE_BUILDS = "builds: {before} -> {after}"
#: How the target was loaded and built (``AuditResult.notes``).
NOTE = "note: {note}"
EVIDENCE_NEW = "builds: {value}, a new object in each"
EVIDENCE_SHARED = "value: {value}, one object shared by both builds"
EVIDENCE_VALUE = "value: {value}"

_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _header(result: AuditResult) -> str:
    roots = ", ".join(result.roots)
    return HEADER.format(target=result.target, roots=roots, statics=result.statics)


def _summary(result: AuditResult) -> str:
    n_err, n_warn = len(result.errors), len(result.warnings)
    es, ws = "" if n_err == 1 else "s", "" if n_warn == 1 else "s"
    text = SUMMARY.format(errors=n_err, es=es, warnings=n_warn, ws=ws, infos=len(result.infos))
    if n_err:
        return f"{text} {ERRORS_FOOTER.format(jit=result.jit)}"
    return text if n_warn else f"{CLEAN} {text}" if result.infos else CLEAN


_EVIDENCE = {
    Evidence.NEW: EVIDENCE_NEW,
    Evidence.SHARED: EVIDENCE_SHARED,
    Evidence.VALUE: EVIDENCE_VALUE,
}


def _evidence(f: AuditFinding) -> str:
    if f.evidence is Evidence.BUILDS:
        return EVIDENCE_BUILDS.format(before=f.before, after=f.after)
    return _EVIDENCE[f.evidence].format(value=f.before)


def render_audit(result: AuditResult, *, color: bool = False, width: int = 100) -> str:
    """The findings as text: a rich table when ``color``, plain wrapped lines otherwise.

    Never raises: if rich fails, the plain text comes back instead.
    """
    if color:
        try:
            return _render_rich(result, width)
        except Exception:
            pass
    lines = wrap_at_joints(_header(result), width)
    for note in result.notes:
        lines += textwrap.wrap(
            glue_code(NOTE.format(note=note)), width, subsequent_indent="  ",
            break_on_hyphens=False, break_long_words=False,
        )  # fmt: skip
    for f in result.findings:
        lines += ["", f"{f.severity:<8} {f.path}  ({f.kind})"]
        for text in (f.message, _evidence(f), f"fix: {f.fix}"):
            lines += textwrap.wrap(
                glue_code(text),  # a fix's code on one line, ready to copy
                width,
                initial_indent="    ",
                subsequent_indent="      ",
                break_on_hyphens=False,
                break_long_words=False,
            )
    lines += ["", *wrap_at_joints(_summary(result), width, joint=". ")]
    return unglue("\n".join(lines)) + "\n"


def _render_rich(result: AuditResult, width: int) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, highlight=False, emoji=False)
    console.print(Text(_header(result), style="bold"))
    for note in result.notes:
        console.print(Text(NOTE.format(note=note), style="dim"))
    if result.findings:
        table = Table(box=box.SIMPLE_HEAD, expand=True, pad_edge=False, leading=1)
        table.add_column("severity", no_wrap=True)
        table.add_column("path", overflow="fold")
        table.add_column("finding", ratio=1, overflow="fold")
        # what the finding column can hold: a longer code span is folded, not kept whole
        side = max(max(len(f.path), len(f.kind)) for f in result.findings)
        room = width - side - len("severity") - 8
        for f in result.findings:
            body = Text(glue_code(f.message, room))
            body.append(f"\n{glue_code(_evidence(f), room)}", style="dim")
            body.append(f"\nfix: {glue_code(f.fix, room)}", style="green")
            severity = Text(f.severity, style=_STYLES[f.severity])
            table.add_row(severity, Text(f"{f.path}\n{f.kind}"), body)
        console.print(table)
    console.print(Text(_summary(result), style="bold red" if result.errors else "green"))
    return unglue(buffer.getvalue())


model.TEXT[0] = render_audit
