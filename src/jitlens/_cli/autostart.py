"""``JITLENS=1 python train.py``: track and explain retraces with no code change.

Imported at interpreter start-up by the ``jitlens_autostart.pth`` file that
installing jitlens puts in site-packages; the ``.pth`` line imports this
module only when ``JITLENS`` is set, so other programs pay nothing. Retraces
are logged (logger ``jitlens``) as they happen, the summary goes to stderr at
exit, and ``JITLENS_REPORT`` / ``JITLENS_HTML`` name report files to write.
"""

from __future__ import annotations

import atexit
import logging
import sys
import warnings


def _start() -> None:
    from .. import _config
    from .._errors import ConfigError

    try:
        if not _config.get("enabled"):
            return
        level = _config.get("log_level")
    except ConfigError as exc:
        warnings.warn(f"jitlens: {exc}; not tracking", stacklevel=2)
        return
    from .._track.tracker import Tracker

    log = logging.getLogger("jitlens")
    if level != "off" and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(getattr(logging, level.upper()))
        log.propagate = False
    tracker = Tracker(include_internal=_config.get("include_internal"), timeline=True)
    tracker.start()
    atexit.register(_finish, tracker)


def _finish(tracker: object) -> None:
    from .. import _config
    from .._render.text import render_text
    from .run import write_outputs

    try:
        tracker.stop()  # type: ignore[attr-defined]
        report = tracker.report()  # type: ignore[attr-defined]
        sys.stderr.write("\n" + render_text(report) + "\n")

        class _Args:
            json = _config.get("report") or None
            html = _config.get("html") or None
            trace = None

        for path in write_outputs(report, _Args()):  # type: ignore[arg-type]
            sys.stderr.write(f"jitlens: wrote {path}\n")
    except Exception as exc:
        sys.stderr.write(f"jitlens: could not write the report ({type(exc).__name__}: {exc})\n")


_start()
