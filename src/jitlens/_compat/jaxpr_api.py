"""The jaxpr JAX just traced, flattened for what a compile will be made of.

When a trace ends (the trace-duration event), JAX's ``_trace_for_jit`` frame
already holds the ``ClosedJaxpr`` it built in its local ``jaxpr``: jitlens
keeps a reference until the compile ends and reads it only when the compile
was long (``_track/cost.py``). Every equation carries ``source_info`` with the
Python traceback it was recorded under; this module turns them into the
user's frames below the traced function, outermost first.

Private pieces: the ``jaxpr`` local, ``ClosedJaxpr``/``Jaxpr`` and their
``eqns``/``consts``/``invars``/``outvars``, ``eqn.source_info.traceback.raw_frames()``,
``eqn.source_info.name_stack`` (its transforms: an equation of a backward pass is
recorded under ``transpose``), the ``scan`` primitive's ``unroll`` and ``length``
params. Each degrades to ``None`` (or to no data flow, no backward pass).
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
    #: Recorded in a backward pass (``jax.grad``'s transpose), not in the program's forward order.
    backward: bool = False
    #: The shapes of its outputs (an iteration of another shape is not a repeat).
    shapes: tuple[tuple[int, ...], ...] = ()
    #: The values it reads, ``(value id, elements)``, ids shared across the containers a
    #: value flows through (a ``pjit``'s body reads its caller's values); literals left out.
    reads: tuple[tuple[int, int], ...] = ()
    #: The ids of the values it writes.
    writes: tuple[int, ...] = ()


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


#: Frames searched above a compile event for the program JAX is compiling.
COMPILING_FRAMES_MAX = 40


def compiling_jaxpr(frame: FrameType | None) -> tuple[Any, FrameType] | None:
    """The ``ClosedJaxpr`` JAX is compiling when a compile event fires, and its frame.

    A compile whose trace jitlens did not see end as that function's (a library's jit
    first traced inside another trace, ``diffrax.diffeqsolve``'s ``eqx.filter_jit``;
    a compile with no trace before it) still has its program in JAX's call frame
    (``_pjit_call_impl_python(..., jaxpr, ...)``): the nearest JAX frame above the event
    whose ``jaxpr`` local is a closed jaxpr.
    """
    for _ in range(COMPILING_FRAMES_MAX):
        if frame is None:
            return None
        if "jax" in frame.f_code.co_filename:
            j = traced_jaxpr(frame)
            if j is not None:
                return j, frame
        frame = frame.f_back
    return None


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


def _backward(eqn: Any) -> bool:
    """Was ``eqn`` recorded by a backward pass: is its outermost transform ``transpose``?

    ``jax.grad`` records the forward pass under ``jvp`` and the backward pass under
    ``transpose(jvp(...))``; a gradient inside the forward pass (MAML's inner steps) is
    ``jvp(transpose(...))``, still forward.
    """
    stack = getattr(getattr(getattr(eqn, "source_info", None), "name_stack", None), "stack", ())
    for entry in stack or ():
        if type(entry).__name__ == "Transform":
            return getattr(entry, "name", "") == "transpose"
    return False


def _shape(var: Any) -> tuple[int, ...] | None:
    shape = getattr(getattr(var, "aval", None), "shape", None)
    if shape is None:
        return None
    try:
        return tuple(int(d) for d in shape)
    except (TypeError, ValueError):  # a symbolic dimension
        return None


def _elements(shape: tuple[int, ...] | None) -> int:
    n = 1
    for d in shape or ():
        n *= d
    return n


class _Values:
    """Ids for the values of a program, shared across the containers a value flows through."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.sizes: dict[int, int] = {}

    def of(self, var: Any) -> int | None:
        name = type(var).__name__
        if name in ("Literal", "DropVar"):
            return None
        key = id(var)
        got = self.ids.get(key)
        if got is None:
            got = self.ids[key] = len(self.ids) + 1
            self.sizes[got] = _elements(_shape(var))
        return got

    def alias(self, var: Any, same_as: Any) -> None:
        """``var`` is the value ``same_as`` is: a body's input is its container's operand,
        a container's output is its body's."""
        got = self.of(same_as)
        if got is not None and type(var).__name__ not in ("Literal", "DropVar"):
            self.ids[id(var)] = got

    def reads(self, eqn: Any) -> tuple[tuple[int, int], ...]:
        out = []
        for v in eqn.invars:
            i = self.of(v)
            if i is not None:
                out.append((i, self.sizes.get(i, 0)))
        return tuple(out)

    def writes(self, eqn: Any) -> tuple[int, ...]:
        return tuple(i for v in eqn.outvars if (i := self.of(v)) is not None)


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
    made in the function's body, which no variable names, is used. A body's
    inputs and outputs are the container's (aligned from the end: a ``cond``'s
    branches and a ``while``'s body take the container's last operands), so the
    values an equation reads and writes are followed across containers.
    """
    eqns: list[FlatEqn] = []
    consts: list[list[Any]] = []
    scans: list[UnrolledScan] = []
    values = _Values()

    def walk(jaxpr: Any, vals: Any, weight: int, depth: int, above: Stack, back: bool) -> None:
        unread: dict[int, list[Any]] = {}
        constvars = list(getattr(jaxpr, "constvars", ()))
        for i, value in enumerate(vals):
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
            backward = back or _backward(eqn)
            if not subs:
                shapes = tuple(s for v in eqn.outvars if (s := _shape(v)) is not None)
                eqns.append(
                    FlatEqn(
                        eqn.primitive.name,
                        weight,
                        stack,
                        backward,
                        shapes,
                        values.reads(eqn),
                        values.writes(eqn),
                    )
                )
                continue
            u = _unroll(eqn)
            start = len(eqns)
            for sub, sub_consts in subs:
                ins = list(eqn.invars)
                sub_in = list(getattr(sub, "invars", ()))
                if len(sub_in) <= len(ins):
                    for inner, outer_var in zip(sub_in, ins[len(ins) - len(sub_in) :], strict=True):
                        values.alias(inner, outer_var)
                walk(sub, sub_consts, weight * u, depth + 1, stack, backward)
            for sub, _ in reversed(subs):  # a while's body (after its cond), a cond's branch
                sub_out = list(getattr(sub, "outvars", ()))
                if len(sub_out) == len(eqn.outvars):
                    for inner, outer_var in zip(sub_out, eqn.outvars, strict=True):
                        values.alias(outer_var, inner)
                    break
            if u > 1:
                body = sum(e.weight for e in eqns[start:]) // (weight * u)
                length = int(eqn.params.get("length", u))
                scans.append(UnrolledScan(stack, length, u, body))

    _KEPT.clear()
    try:
        walk(closed.jaxpr, closed.consts, 1, 0, (), False)
    finally:
        _KEPT.clear()
    return eqns, [(value, stack) for value, stack in consts], scans


#: Equations :func:`runs_user_code` reads at most before it says "not known".
USER_CODE_EQNS = 20_000


def runs_user_code(frame: FrameType | None, keep: Callable[[str], bool]) -> bool | None:
    """Did the trace that just ended in ``frame`` (a ``_trace_for_jit`` frame) run code of a
    file ``keep`` calls the user's? Read from its equations' tracebacks, the frames the trace
    shares with its caller left out (the user's line that called the library is not code the
    trace ran). None when the jaxpr or its tracebacks cannot be read, or past
    ``USER_CODE_EQNS`` equations without an answer."""
    closed = traced_jaxpr(frame)
    if closed is None:
        return None
    outer = outer_codes(frame)
    seen: dict[int, bool] = {}
    read = [0]

    def user(code: CodeType) -> bool:
        hit = seen.get(id(code))
        if hit is None:
            hit = seen[id(code)] = bool(keep(code.co_filename))
        return hit

    def walk(jaxpr: Any, depth: int) -> bool | None:
        for eqn in jaxpr.eqns:
            read[0] += 1
            if read[0] > USER_CODE_EQNS:
                return None
            tb = getattr(getattr(eqn, "source_info", None), "traceback", None)
            raw = getattr(tb, "raw_frames", None)
            if raw is None:
                return None
            codes = raw()[0]
            n, k = len(codes), 0
            while k < n and k < len(outer) and codes[n - 1 - k] is outer[len(outer) - 1 - k]:
                k += 1
            if any(user(codes[i]) for i in range(n - k)):
                return True
            for sub, _consts in _subjaxprs(eqn) if depth < MAX_DEPTH else ():
                found = walk(sub, depth + 1)
                if found is not False:
                    return found
        return False

    try:
        return walk(closed.jaxpr, 0)
    except Exception:
        return None


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
