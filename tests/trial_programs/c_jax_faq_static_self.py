"""JAX's FAQ "How to use jit with methods?", strategy 2: ``jax.jit`` of a method with
``static_argnums=0`` (``self`` static), the instance built anew per call. A class without
``__eq__`` compares by identity: each new instance compiles again.

``run(fixed=True)`` applies jitlens' fix: the class a frozen dataclass, so equal
configurations compare (and hash) equal.
"""

import dataclasses
from functools import partial

import jax


class CustomClass:
    def __init__(self, x: int, mul: bool):
        self.x = x
        self.mul = mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        T[0] += 1
        if self.mul:
            return self.x * y
        return y


@dataclasses.dataclass(frozen=True)
class FrozenClass:
    x: int
    mul: bool

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        T[0] += 1
        if self.mul:
            return self.x * y
        return y


T = [0]


def run(fixed: bool) -> dict:
    T[0] = 0
    make = FrozenClass if fixed else CustomClass
    out = [int(make(2, True).calc(y)) for y in (3, 4, 5)]
    return {"truth": T[0], "out": out, "function": "calc"}


if __name__ == "__main__":
    print(run(fixed=False))
