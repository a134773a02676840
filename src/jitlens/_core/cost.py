"""What one compiled program is made of, attributed to the user's source: plain data.

A slow first compile is usually a program that is big for a reason the user
can see in their own code (JAX's guide, "Debugging slow JAX tracing and XLA
compilation"): a Python loop that the trace unrolls, or a large NumPy array
captured as a constant. ``_track/cost.py`` reads the jaxpr JAX traced (only
for compiles that took long) and hands this module flat equations with the
user's frames; this module finds the lines, the loops and their trip counts,
with no JAX and no file access (the loops of a file come in as source text).

Equations stand for program size: XLA's compile time grows with them
(``benchmarks/compile_cost.py`` measures it; ``_core/advice.py`` turns the
figures into a predicted saving).
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import tokenize
from collections.abc import Callable, Sequence
from typing import Any

from .._pyast import parse
from .fields import NUM, as_list, build_fields, check_type
from .loop_walk import LoopWalk, classify

#: Lines kept per program (the largest first).
LINES_MAX = 12
#: Loops and constants kept per program.
LOOPS_MAX = 8
CONSTS_MAX = 8
#: An iteration pattern may differ from the period in this share of equations
#: (a first or last layer with its own shape, a tail after the loop on its line).
PERIOD_MISMATCH = 0.1
#: Candidate periods tried (each a place where the loop's first equation recurs).
PERIOD_CANDIDATES = 64


class LoopKind(enum.StrEnum):
    """``LoopCost.kind``: how the loop is written (a ``lax.scan`` with ``unroll`` is one too)."""

    __repr__ = str.__repr__

    FOR = "for"
    WHILE = "while"
    COMPREHENSION = "comprehension"
    UNROLLED_SCAN = "unrolled scan"


LOOP_KINDS: tuple[LoopKind, ...] = tuple(LoopKind)


#: ``(file, line, function, the function's first line, the user's?)``, outermost first;
#: frames of a model library (flax, equinox) are kept, marked False, for their loops.
Frame = tuple[str, int, str, int, bool]


@dataclasses.dataclass(frozen=True)
class Eqn:
    """One equation: its primitive, how many copies XLA compiles, the user's frames, and
    (where known) its pass, its outputs' shapes and the values it reads and writes."""

    primitive: str
    weight: int
    stack: tuple[Frame, ...]
    #: Recorded by a backward pass (``jax.grad``'s transpose): repeats of a loop there are
    #: searched apart from the forward pass's.
    backward: bool = False
    shapes: tuple[tuple[int, ...], ...] = ()
    #: ``(value id, elements)`` of what it reads; the ids of what it writes.
    reads: tuple[tuple[int, int], ...] = ()
    writes: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class LineCost:
    """Equations recorded while a user line ran (inclusive: a call line counts its callee's)."""

    file: str
    line: int
    function: str
    eqns: int


@dataclasses.dataclass(frozen=True)
class LoopCost:
    """A loop that made the program ``iterations`` copies of its body."""

    file: str
    line: int
    function: str
    kind: LoopKind | str
    iterations: int
    eqns: int
    body_eqns: int
    #: A model library's loop reached from the user's line above (``Sequential.__call__``);
    #: "" when the loop is the user's own.
    via: str = ""
    #: An unrolled scan's trip count (``iterations`` is its unroll); 0 when not one or unknown.
    length: int = 0
    #: What the loop walks over (a ``LoopWalk``): layers, a stacked array, steps through time,
    #: independent iterations; "" when unknown.
    walk: LoopWalk | str = ""
    #: The model library whose modules run in the loop's body (``nnx``, ``linen``, ``haiku``,
    #: ``eqx``); "" when the body is plain JAX or unknown.
    api: str = ""


@dataclasses.dataclass(frozen=True)
class ConstCost:
    """An array captured from Python and compiled into the program as a constant."""

    #: The name it was captured under (``table``, ``self.table``); "" when not found.
    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    #: The user's line that first reads it (where an array made in the function's body,
    #: which no variable names, is used); "" / 0 when unknown.
    file: str = ""
    line: int = 0


@dataclasses.dataclass(frozen=True)
class CompileCost:
    """What one compiled program is made of (``Event.cost``)."""

    #: Equations XLA compiles (rolled loop bodies once, unrolled ones per copy).
    eqns: int
    lines: tuple[LineCost, ...] = ()
    loops: tuple[LoopCost, ...] = ()
    consts: tuple[ConstCost, ...] = ()
    #: Bytes of all captured constants (not only those kept in ``consts``).
    const_bytes: int = 0
    #: What reading the jaxpr cost jitlens, on the program's thread.
    collect_seconds: float = 0.0


