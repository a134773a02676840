"""Settings: explicit argument > scoped override > ``JITLENS_*`` environment variable > default.

A bad value fails at once with the list of valid ones.
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # collections.abc's own (nothing more at start-up)

from ._errors import ConfigError

TYPE_CHECKING = False  # (no ``typing``, ``contextlib``: read at a tracked program's start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

#: name -> (environment variable, default, valid values or None for free text)
SETTINGS: dict[str, tuple[str, Any, tuple[str, ...] | None]] = {
    "enabled": ("JITLENS", False, _TRUE + _FALSE),
    "log_level": ("JITLENS_LOG", "info", ("debug", "info", "warning", "off")),
    "report": ("JITLENS_REPORT", "", None),
    "html": ("JITLENS_HTML", "", None),
    "include_internal": ("JITLENS_INCLUDE_INTERNAL", False, _TRUE + _FALSE),
    # where the self-check keeps its verdict per set of installed versions
    # (default: $XDG_CACHE_HOME/jitlens or ~/.cache/jitlens)
    "cache_dir": ("JITLENS_CACHE_DIR", "", None),
    # recompiles of one function after which it is warned about once (0 or off: never)
    "warn_recompiles": ("JITLENS_WARN_RECOMPILES", 8, None),
    # seconds `jitlens run --gather` waits on process 0 for the other processes' reports
    # before it writes the merged view without them (0 or off: does not wait)
    "gather_timeout": ("JITLENS_GATHER_TIMEOUT", 60, None),
    # where a tracked program keeps its journal while it runs (default: cache_dir/journal)
    "journal_dir": ("JITLENS_JOURNAL_DIR", "", None),
}

#: name -> what the setting does (the settings reference is generated from this
#: table and SETTINGS: docs/_ext/jitlens_reference.py; tests/test_docs.py keeps them in step).
SETTING_DOCS: dict[str, str] = {
    "enabled": "track every jitted function of the program with no code change "
    "(`JITLENS=1 python prog.py`): tracking starts when the program imports jax",
    "log_level": "level of the `jitlens` logger: retraces are logged at INFO as they happen",
    "report": "write the JSON report to this path at exit",
    "html": "write the HTML report to this path at exit",
    "include_internal": "also report JAX's and Flax's own jitted helpers",
    "cache_dir": "where the self-check keeps its verdict per set of installed versions "
    "(default: `$XDG_CACHE_HOME/jitlens` or `~/.cache/jitlens`)",
    "warn_recompiles": "recompiles of one function after which it gets one "
    "`RunawayRecompileWarning` (`0` or `off`: never)",
    "gather_timeout": "seconds `jitlens run --gather` waits on process 0 for the other "
    "processes' reports before it writes the merged view without them, marked incomplete "
    "(`0` or `off`: does not wait)",
    "journal_dir": "where a tracked program keeps its journal while it runs, the record "
    "its report is built from when it ends without Python's exit (a SIGKILL, `os._exit`): "
    "deleted once the report is out (default: the folder `journal` in `cache_dir`)",
}

#: Environment variables read outside SETTINGS (where their readers need them before,
#: or without, importing this module), and what they do.
OTHER_VARIABLES: dict[str, str] = {
    "JITLENS_CHILDREN": "with `JITLENS=1`: also track the Python processes the program starts "
    "(`multiprocessing` spawn workers, `subprocess` Pythons); default: the main program only. "
    "A child writes `JITLENS_REPORT` / `JITLENS_HTML` only where the path holds `{pid}` (one "
    "file per process): never over the program's own report",
    "JITLENS_SELF_CHECK": "`0` ignores a verdict `jitlens selfcheck` kept (the canary that checks "
    "once per set of installed versions that jitlens counts right on them",
}

BAD_COUNT = "{env}={raw!r} is not valid; use an integer >= 0, or off (0 and off disable it)"

_overrides: list[dict[str, Any]] = []


def _parse(name: str, raw: Any) -> Any:
    env, default, valid = SETTINGS[name]
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in (valid or ()):
            raise ConfigError(
                f"{env}={raw!r} is not valid; use one of: 1, 0, true, false, yes, no, on, off"
            )
        return text in _TRUE
    if isinstance(default, int):
        return _parse_count(env, raw)
    text = str(raw).strip()
    if valid is not None and text.lower() not in valid:
        raise ConfigError(f"{env}={raw!r} is not valid; use one of: {', '.join(valid)}")
    return text.lower() if valid is not None else text


def _parse_count(env: str, raw: Any) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    else:
        text = str(raw).strip().lower()
        if text in ("off", "false", "no", ""):
            return 0
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(BAD_COUNT.format(env=env, raw=raw)) from None
    if value < 0:
        raise ConfigError(BAD_COUNT.format(env=env, raw=raw))
    return value


def get(name: str, explicit: Any = None) -> Any:
    """The value of setting ``name``, by precedence."""
    if name not in SETTINGS:
        raise ConfigError(f"unknown jitlens setting {name!r}; known: {', '.join(SETTINGS)}")
    if explicit is not None:
        return _parse(name, explicit)
    for scope in reversed(_overrides):
        if name in scope:
            return _parse(name, scope[name])
    env, default, _valid = SETTINGS[name]
    raw = os.environ.get(env)
    return default if raw is None else _parse(name, raw)


class _Current(Mapping):  # type: ignore[type-arg]
    """Every setting's value in effect, read when asked (what ``settings()`` hands its block)."""

    def __getitem__(self, name: str) -> Any:
        if name not in SETTINGS:
            raise KeyError(name)
        return get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(SETTINGS)

    def __len__(self) -> int:
        return len(SETTINGS)


class settings:  # (a function to its users: ``with jitlens.settings(...)``)
    """Scoped jitlens settings: ``with jitlens.settings(log_level="off"): ...``.

    Inside the block these values win over the ``JITLENS_*`` environment variables
    (an explicit argument such as ``track(include_internal=True)`` still wins over
    them); blocks nest, the innermost first. The names and values are those of the
    settings reference (``warn_recompiles=3``, ``log_level="off"``, ...), checked on
    entry: an unknown name or a bad value raises :class:`jitlens.ConfigError` listing
    the valid ones. ``as now`` gives a read-only view of the values in effect (each read
    when asked, so a bad environment variable for another setting raises only if read).

    Example:
        >>> import jitlens
        >>> with jitlens.settings(warn_recompiles="off") as now:
        ...     now["warn_recompiles"]
        0

    See also: ``jax.config.update`` / ``jax.default_device`` for JAX's own options.
    """

    def __init__(self, **values: Any) -> None:
        self._values = values

    def __enter__(self) -> Mapping[str, Any]:
        for name, value in self._values.items():
            get(name, value)  # validate now
        _overrides.append(self._values)
        return _Current()

    def __exit__(self, *exc: object) -> None:
        _overrides.remove(self._values)
