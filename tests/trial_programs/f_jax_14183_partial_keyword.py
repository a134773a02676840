"""jax-ml/jax#14183 "using ``jax.tree_util.Partial`` or lambda function triggers compilation":
``some_function(1, 1)`` compiles, then ``Partial(some_function, parameter=1)(1)`` compiles
again. The ``Partial`` passes ``parameter`` by keyword where the first call passed it by
position, and jit keys positional and keyword arguments apart (the culprit: how
``parameter`` is passed, not the ``Partial``).

``run(fixed=True)`` applies jitlens' fix: ``parameter`` passed the same way on every call
(by keyword).
"""

import jax
from jax.tree_util import Partial


def run(fixed: bool) -> dict:
    traces = [0]

    @jax.jit
    def some_function(x, parameter):
        traces[0] += 1
        return x + parameter

    out = [int(some_function(1, parameter=1) if fixed else some_function(1, 1))]
    partial_function = Partial(some_function, parameter=1)
    out += [int(partial_function(1)), int(partial_function(1))]
    return {"truth": traces[0], "out": out, "function": "some_function"}


if __name__ == "__main__":
    print(run(fixed=False))
