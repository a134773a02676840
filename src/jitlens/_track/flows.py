"""Where a static number went: the programs of two traces decide its fix.

A static number that changed (``N`` 10 -> 20) is explained at the trace's
start, before JAX has traced anything, so its reason is ``flow="unchecked"``
and its fix says both cases in words. When the trace ends, its program
(``_compat.program_fingerprint``) is kept on the call's key; comparing it with
the program of the closest earlier key, whose only differences are static
numbers, says what the number does:

* the same program up to literal constants, the number itself among them (old
  value in the old program, new value in the new one): it is data, a traced
  argument works (the front-end's code fix); the same program without it among
  the literals (used in Python only: a branch both values take alike, a
  ``math.sqrt(n)``): unsure, the words stay;
* other shapes or operations: it sets a shape, a slice length, a loop count or
  a branch; as a traced argument the program would raise, so the compile is
  expected once per value (``messages_static.STATIC_SHAPE_FIX``);
* only an operation's parameter differs (a slice start, an integer power):
  unsure, the words stay.

Nothing here runs the user's function again: the evidence is the trace JAX
just made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _compat
from .._core.explain import closest
from .._core.key import Key, is_number, render_path
from .._core.kinds import EntryKind, ReasonKind
from .._core.words import Words
from .frontend import of_kind
from .records import EventBuilder
from .state import STATE, tls

if TYPE_CHECKING:
    from .._core.template_kinds import FixKind


def wants_program(key: Key | None) -> bool:
    """Does ``key`` hold a static number outside a graph (a static argument, a filter_jit
    scalar), the only kind of static whose program jitlens compares?"""
    if key is None:
        return False
    for e in key.entries.values():
        if e.kind == EntryKind.STATIC and not e.in_graph and e.static is not None:
            if is_number(e.static.value()):
                return True
    return False


def note_program(b: EventBuilder, frame: Any) -> None:
    """At the end of ``b``'s trace: keep its program on its key, decide unchecked reasons."""
    key = b.key
    if not wants_program(key):
        return
    assert key is not None
    key.program = _compat.program_fingerprint(frame)
    if key.program is None or not any(r.flow == "unchecked" for r in b.reasons):
        return
    rec = b.record
    with rec.lock:
        earlier = [k for k in rec.keys if k is not key and k.program is not None]
    old, diffs = closest(key, earlier)
    if old is None or not diffs or not all(map(_static_number, diffs)):
        return  # other differences too: the programs cannot single the number out
    assert old.program is not None
    statics = {render_path(p): e.static.value() for p, e in key.entries.items() if e.static}
    if old.program[:2] == key.program[:2]:
        before = {render_path(p): e.static.value() for p, e in old.entries.items() if e.static}
        entered = all(
            _in(before.get(r.path), old.program[2]) and _in(statics.get(r.path), key.program[2])
            for r in diffs
        )
        flow = "data" if entered else "params"
    else:
        flow = "params" if old.program[0] == key.program[0] else "shape"
    from .._core import reasons as S  # its words load at the first retrace

    b.reasons = tuple(
        S.static_flow(r, _rule(b, statics.get(r.path)) or flow, _data_fix(rec.kind, r, key))
        if r.flow == "unchecked"
        else r
        for r in b.reasons
    )


def _rule(b: EventBuilder, value: Any) -> str:
    """ "rule" when ``value`` reached a custom_vjp's nondiff_argnums in ``b``'s trace (it must
    not be traced, whatever the program shows), else ""."""
    if value is None:
        return ""
    return "rule" if any(type(v) is type(value) and v == value for v in b.nondiff) else ""


def watch_nondiff(check: Any) -> Any:
    """``check`` (JAX's test that a custom_vjp's nondiff argument holds no tracer), also
    noting a static number it sees while a tracked trace is being built."""

    def checked(x: Any) -> Any:
        out = check(x)
        b = tls.building
        if b is not None and is_number(x) and STATE[0]:
            b.nondiff = (*b.nondiff, x)
        return out

    return checked


def _in(value: Any, literals: frozenset[float]) -> bool:
    """Did the static number ``value`` enter the program as a literal of its own value?"""
    try:
        return float(value) in literals
    except (TypeError, ValueError):
        return False


def _static_number(r: Any) -> bool:
    return r.kind == ReasonKind.STATIC_VALUE and r.flow == "unchecked"


def _data_fix(kind: str, r: Any, key: Key) -> tuple[FixKind | str, Words]:
    """The fix for a static number that only enters arithmetic, in the front-end's terms, with
    how to stop it being static read from ``key``'s jit options."""
    from .._core import reasons as S  # the words load at the first retrace

    fe = of_kind(kind)
    unstatic = S.unstatic(key.entries, r.argument or r.path)
    own = fe.data_fix(kind, r, unstatic) if fe is not None else None
    return (r.fix_kind, r.said[1]) if own is None else own  # else a pmap's own words
