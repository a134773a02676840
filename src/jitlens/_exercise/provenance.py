"""Where the returned array came from: the hooks the grader's child installs while a case runs.

``evidence.CaseEvidence`` keeps the facts; this module notes them as they
happen: each allowed conversion of an array (patched functions and methods,
:data:`CONVERSIONS`), NumPy's own copying methods (a profile hook: NumPy's
methods live on a C type that cannot be patched), and every NNX Module applied
to concrete arrays outside the recorded jitted calls (an eager forward pass).
Each hook returns what the original returns and swallows only its own errors;
each installer returns ``(owner, name, original)`` triples to undo it.

``case`` is the ``CaseEvidence`` being recorded (not imported here: the
evidence module imports this one).
"""

from __future__ import annotations

import contextlib
import os
import traceback
from typing import Any

import numpy as np

#: The conversions the exercise allows between the last call's output and the returned
#: array: ``(module, names)`` patched while a case runs; each result is noted with the call
#: its argument came from. ``y.block_until_ready()`` and ``jax.block_until_ready(y)``
#: return ``y`` itself.
CONVERSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ArrayImpl", ("reshape", "ravel", "flatten", "view", "astype")),
    ("jax.numpy", ("reshape", "ravel", "asarray", "array", "astype")),
    (
        "numpy",
        ("asarray", "array", "asanyarray", "ascontiguousarray", "reshape", "ravel", "astype"),
    ),
    ("jax", ("device_get",)),
)
#: NumPy methods whose copy of a converted output may be returned (``np.asarray(y).flatten()``;
#: ``astype`` only to a dtype that holds every value exactly, see :func:`lossless`).
NUMPY_COPIES = frozenset({"flatten", "ravel", "reshape", "astype"})


def lossless(source: Any, result: Any) -> bool:
    """Does ``result``'s dtype hold every value of ``source``'s exactly (same dtype, or a safe
    widening such as float32 -> float64)? A narrowing ``astype`` computes new numbers."""
    try:
        return bool(np.can_cast(np.dtype(source.dtype), np.dtype(result.dtype), "safe"))
    except Exception:
        return False


def follow_conversions(case: Any) -> list[tuple[Any, str, Any]]:
    """While a case runs, note which call's output each converted array came from."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        import jax
        import jax.numpy as jnp

        owners = {"ArrayImpl": type(jnp.zeros(())), "jax.numpy": jnp, "numpy": np, "jax": jax}
    except Exception:
        return undo
    for owner_name, names in CONVERSIONS:
        owner = owners[owner_name]
        for name in names:
            original = getattr(owner, name, None)
            if original is None:
                continue
            with contextlib.suppress(Exception):
                setattr(owner, name, _noting(original, case))
                undo.append((owner, name, original))
    return undo


def _noting(original: Any, case: Any) -> Any:
    def convert(a: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(a, *args, **kwargs)
        with contextlib.suppress(Exception):
            if name == "view" and args and np.dtype(args[0]) != np.dtype(a.dtype):
                return out  # a view as another dtype reinterprets the bits
            if name == "astype" and not lossless(a, out):
                return out
            case.converted(a, out)
        return out

    name = getattr(original, "__name__", "")
    convert.__name__ = name
    convert.__doc__ = getattr(original, "__doc__", None)
    return convert


def numpy_copies(case: Any, previous: Any) -> Any:
    """A profile hook that notes ``ndarray.flatten()`` & co. on arrays of known origin.

    NumPy's methods live on a C type that cannot be patched; the profiler's
    ``c_call`` event names the bound method, whose ``__self__`` is the source.
    """

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") in NUMPY_COPIES:
            source = getattr(arg, "__self__", None)
            if isinstance(source, np.ndarray):
                with contextlib.suppress(Exception):
                    case.numpy_copy(source)
        if previous is not None:
            previous(frame, event, arg)

    return profile


def watch_modules(case: Any) -> list[tuple[Any, str, Any]]:
    """Note every NNX Module applied to concrete arrays outside the recorded jitted calls."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        import jax
        from flax import nnx
    except Exception:
        return undo
    seen: set[type] = set()
    todo = [nnx.Module]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo += cls.__subclasses__()
        original = cls.__dict__.get("__call__")
        if original is not None and callable(original):
            with contextlib.suppress(Exception):
                cls.__call__ = _eager_noting(original, case, jax)
                undo.append((cls, "__call__", original))
    return undo


def _eager_noting(original: Any, case: Any, jax: Any) -> Any:
    def __call__(module: Any, *args: Any, **kwargs: Any) -> Any:
        if case.inside == 0:
            with contextlib.suppress(Exception):
                leaves = jax.tree.leaves((args, kwargs))
                arrays = [leaf for leaf in leaves if hasattr(leaf, "shape")]
                if arrays and not any(isinstance(a, jax.core.Tracer) for a in arrays):
                    caller = traceback.extract_stack(limit=2)[0]
                    where = f"{os.path.basename(caller.filename)}:{caller.lineno}"
                    case.eager_forward(module, where)
        return original(module, *args, **kwargs)

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    return __call__
