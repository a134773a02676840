"""The flax.linen front-end: ``nn.jit`` rows named after the user's module (:mod:`.adapter`),
their reasons in linen's terms (:mod:`.words`)."""

from __future__ import annotations

from typing import Any

from ...._compat import linen_api
from ...._core.key import Key
from ...._core.kinds import RowKind
from ...._core.report import Reason
from ...frontend import Frontend
from ...records import Record


class LinenFrontend(Frontend):
    """``nn.jit``: nothing to patch; its rows come from ``jax.jit`` (``record_for_jit``)."""

    kinds = (RowKind.NN_JIT,)
    stale_traced = (
        "A number that changes often is better traced: pass it to the method as an array "
        "(`jnp.asarray(...)`), not in a module field."
    )
    #: nn.jit keeps only a hash of the fields: a new object may take a freed one's address
    #: (and its identity hash), so only a class whose fields the hash reads is a fix.
    unchecked_remedy = (
        "make its class a dataclass (`@dataclasses.dataclass`), whose fields nn.jit hashes"
    )
    module = linen_api.LINEN_MODULE

    def record_for_jit(self, fun: Any, options: dict[str, Any]) -> Record | None:
        if not linen_api.is_lifted_jit(fun):
            return None  # every jax.jit asks: linen's adapter loads with the first nn.jit
        from .adapter import record_for

        return record_for(fun, options)

    def reword(self, rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
        from . import words  # loaded at the first retrace

        return words.reword(rec, reasons, key)

    def compiled(self, rec: Record, key: Key, args: tuple[Any, ...]) -> None:
        from ...state import internal_failure
        from . import held  # loaded at the first trace of an nn.jit row

        try:
            held.compiled(rec, args)
        except Exception as exc:
            internal_failure("keeping an nn.jit module's fields", exc)

    def held_statics(
        self, rec: Record, args: tuple[Any, ...], frame: Any
    ) -> list[tuple[str, str, Any, Any]]:
        from . import held

        return held.held_statics(rec, args, frame)


FRONTEND = LinenFrontend()
