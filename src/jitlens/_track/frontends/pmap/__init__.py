"""The pmap front-end: ``jax.pmap`` and ``nnx.pmap`` counted (:mod:`.adapter`), their reasons in
pmap's terms (:mod:`.words`)."""

from __future__ import annotations

from typing import Any

from ...._core.key import Key
from ...._core.report import Reason
from ...frontend import Frontend, SetAttr
from ...records import Record
from .adapter import KINDS, install, untracked


class PmapFrontend(Frontend):
    """``jax.pmap`` and ``nnx.pmap`` (which calls ``jax.pmap`` with a ``PmapFn``)."""

    kinds = KINDS
    module = "jax"

    def install(self, set_attr: SetAttr) -> None:
        install(set_attr)

    def untracked(
        self, fun: Any, info: Any
    ) -> tuple[Record, tuple[Any, ...], dict[str, Any]] | None:
        return untracked(fun, info)

    def reword(self, rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
        from . import words  # loaded at the first retrace

        return words.reword(rec, reasons, key)


FRONTEND = PmapFrontend()
