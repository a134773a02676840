"""Every exception and warning jitlens raises, under one base class."""

from __future__ import annotations


class JitlensError(Exception):
    """Base class of every error raised by jitlens."""


class ReportError(JitlensError, ValueError):
    """A report file or object is not one jitlens can read (wrong schema, truncated, edited)."""


class RecompileError(JitlensError, AssertionError):
    """A jitted function was traced more often than its budget allows."""


class ConfigError(JitlensError, ValueError):
    """A jitlens setting has a value outside the valid ones."""


class UsageError(JitlensError, RuntimeError):
    """A jitlens object was used out of order (a context manager exited without its enter)."""


class RecompileWarning(UserWarning):
    """A jitted function exceeded its trace budget (``on_exceed="warn"``)."""


class RunawayRecompileWarning(RecompileWarning):
    """A jitted function passed ``JITLENS_WARN_RECOMPILES`` recompiles (once per function)."""


class StaleCacheWarning(UserWarning):
    """A cached call used a static that changed since its compile (no retrace, stale result).

    ``nnx.cached_partial`` with an attribute changed after caching, or a static changed in
    place, which the jit compares with itself: a dict or plain-object attribute of an NNX
    module, a ``jax.jit`` static argument or an ``eqx.Module`` field compared by identity.
    Checked on calls #2, #3, #5, #9, ... only (the warning names the call that noticed it):
    a change is noticed up to as many calls later as came before it.
    """


class JitlensInternalWarning(RuntimeWarning):
    """jitlens itself failed; it stepped aside and the program went on unchanged."""


class JitlensCompatWarning(UserWarning):
    """The installed JAX/Flax lack something jitlens needs: some figures are unknown."""


# Tracebacks and reprs name the public spelling: ``jitlens.RecompileError``.
for _cls in (
    JitlensError,
    ReportError,
    RecompileError,
    ConfigError,
    RecompileWarning,
    StaleCacheWarning,
    JitlensInternalWarning,
    JitlensCompatWarning,
):
    _cls.__module__ = "jitlens"
del _cls
