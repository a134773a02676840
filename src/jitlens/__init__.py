"""jitlens: why did my jitted function compile again?

Counts calls, traces, compilations and cache hits of every ``nnx.jit`` /
``jax.jit`` / ``nnx.cached_partial`` function, names the culprit of every
recompilation with a fix, and guards tests with a compile budget.

Names that need JAX load on first use, so that ``import jitlens`` (and the
pytest plugin, loaded in every pytest run) costs nothing until then.

PYTEST_DONT_REWRITE: pytest marks the package of every plugin for assertion
rewriting, and warns when it was imported first, as ``JITLENS=1 pytest`` and
``jitlens run -m pytest`` do (a ``-W error`` / ``filterwarnings = error`` run
then stops before its first test); jitlens asserts nothing for pytest to rewrite.
"""

from __future__ import annotations

from ._errors import ConfigError as ConfigError
from ._errors import JitlensCompatWarning as JitlensCompatWarning
from ._errors import JitlensError as JitlensError
from ._errors import JitlensInternalWarning as JitlensInternalWarning
from ._errors import RecompileError as RecompileError
from ._errors import RecompileWarning as RecompileWarning
from ._errors import ReportError as ReportError
from ._errors import RunawayRecompileWarning as RunawayRecompileWarning
from ._errors import StaleCacheWarning as StaleCacheWarning
from ._version import __version__ as __version__

TYPE_CHECKING = False  # (not ``typing``: a tracked program's own typing.py stays its own)

if __doc__ is None:  # python -OO drops the docstring, where pytest reads that marker
    __doc__ = "PYTEST_DONT_REWRITE"

if TYPE_CHECKING:
    from typing import Any

    from ._audit.audit import AuditError as AuditError
    from ._audit.audit import AuditFinding as AuditFinding
    from ._audit.audit import AuditResult as AuditResult
    from ._audit.audit import audit as audit
    from ._cli.main import main as main
    from ._config import settings as settings
    from ._core.kinds import AdviceKind as AdviceKind
    from ._core.kinds import EventKind as EventKind
    from ._core.kinds import ReasonKind as ReasonKind
    from ._core.report import SCHEMA_VERSION as SCHEMA_VERSION
    from ._core.report import Advice as Advice
    from ._core.report import Event as Event
    from ._core.report import FunctionReport as FunctionReport
    from ._core.report import Reason as Reason
    from ._core.report import Report as Report
    from ._core.report import StaleHit as StaleHit
    from ._core.report import Unchecked as Unchecked
    from ._core.report import load_report as load_report
    from ._diff.diff import diff as diff
    from ._diff.model import ReportDiff as ReportDiff
    from ._exercise.check import CheckError as CheckError
    from ._exercise.check import CheckResult as CheckResult
    from ._exercise.check import check_jit_forward as check_jit_forward
    from ._exercise.forward import jit_forward as jit_forward
    from ._lint.lint import LintFinding as LintFinding
    from ._lint.lint import LintSkipWarning as LintSkipWarning
    from ._lint.lint import lint_paths as lint_paths
    from ._lint.lint import lint_source as lint_source
    from ._merge.merge import MergedReport as MergedReport
    from ._merge.merge import find_divergence as find_divergence
    from ._merge.merge import merge_reports as merge_reports
    from ._track.compile_budget import max_compiles as max_compiles
    from ._track.guards import get_num_traces as get_num_traces
    from ._track.guards import max_traces as max_traces
    from ._track.guards import reset as reset
    from ._track.scopes import no_retrace as no_retrace
    from ._track.tracker import Tracker as Tracker
    from ._track.tracker import track as track

#: Public name -> the private module that defines it, imported on first use.
_LAZY = {
    "main": "_cli.main",
    "settings": "_config",
    "AdviceKind": "_core.kinds",
    "EventKind": "_core.kinds",
    "ReasonKind": "_core.kinds",
    "Advice": "_core.report",
    "StaleHit": "_core.report",
    "Unchecked": "_core.report",
    "Event": "_core.report",
    "FunctionReport": "_core.report",
    "Reason": "_core.report",
    "Report": "_core.report",
    "load_report": "_core.report",
    "SCHEMA_VERSION": "_core.report",
    "AuditError": "_audit.audit",
    "AuditFinding": "_audit.audit",
    "AuditResult": "_audit.audit",
    "audit": "_audit.audit",
    "ReportDiff": "_diff.model",
    "diff": "_diff.diff",
    "CheckError": "_exercise.check",
    "CheckResult": "_exercise.check",
    "check_jit_forward": "_exercise.check",
    "jit_forward": "_exercise.forward",
    "get_num_traces": "_track.guards",
    "max_traces": "_track.guards",
    "max_compiles": "_track.compile_budget",
    "reset": "_track.guards",
    "LintFinding": "_lint.lint",
    "LintSkipWarning": "_lint.lint",
    "lint_paths": "_lint.lint",
    "lint_source": "_lint.lint",
    "MergedReport": "_merge.merge",
    "find_divergence": "_merge.merge",
    "merge_reports": "_merge.merge",
    "no_retrace": "_track.scopes",
    "Tracker": "_track.tracker",
    "track": "_track.tracker",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jitlens' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    import sys

    autostart = sys.modules.get(f"{__name__}._cli.autostart")
    if autostart is not None:  # JITLENS=1 / jitlens run: jax imported by this import of ours
        autostart.resume()
    return value


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jitlens``: the ``%jitlens on|off|report`` and ``%%jitlens`` magics.

    The magics live in ``jitlens._cli.notebook``, imported only here, so that
    ``import jitlens`` stays free of IPython and JAX.
    """
    from ._cli.notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jitlens``: stop a tracker left on by ``%jitlens on``."""
    from ._cli.notebook import unload_ipython_extension as unload

    unload(ipython)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "SCHEMA_VERSION",
    "Advice",
    "AdviceKind",
    "AuditError",
    "AuditFinding",
    "AuditResult",
    "CheckError",
    "CheckResult",
    "ConfigError",
    "Event",
    "EventKind",
    "FunctionReport",
    "JitlensCompatWarning",
    "JitlensError",
    "JitlensInternalWarning",
    "LintFinding",
    "LintSkipWarning",
    "MergedReport",
    "Reason",
    "ReasonKind",
    "RecompileError",
    "RecompileWarning",
    "Report",
    "ReportDiff",
    "ReportError",
    "RunawayRecompileWarning",
    "StaleCacheWarning",
    "StaleHit",
    "Tracker",
    "Unchecked",
    "__version__",
    "audit",
    "check_jit_forward",
    "diff",
    "find_divergence",
    "get_num_traces",
    "jit_forward",
    "lint_paths",
    "lint_source",
    "load_report",
    "main",
    "max_compiles",
    "max_traces",
    "merge_reports",
    "no_retrace",
    "reset",
    "settings",
    "track",
]
