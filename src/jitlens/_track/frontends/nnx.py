"""The ``nnx.jit`` front-end (all modes) and ``nnx.cached_partial``, installed when the
program imports ``flax.nnx``.

flax exposes its jit wrapper objects: each wrapper class's ``__call__`` is
replaced by a counting one while jitlens tracks (so wrappers made before
tracking count too); the wrapper's records ride on the wrapper (one dict read
per call). ``nnx.cached_partial`` is watched for statics changed after caching.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import _compat
from ..._core.kinds import RowKind
from ..._core.report import Reason
from ..._core.words import Words
from .. import stale
from ..calls import call_detailed, failed_call, register_counting_frame
from ..frontend import Frontend, SetAttr, registered
from ..records import Record
from ..registry import REGISTRY
from ..state import EVENTS, STATE, PassThrough, internal_failure, tls

if TYPE_CHECKING:
    from ..._core.template_kinds import FixKind

KIND = RowKind.NNX_JIT
#: The module whose import means the program uses nnx.
MODULE = "flax.nnx"


class WrapperRecords(list):  # type: ignore[type-arg]
    """The records riding on an nnx jit wrapper: ``[plain call's, cached_partial call's]``.

    Stored in the wrapper's ``__dict__`` (one dict read per call). jitlens'
    state is never copied with the user's object: a deep copy or a pickle of
    the wrapper gets an empty slot (its own row on its first call), a shallow
    copy shares it, as it shares the wrapper's compiled cache.
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> WrapperRecords:
        return WrapperRecords((None, None))

    def __reduce__(self) -> tuple[Any, ...]:
        return (WrapperRecords, ((None, None),))


def make_nnx_call(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ``__call__`` of an nnx jit wrapper class, counted."""

    # flax's graph context (thread-local state): read directly on every call
    context = _compat.graph_context()

    @functools.wraps(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest: show the user's frame, not this one
        if STATE[0]:
            try:
                cached = getattr(context, "tmp_static_cache", None) is not None
                # the wrapper's records ride on the wrapper: one dict read per call
                recs = self.__dict__.get("_jitlens_records")
                rec = recs[cached] if recs is not None else None
                if rec is None:
                    rec = REGISTRY.record_for_wrapper(self, None, cached)
                    if rec.internal and rec.traces == 0:
                        _adopted(rec)
                    if recs is None:
                        recs = self.__dict__["_jitlens_records"] = WrapperRecords((None, None))
                    recs[cached] = rec
            except Exception as exc:
                internal_failure("recording an nnx.jit call", exc)
                return original(self, *args, **kwargs)
            n = next(rec.calls_counter)
            if not n & 63 or not n & (n - 1):  # the journal's copy, kept if the process dies
                rec.cell[0] = n
            detailed = n < STATE[1]  # timeline window, or another trace in progress
            try:
                if n & (n - 1):  # not on the schedule of the in-place check (1, 2, 4, ...)
                    if detailed:
                        return call_detailed(original.__get__(self), rec, n, args, kwargs)
                    return original(self, *args, **kwargs)
                e = EVENTS[0]
                if detailed:
                    out = call_detailed(original.__get__(self), rec, n, args, kwargs)
                else:
                    out = original(self, *args, **kwargs)
                if n and EVENTS[0] == e and not tls.depth:  # a hit: a changed static was served
                    stale.check_statics(rec, n, args, kwargs)
                return out
            except PassThrough as exc:
                # raised here and filtered here: a bare re-raise adds no frame of jitlens'
                try:
                    raise exc.error.with_traceback(None) from None
                except BaseException as error:
                    _compat.without_hidden_frames(error)
                    raise
            except BaseException as exc:
                if not detailed:  # call_detailed counts its own failures
                    failed_call(rec, n)
                _compat.without_hidden_frames(exc)
                raise
        return original(self, *args, **kwargs)

    __call__.__jitlens_original__ = original  # type: ignore[attr-defined]
    return __call__


register_counting_frame(make_nnx_call(lambda self: None).__code__, ("rec", "n", "args", "kwargs"))


def make_cached_partial(original: Callable[..., Any]) -> Callable[..., Any]:
    """``nnx.cached_partial``, watching the cached graph for statics changed after caching."""

    @functools.wraps(original)
    def cached_partial(f: Any, *cached_args: Any, **kw: Any) -> Any:
        out = original(f, *cached_args, **kw)
        if not REGISTRY.active:
            return out
        try:
            from ..stale import watch_cached_partial

            return watch_cached_partial(out, f, cached_args)
        except Exception as exc:
            internal_failure("watching nnx.cached_partial", exc)
            return out

    return cached_partial


def _adopted(rec: Record) -> None:
    """A library's ``nnx.jit`` around the user's model (keras' steps with
    ``KERAS_NNX_ENABLED``): its front-end makes it the user's row, in its terms."""
    fn = rec.user_fn()
    if fn is None:
        return
    for fe in registered():
        if fe is not FRONTEND and fe.adopt(rec, fn):
            return


def install(set_attr: Callable[[Any, str, Any], None]) -> None:
    from ..._compat import flax_api

    flax_api.load()
    for cls, _kind in _compat.NNX_WRAPPERS:
        set_attr(cls, "__call__", make_nnx_call(cls.__call__))
    owners = _compat.cached_partial_owners()
    if owners:
        patched = make_cached_partial(getattr(*owners[0]))
        for owner, attr in owners:
            set_attr(owner, attr, patched)


class NnxFrontend(Frontend):
    """flax NNX's jit wrappers (every mode) and ``nnx.cached_partial``."""

    kinds = (
        RowKind.NNX_JIT,
        RowKind.NNX_JIT_TREE,
        RowKind.NNX_JIT_SIMPLE,
        RowKind.NNX_JIT_PARTIAL,
        RowKind.NNX_CACHED_PARTIAL,
    )
    module = MODULE
    canary_requires = "flax"

    def install(self, set_attr: SetAttr) -> None:
        install(set_attr)

    def data_fix(self, kind: str, r: Reason, unstatic: Words) -> tuple[FixKind, Words] | None:
        """``static_argnums`` as ``jax.jit``'s for the default mode (others keep their words)."""
        from ..._core.template_kinds import FixKind

        if kind != KIND:
            return None
        from ..._core.reasons import STATIC_ARG_FIX  # the words load at the first retrace

        return FixKind.STATIC_ARG, STATIC_ARG_FIX.words(arg=r.argument or r.path, unstatic=unstatic)

    def canary(self, np: Any) -> list[str]:
        """An ``nnx.jit`` function of a Module, called with two shapes."""
        from flax import nnx

        from ..frontend import canary_compare as compare
        from ..frontend import canary_row as row

        counter = [0]

        class JitlensCanary(nnx.Module):  # noqa: JL004 - built once per canary process
            def __init__(self) -> None:
                self.w = nnx.Param(np.ones((1,), np.float32))

        def jitlens_nnx_canary(m: Any, x: Any) -> Any:
            counter[0] += 1
            return m.w * x

        g = nnx.jit(jitlens_nnx_canary)
        m = JitlensCanary()
        for n in (1, 2, 2):
            g(m, np.zeros((n,), np.float32))
        return compare(
            KIND, row(REGISTRY.records, jitlens_nnx_canary.__name__), counter[0], calls=3
        )


FRONTEND = NnxFrontend()
