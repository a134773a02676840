"""The ``eqx.filter_jit`` front-end: the whole of jitlens' Equinox support but its private access.

equinox hands ``jax.jit`` a closure of its own and keys its cache on the
user's callable and the static part of the arguments; the private access that
maps a trace back to the user's function and arguments is in
:mod:`jitlens._compat.equinox_api`. Here: :data:`FRONTEND` (the engine's
:class:`~jitlens._track.frontend.Frontend`: its trace recognised and unpacked,
its words in :mod:`.words`, its canary), the counted per-call entry point
(``equinox._jit._call``) and its records, one per user callable as equinox keys it.
Installed when the program imports equinox, never before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .... import _compat
from ...._compat import equinox_api as api
from ...._core.key import Key
from ...._core.kinds import RowKind
from ...._core.report import Reason
from ...._core.words import Words
from ...calls import call_detailed, failed_call, register_counting_frame
from ...frontend import Frontend, SetAttr
from ...records import Record
from ...registry import REGISTRY
from ...state import EVENTS, STATE, PassThrough, finalize, internal_failure, tls, weak

if TYPE_CHECKING:
    from ...._core.template_kinds import FixKind


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
            if not n & 63 or not n & (n - 1):  # the journal's copy, kept if the process dies
                rec.cell[0] = n
            detailed = n < STATE[1]  # timeline window, or another trace in progress
            try:
                if n & (n - 1) or not n:  # not on the schedule of the in-place check
                    if detailed:
                        return call_detailed(
                            functools.partial(_through, original, wrapper), rec, n, args, kwargs
                        )
                    return original(wrapper, is_lower, args, kwargs)
                e = EVENTS[0]
                if detailed:
                    out = call_detailed(
                        functools.partial(_through, original, wrapper), rec, n, args, kwargs
                    )
                else:
                    out = original(wrapper, is_lower, args, kwargs)
                if EVENTS[0] == e and not tls.depth:  # a hit: was a changed static served?
                    from ... import stale  # (loaded at the first check)

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


class EquinoxFrontend(Frontend):
    """``eqx.filter_jit``: equinox's closure in JAX's traces stands for the user's function."""

    kinds = (RowKind.EQX_FILTER_JIT,)
    module = api.JIT_MODULE
    static_leaves = True  # every non-array leaf is static, Python numbers too
    stale_traced = (
        "A number that changes often is better traced: a JAX array field (`jnp.asarray(...)`) "
        "instead of a Python value."
    )

    def stale_assign(self, shown: str, root: str, new: str) -> str:
        """A module is frozen: a field is replaced with ``eqx.tree_at``."""
        if shown == root:
            return f"{shown} = {new}"
        return f"{root} = eqx.tree_at(lambda {root}: {shown}, {root}, {new})"

    canary_requires = "equinox"

    def install(self, set_attr: SetAttr) -> None:
        entry = api.call_entry()
        if entry is not None:
            owner, attr = entry
            set_attr(owner, attr, make_frontend_call(getattr(owner, attr), self))

    # (each reads ``api`` at call time: a test may move a piece to see jitlens notice)
    def recognises(self, fun: Any) -> bool:
        return api.is_inner(fun)

    def user_function(self, jit_args: tuple[Any, ...]) -> Any:
        return api.user_function(jit_args)

    def user_args(
        self, jit_args: tuple[Any, ...], jit_kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        return api.user_args(jit_args, jit_kwargs)

    def cache_key(self, jit_args: tuple[Any, ...]) -> Any:
        return api.cache_key(jit_args)

    def jit_options(self, jit_args: tuple[Any, ...]) -> tuple[tuple[str, Any], ...]:
        return api.jit_options(jit_args)

    def wrapper_key(self, wrapper: Any) -> Any:
        return api.wrapper_key(wrapper)

    def wrapper_user_function(self, wrapper: Any) -> Any:
        return api.wrapper_user_function(wrapper)

    def users_only(self, fn: Any) -> bool:
        return api.is_equinox_callable(fn)

    def reword(self, rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
        from . import words  # loaded at the first retrace

        return words.frontend_words(reasons, key, rec.defined_at)

    def data_fix(self, kind: str, r: Reason, unstatic: Words) -> tuple[FixKind, Words] | None:
        from ...._core.template_kinds import FixKind
        from . import words

        return FixKind.EQX_SCALAR, words.SCALAR_FIX.words(expr=r.path)

    def canary(self, np: Any) -> list[str]:
        return _canary(np)


def _canary(np: Any) -> list[str]:
    """An ``eqx.filter_jit`` function called with two shapes: its row, counts and reason."""
    import equinox as eqx

    from ...frontend import canary_compare as compare
    from ...frontend import canary_row as row

    counter = [0]

    def jitlens_eqx_canary(x: Any) -> Any:
        counter[0] += 1
        return x + 1

    f = eqx.filter_jit(jitlens_eqx_canary)
    for n in (1, 2, 2):
        f(np.zeros((n,), np.float32))
    rec = row(REGISTRY.records, jitlens_eqx_canary.__name__)
    problems = compare(KIND, rec, counter[0], calls=3)
    if rec is not None and (rec.frontend is None or REGISTRY.frontend_record_of(f) is not rec):
        problems.append(
            f"{KIND} traces are not matched to their functions (rows, calls and "
            f"compile budgets of {KIND} functions unknown)"
        )
    return problems


FRONTEND = EquinoxFrontend()
KIND = FRONTEND.kind
MODULE = FRONTEND.module
