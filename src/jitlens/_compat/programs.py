"""What JAX traced: the program of a finished trace, and traces that are no jit's.

Two questions the engine asks of JAX's frames, and only here:

* :func:`program_fingerprint`: when a trace ends, ``_trace_for_jit`` holds the
  jaxpr it made. Its *structure* (operations and the shapes they make, nested
  programs included) and its operations' *parameters* are hashed apart, and
  literal constants are left out. Two traces that differ only by a static
  number then tell where the number went: into literals only (it is data and
  can be traced), into a parameter (a slice start, a power: unsure), or into the
  structure (a shape, a slice length, a loop count, a branch: it must stay static).
* :func:`shape_only_trace`: ``jax.eval_shape`` and ``jax.make_jaxpr`` trace
  through a ``jit`` of their own; those are no jitted function of the user's.
* :func:`nondiff_checker`: a value JAX checks as a ``custom_vjp``'s
  ``nondiff_argnums`` argument must never be a tracer, whatever the program
  does with it; the engine wraps that check to see which values reached it.
"""

from __future__ import annotations

import os
from types import FrameType
from typing import Any

#: A jaxpr with more operations than this is not fingerprinted (its cost is bounded).
MAX_EQNS = 20_000
#: Functions of ``jax/_src/api.py`` whose trace only computes shapes or a jaxpr.
SHAPE_ONLY = frozenset({"eval_shape", "make_jaxpr_f"})
_API_FILE = os.path.join("jax", "_src", "api.py")


def shape_only_trace(frame: FrameType | None, depth: int = 12) -> bool:
    """Is the trace whose ``_trace_for_jit`` frame is ``frame`` made by ``jax.eval_shape`` /
    ``jax.make_jaxpr`` (and so by ``nnx.eval_shape``), rather than by a call of a jit?"""
    f = frame.f_back if frame is not None else None
    for _ in range(depth):
        if f is None:
            return False
        code = f.f_code
        if code.co_name in SHAPE_ONLY and code.co_filename.endswith(_API_FILE):
            return True
        f = f.f_back
    return False


def program_fingerprint(frame: FrameType | None) -> tuple[int, int, frozenset[float]] | None:
    """``(structure, parameters)`` hashes of the jaxpr a just-finished trace made, read from
    its ``_trace_for_jit`` frame, and the scalar literal values it holds (a static number
    that entered the program as itself is one of them); None when it cannot be read (or is
    too large)."""
    try:
        closed = frame.f_locals.get("jaxpr") if frame is not None else None
        jaxpr = getattr(closed, "jaxpr", closed)
        if jaxpr is None or not hasattr(jaxpr, "eqns"):
            return None
        structure: list[Any] = [tuple(str(v.aval) for v in jaxpr.invars)]
        params: list[Any] = []
        literals: set[float] = set()
        budget = [MAX_EQNS]
        if not _walk(jaxpr, structure, params, budget, literals):
            return None
        structure.append(tuple(_atom(v) for v in jaxpr.outvars))
        return hash(tuple(structure)), hash(tuple(params)), frozenset(literals)
    except Exception:
        return None


def _atom(v: Any) -> str:
    """A variable by its type; a literal by its type only (its value is data)."""
    aval = str(getattr(v, "aval", "?"))
    return ("lit " if type(v).__name__ == "Literal" else "") + aval


def _subprograms(value: Any) -> list[Any]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    out = []
    for item in items:
        inner = getattr(item, "jaxpr", item)  # a ClosedJaxpr's Jaxpr
        if hasattr(inner, "eqns") and hasattr(inner, "invars"):
            out.append(inner)
    return out


def _literal(v: Any) -> float | None:
    """A scalar literal's value as a number (None: not a literal, or not a scalar)."""
    if type(v).__name__ != "Literal":
        return None
    try:
        return float(v.val)
    except (TypeError, ValueError, AttributeError):
        return None


def _walk(
    jaxpr: Any, structure: list[Any], params: list[Any], budget: list[int], literals: set[float]
) -> bool:
    for eqn in jaxpr.eqns:
        budget[0] -= 1
        if budget[0] < 0:
            return False
        literals.update(x for x in map(_literal, eqn.invars) if x is not None)
        structure.append(
            (
                eqn.primitive.name,
                tuple(_atom(v) for v in eqn.invars),
                tuple(str(v.aval) for v in eqn.outvars),
            )
        )
        for name, value in sorted(eqn.params.items()):
            subs = _subprograms(value)
            if subs:
                structure.append((name, len(subs)))
                for sub in subs:
                    if not _walk(sub, structure, params, budget, literals):
                        return False
            elif callable(value):  # a thunk or rule: its identity changes per trace, not its role
                params.append((eqn.primitive.name, name, type(value).__name__))
            elif name not in ("name", "source_info", "ctx_mesh"):
                params.append((eqn.primitive.name, name, repr(value)))
    return True


def nondiff_checker() -> tuple[Any, str, Any] | None:
    """``(module, name, check)``: where JAX checks that a ``custom_vjp``'s ``nondiff_argnums``
    arguments hold no tracer (``custom_derivatives._check_for_tracers``), or None."""
    try:
        from jax._src import custom_derivatives as cd

        check = cd._check_for_tracers
    except Exception:
        return None
    return (cd, "_check_for_tracers", check) if callable(check) else None
