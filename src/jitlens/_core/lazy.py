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
    imports it, and each read after it is one attribute look-up more than a plain global
    (a report of 10,000 functions reads the retrace text's words 80,000 times)."""

    def __init__(self, name: str, package: str | None) -> None:
        self._name = name
        self._package = package
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name, self._package)
        return getattr(module, attr)
