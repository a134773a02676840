"""The advice and compile-cost sections of a report's text: what else costs time, and what to do.

Every line says something to do: an advice's subject, kind (in words), saving and message,
then its fix; the compile cost of a function only where an advice makes its program smaller
(a loop the trace unrolled, a captured constant). The persistent cache is one hint for the run
(``_core.advice.run_advice``), not the same setting repeated under every function.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._core.advice import COMPILE_SIZE_KINDS, SAVING_SCOPE, run_advice
from .._core.kinds import AdviceKind
from .._core.lines import Line, Role
from .._core.report import Advice, Event, FunctionReport
from .._core.runinfo import RunInfo

ADVICE_TITLE = "advice: what else costs time, most valuable first"
ADVICE_LINE = "{qualname}  {kind}{saving}: {message}"
ADVICE_SAVING = ", saves ~{seconds:.2f} s"
ADVICE_FIX = "fix: {fix}"
#: The subject of advice about the whole run (the persistent cache: one setting for all).
RUN_SUBJECT = "the whole run"
COST_TITLE = "compile cost: what the longest compiles are made of"
COST_LINE = (
    "{qualname}  {seconds:.2f} s to trace + compile {eqns:,} equations; "
    "{share:.0%} of them from {where} ({function}){extra}"
)
COST_LOOP = "; loop at {where} x{n}"
COST_CONSTS = "; {size} of captured constants"
#: Each kind of advice in words (text and HTML): what it is about, for a reader who does not
#: know jitlens' kinds. A kind a newer jitlens wrote is shown as it is.
ADVICE_TITLES: dict[str, str] = {
    AdviceKind.DISPATCH: "host time per call",
    AdviceKind.COMPILE_CACHE: "persistent compilation cache",
    AdviceKind.ENTRIES: "compiled entries still piling up",
    AdviceKind.DISABLE_JIT: "jit disabled",
    AdviceKind.BUCKETS: "one axis, many sizes",
    AdviceKind.FAST_PATH: "calls off JAX's fast path",
    AdviceKind.UNROLLED_LOOP: "a loop unrolled into the program",
    AdviceKind.CAPTURED_CONSTANT: "a large constant in the program",
    AdviceKind.COMPILE_BOUND: "compiled, never reused",
    AdviceKind.MANY_LEAVES: "thousands of leaves per call",
}


def advice_title(kind: str) -> str:
    """An advice kind in words (``compile_bound``: "compiled, never reused")."""
    return ADVICE_TITLES.get(kind, kind)


def saving(seconds: float | None, kind: str) -> str:
    """``, saves ~0.25 s`` (and what it saves, where "this run" would be wrong), or ""."""
    if seconds is None:
        return ""
    return ADVICE_SAVING.format(seconds=seconds) + SAVING_SCOPE.get(kind, "")


def ranked(
    functions: Sequence[FunctionReport], run: RunInfo | None
) -> list[tuple[str, FunctionReport | None, Advice]]:
    """Every advice to show, most valuable first, with its subject (a function's name, or the
    whole run's) and its function: a function's ``compile_cache`` advice goes into the run's one
    hint, left out when the run's cache notes say why the cache did not help (the same hint)."""
    items: list[tuple[str, FunctionReport | None, Advice]] = [
        (fn.qualname, fn, a)
        for fn in functions
        for a in fn.advice
        if a.kind is not AdviceKind.COMPILE_CACHE
    ]
    cache = run_advice(functions, run.persistent_cache if run is not None else None)
    if cache is not None and not (run is not None and run.notes):
        items.append((RUN_SUBJECT, None, cache[0]))
    # the cache and a smaller program save the same compile seconds: the cache ranks by what
    # it would still save once the programs are made smaller, so the cause comes first
    shrunk = sum(
        a.estimated_saving_seconds or 0.0 for _, _, a in items if a.kind in COMPILE_SIZE_KINDS
    )

    def value(a: Advice) -> float:
        saving = a.estimated_saving_seconds or 0.0
        return max(0.0, saving - shrunk) if a.kind is AdviceKind.COMPILE_CACHE else saving

    items.sort(key=lambda p: (p[2].kind is not AdviceKind.DISABLE_JIT, -value(p[2])))
    return items


def advice_lines(functions: Sequence[FunctionReport], run: RunInfo | None = None) -> list[Line]:
    """The advice section: each advice's subject, kind in words, saving and message, then its
    fix; nothing when there is no advice."""
    items = ranked(functions, run)
    if not items:
        return []
    lines: list[Line] = [Line(0, ADVICE_TITLE, Role.SECTION)]
    for subject, _, a in items:
        text = ADVICE_LINE.format(
            qualname=subject,
            kind=advice_title(a.kind),
            saving=saving(a.estimated_saving_seconds, a.kind),
            message=a.message,
        )
        lines.append(Line(2, text, Role.SUBJECT))
        lines.append(Line(4, ADVICE_FIX.format(fix=a.fix), Role.FIX))
    return lines


def costliest(fn: FunctionReport) -> Event | None:
    """The function's longest compile whose program jitlens read (``Event.cost``), or None."""
    costed = [e for e in fn.events if e.cost is not None and e.cost.eqns > 0]
    return max(costed, key=lambda e: e.seconds) if costed else None


def made_smaller(fn: FunctionReport) -> bool:
    """Does an advice of ``fn`` make its program smaller (a loop, a constant)? Then what the
    program is made of is worth reading; otherwise there is nothing to do with it."""
    return any(a.kind in COMPILE_SIZE_KINDS for a in fn.advice)


def compile_cost_lines(functions: Sequence[FunctionReport]) -> list[Line]:
    """One line per function whose long compile was read and an advice makes smaller: the line
    that makes it big."""
    lines: list[Line] = []
    for fn in functions:
        e = costliest(fn)
        if e is None or e.cost is None or not e.cost.lines or not made_smaller(fn):
            continue
        cost, top = e.cost, e.cost.lines[0]
        extra = ""
        if cost.loops:
            loop = cost.loops[0]
            extra += COST_LOOP.format(where=f"{loop.file}:{loop.line}", n=loop.iterations)
        if cost.const_bytes >= 1 << 20:
            extra += COST_CONSTS.format(size=f"{cost.const_bytes / 2**20:.1f} MiB")
        text = COST_LINE.format(
            qualname=fn.qualname,
            seconds=e.seconds,
            eqns=cost.eqns,
            share=top.eqns / cost.eqns,
            where=f"{top.file}:{top.line}",
            function=top.function,
            extra=extra,
        )
        lines.append(Line(2, text, Role.EVIDENCE))
    return [Line(0, COST_TITLE, Role.SECTION), *lines] if lines else []
