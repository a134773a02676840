"""The ``eqx.filter_jit`` front-end, installed when the program imports equinox.

equinox hands ``jax.jit`` a closure of its own and keys its cache on the
user's callable and the static part of the arguments; the private access that
maps a trace back to the user's function and arguments is in
:mod:`jitlens._compat.equinox_api` (a :class:`~jitlens._compat.Frontend`).
Here: the counted per-call entry point (``equinox._jit._call``) and its records,
one per user callable as equinox keys it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ... import _compat
from ..calls import call_detailed, failed_call, register_counting_frame
from ..records import Record
from ..registry import REGISTRY
from ..state import STATE, PassThrough, finalize, internal_failure, weak

KIND = _compat.EQUINOX.kind
MODULE = _compat.EQUINOX.module


def make_frontend_call(original: Callable[..., Any], frontend: Any) -> Callable[..., Any]:
    """A library front-end's per-call function (``equinox._jit._call``), counted.

    Called as ``(wrapper, is_lower, args, kwargs)``. The record is found by the
    wrapper's id (one dict read per call: an eqx.Module's own ``__dict__`` goes
    through its ``__getattribute__``, ten times slower).
    """

    @functools.wraps(original)
    def call(wrapper: Any, is_lower: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest: show the user's frame, not this one
        if STATE[0] and not is_lower:
            try:
                hit = _FRONTEND_RECORDS.get(id(wrapper))
                if hit is not None and hit[0]() is wrapper:
                    rec = hit[1]
                else:
                    rec = _frontend_record(frontend, wrapper)
            except Exception as exc:
                internal_failure(f"recording an {frontend.kind} call", exc)
                return original(wrapper, is_lower, args, kwargs)
            n = next(rec.calls_counter)
            detailed = n < STATE[1]  # timeline window, or another trace in progress
            try:
                if detailed:
                    return call_detailed(
                        functools.partial(_through, original, wrapper), rec, n, args, kwargs
                    )
                return original(wrapper, is_lower, args, kwargs)
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
        return original(wrapper, is_lower, args, kwargs)

    call.__jitlens_original__ = original  # type: ignore[attr-defined]
    return call


#: id(library wrapper) -> (weak reference to it, its record).
_FRONTEND_RECORDS: dict[int, tuple[Any, Record]] = {}


def _frontend_record(frontend: Any, wrapper: Any) -> Record:
    rec = REGISTRY.record_for_frontend(
        frontend,
        frontend.wrapper_key(wrapper),
        frontend.wrapper_user_function(wrapper),
        counts_calls=True,
    )
    ref = weak(wrapper)
    if ref is not None:
        _FRONTEND_RECORDS[id(wrapper)] = (ref, rec)
        finalize(wrapper, _FRONTEND_RECORDS.pop, id(wrapper))
    return rec


def _through(original: Callable[..., Any], wrapper: Any, *args: Any, **kwargs: Any) -> Any:
    __tracebackhide__ = True
    return original(wrapper, False, args, kwargs)


register_counting_frame(
    make_frontend_call(lambda *a: None, None).__code__, ("rec", "n", "args", "kwargs")
)


def install(set_attr: Callable[[Any, str, Any], None]) -> None:
    for fe in _compat.FRONTENDS:
        if not fe.loaded():
            continue
        entry = fe.call_entry()
        if entry is not None:
            owner, attr = entry
            set_attr(owner, attr, make_frontend_call(getattr(owner, attr), fe))
