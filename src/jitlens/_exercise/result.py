"""The grader's verdict as plain data: what ``jitlens.check_jit_forward`` returns."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from .._errors import JitlensError
from .cases import BadInput, CheckCase
from .criteria import CRITERIA, CheckFinding, CriterionResult

NOT_A_RESULT = "not the JSON of a jitlens check result ({error}); write one with --json PATH"


class CheckError(JitlensError, ValueError):
    """``check_jit_forward`` was called with something it cannot grade."""


#: The text renderer, registered by ``jitlens._exercise.render`` (``str(result)``).
TEXT: list[Callable[[Any], str] | None] = [None]

VERDICT_PASS = "PASS: {name} meets all {n} criteria on {cases} cases; bad input: {bad}."


VERDICT_FAIL = "FAIL: {name} fails {failed}; passes {passed}; bad input: {bad}."


VERDICT_ERROR = "ERROR: cannot load {name}: {error}"


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The grade of one solution: per-criterion results with evidence, and the verdict."""

    solution: str
    seed: int
    cases: tuple[CheckCase, ...]
    bad_inputs: tuple[BadInput, ...]
    criteria: tuple[CriterionResult, ...]
    load_error: str | None = None
    seconds: float = 0.0
    processes: int = 0

    @property
    def passed(self) -> bool:
        """True when the file loaded and every required criterion passed on every case."""
        return self.load_error is None and all(c.passed for c in self.criteria if c.required)

    @property
    def exit_code(self) -> int:
        return 2 if self.load_error is not None else 0 if self.passed else 1

    def criterion(self, key: str) -> CriterionResult:
        for c in self.criteria:
            if c.key == key:
                return c
        raise KeyError(f"no criterion {key!r}; known: {[k for k, *_ in CRITERIA]}")

    @property
    def verdict(self) -> str:
        name = os.path.basename(self.solution) or self.solution
        if self.load_error is not None:
            return VERDICT_ERROR.format(name=name, error=self.load_error.splitlines()[0])
        required = [c for c in self.criteria if c.required]
        bad = next((c for c in self.criteria if not c.required), None)
        bad_text = "not run" if bad is None else bad.summary
        if bad is not None and bad.status == "warn":
            bad_text += " (a warning)"
        if self.passed:
            return VERDICT_PASS.format(
                name=name, n=len(required), cases=len(self.cases), bad=bad_text
            )
        failed = [f"{c.title} ({c.summary})" for c in required if not c.passed]
        passed = [c.title for c in required if c.passed] or ["nothing"]
        return VERDICT_FAIL.format(
            name=name, failed=", ".join(failed), passed=", ".join(passed), bad=bad_text
        )

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.update(passed=self.passed, exit_code=self.exit_code, verdict=self.verdict)
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        """Rebuild a result from :meth:`to_dict` (e.g. a ``--json`` file), to render it again."""
        try:
            criteria = tuple(
                CriterionResult(
                    **{**c, "findings": tuple(CheckFinding(**f) for f in c["findings"])}
                )
                for c in data["criteria"]
            )
            return cls(
                solution=data["solution"],
                seed=data["seed"],
                cases=tuple(CheckCase(**c) for c in data["cases"]),
                bad_inputs=tuple(BadInput(**p) for p in data["bad_inputs"]),
                criteria=criteria,
                load_error=data.get("load_error"),
                seconds=data.get("seconds", 0.0),
                processes=data.get("processes", 0),
            )
        except (KeyError, TypeError) as exc:
            raise CheckError(NOT_A_RESULT.format(error=f"{type(exc).__name__}: {exc}")) from None

    def __str__(self) -> str:
        render = TEXT[0]
        return render(self, color=False) if render is not None else repr(self)
