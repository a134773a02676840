"""One colour option for every command: ``--color {auto,always,never}``.

``auto`` (the default) colours when the stream is a terminal and ``NO_COLOR``
is not set, as ruff and pytest do. A bare ``--color`` means ``always`` and
``--no-color`` means ``never``: the spellings ``jitlens merge`` took before.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse

CHOICES = ("auto", "always", "never")
HELP = "colour the output: auto (a terminal without NO_COLOR), always, never (default: auto)"


def add_color_option(parser: argparse.ArgumentParser) -> None:
    """``--color [WHEN]`` and its old spelling ``--no-color``, both into ``args.color``."""
    import argparse

    parser.add_argument(
        "--color",
        nargs="?",
        choices=CHOICES,
        const="always",
        default="auto",
        metavar="{auto,always,never}",
        help=HELP,
    )
    parser.add_argument(
        "--no-color", dest="color", action="store_const", const="never", help=argparse.SUPPRESS
    )


def want_color(when: Any, stream: TextIO | None = None) -> bool:
    """Whether to colour ``stream`` (default stdout) for ``--color WHEN``."""
    if when in ("always", True):
        return True
    if when in ("never", False):
        return False
    stream = sys.stdout if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and not os.environ.get("NO_COLOR")
