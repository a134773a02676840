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


def free_values(fn: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """The objects the closure ``fn`` holds for ``names`` (``explain.data_free_vars``)."""
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    if code is None or not cells or not names:
        return ()
    held = dict(zip(code.co_freevars, cells, strict=False))
    try:
        return tuple(held[n].cell_contents for n in names)
    except (KeyError, ValueError):
        return ()


def changing(
    names: tuple[str, ...],
    values: tuple[Any, ...],
    others: Sequence[tuple[tuple[str, ...], tuple[Any, ...]]],
) -> tuple[str, ...]:
    """The free variables ``names`` (holding ``values``) of a wrapper whose objects differ
    from an earlier wrapper's (``others``: their names and values).

    A closure over one object that every wrapper shares (a counter list, a config built
    once) keeps it when jitted once: only values built anew per call would freeze. Without
    a live earlier wrapper to compare with, every free variable counts as changing."""
    if len(values) != len(names):
        return names
    out = []
    for name, mine in zip(names, values, strict=True):
        seen = [vs[ns.index(name)] for ns, vs in others if name in ns and len(vs) == len(ns)]
        if not seen or any(v is not mine for v in seen):
            out.append(name)
    return tuple(out)
