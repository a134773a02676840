"""``%load_ext jitlens``: the ``%jitlens`` line magic and the ``%%jitlens`` cell magic.

Many JAX users live in Jupyter or Colab, where ``jitlens run`` does not
apply. ``%%jitlens`` tracks one cell and shows its report under it;
``%jitlens on`` keeps tracking across cells until ``%jitlens off`` (which
shows the report), and ``%jitlens report`` shows the figures so far. In a
notebook the report is the HTML page (in an ``<iframe>``, so that its styles
stay out of the notebook's, sized to the page); in a terminal IPython it is the
text summary.

``%load_ext jitlens`` starts counting right away (a tracker that is never
shown), so that a ``jax.jit`` made in an earlier cell, the usual notebook flow,
has its calls and cache hits counted in a later ``%%jitlens`` cell: only a
``jax.jit`` made while jitlens tracks is a counting one. A function jitted
before ``%load_ext`` shows ``?`` and a note says so.

Example (in a notebook)::

    %load_ext jitlens
    %%jitlens
    for n in (2, 2, 3):
        step(jnp.ones(n))

See also: ``jax.log_compiles`` / ``jax_explain_cache_misses`` log every
compile as it happens, without counts or a fix.
"""

from __future__ import annotations

import shlex
from typing import Any

USAGE = (
    "usage: %jitlens on | off | report  [--include-internal]\n"
    "  on      track every jitted function from now on, across cells\n"
    "  off     stop tracking and show the report\n"
    "  report  show the report so far (tracking goes on)\n"
    "  %%jitlens [--include-internal]  track one cell and show its report"
)
ON = "jitlens: tracking jitted functions across cells; `%jitlens off` stops and shows the report."
ALREADY_ON = "jitlens: already tracking; `%jitlens off` stops and shows the report."
NOT_ON = "jitlens: not tracking; `%jitlens on` starts (or use the cell magic `%%jitlens`)."
NOT_COUNTED = (
    "jitlens: calls and cache hits of {names} are unknown (?): jitted before `%load_ext jitlens`; "
    "re-run the cell that defines {them} to count them."
)

#: The tracker ``%jitlens on`` started, kept between cells.
_SESSION: dict[str, Any] = {}


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%jitlens`` and ``%%jitlens`` (what ``%load_ext jitlens`` calls), and start
    counting the calls of every ``jax.jit`` made from now on."""
    if "counting" not in _SESSION:
        from .._track.tracker import Tracker

        _SESSION["counting"] = Tracker()
        _SESSION["counting"].start()
    ipython.register_magic_function(
        lambda line: jitlens_line(ipython, line), magic_kind="line", magic_name="jitlens"
    )
    ipython.register_magic_function(
        lambda line, cell: jitlens_cell(ipython, line, cell),
        magic_kind="cell",
        magic_name="jitlens",
    )


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jitlens``: stop a tracker left on (its report is not shown)."""
    for name in ("tracker", "counting"):
        tracker = _SESSION.pop(name, None)
        if tracker is not None:
            tracker.stop()


def jitlens_line(ipython: Any, line: str) -> None:
    """``%jitlens on|off|report [--include-internal]``."""
    words = shlex.split(line)
    include_internal = "--include-internal" in words
    words = [w for w in words if w != "--include-internal"]
    command = words[0] if len(words) == 1 else None
    tracker = _SESSION.get("tracker")
    if command == "on":
        if tracker is not None:
            print(ALREADY_ON)
            return
        from .._track.tracker import Tracker

        tracker = Tracker(include_internal=include_internal, timeline=True)
        tracker.start()
        _SESSION["tracker"] = tracker
        print(ON)
    elif command in ("off", "report"):
        if tracker is None:
            print(NOT_ON)
            return
        if command == "off":
            tracker.stop()
            del _SESSION["tracker"]
        show(ipython, tracker.report(), include_internal=include_internal)
    else:
        print(USAGE)


def jitlens_cell(ipython: Any, line: str, cell: str) -> None:
    """``%%jitlens``: run the cell tracked, then show its report under it."""
    from .._track.tracker import Tracker

    tracker = Tracker(include_internal="--include-internal" in line.split(), timeline=True)
    tracker.start()
    try:
        ipython.run_cell(cell)
    finally:
        tracker.stop()
    show(ipython, tracker.report(), include_internal=tracker.include_internal)


def show(ipython: Any, report: Any, *, include_internal: bool = False) -> None:
    """The report as HTML where the front-end shows HTML, else as the text summary."""
    from IPython.display import display

    if "text/html" in getattr(ipython.display_formatter, "active_types", ()):
        from .._render.html import render_html_frame

        # a raw bundle: IPython's HTML class warns about any <iframe> ("Consider using
        # IPython.display.IFrame"), which cannot hold a page given as srcdoc
        display({"text/html": render_html_frame(report)}, raw=True)
    else:
        from .._render.text import render_text

        print(render_text(report, include_internal=include_internal))
    uncounted = [f.qualname for f in report.user_functions() if f.calls is None]
    if uncounted:
        names = ", ".join(f"`{name}`" for name in uncounted)
        print(NOT_COUNTED.format(names=names, them="it" if len(uncounted) == 1 else "them"))
