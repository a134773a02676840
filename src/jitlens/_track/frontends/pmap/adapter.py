"""The pmap front-end: counting ``jax.pmap`` and ``nnx.pmap`` functions while tracking.

While hooks are in place ``jax.pmap`` returns the pmapped function inside a
:class:`~.calls.TrackedJit` (calls and hits counted, the per-call path is the
one of ``jax.jit``). Its record is named after the user's function, and its
``jax_name`` is the name JAX gives every pmap's trace (``_fun``), so that the
trace-start listener files the trace under the counted call above it and the
user's own arguments are described (names from the user's signature, shapes
as passed, with the mapped axis). ``nnx.pmap`` calls ``jax.pmap`` with a
``PmapFn`` of the user's function: the same wrapper counts it, as an
``nnx.pmap`` row. A pmap created before tracking started is not counted.
Its reasons are reworded in pmap's terms by :mod:`.words`.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from ...._compat import pmap_api
from ...._compat.frames import TraceFrame
from ...._core.kinds import RowKind
from ...records import Record
from ...registry import REGISTRY, options_of
from ...state import finalize, internal_failure, weak
from ..jax_jit import TrackedJit

#: Row kinds of the pmaps counted here.
JAX_PMAP = RowKind.JAX_PMAP
NNX_PMAP = RowKind.NNX_PMAP
KINDS = (JAX_PMAP, NNX_PMAP)

#: record -> the pmap's ``axis_name`` (None when the user gave none).
_AXIS_NAMES: weakref.WeakKeyDictionary[Record, Any] = weakref.WeakKeyDictionary()


def record_for_pmap(fun: Any, options: dict[str, Any]) -> Record:
    """The record of a ``jax.pmap(fun, **options)`` made while tracking (nnx.pmap's too)."""
    nnx_user = pmap_api.nnx_pmap_user_function(fun)
    user_fn = nnx_user if nnx_user is not None else fun
    rec = REGISTRY.new_record(
        NNX_PMAP if nnx_user is not None else JAX_PMAP,
        user_fn,
        user_fn=user_fn,
        jax_name=pmap_api.TRACED_NAME,
    )
    sa = options.get("static_broadcasted_argnums")
    rec.static_argnums = (sa,) if isinstance(sa, int) else tuple(sa or ())
    rec.options = options_of({"donate_argnums": options.get("donate_argnums")})
    rec.own_statics = True  # static_broadcasted_argnums, not the shard_map's
    _AXIS_NAMES[rec] = options.get("axis_name")
    _remember(user_fn, rec)  # its .lower() traces with no counted call: the same row
    return rec


def _remember(user_fn: Any, rec: Record) -> None:
    ref = weak(user_fn)
    if ref is not None:
        with REGISTRY.lock:
            _UNTRACKED[id(user_fn)] = (ref, rec)
        finalize(user_fn, _UNTRACKED.pop, id(user_fn))


def axis_name(rec: Record) -> str | None:
    name = _AXIS_NAMES.get(rec)
    return name if isinstance(name, str) else None


#: id(user function) -> (weak reference to it, its record), for pmaps made before tracking.
_UNTRACKED: dict[int, tuple[Any, Record]] = {}


def untracked(
    fun: Any, info: TraceFrame | None
) -> tuple[Record, tuple[Any, ...], dict[str, Any]] | None:
    """``(record, user args, user kwargs)`` of a trace of a pmap made before tracking, or None.

    Its calls are unknown (nothing counted them); its traces are the user's
    function's, one record per function (a lambda rebuilt per epoch is a new one).
    """
    if info is None or not pmap_api.is_traced_pmap(fun):
        return None
    user_fn = pmap_api.traced_user_function(fun)
    unpacked = pmap_api.traced_user_args(fun, info.args)
    if user_fn is None or unpacked is None:
        return None
    nnx_user = pmap_api.nnx_pmap_user_function(user_fn)
    target = nnx_user if nnx_user is not None else user_fn
    with REGISTRY.lock:
        hit = _UNTRACKED.get(id(target))
        if hit is not None and hit[0]() is target:
            return hit[1], unpacked[0], unpacked[1]
        rec = REGISTRY.new_record(
            NNX_PMAP if nnx_user is not None else JAX_PMAP,
            target,
            user_fn=target,
            counts_calls=False,
            jax_name=pmap_api.TRACED_NAME,
        )
        rec.own_statics = True
        _remember(target, rec)
    return rec, unpacked[0], unpacked[1]


def make_tracked_pmap(original: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.pmap`` returning a counted pmapped function."""

    @functools.wraps(original)
    def pmap(fun: Any = None, *args: Any, **options: Any) -> Any:
        pmapped = original(fun, *args, **options)
        if not REGISTRY.active or not callable(fun):
            return pmapped
        try:
            if args:  # axis_name given positionally
                options = {"axis_name": args[0], **options}
            return TrackedJit(pmapped, record_for_pmap(fun, options))
        except Exception as exc:
            internal_failure("wrapping jax.pmap", exc)
            return pmapped

    pmap.__jitlens_original__ = original  # type: ignore[attr-defined]
    return pmap


def install(set_attr: Callable[[Any, str, Any], None]) -> None:
    """Swap ``jax.pmap`` for the counting one (``set_attr`` records the original)."""
    import jax

    if pmap_api.pmap_loaded():
        set_attr(jax, "pmap", make_tracked_pmap(jax.pmap))
