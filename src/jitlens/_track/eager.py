"""Control-flow primitives run outside jit: ``lax.map`` / ``scan`` / ``fori_loop`` / ``while_loop`` / ``cond``.

Outside jit each such call traces its body and compiles the primitive; JAX
caches both per function object, so a body made per call (a closure), or
re-wrapped by the primitive (``lax.map`` wraps its function in a new lambda on
every call), is traced and compiled again on every call (markean/aimz#275). JAX
sends no event for those traces: ``patches`` counts them and
``listeners.nested_trace`` asks :func:`eager_record` for the row, named after
the body (``lax.map(one)``, kind ``lax``), or, when a library runs the primitive
around the user's code (numpyro's ``Predictive``), after the library call the
user made. The primitive's compile right after is charged to the trace
(``nested.claim_compile``); a retrace names the function made per call and the
fix that works: ``@jax.jit`` on the caller, or the library call jitted once.
"""

from __future__ import annotations

import time
import weakref
from types import FrameType
from typing import TYPE_CHECKING, Any

from .. import _compat
from .._compat import transforms_api
from .._core.kinds import EventKind, Fact, RowKind, SubjectKind
from . import calls
from .frontend import frontend_of
from .records import MAX_EVENTS, EventBuilder, Record
from .registry import REGISTRY
from .state import tls

if TYPE_CHECKING:
    pass

#: What the trace of an eager row's body was (its signature in the reports): no jit's.
EAGER_SIGNATURE = "(run eagerly, outside any jit: {primitive} traced its body for this call)"
#: Control-flow transformations run outside jit -> the primitive JAX compiles for each call.
EAGER_PRIMITIVES = {
    "lax.scan": "scan",
    "lax.map": "scan",
    "lax.fori_loop": "while",
    "lax.while_loop": "while",
    "lax.cond": "cond",
    "lax.switch": "cond",
}
#: The jits a primitive may compile as (``fori_loop`` with concrete bounds runs a ``scan``).
PRIMITIVE_JITS = {"while": ("while", "scan")}

#: A body traced again by a control-flow primitive run outside jit (markean/aimz#275): its
#: words are ``_core/reasons/library.py``'s.

#: (the body's code, the primitive) -> its record; the last body object it traced (weakly).
_EAGER: dict[tuple[Any, str], tuple[Record, Any]] = {}
#: A library's eager row's id -> the library call the user made, and the user's function.
_LIBRARY_LAST: dict[int, tuple[_compat.LibraryEntry, str]] = {}
#: An eager row's id -> its body's name, its last trace's caller (name, first line, line)
#: and whether that trace's body was a new function.
_LAST: dict[int, tuple[str, tuple[str, int, int], bool]] = {}
#: (the caller's code, its call instruction, the primitive as spelled) -> the row whose body
#: that call traced last (two calls on one line are two sites): a compile there with no trace of the body (JAX cached the body's trace; a new
#: scan length, a new trip count) is that row's (:func:`compile_at_site`).
_SITES: dict[tuple[Any, int, str], tuple[Record, int | None]] = {}


def eager_record(fun: Any, frame: FrameType | None) -> Record | None:
    """The row of a user function traced by ``lax.map`` / ``scan`` / ``cond`` / ``while`` outside jit.

    Outside jit each such call traces its body and compiles the primitive (JAX
    caches per function object): a body made per call (a closure) or re-wrapped by
    the primitive (``lax.map`` does) is traced and compiled on every call. Its row
    is named ``lax.map(one)``, one per body code and primitive; calls are not
    counted (a cached call runs no Python of jitlens').
    """
    if tls.depth != 0:
        return None  # inside a jit: the primitive is traced with the jit, once per jit trace
    if isinstance(fun, calls.COUNTING_TYPES) or _compat.is_pjit_function(fun):
        return None  # a jit scanned: its own trace inside is counted on its own row
    owner = type(fun).__module__.split(".")[0]
    if frontend_of(fun) is not None or owner in _compat.framework_packages():
        return None  # a framework's callable object (a library's jit): likewise
    outer = transforms_api.outer_transformation(frame)
    if outer not in EAGER_PRIMITIVES:
        return None
    caller = transforms_api.eager_caller(frame)
    if caller is None:
        return None
    if not _compat.is_user_file(caller.f_code.co_filename):
        return _library_eager_record(fun, caller, outer)
    body = transforms_api.user_body(fun)
    code = getattr(body, "__code__", None)
    if code is None:
        return None
    key = (code, outer)
    with REGISTRY.lock:
        hit = _EAGER.get(key)
        if hit is None:
            rec = _new_row(body, outer)
            rec.name = rec.qualname = f"{outer}({rec.name})"
            hit = _EAGER[key] = (rec, None)
        rec = hit[0]
        new_body = hit[1] is not None and hit[1]() is not body
        where = (caller.f_code.co_name, caller.f_code.co_firstlineno, caller.f_lineno)
        _LAST[rec.id] = (
            getattr(body, "__name__", "?"),
            where,
            new_body,
            transforms_api.untraceable_params(caller),
        )
        _EAGER[key] = (rec, _weak(body))
        if len(_SITES) > 10_000:
            _SITES.clear()
        # (with the scan's length: a compile there later with no trace names the new length)
        _SITES[(caller.f_code, caller.f_lasti, outer)] = (rec, transforms_api.scan_length(frame))
    return rec


