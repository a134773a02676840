"""jitlens: why did my jitted function compile again?

Counts calls, traces, compilations and cache hits of every ``nnx.jit`` /
``jax.jit`` / ``nnx.cached_partial`` function, names the culprit of every
recompilation with a fix, and guards tests with a compile budget.
"""

from ._audit import AuditFinding as AuditFinding
from ._audit import AuditResult as AuditResult
from ._audit import audit as audit
from ._check import CheckResult as CheckResult
from ._check import check_jit_forward as check_jit_forward
from ._errors import ConfigError as ConfigError
from ._errors import JitlensError as JitlensError
from ._errors import RecompileError as RecompileError
from ._errors import RecompileWarning as RecompileWarning
from ._errors import ReportError as ReportError
from ._errors import StaleCacheWarning as StaleCacheWarning
from ._exercise import jit_forward as jit_forward
from ._lint import LintFinding as LintFinding
from ._lint import lint_paths as lint_paths
from ._lint import lint_source as lint_source
from ._merge import MergedReport as MergedReport
from ._merge import find_divergence as find_divergence
from ._merge import merge_reports as merge_reports
from ._report import Event as Event
from ._report import FunctionReport as FunctionReport
from ._report import Reason as Reason
from ._report import Report as Report
from ._report import load_report as load_report
from ._tracker import Tracker as Tracker
from ._tracker import track as track
from ._version import __version__ as __version__

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
    "jit_forward",
    "lint_paths",
    "lint_source",
    "load_report",
    "merge_reports",
    "track",
]
