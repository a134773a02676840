"""What an unrolled loop walks over, read from the data flow of its equations: plain data.

The fix of a loop the trace unrolled depends on what the loop walks over, not on which
library's jit wraps it (``docs/explanation/compile-cost.md``): layers are kept stacked
and scanned, a state carried through time becomes a ``scan``'s (or ``fori_loop``'s)
carry, independent iterations are a ``vmap``. ``_core/cost.find_loops`` hands this module
the equations of one loop's forward pass, the period of their repeats and where the
repeats end; each equation says which values it reads and writes
(``_compat/jaxpr_api.flatten``). The questions asked:

* does an iteration read what an earlier iteration computed (other than to add it up
  or write it into an output: a sum over heads, ``out.at[i].set``)? If not: independent;
* which arrays from outside the loop does each iteration read whole: the same ones in
  every iteration (weights shared through time), or its own (a layer's parameters)?
* which does it read a slice of (``ws[i]``, ``xs[:, t]``)?

A loop whose per-iteration arrays (its own, or its slices) outweigh the arrays every
iteration shares walks over layers (or over a stacked array); one that shares more than
it owns steps through time with a per-step input; one that owns nothing carries a state.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol


class LoopWalk(enum.StrEnum):
    """``LoopCost.walk``: what the loop walks over, read from the program's data flow.

    The fix follows from it, whichever library's jit wraps the function: layers are
    stacked and scanned, a state carried through time is a ``scan``'s carry, independent
    iterations are a ``vmap``.
    """

    __repr__ = str.__repr__

    #: Each iteration reads arrays of its own (a layer's parameters) and passes on a value.
    LAYERS = "layers"
    #: Each iteration reads a slice of the same stacked arrays (``ws[i]``) and passes on a value.
    STACKED = "stacked"
    #: A state carried from one step to the next, the same arrays read at every step, and a
    #: smaller per-step input (``xs[:, t]``: a recurrent cell over time).
    STEPS = "steps"
    #: A state carried from one step to the next and nothing of its own per step (an integrator).
    CARRY = "carry"
    #: No iteration reads what an earlier one computed (besides adding it up): a batch, heads.
    INDEPENDENT = "independent"
    #: Not read (no data flow known, or a report written before this field).
    UNKNOWN = ""


#: Primitives that read one iteration's slice of an array the loop walks (``ws[i]``, ``xs[:, t]``).
SLICE_PRIMITIVES = frozenset({"slice", "dynamic_slice", "gather", "squeeze", "index_in_dim"})
#: Primitives through which iterations may meet and still be independent: a sum, an
#: output buffer written slice by slice, a concatenation.
GATHERING_PRIMITIVES = frozenset(
    {"add", "add_any", "max", "min", "concatenate", "dynamic_update_slice", "scatter"}
)


class Flow(Protocol):
    """What this module reads of an equation (``_core.cost.Eqn``)."""

    primitive: str
    shapes: tuple[tuple[int, ...], ...]
    reads: tuple[tuple[int, int], ...]
    writes: tuple[int, ...]


#: Where the regular iterations may begin, at most: a first iteration this much longer than
#: the others is taken as regular (its data flow read a few equations off).
START_SEARCH = 64


def _start(seq: Sequence[object], p: int, end: int) -> int:
    """Where the regular iterations begin: a first iteration longer or shorter than the
    others (a carry that starts as a Python float) is everything before that."""
    for s in range(min(p, max(0, end - 2 * p), START_SEARCH) + 1):
        if all(seq[s + j] == seq[s + p + j] for j in range(p)):
            return s
    return 0


def _elements(shapes: tuple[tuple[int, ...], ...]) -> int:
    total = 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def classify(eqns: Sequence[Flow], seq: Sequence[object], p: int, end: int) -> LoopWalk:
    """What the loop whose forward equations are ``eqns`` walks over (see the module doc).

    ``seq`` is their repeat signature, ``p`` its period and ``end`` where the repeats
    end (what follows, e.g. the ``jnp.stack`` of a comprehension's results, is left out).
    """
    if p < 1 or end < 2 * p or not any(e.reads or e.writes for e in eqns):
        return LoopWalk.UNKNOWN
    start = _start(seq, p, end)

    def iteration(i: int) -> int:
        return 0 if i < start else (i - start) // p

    written: dict[int, int] = {}
    for i in range(end):
        for w in eqns[i].writes:
            written[w] = iteration(i)
    count = iteration(end - 1) + 1
    carried = False
    whole: dict[int, set[int]] = {}
    sliced: dict[int, set[int]] = {}
    size: dict[int, int] = {}
    slice_elements = 0
    for i in range(end):
        e, k = eqns[i], iteration(i)
        for value, n in e.reads:
            j = written.get(value)
            if j is None:
                size[value] = n
                if e.primitive in SLICE_PRIMITIVES:
                    sliced.setdefault(value, set()).add(k)
                    slice_elements += _elements(e.shapes)
                else:
                    whole.setdefault(value, set()).add(k)
            elif j < k and e.primitive not in GATHERING_PRIMITIVES:
                carried = True
    if not carried:
        return LoopWalk.INDEPENDENT
    every = max(2, count - 1)
    shared = sum(size[v] for v, ks in whole.items() if len(ks) >= every)
    # read by one iteration only, past the first (whose are the loop's initial state)
    own = sum(size[v] for v, ks in whole.items() if len(ks) == 1 and 0 not in ks) / count
    slices = slice_elements / count if any(len(ks) >= every for ks in sliced.values()) else 0.0
    if own + slices <= 0:
        return LoopWalk.CARRY
    if own + slices >= shared:
        return LoopWalk.LAYERS if own >= slices else LoopWalk.STACKED
    return LoopWalk.STEPS
