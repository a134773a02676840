"""A module imported at its first use, for the words only a retrace reads.

A tracked program pays for every module jitlens imports when it imports JAX.
The words of every reason kind (``reasons``, ~20 modules) and their ranking
(``rank``) are read when a function retraces, never on a first trace: a
program that never retraces never imports them.
"""

from __future__ import annotations

import importlib
from typing import Any


class OnFirstUse:
    """Stands for the module ``name`` (relative to ``package``): the first attribute read
    imports it; each read is then one ``sys.modules`` look-up more than a plain global."""

    def __init__(self, name: str, package: str | None) -> None:
        self._name = name
        self._package = package

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name, self._package), attr)