def compile_at_site(name: str, secs: float, frame: FrameType | None) -> bool:
    """JAX compiled a control-flow primitive run outside jit without tracing its body again:
    charged to the body's row (True), or not one (False).

    JAX caches the body's trace by function and argument types, and the primitive's
    compile by the primitive's parameters too: ``lax.scan`` over a new length, or
    ``lax.fori_loop`` over a new trip count, compiles again with no trace of the body
    (JAX's compile log shows one ``scan`` compile per length). The compile, of JAX's own
    internal jit of the primitive (``name``), is charged to the row of the body the same
    call traced last: its compiles then equal JAX's. A call site whose body never traced
    while tracking has no row; its compiles stay on JAX's internal row, not on a user's.
    """
    if tls.depth != 0:
        return False
    outer = transforms_api.outer_transformation(frame)
    primitive = EAGER_PRIMITIVES.get(outer or "")
    if primitive is None or name not in PRIMITIVE_JITS.get(primitive, (primitive,)):
        return False
    caller = transforms_api.primitive_caller(frame)
    if caller is None:
        return False
    site = (caller.f_code, caller.f_lasti, outer or "")
    known = _SITES.get(site)
    if known is None:
        return False
    rec, before = known
    after = transforms_api.scan_length(frame)
    _SITES[site] = (rec, after)
    now = time.perf_counter()
    b = EventBuilder(rec, EventKind.COMPILE, None, _compat.user_call_site(caller), now - secs)
    b.compile_seconds = secs
    b.compiled = True
    b.jax_name = name
    b.entry = -1
    if before is not None and after not in (None, before):
        b.reasons = (_length_reason(outer or "", before, after, caller),)
    with rec.lock:
        rec.compiles += 1
        if len(rec.events) < MAX_EVENTS:
            rec.events.append(b)
    return True


#: A fori_loop with concrete bounds runs a scan of ``upper - lower`` steps: a new trip count
#: is a new scan length, compiled again outside jit (the body's trace is reused).
TRIP_COUNT_MSG = (
    "lax.fori_loop ran {before} -> {after} steps: with bounds known outside jit it runs a "
    "lax.scan of that length, and JAX compiles the scan once per length."
)
TRIP_COUNT_FIX = (
    "Jit the caller with the bounds traced: `@jax.jit` on {target}, the bounds passed as its "
    "arguments (not static); under jit lax.fori_loop over traced bounds is one while_loop, "
    "compiled once for every count."
)


def _length_reason(outer: str, before: int, after: int, caller: FrameType) -> Any:
    """Why a scan compiled again with no trace of its body: its length changed."""
    from .._core import reasons as W  # the words load at the first recompile
    from .._core.template_kinds import FixKind

    if outer != "lax.fori_loop":  # the leading axis of `xs` sets the scan's length
        return W.shape("xs", "xs", f"({before}, ...)", f"({after}, ...)")
    code = caller.f_code
    file = _compat.short_path(code.co_filename)
    if code.co_name.startswith("<"):  # the module, a comprehension, a lambda: no def to jit
        target = (
            f"a function of your own that makes the lax.fori_loop call at {file}:{caller.f_lineno}"
        )
    else:
        target = f"`{code.co_name}` ({file}:{code.co_firstlineno}), which calls lax.fori_loop"
    r = W.shape("upper", "upper - lower", str(before), str(after))
    return W.with_fix(
        r,
        FixKind.EAGER_PRIMITIVE,
        W.Words.given(TRIP_COUNT_FIX.format(target=target), capped=True),
        message=W.Words.given(TRIP_COUNT_MSG.format(before=before, after=after), capped=True),
    )


def _library_eager_record(fun: Any, caller: FrameType, outer: str) -> Record | None:
    """A primitive one of the libraries runs outside jit around the user's code (numpyro's
    ``Predictive`` maps the user's model with ``lax.map``): a row named after the library
    call the user made, one per entry point."""
    entry = _compat.library_entry(caller)
    if entry is None or not entry.spelled or not entry.entry.endswith(".__call__"):
        # only a call of a library object the user holds can be jitted whole (`pred`);
        # a method's own eager helpers (MCMC.run's postprocessing) are the library's business
        return None
    body = transforms_api.user_body(fun, depth=4)
    if body is None:
        return None  # a library's own loop over its own code: its business
    key = (entry.code, outer)
    with REGISTRY.lock:
        hit = _EAGER.get(key)
        if hit is None:
            rec = _new_row(body, outer)
            REGISTRY.rename(rec, f"{entry.library}: {entry.entry}")
            hit = _EAGER[key] = (rec, None)
        rec = hit[0]
        _LIBRARY_LAST[rec.id] = (entry, getattr(body, "__name__", "?"))
    return rec