def line_costs(eqns: Sequence[Eqn]) -> tuple[LineCost, ...]:
    """The user lines holding most equations (each line counted once per equation)."""
    counts: dict[tuple[str, int], list[object]] = {}
    for e in eqns:
        seen = set()
        for file, line, fn, _, user in e.stack:
            key = (file, line)
            if not user:
                continue
            if key in seen:
                continue
            seen.add(key)
            slot = counts.setdefault(key, [fn, 0])
            slot[1] = int(slot[1]) + e.weight  # type: ignore[call-overload]
    ranked = sorted(counts.items(), key=lambda kv: (-int(kv[1][1]), kv[0]))  # type: ignore[call-overload]
    return tuple(
        LineCost(file, line, str(v[0]), int(v[1]))  # type: ignore[call-overload]
        for (file, line), v in ranked[:LINES_MAX]
    )


@dataclasses.dataclass(frozen=True)
class SourceLoop:
    """A loop statement of a source file: the lines it spans."""

    line: int
    end: int
    kind: LoopKind


def source_loops(source: str, filename: str = "<source>") -> tuple[SourceLoop, ...]:
    """Every ``for`` / ``while`` / comprehension of a file, outermost first."""
    try:
        tree = parse(source, filename)
    except (SyntaxError, ValueError):
        return ()
    return _loops_of(tree, 0)


#: Files shorter than this are parsed whole (:func:`function_loops`).
CUT_MIN_LINES = 500


def function_loops(
    lines: Sequence[str], first_line: int, filename: str = "<source>"
) -> tuple[SourceLoop, ...] | None:
    """The loops of the ``def`` starting at line ``first_line`` (its first decorator's, as
    ``co_firstlineno``) of a file's ``lines``, numbered as in the file: the function's block
    alone is parsed, not the model library's file of thousands of lines it sits in. ``None``
    where the line starts no ``def`` (module code, a lambda, a comprehension), the block does
    not parse alone, or the file is short (one parse serves all its functions): then
    :func:`source_loops` of the whole file. (The same loops as the whole file's on every
    function of flax, equinox, optax, numpyro, blackjax and jax; 1 ms a function's block
    against 9 a file, on average.)"""
    if not 1 < first_line <= len(lines) or len(lines) < CUT_MIN_LINES:
        return None
    if not lines[first_line - 1].lstrip().startswith(("def ", "async def ", "@")):
        return None
    try:
        block = inspect.getblock(lines[first_line - 1 :])
    except (SyntaxError, tokenize.TokenError):
        return None
    head = "if 1:\n" if block[:1] and block[0][:1] in (" ", "\t") else ""
    try:
        tree = parse(head + "".join(block), filename)
    except (SyntaxError, ValueError):
        return None
    return _loops_of(tree, first_line - 1 - head.count("\n"))


