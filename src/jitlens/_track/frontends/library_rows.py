"""A row for a jit a library makes around the user's code (keras' steps, numpyro's loops).

Shared by the library adapters (``keras``, ``numpyro``): the row is the user's
(not internal), named in the library's terms per owning object (another model's
step is not this one rebuilt), with the jit's own static argnums and options.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from ... import _compat
from ..records import Record
from ..registry import REGISTRY, options_of


def library_record(
    kind: str,
    fun: Any,
    step: _compat.LibraryJit,
    options: dict[str, Any],
    steps: MutableMapping[Record, _compat.LibraryJit],
    counts_calls: bool = True,
) -> Record:
    """A new user row of ``kind`` for ``fun``, the library jit ``step``, kept in ``steps``."""
    rec = REGISTRY.new_record(
        kind,
        fun,
        user_fn=fun,
        inner_fun=fun,
        jax_name=getattr(fun, "__name__", ""),
        counts_calls=counts_calls,
    )
    rec.internal = False
    REGISTRY.rename(rec, step.name, step.owner() if step.owner is not None else None)
    sa = options.get("static_argnums")
    rec.static_argnums = (sa,) if isinstance(sa, int) else tuple(sa or ())
    rec.options = options_of(options)
    steps[rec] = step
    return rec
