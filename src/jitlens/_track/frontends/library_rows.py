"""Rows for jits of a library's functions around the user's code, and their words.

Shared by the library adapters (``keras``, ``numpyro``): the row is the user's
(not internal), named in the library's terms per owning object (another model's
step is not this one rebuilt), with the jit's own static argnums and options.

A function a library's factory builds around the user's values and the user jits
(``jax.jit(blackjax.hmc(logdensity, step_size=s, ...).step)`` per step size) is a
new function per build: its retrace is worded with what the user has (``hmc.step``,
``step_size``) and the library's own lower-level builder (``build_kernel``), never
the closure's inner names (the words: ``_core/reasons/library.py``).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from ... import _compat
from ..._core.kinds import Fact, ReasonKind
from ..._core.report import Reason
from ..records import Record
from ..registry import REGISTRY, options_of

if TYPE_CHECKING:
    pass

#: The values when none of them is a variable of the user's (made inline in the call).
NO_NAME = "the values you build it with"


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
    rec.library_made = True
    owner = step.owner() if step.owner is not None else None
    rec.user_code_only = _compat.holds_user_code(owner)
    REGISTRY.rename(rec, step.name, owner)
    sa = options.get("static_argnums")
    rec.static_argnums = (sa,) if isinstance(sa, int) else tuple(sa or ())
    rec.options = options_of(options)
    steps[rec] = step
    return rec


def library_closure_reasons(rec: Record, reasons: list[Reason]) -> list[Reason]:
    """A library-built function jitted per build (``rec`` named ``blackjax: hmc.step_fn``):
    its new-function reasons in the terms of the user and the library."""
    if not any(r.kind is ReasonKind.NEW_FUNCTION and not r.expected for r in reasons):
        return reasons
    fn = rec.user_fn()
    if fn is None:
        return reasons
    found = _compat.library_closure(fn, _compat.user_frame(_compat.caller(1)))
    if found is None:
        call = _compat.library_call_above(_compat.caller(1))
        if call is None or not call.callee:
            return _bound_method_reasons(rec, fn, reasons)
        return [_library_call(r, rec, call) for r in reasons]
    return [_reworded(r, rec, found) if r.kind is ReasonKind.NEW_FUNCTION else r for r in reasons]


def _bound_method_reasons(rec: Record, fn: Any, reasons: list[Reason]) -> list[Reason]:
    """``jax.jit(svi.update)`` made anew per call: its fix in the user's spelling, not the
    row's name (once ``numpyro_SVI_update_jit = jax.jit(numpyro: SVI.update)``)."""
    from ..._core.template_kinds import FixKind

    owner, method = getattr(fn, "__self__", None), getattr(fn, "__name__", None)
    if owner is None or isinstance(owner, type) or not isinstance(method, str):
        return reasons
    name = _compat.name_in_frame(owner, _compat.user_frame(_compat.caller(1)))
    spelled = f"{name}.{method}" if name else f"<your {type(owner).__name__}>.{method}"
    from ..._core import reasons as W  # the words load at the first retrace

    out = []
    for r in reasons:
        if r.kind is ReasonKind.NEW_FUNCTION and r.fix_kind is FixKind.NEW_FUNCTION:
            message = W.NEW_FUNCTION_MSG.words(
                name=f"`jax.jit({spelled})`",
                kind="jax.jit",
                count=REGISTRY.earlier_wrappers(rec),
                defined_at=rec.defined_at,
                equal=" this very key" if len(reasons) == 1 else "",  # no key difference
            )
            fix = W.NEW_FUNCTION_FIX.words(name=method, kind="jax.jit", expr=spelled)
            r = W.with_fix(r, FixKind.NEW_FUNCTION, fix, message=message, path=spelled)
        out.append(r)
    return out


def _reworded(r: Reason, rec: Record, c: _compat.LibraryClosure) -> Reason:
    from ..._core.template_kinds import FixKind

    if r.expected:
        return r
    from ..._core import reasons as W  # the words load at the first retrace
    from ..._core.reasons import library as L

    params = ", ".join(f"`{p}`" for p in c.params) or NO_NAME
    count = REGISTRY.earlier_wrappers(rec)
    msg = L.LIBRARY_CLOSURE_MSG.words(
        spelled=c.spelled,
        library=c.library,
        here=f" (here {params})" if c.params else "",
        count=count,
        defined_at=rec.defined_at,
    )
    if c.part is not None:
        kind = FixKind.LIBRARY_KERNEL
        fix = L.LIBRARY_KERNEL_FIX.words(
            part=c.part[0],
            factory=c.part[1],
            params=params,
            spelled=c.spelled,
            defined_at=rec.defined_at,
        )
    else:
        kind = FixKind.LIBRARY_BUILD
        fix = L.LIBRARY_BUILD_FIX.words(params=params, spelled=c.spelled)
    before, after = f"{count} earlier build(s)", "new build"
    out = W.with_fix(r, kind, fix, message=msg, path=c.spelled, before=before, after=after)
    return out.with_facts(Fact.LIBRARY_MADE)


def library_static_reasons(reasons: list[Reason], fn_name: str) -> list[Reason]:
    """A library-built function passed as a static argument, built anew per call
    (blackjax's ``inference_loop(key, nuts.step, ...)`` per step size): in the terms of the
    user and the library."""
    from ..._core.template_kinds import FixKind

    out = []
    for r in reasons:
        value = _static_value(r) if r.kind is ReasonKind.IDENTITY_STATIC else None
        found = (
            _compat.library_closure(value, _compat.user_frame(_compat.caller(1)))
            if value is not None
            else None
        )
        if found is None:
            out.append(r)
            continue
        from ..._core import reasons as W  # the words load at the first retrace
        from ..._core.reasons import library as L

        params = ", ".join(f"`{p}`" for p in found.params) or NO_NAME
        arg = r.argument or r.path
        msg = L.LIBRARY_STATIC_MSG.words(
            arg=arg,
            spelled=found.spelled,
            library=found.library,
            here=f" (here {params})" if found.params else "",
        )
        fix = L.LIBRARY_STATIC_FIX.words(
            params=params, fn=fn_name, spelled=found.spelled, library=found.library
        )
        r = W.with_fix(r, FixKind.LIBRARY_STATIC, fix, message=msg)
        out.append(r.with_facts(Fact.LIBRARY_MADE))
    return out


def _static_value(r: Reason) -> Any:
    """The object a changed identity-compared static holds now (alive during the call)."""
    if len(r.entries) < 2 or r.entries[1] is None:
        return None
    static = getattr(r.entries[1], "static", None)
    return static.value() if static is not None else None


def _library_call(r: Reason, rec: Record, call: _compat.LibraryEntry) -> Reason:
    """A jit the library made inside the call the user made, new on every call."""
    from ..._core.template_kinds import FixKind

    if r.kind is not ReasonKind.NEW_FUNCTION or r.expected:
        return r
    from ..._core import reasons as W  # the words load at the first retrace
    from ..._core.reasons import library as L

    entry = call.entry.removesuffix(".__call__").replace(".<locals>", "")
    msg = L.LIBRARY_CALL_MSG.words(
        library=call.library,
        entry=entry,
        count=REGISTRY.earlier_wrappers(rec),
    )
    static = f", static_argnames={call.statics!r}" if call.statics else ""
    fix = L.LIBRARY_CALL_FIX.words(
        short=call.callee.rpartition(".")[2],
        callee=call.callee,
        static=static,
        library=call.library,
    )
    out = W.with_fix(r, FixKind.LIBRARY_CALL, fix, message=msg, path=call.callee)
    return out.with_facts(Fact.LIBRARY_MADE)
