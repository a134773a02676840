"""JAX's Python dispatch of a jitted call: where it runs, and why the C++ fast path was refused.

A ``jax.jit`` call first tries the C++ fast path (``_jax.pjit``'s own cache:
~5 us). Only when its entry is missing, or was marked "fall back to
Python", does it call the Python ``cache_miss`` that ``pjit._cpp_pjit``
gave it, which runs ``pjit._run_python_pjit`` (hundreds of us). An entry
falls back for good when ``pjit._get_fastpath_data`` returns ``None`` after
the compile: the executable has ordered or unordered effects (host
callbacks: ``jax.debug.callback``, ``jax.debug.print``, ``io_callback``),
reference effects, or outputs that are not plain ``ArrayImpl``.

``_run_python_pjit`` is looked up in ``pjit``'s globals on every call of
``cache_miss``, so a counting wrapper set there sees every Python dispatch
and costs nothing on the C++ path (which never enters Python). Its
signature ``(p, args_flat, fun, args, kwargs)`` and its result tuple
``(outs, out_flat, out_tree, args_flat, jaxpr, executable, ...)`` are the
same in jax 0.9.2 to 0.12; other shapes are refused (figures unknown).
"""

from __future__ import annotations

import inspect
from typing import Any

#: The parameters of ``pjit._run_python_pjit`` the wrapper relies on.
RUN_PARAMETERS = ("p", "args_flat", "fun", "args", "kwargs")
#: Indexes of the executable, the flat outputs, their tree and the jaxpr in its result.
EXECUTABLE_AT, OUT_FLAT_AT, OUT_TREE_AT, JAXPR_AT = 5, 1, 2, 4

#: Causes of a fall-back, as ``python_dispatch_cause`` names them.
HOST_CALLBACK = "host_callback"
ORDERED_EFFECT = "ordered_effect"
REF_EFFECT = "ref_effect"
NON_ARRAY_OUTPUT = "non_array_output"
UNKNOWN = "unknown"


def python_dispatch_owner() -> tuple[Any, str] | None:
    """``(pjit module, "_run_python_pjit")`` when it has the shape jitlens knows, else None."""
    try:
        from jax._src import pjit

        fn = pjit._run_python_pjit
        names = tuple(inspect.signature(fn).parameters)
    except Exception:
        return None
    if names != RUN_PARAMETERS:
        return None
    return pjit, "_run_python_pjit"


def traced_function(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``fun`` argument of a ``_run_python_pjit`` call."""
    return args[2] if len(args) > 2 else kwargs.get("fun")


def fallback_cause(result: Any) -> str:
    """Why the C++ fast path will not serve this executable (one of the module's causes).

    The checks of ``pjit._get_fastpath_data``, in its order, on the result of
    one ``_run_python_pjit`` call.
    """
    try:
        from jax._src import pjit

        executable = result[EXECUTABLE_AT]
        call = getattr(executable, "unsafe_call", None)
        if call is not None and getattr(call, "ordered_effects", None):
            return ORDERED_EFFECT
        if call is not None and getattr(call, "has_unordered_effects", False):
            return HOST_CALLBACK
        effects = getattr(result[JAXPR_AT], "effects", ())
        if any(isinstance(e, pjit.RefEffect) for e in effects):
            return REF_EFFECT
        outs, _tree = pjit.pxla.reflatten_outputs_for_dispatch(
            result[OUT_TREE_AT], result[OUT_FLAT_AT]
        )
        if not all(isinstance(x, pjit.xc.ArrayImpl) for x in outs):
            return NON_ARRAY_OUTPUT
    except Exception:
        return UNKNOWN
    return UNKNOWN