def _loops_of(tree: ast.AST, shift: int) -> tuple[SourceLoop, ...]:
    """The loops of a parsed source, ``shift`` added to their lines, outermost first."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            kind = LoopKind.FOR
        elif isinstance(node, ast.While):
            kind = LoopKind.WHILE
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            kind = LoopKind.COMPREHENSION
        else:
            continue
        end = node.end_lineno or node.lineno
        found.append(SourceLoop(node.lineno + shift, end + shift, kind))
    return tuple(sorted(found, key=lambda s: (s.line, -s.end)))


def enclosing_loop(loops: Sequence[SourceLoop], line: int, first_line: int) -> SourceLoop | None:
    """The outermost loop spanning ``line`` that starts inside the function at ``first_line``."""
    for s in loops:
        if s.line <= line <= s.end and s.line >= first_line:
            return s
    return None


def _repeats_until(seq: Sequence[object], p: int) -> int:
    """Where the repetition of period ``p`` ends: a tail unlike the iteration in the middle
    of ``seq`` is left out (``jnp.stack([... for ...])`` stacks after the loop, on its line)."""
    mid = len(seq) // 2
    end = len(seq)
    while end > mid + p and seq[end - 1] != seq[mid + (end - 1 - mid) % p]:
        end -= 1
    return end


def period(seq: Sequence[object]) -> int:
    """The shortest repeating unit of ``seq`` (allowing ``PERIOD_MISMATCH``), else its length.

    A candidate is a distance at which an anchor equation recurs. The anchors are the
    first equation and the middle one: a first iteration often differs from the rest
    (a carry that starts as a Python float and becomes an array, or unbatched under
    ``vmap``; a first layer of another shape), so its first equation may never recur.
    A tail after the repeats (at most half the equations) is left out of the comparison.
    """
    n = len(seq)
    best = n
    for anchor in (0, n // 2):
        tried = 0
        for p in range(1, min(best, n - anchor)):
            if p > n // 2:
                break
            if seq[anchor + p] != seq[anchor]:
                continue
            tried += 1
            if tried > PERIOD_CANDIDATES:
                break
            end = _repeats_until(seq, p)
            if end < max(2 * p, n / 2):
                continue
            allowed = PERIOD_MISMATCH * end
            bad = 0
            for j in range(end - p):
                if seq[j] != seq[j + p]:
                    bad += 1
                    if bad > allowed:
                        break
            if bad <= allowed:
                best = p
                break
    return best


def repetition(seq: Sequence[object]) -> tuple[int, int, int]:
    """``(period, end of the repeats, iterations)`` of the loop whose equations are ``seq``.

    The tail after the last repeat is not an iteration (``_repeats_until``); a last
    iteration a few equations short (a last layer without its activation) still
    counts (the quotient is rounded).
    """
    p = period(seq)
    end = _repeats_until(seq, p)
    return p, end, int(end / p + 0.5)


def trip_count(seq: Sequence[object]) -> int:
    """How many times the loop whose equations are ``seq`` ran: its repeats over the period."""
    return repetition(seq)[2]


def _most_common(names: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for name in names:
        if name:
            counts[name] = counts.get(name, 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else ""


def find_loops(
    eqns: Sequence[Eqn],
    loop_at: Callable[[str, int, int], SourceLoop | None],
    api_of: Callable[[str], str] | None = None,
) -> tuple[LoopCost, ...]:
    """Python loops the trace unrolled: equations under a loop line, and its trip count.

    ``loop_at(file, line, first_line)`` names the outermost loop spanning a
    frame's line inside the function starting at ``first_line``. An equation belongs to the first (outermost) frame of its
    stack that is inside a loop; the trip count is the number of times the
    loop's sequence of (frames below the loop, primitive, output shapes) repeats:
    iterations of other shapes (an image pyramid's halving levels) are no repeats.
    Under ``jax.grad`` the backward pass records the loop's lines again, in reverse and
    with other primitives: the repeats are searched in the forward pass (else the
    backward), and the loop's equations are both passes' (a rolled loop's transpose is
    rolled too). ``api_of(file)`` names the model library of a file (``nnx``, ``linen``,
    ``haiku``, ``eqx``; "" for none), read from the frames that run in the loop's body.
    """
    groups: dict[tuple[str, int], tuple[SourceLoop, Frame, str, list[Eqn], list[object]]] = {}
    apis: dict[tuple[str, int], list[str]] = {}
    cache: dict[tuple[str, int, int], SourceLoop | None] = {}
    for e in eqns:
        for i, frame in enumerate(e.stack):
            file, line, fn, first, user = frame
            key3 = (file, line, first)
            if key3 not in cache:
                cache[key3] = loop_at(file, line, first)
            loop = cache[key3]
            if loop is None:
                continue
            # a library's loop is shown at the user's line that called into it
            shown = frame if user else next((f for f in e.stack[i::-1] if f[4]), frame)
            via = "" if user or shown is frame else fn
            g = groups.setdefault((file, loop.line), (loop, shown, via, [], []))
            g[3].append(e)
            g[4].append((e.primitive, e.stack[i:], e.shapes))
            if api_of is not None and not e.backward:
                library = next((f[0] for f in e.stack[i:] if not f[4]), "")
                apis.setdefault((file, loop.line), []).append(api_of(library) if library else "")
            break
    found = []
    for key, (loop, shown, via, members, seq) in groups.items():
        total = sum(e.weight for e in members)
        forward = [j for j, e in enumerate(members) if not e.backward]
        backward = [j for j, e in enumerate(members) if e.backward]
        iterations, walk = 0, LoopWalk.UNKNOWN
        for part in (forward, backward):
            p, end, n = repetition([seq[j] for j in part]) if len(part) > 1 else (1, 0, 0)
            if n >= 2:
                iterations = n
                if part is forward:
                    walk = classify([members[j] for j in part], [seq[j] for j in part], p, end)
                break
        if iterations < 2:
            continue
        line = loop.line if not via else shown[1]
        body = -(-total // iterations)
        api = _most_common(apis.get(key, ()))
        found.append(
            LoopCost(
                shown[0], line, shown[2], loop.kind, iterations, total, body, via, 0, walk, api
            )
        )
    found.sort(key=lambda x: -x.eqns)
    return tuple(found[:LOOPS_MAX])


def cost_from_dict(d: Any, where: str) -> CompileCost:
    """A report's ``Event.cost`` read back, each field checked (``_core/fields.py``)."""
    kw = build_fields(CompileCost, d, where)
    for k in ("eqns", "const_bytes"):
        if k in kw:
            check_type(kw[k], (int,), f"{where}.{k}")
    if "collect_seconds" in kw:
        check_type(kw["collect_seconds"], NUM, f"{where}.collect_seconds")
    parts = (("lines", LineCost), ("loops", LoopCost), ("consts", ConstCost))
    for k, cls in parts:
        items = []
        for i, x in enumerate(as_list(kw.get(k, ()), f"{where}.{k}")):
            fields = build_fields(cls, x, f"{where}.{k}[{i}]")
            for f in dataclasses.fields(cls):
                simple = {"str": (str,), "int": (int,)}.get(str(f.type))
                if simple is not None and f.name in fields:
                    check_type(fields[f.name], simple, f"{where}.{k}[{i}].{f.name}")
            if "shape" in fields:
                at = f"{where}.{k}[{i}].shape"
                for d, n in enumerate(dims := as_list(fields["shape"], at)):
                    check_type(n, (int,), f"{at}[{d}]")
                fields["shape"] = tuple(dims)
            items.append(cls(**fields))
        kw[k] = tuple(items)
    return CompileCost(**kw)
