"""jax-ml/jax#28418 "The output of a jitted function is random when ``__hash__`` is defined
for a static python object": ``@partial(jax.jit, static_argnums=0)`` on a method, a class
whose ``__hash__`` reads the mutable ``self.a`` (``__eq__`` by identity), and ``obj.a = 2``
after the first call. JAX's cache finds the same object and serves the compile made for
``a == 1``: the second call returns 2, not 3 (on the JAX of the report, a retrace or not at
random). The maintainers: a static argument must be immutable (hash and equality stable);
mutating it is the culprit (``self.a`` changed in place).

``run(fixed=True)`` applies jitlens' fix: ``obj = copy.copy(obj)`` before ``obj.a = 2`` (a new
object: the jit compiles for the new value, and returns 3).
"""

import copy
from functools import partial

import jax


def run(fixed: bool) -> dict:
    traces = [0]

    class MyClass:
        def __init__(self, a=1):
            self.a = a

        @partial(jax.jit, static_argnums=0)
        def f(self):
            traces[0] += 1
            return self.a + 1

        def __hash__(self):
            return hash(self.a)

    obj = MyClass()
    out = [int(obj.f())]
    if fixed:
        obj = copy.copy(obj)
    obj.a = 2
    out.append(int(obj.f()))
    return {"truth": traces[0], "out": out, "function": "f", "same_out": False}


if __name__ == "__main__":
    print(run(fixed=False))
