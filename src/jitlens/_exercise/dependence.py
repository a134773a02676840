"""Does the returned value depend on the model's parameters and on x, through the last call?

Provenance (``evidence``) proves the returned array came out of the last ``nnx.jit``
call; it does not prove what that call computed it from. ``return model(x) * 0 +
answer`` with ``answer`` computed eagerly, or ``answer + 0 * x.sum()`` with the model
never run, both return the call's own output with the right values. So the grader's
child keeps, for each recorded call, what flax's wrapper handed ``jax.jit`` (the flat
arrays in, the flat arrays out: :func:`capture`), and for the call the answer came from
it reads the jaxpr that call ran (JAX's trace cache: nothing of the solution runs again)
and decides two facts per role (``x``, the ``kernel``, the ``bias``), by what the
program does, never by the numbers it returned:

- ``read``: a walk back over the equations from the returned output reaches that input
  (``answer + 0 * x.sum()`` never reads the kernel);
- ``moves``: the same jaxpr, run again with that input changed, gives another output
  (``model(x) * 0`` reads the kernel, yet no kernel changes the result); run at a point
  where every role was changed first, so that a zero kernel does not hide x.

The jaxpr is first run on the call's own inputs: it must give the call's own output,
else what was read is not what ran, and the facts are unknown (``error``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .._compat import jaxpr_api

#: The inputs whose effect on the output is checked, in the order they are reported.
ROLES = ("x", "kernel", "bias")
#: An output "moves" when it differs from the unchanged run's beyond this.
RTOL, ATOL = 1e-4, 1e-5


class InnerCall:
    """The arrays one call of a wrapper handed ``jax.jit`` and got back."""

    __slots__ = ("args", "jitted", "kwargs", "out")

    def __init__(self, jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any):
        self.jitted, self.args, self.kwargs, self.out = jitted, args, kwargs, out


@contextlib.contextmanager
def capture(wrapper: Any) -> Iterator[list[InnerCall]]:
    """While this call of ``wrapper`` (an nnx wrapper) runs, note what its ``jitted_fn`` (the
    ``jax.jit`` object flax calls with the flattened arguments) takes and gives.

    The wrapper's ``jitted_fn`` is replaced, for this call only, by a function that calls
    it and notes the first call's arguments and result; it carries the jit object's
    ``__wrapped__`` (the tracker finds its record by it). Nothing else changes: the
    arguments, the result and what is raised are the jit object's own.
    """
    got: list[InnerCall] = []
    own = getattr(wrapper, "__dict__", None)
    jitted = own.get("jitted_fn") if type(own) is dict else None
    if jitted is None or not callable(jitted):
        yield got
        return

    def jitted_fn(*args: Any, **kwargs: Any) -> Any:
        out = jitted(*args, **kwargs)
        if not got:
            got.append(InnerCall(jitted, args, kwargs, out))
        return out

    jitted_fn.__wrapped__ = getattr(jitted, "__wrapped__", jitted)  # type: ignore[attr-defined]
    own["jitted_fn"] = jitted_fn
    try:
        yield got
    finally:
        if own.get("jitted_fn") is jitted_fn:
            own["jitted_fn"] = jitted


def depends(
    call: InnerCall,
    returned: list[Any],
    x_values: np.ndarray,
    shapes: Mapping[str, tuple[int, ...]],
) -> dict[str, Any]:
    """The facts above for the outputs of ``call`` among ``returned`` (the arrays the answer
    was made from): ``{role: {"read": bool, "moves": bool}}``, or ``{"error": why}``."""
    import jax

    from .._track.state import EVENTS

    before = (EVENTS[0], jaxpr_api.trace_count())
    closed = jaxpr_api.traced(call.jitted, call.args, call.kwargs)
    if closed is None:
        return {"error": "the jaxpr of the call could not be read back"}
    if (EVENTS[0], jaxpr_api.trace_count()) != before:  # its Python ran again: not what ran
        return {"error": "reading the call's jaxpr traced the function again"}
    flat_in = jax.tree.leaves((call.args, call.kwargs))
    flat_out = jax.tree.leaves(call.out)
    invars, outvars = jaxpr_api.in_out_vars(closed)
    if len(flat_in) != len(invars) or not all(map(_fits, flat_in, invars)):
        return {"error": "the call's inputs do not match its jaxpr"}
    outs = [j for j, leaf in enumerate(flat_out) if any(leaf is r for r in returned)]
    if not outs or len(flat_out) != len(outvars):
        return {"error": "the returned array is not among the call's outputs"}
    base = jaxpr_api.run(closed, flat_in)
    if base is None or not all(_same(base[j], flat_out[j]) for j in outs):
        return {"error": "the call's jaxpr, run again, does not give the call's output"}
    roles = _roles(flat_in, x_values, shapes)
    # each role is changed at a point where all of them were changed first: at the call's own
    # point a zero kernel would hide x (x @ 0 is 0 whatever x is)
    point = list(flat_in)
    for i in (i for where in roles.values() for i in where):
        point[i] = _perturbed(flat_in[i], 0)
    at = jaxpr_api.run(closed, point)
    facts: dict[str, Any] = {}
    for role in ROLES:
        where = roles[role]
        read = any(i in jaxpr_api.inputs_read(closed, j) for j in outs for i in where)
        changed = list(point)
        for i in where:
            changed[i] = _perturbed(flat_in[i], 1)
        again = jaxpr_api.run(closed, changed) if where and at is not None else None
        moves = again is not None and any(not _same(again[j], at[j]) for j in outs)
        facts[role] = {"read": read, "moves": moves}
    return facts


def _roles(
    flat_in: list[Any], x_values: np.ndarray, shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, list[int]]:
    """Which flat inputs are x (by its values), the kernel and the bias (by their shapes)."""
    roles: dict[str, list[int]] = {role: [] for role in ROLES}
    for i, leaf in enumerate(flat_in):
        shape = _shape(leaf)
        if shape == x_values.shape and _same(leaf, x_values):
            roles["x"].append(i)
        elif shape == tuple(shapes["kernel"]):
            roles["kernel"].append(i)
        elif shape == tuple(shapes["bias"]):
            roles["bias"].append(i)
    return roles


def _shape(leaf: Any) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in leaf.shape)
    except Exception:
        return ()


def _fits(leaf: Any, var: Any) -> bool:
    """Does the concrete input have the shape the jaxpr's input variable was traced for?"""
    aval = getattr(var, "aval", None)
    return _shape(leaf) == tuple(getattr(aval, "shape", ()))


def _same(a: Any, b: Any) -> bool:
    try:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        return x.shape == y.shape and bool(np.allclose(x, y, rtol=RTOL, atol=ATOL))
    except Exception:
        return False


def _perturbed(leaf: Any, phase: int) -> Any:
    """``leaf`` with every value changed by an amount of its own (0.5 to 2, drawn from a
    generator seeded by ``phase``: no pattern a product could cancel), same dtype."""
    import jax.numpy as jnp

    value = np.asarray(leaf)
    step = np.random.default_rng(phase).uniform(0.5, 2.0, size=value.shape)
    return jnp.asarray(value + step.astype(value.dtype), dtype=value.dtype)
