"""The jaxpr JAX just traced, flattened for what a compile will be made of.

When a trace ends (the trace-duration event), JAX's ``_trace_for_jit`` frame
already holds the ``ClosedJaxpr`` it built in its local ``jaxpr``: jitlens
keeps a reference until the compile ends and reads it only when the compile
was long (``_track/cost.py``). Every equation carries ``source_info`` with the
Python traceback it was recorded under; this module turns them into the
user's frames below the traced function, outermost first.

Private pieces: the ``jaxpr`` local, ``ClosedJaxpr``/``Jaxpr`` and their
``eqns``/``consts``, ``eqn.source_info.traceback.raw_frames()``, the ``scan``
primitive's ``unroll`` and ``length`` params. Each degrades to ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from .._record import record

#: The local of ``_trace_for_jit`` holding the traced ``ClosedJaxpr`` (jax 0.9-0.10).
JAXPR_LOCAL = "jaxpr"
#: Deepest nesting of sub-jaxprs followed (scan in cond in pjit ...).
MAX_DEPTH = 64
#: Equations whose tracebacks are read (~30 us each); beyond, they are counted only,
#: so that reading a huge program stays well below its compile time.
MAX_STACKS = 100_000


@record
class FlatEqn:
    """One equation of the program as XLA will see it, with the user's frames."""

    primitive: str
    #: How many copies XLA compiles: an unrolled scan's body counts ``unroll`` times.
    weight: int
    #: ``(file, line, function, first line of the function, user's?)`` of the frames below
    #: the traced function that are the user's or a model library's, outermost first.
    stack: tuple[tuple[str, int, str, int, bool], ...]


@record
class UnrolledScan:
    """A ``scan`` (``fori_loop``) that JAX unrolls when lowering: ``unroll`` copies of its body."""

    stack: tuple[tuple[str, int, str, int, bool], ...]
    length: int
    unroll: int
    body_eqns: int


def available() -> bool:
    """Does this JAX keep the traced jaxpr in the trace frame, with readable tracebacks?"""
    try:
        from jax._src import pjit
        from jax._src.lib import xla_client
    except Exception:
        return False
    code = getattr(getattr(pjit, "_trace_for_jit", None), "__code__", None)
    return (
        code is not None
        and JAXPR_LOCAL in code.co_varnames
        and hasattr(xla_client.Traceback, "raw_frames")
        and hasattr(xla_client.Traceback, "code_addr2location")
    )


def traced_jaxpr(frame: FrameType | None) -> Any:
    """The ``ClosedJaxpr`` in a ``_trace_for_jit`` frame whose tracing just ended, or None."""
    if frame is None:
        return None
    try:
        j = frame.f_locals.get(JAXPR_LOCAL)
    except Exception:
        return None
    return j if hasattr(j, "jaxpr") and hasattr(j, "consts") else None


def outer_codes(frame: FrameType | None) -> tuple[CodeType, ...]:
    """The code objects from ``frame`` up to the top: what every equation's traceback ends with."""
    codes = []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    return tuple(codes)


_LINES: dict[tuple[CodeType, int], int] = {}


def _line(code: CodeType, lasti: int) -> int:
    key = (code, lasti)
    line = _LINES.get(key)
    if line is None:
        try:
            from jax._src.lib import xla_client

            line = int(xla_client.Traceback.code_addr2location(code, lasti)[0])
        except Exception:
            line = code.co_firstlineno
        if len(_LINES) > 100_000:
            _LINES.clear()
        _LINES[key] = line
    return line


#: ``keep``'s answer per code object (by id: the tracebacks keep them alive), for one
#: ``flatten``: a deep program has ~30 frames per equation, nearly all JAX's (195,000
#: ``keep`` calls were 60% of reading 5,764 equations).
_KEPT: dict[int, bool | None] = {}
_UNSEEN = object()


def _stack(
    eqn: Any, outer: tuple[CodeType, ...], keep: Callable[[str], bool | None]
) -> tuple[tuple[str, int, str, int, bool], ...]:
    tb = getattr(getattr(eqn, "source_info", None), "traceback", None)
    raw = getattr(tb, "raw_frames", None)
    if raw is None:
        return ()  # announced by the probe: lines unknown, sizes still counted
    codes, lastis = raw()
    n = len(codes)
    k = 0  # strip the frames the trace frame shares (the caller of the jitted function)
    while k < n and k < len(outer) and codes[n - 1 - k] is outer[len(outer) - 1 - k]:
        k += 1
    out = []
    for i in range(n - k - 1, -1, -1):
        code = codes[i]
        user = _KEPT.get(id(code), _UNSEEN)  # by id: hashing a code object hashes its bytecode
        if user is _UNSEEN:
            user = _KEPT[id(code)] = keep(code.co_filename)
        if user is not None:
            line = _line(code, lastis[i])
            out.append((code.co_filename, line, code.co_qualname, code.co_firstlineno, user))
    return tuple(out)


def _subjaxprs(eqn: Any) -> list[Any]:
    """The jaxprs an equation holds (a scan's body, a cond's branches), found by their type:
    a parameter may be an object of the program's (a callback), never read for attributes."""
    from jax._src import core

    found = []
    for val in eqn.params.values():
        for v in val if type(val) in (tuple, list) else (val,):
            if issubclass(type(v), (core.Jaxpr, core.ClosedJaxpr)):
                found.append((v, ()))
    return found


