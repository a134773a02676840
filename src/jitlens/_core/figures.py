"""The invariants every report written by jitlens keeps, checked when a report is read.

A report read from disk may have been edited, generated or corrupted: a figure
that no run can produce (a negative count, more cache hits than calls) is
refused with one line naming the field, instead of being drawn or compared.
"""

from __future__ import annotations

from typing import Any

from .._errors import ReportError

#: A figure no run can produce: the report was edited, generated or corrupted.
IMPOSSIBLE = "{where}: {what}, which no run produces (was the file edited?)"


def not_negative(value: Any, where: str) -> None:
    """Counts and seconds are finite and >= 0 (JSON's ``NaN``/``Infinity`` parse as floats)."""
    if value is not None and not (0 <= value < float("inf")):
        raise ReportError(IMPOSSIBLE.format(where=where, what=f"{value!r} is negative or infinite"))


def check_figures(fn: Any, where: str) -> None:
    """The invariants every report written by jitlens keeps (``Record.freeze``).

    Traces may exceed calls (an AOT ``.lower()``, a trace inside another trace)
    and compiles may exceed traces (a compile with no trace): those are not checked.
    """
    for k in ("calls", "traces", "compiles", "cache_hits", "persistent_cache_hits"):
        not_negative(getattr(fn, k), f"{where}.{k}")
    for k in ("python_dispatch_calls", "first_call_index"):
        not_negative(getattr(fn, k), f"{where}.{k}")
    for k in ("trace_seconds", "lower_seconds", "compile_seconds"):
        not_negative(getattr(fn, k), f"{where}.{k}")
    if fn.calls is not None and fn.cache_hits is not None and fn.cache_hits > fn.calls:
        what = f"cache_hits {fn.cache_hits} > calls {fn.calls} (a hit is a call)"
        raise ReportError(IMPOSSIBLE.format(where=where, what=what))
    if fn.call_entries and len(fn.call_entries) != len(fn.call_times):
        what = f"{len(fn.call_entries)} call_entries for {len(fn.call_times)} call_times"
        raise ReportError(IMPOSSIBLE.format(where=where, what=what))
    for i, e in enumerate(fn.events):
        at = f"{where}.events[{i}]"
        for k in ("trace_seconds", "lower_seconds", "compile_seconds", "explain_seconds"):
            not_negative(getattr(e, k), f"{at}.{k}")
        not_negative(e.time, f"{at}.time")
        not_negative(e.call_index, f"{at}.call_index")
        if not isinstance(e.entry, int) or isinstance(e.entry, bool) or e.entry < -1:
            raise ReportError(IMPOSSIBLE.format(where=f"{at}.entry", what=f"{e.entry!r}"))
