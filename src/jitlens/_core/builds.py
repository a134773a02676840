"""Two builds of one closure-made object from equal values: two ``optax.adam(1e-3)``.

An optax transform is a tuple of closures, equal only to itself; whether a new one was
built from the same hyper-parameters (rebuilt per epoch: build it once) or from new ones
(a sweep) decides which fix fits.
"""

from __future__ import annotations

import inspect
from typing import Any

#: How deep and how many parts ``same_build`` reads before it gives up (an answer of "not
#: known" words the fix as for a sweep, as before it was known).
_BUILD_DEPTH, _BUILD_PARTS = 24, 2_000


def same_build(a: Any, b: Any) -> bool:
    """Are ``a`` and ``b`` two builds of one closure-made object from equal values (two
    ``optax.adam(1e-3)``)? Functions are alike when their code, defaults and closed-over
    values are; other values when ``==`` says so (arrays: all elements). False when unsure."""
    budget = [_BUILD_PARTS]

    def alike(x: Any, y: Any, depth: int) -> bool:
        budget[0] -= 1
        if x is y:
            return True
        if depth > _BUILD_DEPTH or budget[0] < 0 or type(x) is not type(y):
            return False
        if inspect.isfunction(x):
            cx, cy = x.__closure__ or (), y.__closure__ or ()
            return (
                x.__code__ is y.__code__
                and len(cx) == len(cy)
                and alike(x.__defaults__, y.__defaults__, depth + 1)
                and alike(x.__kwdefaults__, y.__kwdefaults__, depth + 1)
                and all(
                    alike(p.cell_contents, q.cell_contents, depth + 1)
                    for p, q in zip(cx, cy, strict=True)
                )
            )
        if isinstance(x, (tuple, list)):
            return len(x) == len(y) and all(
                alike(p, q, depth + 1) for p, q in zip(x, y, strict=True)
            )
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(alike(x[k], y[k], depth + 1) for k in x)
        if callable(x) and not isinstance(x, type):
            return False  # another kind of callable object: not known to be alike
        try:
            import numpy as np

            if hasattr(x, "shape") and hasattr(x, "dtype"):
                return bool(x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y))
            return bool(x == y)
        except Exception:
            return False

    try:
        return a is not None and b is not None and a is not b and alike(a, b, 0)
    except Exception:
        return False