def _unroll(eqn: Any) -> int:
    if eqn.primitive.name != "scan":
        return 1
    unroll, length = eqn.params.get("unroll", 1), eqn.params.get("length", 1)
    if unroll is True:
        return max(1, int(length))
    try:
        return max(1, min(int(unroll), int(length)))
    except (TypeError, ValueError):
        return 1


Stack = tuple[tuple[str, int, str, int, bool], ...]


def _under(above: Stack, stack: Stack) -> Stack:
    """The frames of an equation inside a ``cond`` / ``scan`` / ``while`` body, from the top.

    JAX records a body's tracebacks from where it started tracing the body: a
    ``lax.cond`` branch's equations name the branch's lines but not the user's
    line that called ``lax.cond`` (nor the loop around it). The container's own
    frames (``above``) are put back in front, unless the body's already begin with them.
    """
    if not above or stack[: len(above)] == above:
        return stack
    return above + stack


def flatten(
    closed: Any, outer: tuple[CodeType, ...], keep: Callable[[str], bool | None]
) -> tuple[list[FlatEqn], list[tuple[Any, Stack]], list[UnrolledScan]]:
    """Every equation (sub-jaxprs followed), every captured constant, every unrolled scan.

    ``keep(file)`` says which frames to keep: True for the user's, False for a
    model library's (kept for its loops), None to drop.

    A container's own equation (pjit, scan, cond, custom_jvp) is not counted,
    its body is: once for a rolled loop (XLA compiles a loop body once),
    ``unroll`` times for an unrolled one. Each constant comes with the frames of
    the first equation that reads it (``()`` if none does): where a constant
    made in the function's body, which no variable names, is used.
    """
    eqns: list[FlatEqn] = []
    consts: list[list[Any]] = []
    scans: list[UnrolledScan] = []

    def walk(jaxpr: Any, values: Any, weight: int, depth: int, above: Stack) -> None:
        unread: dict[int, list[Any]] = {}
        constvars = list(getattr(jaxpr, "constvars", ()))
        for i, value in enumerate(values):
            slot = [value, ()]
            consts.append(slot)
            if i < len(constvars):
                unread[id(constvars[i])] = slot
        for eqn in jaxpr.eqns:
            subs = _subjaxprs(eqn) if depth < MAX_DEPTH else []
            stack: Stack = ()
            if len(eqns) < MAX_STACKS:
                stack = _under(above, _stack(eqn, outer, keep))
            for var in eqn.invars if unread else ():
                slot = unread.pop(id(var), None)
                if slot is not None:
                    slot[1] = stack
            if not subs:
                eqns.append(FlatEqn(eqn.primitive.name, weight, stack))
                continue
            u = _unroll(eqn)
            start = len(eqns)
            for sub, sub_consts in subs:
                walk(sub, sub_consts, weight * u, depth + 1, stack)
            if u > 1:
                body = sum(e.weight for e in eqns[start:]) // (weight * u)
                length = int(eqn.params.get("length", u))
                scans.append(UnrolledScan(stack, length, u, body))

    _KEPT.clear()
    try:
        walk(closed.jaxpr, closed.consts, 1, 0, ())
    finally:
        _KEPT.clear()
    return eqns, [(value, stack) for value, stack in consts], scans


def array_facts(x: Any) -> tuple[tuple[int, ...], str, int, Any] | None:
    """``(shape, dtype, nbytes, identity)`` of a captured constant; None if not an array.

    ``identity`` is the object the user holds: JAX wraps a captured NumPy
    array in a view (``TypedNdArray``); its ``base`` is the user's array.
    """
    shape, dtype, nbytes = getattr(x, "shape", None), getattr(x, "dtype", None), None
    if shape is None or dtype is None:
        return None
    try:
        nbytes = int(x.nbytes)
    except Exception:
        return None
    base = x
    while getattr(base, "base", None) is not None and hasattr(base.base, "shape"):
        base = base.base
    return tuple(int(d) for d in shape), str(dtype), nbytes, base


def traced(jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``ClosedJaxpr`` a ``jax.jit`` object traced for these arguments (``.trace()``:
    from JAX's trace cache when the call traced it), or None."""
    try:
        return jitted.trace(*args, **kwargs).jaxpr
    except Exception:
        return None


def trace_count() -> int | None:
    """How many traces JAX's jit has made in this process (its trace cache's misses), or
    None where the installed JAX does not say."""
    try:
        from jax._src import pjit

        return int(pjit._infer_params_cached.cache_info().misses)
    except Exception:
        return None


def in_out_vars(closed: Any) -> tuple[list[Any], list[Any]]:
    """A closed jaxpr's input and output variables."""
    return list(closed.jaxpr.invars), list(closed.jaxpr.outvars)


def run(closed: Any, flat: list[Any]) -> list[Any] | None:
    """The closed jaxpr evaluated on ``flat`` (op by op), or None if it raises."""
    try:
        from jax.extend.core import jaxpr_as_fun

        return list(jaxpr_as_fun(closed)(*flat))
    except Exception:
        return None


def inputs_read(closed: Any, out_index: int) -> set[int]:
    """The positions of the inputs output ``out_index`` is computed from: a walk back over the
    equations (an equation's every output depends on its every input; a literal is no input)."""
    jaxpr = closed.jaxpr
    producers = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    inputs = {id(v): i for i, v in enumerate(jaxpr.invars)}
    stack, seen, found = [jaxpr.outvars[out_index]], set(), set()
    while stack:
        var = stack.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        if id(var) in inputs:
            found.add(inputs[id(var)])
        elif id(var) in producers:
            stack.extend(producers[id(var)].invars)
    return found
