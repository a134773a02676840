"""jitlens: why did my jitted function compile again?

Counts calls, traces, compilations and cache hits of every ``nnx.jit`` /
``jax.jit`` / ``nnx.cached_partial`` function, names the culprit of every
recompilation with a fix, and guards tests with a compile budget.

Names that need JAX load on first use, so that ``import jitlens`` (and the
pytest plugin, loaded in every pytest run) costs nothing until then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import ConfigError as ConfigError
from ._errors import JitlensError as JitlensError
from ._errors import RecompileError as RecompileError
from ._errors import RecompileWarning as RecompileWarning
from ._errors import ReportError as ReportError
from ._errors import StaleCacheWarning as StaleCacheWarning
from ._report import Event as Event
from ._report import FunctionReport as FunctionReport
from ._report import Reason as Reason
from ._report import Report as Report
from ._report import load_report as load_report
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._audit import AuditFinding as AuditFinding
    from ._audit import AuditResult as AuditResult
    from ._audit import audit as audit
    from ._check import CheckResult as CheckResult
    from ._check import check_jit_forward as check_jit_forward
    from ._exercise import jit_forward as jit_forward
    from ._guards import get_num_traces as get_num_traces
    from ._guards import max_traces as max_traces
    from ._guards import reset as reset
    from ._lint import LintFinding as LintFinding
    from ._lint import lint_paths as lint_paths
    from ._lint import lint_source as lint_source
    from ._merge import MergedReport as MergedReport
    from ._merge import find_divergence as find_divergence
    from ._merge import merge_reports as merge_reports
    from ._scopes import no_retrace as no_retrace
    from ._tracker import Tracker as Tracker
    from ._tracker import track as track

#: Public name -> the private module that defines it, imported on first use.
_LAZY = {
    "AuditFinding": "_audit",
    "AuditResult": "_audit",
    "audit": "_audit",
    "CheckResult": "_check",
    "check_jit_forward": "_check",
    "jit_forward": "_exercise",
    "get_num_traces": "_guards",
    "max_traces": "_guards",
    "reset": "_guards",
    "LintFinding": "_lint",
    "lint_paths": "_lint",
    "lint_source": "_lint",
    "MergedReport": "_merge",
    "find_divergence": "_merge",
    "merge_reports": "_merge",
    "no_retrace": "_scopes",
    "Tracker": "_tracker",
    "track": "_tracker",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jitlens' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AuditFinding",
    "AuditResult",
    "CheckResult",
    "ConfigError",
    "Event",
    "FunctionReport",
    "JitlensError",
    "LintFinding",
    "MergedReport",
    "Reason",
    "RecompileError",
    "RecompileWarning",
    "Report",
    "ReportError",
    "StaleCacheWarning",
    "Tracker",
    "__version__",
    "audit",
    "check_jit_forward",
    "find_divergence",
    "get_num_traces",
    "jit_forward",
    "lint_paths",
    "lint_source",
    "load_report",
    "max_traces",
    "merge_reports",
    "no_retrace",
    "reset",
    "track",
]