def _new_row(body: Any, outer: str) -> Record:
    """A shown ``lax`` row for ``body`` traced by ``outer`` (calls are not counted: a cached
    call runs no Python of jitlens'); the caller holds the registry's lock."""
    rec = REGISTRY.new_record(
        RowKind.LAX, body, user_fn=body, counts_calls=False, jax_name=EAGER_PRIMITIVES[outer]
    )
    rec.internal = False
    return rec


def _weak(fn: Any) -> Any:
    try:
        return weakref.ref(fn)
    except TypeError:
        return None


def describe(rec: Record, b: EventBuilder, frame: FrameType | None) -> None:
    """The trace ``b`` of an eager row: the primitive's compile next is its; a retrace's reason."""
    from .._core.template_kinds import FixKind

    outer = transforms_api.outer_transformation(frame)
    primitive = EAGER_PRIMITIVES.get(outer or "")
    if primitive is None:
        return
    b.signature = EAGER_SIGNATURE.format(primitive=outer)  # not inside another function's trace
    tls.nested_pending = (b, primitive, None)
    if rec.traces <= 1:
        return
    if rec.id in _LIBRARY_LAST:
        _library_retrace(rec, b, outer or "", *_LIBRARY_LAST[rec.id])
        return
    last = _LAST.get(rec.id)
    if last is None:
        return
    name, (caller, first_line, line), new_body, statics = last
    from .._core import reasons as W  # the words load at the first retrace
    from .._core.reasons import library as L

    file = rec.defined_at.rpartition(":")[0]
    module = caller == "<module>"
    if new_body:
        made = f"line {line} runs" if module else f"`{caller}` is called (a closure made in it)"
        count = rec.traces - 1
        msg = L.EAGER_CLOSURE_MSG.words(
            name=name, made=made, outer=outer, count=count, defined_at=rec.defined_at
        )
        subject = SubjectKind.CLOSURE
    elif outer == "lax.map":
        msg = L.EAGER_REWRAPPED_MSG.words(name=name, outer=outer)
        subject = SubjectKind.FUNCTION
    else:
        return  # the same function traced again: its arguments changed (not described here)
    if module:
        target = f"a function of your own that makes the {outer} call at {file}:{line}"
    else:
        target = f"`{caller}` ({file}:{first_line}), which calls {outer}"
    fix_kind = FixKind.EAGER_PRIMITIVE
    if statics and not module:  # jit alone would raise on them: say which are static
        quoted = ", ".join(f'"{n}"' for n in statics) + ("," if len(statics) == 1 else "")
        listed = ", ".join(f"`{n}`" for n in statics)
        fix_kind = FixKind.EAGER_PRIMITIVE_STATIC
        fix = L.EAGER_PRIMITIVE_STATIC_FIX.words(
            target=target, outer=outer, names=f"({quoted})", listed=listed
        )
    else:
        fix = L.EAGER_PRIMITIVE_FIX.words(target=target, outer=outer)
    r = W.new_function(name, str(RowKind.LAX), rec.defined_at, rec.traces - 1, False, False)
    before = f"{rec.traces - 1} earlier {'closure' if new_body else 'wrapper'}(s)"
    after = "new closure" if new_body else f"new {outer} wrapper"
    r = W.with_fix(
        r,
        fix_kind,
        fix,
        message=msg,
        path=rec.name,
        subject=subject,
        before=before,
        after=after,
    )
    b.kind = EventKind.RETRACE
    b.reasons = (r,)


def _library_retrace(
    rec: Record, b: EventBuilder, outer: str, entry: _compat.LibraryEntry, name: str
) -> None:
    """A library's eager primitive traced the user's function again: the call is the culprit."""
    from .._core import reasons as W
    from .._core.reasons import library as L
    from .._core.template_kinds import FixKind

    short = entry.entry.removesuffix(".__call__")
    msg = L.LIBRARY_EAGER_MSG.words(library=entry.library, entry=short, outer=outer, name=name)
    fk, fix = FixKind.LIBRARY_EAGER, L.LIBRARY_EAGER_FIX.words(v=entry.spelled, outer=outer)
    r = W.new_function(name, str(RowKind.LAX), rec.defined_at, rec.traces - 1, False, False)
    before, after = f"{rec.traces - 1} earlier call(s)", f"a new {outer} body"
    r = W.with_fix(
        r,
        fk,
        fix,
        message=msg,
        path=rec.name,
        subject=SubjectKind.CLOSURE,
        before=before,
        after=after,
    )
    b.kind = EventKind.RETRACE
    b.reasons = (r.with_facts(Fact.LIBRARY_MADE),)
