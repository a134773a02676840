"""Compile cost as data: what a long compile's program is made of, read after the fact.

When a trace ends, the listener keeps a weak reference to the jaxpr JAX just built
(``_compat.jaxpr_api.traced_jaxpr``: a local of JAX's trace frame, no extra
work for JAX). When the compile that follows ends, and only if tracing,
lowering and compiling took at least ``_core.advice_cost.COST_MIN_SECONDS``, the jaxpr
is flattened and attributed to the user's lines (``_core/cost.py``);
otherwise the reference is dropped. Cache hits never come here.

Measured (``benchmarks/compile_cost.py``): reading a program of 1,104
equations takes 30-45 ms (more on a loaded machine), next to a compile of
7-30 s; a captured table, 0.3 ms.
"""

from __future__ import annotations

import dataclasses
import linecache
import time
import types
import weakref
from types import CodeType
from typing import TYPE_CHECKING, Any

from .. import _compat
from .._compat import jaxpr_api
from .._core import advice_cost
from .._peek import instance_dict, is_a, static_attr
from .records import EventBuilder, Record
from .state import internal_failure

if TYPE_CHECKING:  # _core.cost loads at the first long compile, not at every start
    from .._core.cost import CompileCost, ConstCost, SourceLoop

#: Constants smaller than this are summed in ``const_bytes`` but not named.
CONST_MIN_BYTES = 1 << 20
#: Objects searched for a constant's name (closures, globals, attributes).
NAME_SEARCH_MAX = 5_000


def note_trace_end(b: EventBuilder, frame: Any) -> None:
    """Keep a weak reference to the jaxpr JAX traced for ``b`` until its compile ends (and,
    for a library's step around an object holding the user's code, read whether it ran any:
    ``Record.library_visibility``).

    Weak: JAX's own trace cache keeps the jaxpr alive through lowering and
    compiling; a trace that never compiles (``.trace()``, ``eval_shape``) must
    not keep it (and the constants it captured) alive in jitlens' records.
    """
    closed = jaxpr_api.traced_jaxpr(frame)
    try:
        ref = weakref.ref(closed) if closed is not None else None
    except TypeError:
        ref = None
    b.traced = (ref, jaxpr_api.outer_codes(frame)) if ref is not None else None
    rec = b.record
    if rec.user_code_only and not rec.ran_user_code:  # a library's step: whose code it ran
        rec.note_user_code(jaxpr_api.runs_user_code(frame, _compat.is_user_file))


def note_compiled(b: EventBuilder, frame: Any = None) -> None:
    """The compile of ``b`` ended: read its program if it took long, then let the jaxpr go.

    ``frame``: the compile event's caller, for a compile whose trace jitlens did not see
    end as ``b``'s (a library's own jit traced inside another trace, a compile with no
    trace before it): its program is read from JAX's compiling frame
    (``jaxpr_api.compiling_jaxpr``), whoever's jit it is.
    """
    traced, b.traced = b.traced, None
    if b.persistent_cache_hit or b.cost is not None:
        return
    # a short compile gets no compile-cost advice: reading it would cost without use
    if b.trace_seconds + b.lower_seconds + b.compile_seconds < advice_cost.COST_MIN_SECONDS:
        return
    closed = traced[0]() if traced is not None else None
    if closed is None and frame is not None:
        found = jaxpr_api.compiling_jaxpr(frame)
        if found is not None:
            closed, traced = found[0], (None, jaxpr_api.outer_codes(found[1]))
    if closed is None or traced is None:
        return
    t0 = time.perf_counter()
    try:
        cost = collect(b.record, closed, traced[1])
    except Exception as exc:
        internal_failure("reading a compiled program's cost", exc)
        return
    b.cost = dataclasses.replace(cost, collect_seconds=round(time.perf_counter() - t0, 6))


def collect(rec: Record | None, closed: Any, outer: tuple[CodeType, ...]) -> CompileCost:
    from .._core.cost import CompileCost, Eqn, LoopCost, LoopKind, find_loops, line_costs

    """Flatten a ``ClosedJaxpr`` and attribute it to the user's source."""
    flat, consts, scans = jaxpr_api.flatten(closed, outer, _keep)
    eqns = [
        Eqn(e.primitive, e.weight, e.stack, e.backward, e.shapes, e.reads, e.writes) for e in flat
    ]
    loops = list(find_loops(eqns, _loop_at, _compat.model_api))
    for s in scans:
        users = [f for f in s.stack if f[4]]
        if not users:
            continue
        file, line, fn, _, _ = users[-1]
        body = s.body_eqns
        loops.append(
            LoopCost(
                file,
                line,
                fn,
                LoopKind.UNROLLED_SCAN,
                s.unroll,
                body * s.unroll,
                body,
                length=s.length,
            )
        )
    loops.sort(key=lambda x: -x.eqns)
    total = sum(e.weight for e in eqns)
    facts = [(f, s) for c, s in consts if (f := jaxpr_api.array_facts(c)) is not None]
    short = _compat.short_path
    return CompileCost(
        eqns=total,
        lines=tuple(dataclasses.replace(x, file=short(x.file)) for x in line_costs(eqns)),
        loops=tuple(dataclasses.replace(x, file=short(x.file)) for x in loops),
        consts=tuple(
            dataclasses.replace(x, file=short(x.file) if x.file else "")
            for x in _consts(rec, facts)
        ),
        const_bytes=sum(f[2] for f, _ in facts),
    )


def _keep(file: str) -> bool | None:
    """The user's frames (True) and a model library's, for its loops (False); no others."""
    if _compat.is_user_file(file):
        return True
    return False if _compat.is_model_library_file(file) else None


