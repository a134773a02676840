"""Cache hits tied to the compiled entry they hit when their light signature cannot tell.

A hit is filed under an entry by its light signature (shapes, static numbers, model objects
by identity: ``calls._light``). Two entries can share one: a parameter of the same model
placed otherwise (a sharding recompile under ``nnx.jit``), a static attribute changed in
place. The hits after such a recompile were left "not tied to one". Here the arguments' full
key (``describe.entry_by_key``, what a trace describes) decides; at a price of one description,
only at the first such hit after anything compiled anywhere (``state.EVENTS``) and then at hits
1, 2, 4, 8 ... of that signature: in between, a hit goes to the entry the last decision found,
as nothing compiled meanwhile. When two decisions with nothing compiled between them disagree
(a program alternating two placements, both compiled), the hits filed between them are unknown
again (-1) and so is every later hit of that signature: never a guess presented as measured.
"""

from __future__ import annotations

from typing import Any

from .._record import record
from .describe import entry_by_key
from .records import Record
from .state import EVENTS


@record
class Tie:
    """The last decision for one light signature's hits."""

    entry: int
    #: ``state.EVENTS`` at the decision: a compile anywhere since makes the next hit decide.
    serial: int
    #: The decided call's index in ``Record.call_entries``.
    index: int
    #: The call number (``n``) from which a hit decides again.
    check: int


def tied_entry(
    rec: Record, light: Any, n: int, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> int:
    """The entry hit ``n`` (its light signature ``light`` shared by two entries) went to, or -1."""
    if rec.frontend is not None:  # a library's jit: its key is not the user's arguments'
        return -1
    tie = rec.ties.get(light, ...)
    if tie is None:  # alternating with nothing compiled between: not tied any more
        return -1
    serial = EVENTS[0]
    if isinstance(tie, Tie) and tie.serial == serial and n < tie.check:
        return tie.entry
    entry = entry_by_key(rec, args, kwargs)
    index = len(rec.call_times)  # the place this call's entry takes (``add_call_time``)
    if isinstance(tie, Tie) and tie.serial == serial and tie.entry != entry:
        for i in range(tie.index + 1, min(index, len(rec.call_entries))):
            rec.call_entries[i] = -1  # filed by the decision this one contradicts
        rec.ties[light] = None
        return -1
    if entry >= 0:
        rec.ties[light] = Tie(entry, serial, index, max(n + 1, 2 * n))
    return entry
