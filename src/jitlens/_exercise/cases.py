"""The graded inputs of ``jitlens check``: the cases and the bad inputs every solution must reject."""

from __future__ import annotations

import dataclasses
import enum


class ItemKind(enum.StrEnum):
    """What the grader's child runs for one item of its configuration: a graded case, or a
    probe of the solution (``check._items``)."""

    CASE = "case"
    PROBE = "probe"


@dataclasses.dataclass(frozen=True)
class CheckCase:
    """One graded call: ``jit_forward(float(seed), x, float(features), float(num_calls))``.

    ``x`` is standard normal float32 of shape ``(n, d_in)`` drawn with ``x_seed``.
    """

    n: int
    d_in: int
    features: int
    seed: int
    num_calls: int
    x_seed: int
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.n}x{self.d_in}->{self.features}"

    @property
    def reference_key(self) -> tuple[int, ...]:
        """What the expected output depends on (not ``num_calls``)."""
        return (self.n, self.d_in, self.features, self.seed, self.x_seed)


@dataclasses.dataclass(frozen=True)
class BadInput:
    """One bad input: the valid base call with ``argument`` replaced by ``value``."""

    argument: str
    value: str

    @property
    def label(self) -> str:
        return f"{self.argument}={self.value}" if self.argument != "x" else f"x {self.value}"


#: ``(n, d_in, features, num_calls, note)`` of the default cases; seeds vary with ``--seed``.
CASE_SHAPES: tuple[tuple[int, int, int, int, str], ...] = (
    (1, 3, 4, 5, "N = 1"),
    (4, 1, 3, 2, "D_in = 1"),
    (3, 5, 1, 5, "features = 1"),
    (4, 256, 1024, 2, "wide layer"),
    (8, 16, 8, 1, ""),
    (5, 7, 6, 5, ""),
)


BAD_INPUTS: tuple[BadInput, ...] = tuple(
    BadInput(arg, value)
    for arg in ("seed", "features", "num_calls")
    for value in ("1.5", "-1.0", "nan", "inf", "True", "'2'")
) + tuple(BadInput("x", value) for value in ("1-D", "3-D", "empty", "NaN"))


def default_cases(seed: int = 0) -> tuple[CheckCase, ...]:
    """The graded cases for ``--seed seed``: fixed shapes, seeds drawn from ``seed``."""
    import random

    rng = random.Random(seed)
    cases = []
    for i, (n, d_in, features, num_calls, note) in enumerate(CASE_SHAPES):
        model_seed = seed if i == 0 else rng.randrange(1, 1 << 16)
        cases.append(
            CheckCase(n, d_in, features, model_seed, num_calls, rng.randrange(1 << 31), note)
        )
    return tuple(cases)