#: ``(file, first line)`` -> the file's length when read, the loops of the function starting
#: there (``first line`` 0: of the whole file).
_LOOPS: dict[tuple[str, int], tuple[int, tuple[SourceLoop, ...]]] = {}


def _loop_at(file: str, line: int, first_line: int) -> SourceLoop | None:
    from .._core.cost import enclosing_loop, function_loops, source_loops

    lines = linecache.getlines(file)
    if not lines:
        return None
    cached = _LOOPS.get((file, first_line))
    if cached is None or cached[0] != len(lines):
        loops = function_loops(lines, first_line, file)
        if loops is None:  # the whole file's, read once for every function it holds
            whole = _LOOPS.get((file, 0))
            if whole is None or whole[0] != len(lines):
                whole = _LOOPS[(file, 0)] = (len(lines), source_loops("".join(lines), file))
            loops = whole[1]
        cached = _LOOPS[(file, first_line)] = (len(lines), loops)
    return enclosing_loop(cached[1], line, first_line)


def _consts(rec: Record | None, facts: list[tuple[Any, Any]]) -> tuple[ConstCost, ...]:
    """The captured arrays of at least ``CONST_MIN_BYTES``, largest first, each named."""
    from .._core.cost import CONSTS_MAX, ConstCost

    big = [f for f in facts if f[0][2] >= CONST_MIN_BYTES]
    if not big:
        return ()
    big.sort(key=lambda f: -f[0][2])
    big = big[:CONSTS_MAX]
    names = _names(rec.user_fn() if rec is not None else None)
    found = []
    for (shape, dtype, nbytes, obj), stack in big:
        users = [f for f in stack if f[4]]
        file, line = (users[-1][0], users[-1][1]) if users else ("", 0)
        name = _name_of(obj, shape, dtype, names)
        found.append(ConstCost(name, shape, dtype, nbytes, file, line))
    return tuple(found)


def _names(fn: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` of what the traced function can reach: closure, globals, attributes.

    Read as Python stores them (``_peek``): the instance ``__dict__``, the closure's cells,
    the globals. No property, ``__getattr__`` or ``__getattribute__`` of the program's runs
    (a ``shape`` property may load a dataset), and only JAX's and NumPy's arrays are read
    for a shape."""
    out: list[tuple[str, Any]] = []
    seen: set[int] = set()

    def add(name: str, value: Any, depth: int) -> None:
        if id(value) in seen or len(out) > NAME_SEARCH_MAX:
            return
        seen.add(id(value))
        out.append((name, value))
        t = type(value)
        if depth <= 0 or _array_type(t) or issubclass(t, (type, types.ModuleType)):
            return
        if issubclass(t, (list, tuple)):  # (a named tuple too: the builtin's own iteration)
            base = tuple if issubclass(t, tuple) else list
            for i, v in enumerate(list(base.__iter__(value))[:256]):
                add(f"{name}[{i}]", v, depth - 1)
        elif issubclass(t, dict):
            for k, v in list(dict.items(value))[:256]:
                if type(k) in (str, int):
                    add(f"{name}[{k!r}]", v, depth - 1)
        elif issubclass(t, (types.FunctionType, types.MethodType)):
            scan_fn(value, depth - 1)
        else:
            attrs = instance_dict(value)
            for k, v in list(attrs.items())[:256] if attrs is not None else ():
                if type(k) is str:
                    add(f"{name}.{k}", v, depth - 1)

    def scan_fn(f: Any, depth: int) -> None:
        self_obj = static_attr(f, "__self__")
        if self_obj is not None and not is_a(self_obj, types.ModuleType):
            add("self", self_obj, depth)
        f = _compat.unwrap(f)
        f = static_attr(f, "__func__", f)
        code = static_attr(f, "__code__")
        if not is_a(code, types.CodeType):
            return
        cells = static_attr(f, "__closure__")
        for name, cell in zip(code.co_freevars, cells if is_a(cells, tuple) else (), strict=False):
            try:
                add(name, cell.cell_contents, depth)
            except ValueError:
                continue
        glob = static_attr(f, "__globals__")
        if type(glob) is not dict:
            return
        for name in code.co_names:
            if name in glob:
                add(name, glob[name], depth)

    if fn is not None:
        scan_fn(fn, 2)
    return out


def _name_of(obj: Any, shape: tuple[int, ...], dtype: str, names: list[tuple[str, Any]]) -> str:
    """The name ``obj`` was captured under: the same object, else the one array of its kind."""
    for name, value in names:
        if value is obj:
            return name
    arrays = [(name, value) for name, value in names if _array_type(type(value))]
    ptr = _data_pointer(obj)
    if ptr is not None:
        for name, value in arrays:
            if _data_pointer(value) == ptr and _shape(value) == shape:
                return name
    alike = [
        name
        for name, value in arrays
        if _shape(value) == shape and str(getattr(value, "dtype", "")) == dtype
    ]
    return alike[0] if len(alike) == 1 else ""


def _array_type(t: type) -> bool:
    """JAX's and NumPy's arrays (a class of the program's may compute its ``shape``)."""
    return t.__module__.partition(".")[0] in _ARRAY_MODULES and hasattr(t, "shape")


_ARRAY_MODULES = frozenset({"numpy", "jax", "jaxlib"})


def _shape(value: Any) -> tuple[int, ...] | None:
    """An array's shape; None for anything else reachable by name (``np.shape`` is a function)."""
    try:
        return tuple(int(d) for d in value.shape)
    except Exception:
        return None


def _data_pointer(x: Any) -> int | None:
    try:
        return int(x.__array_interface__["data"][0])
    except Exception:
        return None
