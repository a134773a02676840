"""Two wrappers of one code that call different functions: deliberately different, not rebuilt.

blackjax's quickstart builds ``one_step`` once per sampler, each closing over
another kernel; jitlens' first-trace policy would call the second a "new
wrapper of the same code". The closures' callees (read by
``_compat.closure_callees`` as plain data: names, labels, code objects) say
otherwise: a different function, compiled once on purpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _codes(callees: tuple[Any, ...]) -> Any:
    return tuple((name, code, _codes(sub)) for name, _label, code, sub in callees)


def callee_change(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[str, str, str] | None:
    """``(free variable, before, after)``: the first function the closures call differently."""
    for (name, label, code, sub), (name2, label2, code2, sub2) in zip(old, new, strict=False):
        if name != name2:
            return None
        if code is not code2:
            return name, label, label2
        deeper = callee_change(sub, sub2)
        if deeper is not None:
            return name, deeper[1], deeper[2]
    return None


def different_function(
    new: tuple[Any, ...], earlier: Sequence[tuple[Any, ...]]
) -> tuple[str, str, str] | None:
    """What the new wrapper calls differently from every earlier one (None: not different)."""
    if not new or not earlier or any(_codes(e) == _codes(new) for e in earlier):
        return None
    return callee_change(earlier[-1], new)
