"""A correct solution of "Flax NNX step 61: nnx.jit": one wrapper, num_calls calls, one trace.

`jitlens check examples/exercise/solution.py` passes every criterion,
including the advisory one: arguments outside the page's contract are
rejected with an exception instead of being rounded into a plausible output.
"""

import math
import numbers

import jax.numpy as jnp
from flax import nnx


def _integer(name, value, minimum):
    """``value`` as an int, if it is an integer-valued real number >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number such as 3.0, got {value!r}")
    if not math.isfinite(value) or value != int(value) or value < minimum:
        raise ValueError(f"{name} must be an integer-valued number >= {minimum}, got {value!r}")
    return int(value)


def jit_forward(seed, x, features, num_calls):
    seed = _integer("seed", seed, 0)
    features = _integer("features", features, 1)
    num_calls = _integer("num_calls", num_calls, 1)
    x = jnp.asarray(x, dtype=jnp.float32)
    if x.ndim != 2 or 0 in x.shape or not bool(jnp.isfinite(x).all()):
        raise ValueError(f"x must be a finite (N, D_in) matrix with N, D_in >= 1, got {x.shape}")

    model = nnx.Linear(x.shape[-1], features, rngs=nnx.Rngs(seed))

    @nnx.jit
    def fwd(model, x):
        return model(x)

    out = None
    for _ in range(num_calls):  # same wrapper, same model, same x: one trace, then cache hits
        out = fwd(model, x)
    return out.reshape(-1)
