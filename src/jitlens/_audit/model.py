"""The audit's findings as plain data: what ``jitlens.audit`` returns and the JSON it writes."""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable
from typing import Any

from .._core.reason import words_when_read

#: The text renderer, registered by ``jitlens._audit.render`` (``str(result)``).
TEXT: list[Callable[[Any], str] | None] = [None]

#: ``AuditFinding.severity``, most severe first.
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Everything ``audit`` found, errors first; ``exit_code`` is what the CLI returns."""

    target: str
    roots: tuple[str, ...]
    statics: int
    seconds: float
    findings: tuple[AuditFinding, ...]
    #: The jit whose cache key was audited (``eqx.filter_jit`` for eqx.Modules).
    jit: str = "nnx.jit"
    #: How the target was loaded and built, in words: the statements of a script without a
    #: main guard that were left out, the ``with`` block the factory was built in.
    notes: tuple[str, ...] = ()

    def _of(self, severity: str) -> tuple[AuditFinding, ...]:
        return tuple(f for f in self.findings if f.severity == severity)

    @property
    def errors(self) -> tuple[AuditFinding, ...]:
        return self._of("error")

    @property
    def warnings(self) -> tuple[AuditFinding, ...]:
        return self._of("warning")

    @property
    def infos(self) -> tuple[AuditFinding, ...]:
        return self._of("info")

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["seconds"] = round(self.seconds, 3)
        data["counts"] = {s: len(self._of(s)) for s in SEVERITIES}
        data["exit_code"] = self.exit_code
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        render = TEXT[0]
        return render(self) if render is not None else repr(self)


class Evidence(enum.StrEnum):
    """What ``AuditFinding.before`` / ``after`` show: two builds' values (``builds``), one
    value of one build (``value``), an identity-compared object made anew by each build
    (``new``) or one such object both builds share (``shared``)."""

    BUILDS = "builds"
    VALUE = "value"
    NEW = "new"
    SHARED = "shared"


@words_when_read
@dataclasses.dataclass(frozen=True)
class AuditFinding:
    """One recompile trap at one user path, in the explainer's words: ``message`` and ``fix``
    are given as their makings (templates and parameters, ``_core.words.Words``) and made when
    first read (printed, or written as JSON); a string is kept as given."""

    severity: str
    kind: str
    path: str
    before: str
    after: str
    message: str
    fix: str
    #: What ``before`` and ``after`` are (decided where the finding is made).
    evidence: Evidence = Evidence.BUILDS
    #: The explainer's template ``fix`` was made from (``kinds.FixKind``); "" for the audit's own.
    fix_kind: str = ""
