"""``jit_forward``: the "Flax NNX step 61: nnx.jit" exercise, with its input contract.

The exercise page states the contract; this module enforces it *before* any
JAX work starts, so that a bad argument gets one clear ``ValueError`` or
``TypeError`` naming the argument and the value received, never a JAX
traceback from deep inside ``nnx.Linear``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

_SCALAR_MSG = (
    "{name} must be a {what} integer-valued scalar (a float such as 3.0, an int, "
    "or a 0-d NumPy/JAX scalar); got {value!r}{why}"
)
_X_MSG = "x must be a finite float32 matrix of shape (N, D_in) with N, D_in >= 1; got {what}"


#: ``nnx.Rngs`` turns the seed into a C long: larger seeds raise OverflowError deep inside.
MAX_SEED = 2**63 - 1
_TOO_BIG_MSG = (
    "features={features} with D_in={d_in} and N={n}: the model's kernel, bias and output need "
    "{gib:.3g} GiB, more than the device could allocate ({error})"
)


def _scalar_int(
    name: str, value: Any, minimum: int, what: str, maximum: int | None = None, limit: str = ""
) -> int:
    """Return ``value`` as an int, or raise naming ``name`` and the value."""

    def fail(exc: type[Exception], why: str) -> Exception:
        return exc(_SCALAR_MSG.format(name=name, what=what, value=value, why=why))

    if isinstance(value, (bool, np.bool_)):
        raise fail(TypeError, " (a bool is not a number here)")
    if isinstance(value, (str, bytes)):
        raise fail(TypeError, " (a string is not a number; convert it first)")
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # NumPy or JAX array/scalar
        if tuple(value.shape) != ():
            raise fail(TypeError, f" (an array of shape {tuple(value.shape)}, not a scalar)")
        if np.dtype(value.dtype) == np.bool_:
            raise fail(TypeError, " (a bool is not a number here)")
        if not np.issubdtype(np.dtype(value.dtype), np.number):
            raise fail(TypeError, f" (dtype {value.dtype} is not numeric)")
        value = np.asarray(value).item()
    if not isinstance(value, numbers.Real):
        raise fail(TypeError, f" (type {type(value).__name__})")
    f = float(value)
    if not math.isfinite(f):
        raise fail(ValueError, " (not finite)")
    if isinstance(value, numbers.Integral):
        i = int(value)
    else:
        if not f.is_integer():
            raise fail(ValueError, " (not integer-valued; nothing is rounded for you)")
        i = int(f)
    if i < minimum:
        raise fail(ValueError, f" (must be >= {minimum})")
    if maximum is not None and i > maximum:
        raise fail(ValueError, f" ({limit})")
    return i


def _matrix(x: Any) -> np.ndarray:
    """Return ``x`` as a float32 (N, D_in) NumPy array, or raise naming ``x``."""
    if isinstance(x, (str, bytes)) or x is None or isinstance(x, (bool, numbers.Number)):
        raise TypeError(_X_MSG.format(what=f"{x!r} of type {type(x).__name__}"))
    try:
        arr = np.asarray(x)
    except Exception as exc:
        raise TypeError(
            _X_MSG.format(what=f"a {type(x).__name__} that NumPy cannot read ({exc})")
        ) from None
    if arr.dtype == object:
        raise TypeError(_X_MSG.format(what=f"a ragged or non-numeric {type(x).__name__}"))
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(_X_MSG.format(what=f"dtype {arr.dtype}"))
    if arr.ndim != 2:
        raise ValueError(_X_MSG.format(what=f"{arr.ndim}-D input of shape {arr.shape}"))
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(_X_MSG.format(what=f"an empty matrix of shape {arr.shape}"))
    as32 = arr.astype(np.float32)
    if not np.all(np.isfinite(as32)):
        bad = np.argwhere(~np.isfinite(as32))[0]
        raise ValueError(
            _X_MSG.format(
                what=f"a non-finite value {arr[tuple(bad)]!r} at index {tuple(int(i) for i in bad)}"
            )
        )
    if np.issubdtype(arr.dtype, np.integer) and not np.array_equal(as32.astype(arr.dtype), arr):
        raise ValueError(_X_MSG.format(what="integers too large to be exact in float32"))
    return as32


def jit_forward(seed: Any, x: Any, features: Any, num_calls: Any) -> Any:
    """Build ``nnx.Linear``, call an ``@nnx.jit`` forward ``num_calls`` times, flatten.

    Exactly the exercise "Flax NNX step 61: nnx.jit": the model is
    ``nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))`` with
    default initialisers and bias; ``fwd(model, x)`` is decorated with
    ``@nnx.jit`` once, before the loop, and called ``int(num_calls)`` times
    with the same model and input, so it is traced once and the other calls
    are cache hits (``jitlens.track()`` proves it).

    Args:
      seed: non-negative integer-valued scalar (a float such as ``0.0``).
      x: finite float32 matrix ``(N, D_in)``; NumPy/JAX arrays or nested lists.
      features: positive integer-valued scalar.
      num_calls: positive integer-valued scalar.

    Returns:
      A float32 ``jax.Array`` of shape ``(N * features,)``.

    Raises:
      TypeError, ValueError: an argument breaks the contract; the message names
        it and the value received. Nothing is rounded or clipped.

    Example:
      >>> import jitlens
      >>> jitlens.jit_forward(0.0, [[1.0, 2.0, 3.0]], 4.0, 3.0).shape
      (4,)
    """
    seed_i = _scalar_int(
        "seed", seed, 0, "non-negative", MAX_SEED, "nnx.Rngs takes seeds up to 2**63 - 1"
    )
    features_i = _scalar_int("features", features, 1, "positive")
    num_calls_i = _scalar_int("num_calls", num_calls, 1, "positive")
    x_np = _matrix(x)

    import jax.numpy as jnp
    from flax import nnx

    x_arr = jnp.asarray(x_np, dtype=jnp.float32)
    try:
        model = nnx.Linear(x_arr.shape[-1], features_i, rngs=nnx.Rngs(seed_i))

        @nnx.jit
        def fwd(model: nnx.Linear, x: jnp.ndarray) -> jnp.ndarray:
            return model(x)

        out = None
        for _ in range(num_calls_i):
            out = fwd(model, x_arr)
    except Exception as exc:  # an allocation the sizes asked for: name them, not JAX's internals
        if "RESOURCE_EXHAUSTED" not in str(exc):
            raise
        n, d_in = x_np.shape
        gib = 4 * features_i * (d_in + 1 + n) / 2**30
        raise ValueError(
            _TOO_BIG_MSG.format(
                features=features_i, d_in=d_in, n=n, gib=gib, error=str(exc).splitlines()[0]
            )
        ) from exc
    assert out is not None  # num_calls_i >= 1
    return out.reshape(-1)
