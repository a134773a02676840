"""Fixes in the code the user owns: a fix whose target is a library's code goes to the user's
line that builds it, in the library's terms.

Every fix template names what it edits: the jitted function's definition (``def f(...)`` at
module level, ``self.f_jit = ...`` in ``__init__``), the class holding a changed attribute
(``self.cond_fn = cond_fn`` in ``__init__``), the class of a static value (a frozen
dataclass). Where that function or class lives in a library's file (``_compat.frames``
decides: an installed package is never the user's), the fix cannot be applied: Haiku's
``apply_fn`` is not the user's to redefine, nor ``diffrax.Event.__init__``. What the user
owns is the line that builds the library's object anew on every call (``f =
hk.transform(forward)``, ``event = diffrax.Event(cond_fn)``): found on the stack (the
user's frame that holds the object, then its source: ``_core/assigned``), it moves to
module level, and the jit with it. The words are ``_core/reasons/library.py``'s.
"""

from __future__ import annotations

import inspect
import sys
from types import FrameType
from typing import Any

from .. import _compat
from .._compat import builders
from .._core.kinds import Fact
from .._core.report import Reason
from .registry import REGISTRY


def _kinds() -> tuple[frozenset[Any], frozenset[Any], frozenset[Any]]:
    from .._core import template_kinds as T

    return T.EDITS_DEFINITION, T.EDITS_OWNER, T.EDITS_VALUE


def in_users_code(
    rec: Any, reasons: list[Reason], key: Any, names_fn: Any, args: tuple, kwargs: dict
) -> list[Reason]:
    """``reasons`` with every fix that would edit a library's code moved to the user's line
    that builds the library's object (unchanged where the target is the user's)."""
    definition, owner, value = _kinds()
    frame = _compat.user_frame(_compat.caller(2))
    out = []
    for r in reasons:
        new = None
        if not r.expected and r.fix_kind in definition:
            new = _owned_jit(rec, r, frame)
        elif not r.expected and r.fix_kind in (owner | value):
            new = _owned_object(r, key, names_fn, args, kwargs, frame, r.fix_kind in value)
        out.append(new if new is not None else r)
    return out


def _is_users(obj: Any) -> bool:
    """Is ``obj`` (a function or a class) defined in a user file? Unknown counts as the user's:
    a fix is moved only where the library's file is known."""
    func = getattr(obj, "__func__", obj)
    code = getattr(func, "__code__", None)
    filename = getattr(code, "co_filename", None)
    if filename is None and isinstance(obj, type):
        module = sys.modules.get(obj.__module__ or "")
        filename = getattr(module, "__file__", None)
    return not isinstance(filename, str) or _compat.is_user_file(filename)


def _library(obj: Any) -> str:
    """The top-level package that defines ``obj`` (``haiku``, ``diffrax``)."""
    func = getattr(obj, "__func__", obj)
    module = getattr(func, "__module__", None) or getattr(type(obj), "__module__", "") or ""
    return module.split(".", 1)[0] or "the library"


def _libraries(obj: Any) -> str:
    """:func:`_library`, possessive (``haiku's``, ``keras'``)."""
    top = _library(obj)
    return top + ("'" if top.endswith("s") else "'s")


def _owned_jit(rec: Any, r: Reason, frame: FrameType | None) -> Reason | None:
    """A jitted function whose code is a library's, jitted anew on every call."""
    from .._core.template_kinds import FixKind

    fn = rec.user_fn()
    inner = _compat.unwrap(fn) if fn is not None else None  # through grad, partial, vmap...
    target = getattr(inner, "__self__", None) if r.fix_kind is FixKind.METHOD else inner
    target = type(target) if target is not None and not callable(target) else target
    if fn is None or target is None or _is_users(target):
        return None
    from .._compat.frames import users_spelling
    from .._core import reasons as W
    from .._core.code import identifier
    from .._core.reasons import library as L

    spelled = (users_spelling(fn, frame) if frame is not None else None) or rec.name
    root = spelled.split(".", 1)[0]
    kind = str(rec.kind)
    jit = f"{identifier(spelled.rsplit('.', 1)[-1])}_jit"
    made = f"{jit} = {kind}({spelled})"
    found = builders.built_at(frame, lambda v: v is fn or _holds(v, fn), root)
    if found is None and r.fix_kind is FixKind.NEW_FUNCTION:
        return None  # only the jit is made per call: "create it once" edits the user's line
    if found is not None:
        built = L.BUILT_AT.words(site=found[0], of=found[1], statement=found[2])
        hoist = f"`{found[2]}` and `{made}`"
    else:
        built, hoist = L.JITTED_ANEW.words(), f"`{made}`"
    fix = L.LIBRARY_OWNED_JIT_FIX.words(
        spelled=spelled,
        library=_libraries(fn),
        defined_at=rec.defined_at,
        built=built,
        hoist=hoist,
        jit=jit,
    )
    return W.with_fix(r, FixKind.LIBRARY_OWNED_JIT, fix).with_facts(Fact.LIBRARY_MADE)


def _owned_object(
    r: Reason,
    key: Any,
    names_fn: Any,
    args: tuple,
    kwargs: dict,
    frame: FrameType | None,
    of_value: bool,
) -> Reason | None:
    """A changed attribute of a library's object, or a static of a library's class."""
    where = tuple(r.where)
    if not where:
        return None
    holder = where if of_value else where[:-1]
    new = r.entries[1] if len(r.entries) > 1 else None
    value = _static_value(new)
    cls = type(value) if of_value and value is not None else _node_class(key, holder)
    if cls is None or _is_users(cls):
        return None
    obj = _walk(names_fn, args, kwargs, holder)
    # the object itself, or (a front-end handing JAX a rebuilt copy: eqx.filter_jit) its class
    match = (
        (lambda v: v is obj or type(v) is cls) if obj is not None else (lambda v: type(v) is cls)
    )
    root = r.path if of_value else _root_name(r.path, where)
    found = builders.built_at(frame, match, root.split(".", 1)[0] if root.isidentifier() else "")
    from .._core import reasons as W
    from .._core.reasons import library as L
    from .._core.template_kinds import FixKind

    inline = builders.inline_call(frame, cls) if found is None else None
    if found is not None:
        built = L.BUILT_AT.words(site=found[0], of=found[1], statement=found[2])
        hoist = f"move `{found[2]}` there"
    elif inline is not None:  # built in the call itself: `step(key, NUTS(model), y)`
        built = L.BUILT_AT.words(site=inline[0], of=inline[1], statement=inline[2])
        name = root if root.isidentifier() else "obj"
        hoist = f"`{name} = {inline[2]}` there, passed where you wrote `{inline[2]}`"
    else:
        built, hoist = L.BUILT_SOMEWHERE.words(), f"move what builds `{root}` there"
    fix = L.LIBRARY_OWNED_OBJECT_FIX.words(
        root=root,
        cls=builders.spelled_class(cls, frame),
        library=_libraries(cls),
        built=built,
        hoist=hoist,
        closure=_per_configuration(r) if of_value else _closure_note(value, _library(cls)),
    )
    return W.with_fix(r, FixKind.LIBRARY_OWNED_OBJECT, fix).with_facts(Fact.LIBRARY_MADE)


def _per_configuration(r: Reason) -> str:
    """Objects that hold other values: one per configuration, each built once."""
    from .._core.template_kinds import FixKind

    if r.fix_kind is FixKind.NO_EQ:
        return ""
    return "; where they must differ, build one per configuration, once, and keep them by their settings"


def _root_name(path: str, where: tuple) -> str:
    """The path of the object holding the changed attribute (``event`` of ``event.cond_fn``)."""
    if where[-1][0] == "attr" and path.endswith(f".{where[-1][1]}"):
        return path[: -len(f".{where[-1][1]}")]
    return path.rsplit(".", 1)[0] if "." in path else path


def _static_value(entry: Any) -> Any:
    static = getattr(entry, "static", None)
    return static.value() if static is not None else None


def _node_class(key: Any, path: tuple) -> Any:
    entry = getattr(key, "entries", {}).get(path)
    ref = getattr(entry, "type_ref", None)
    return ref() if ref is not None else None


def _walk(names_fn: Any, args: tuple, kwargs: dict, path: tuple) -> Any:
    """The object at ``path`` of the call's arguments (None where it cannot be read)."""
    if not path or path[0][0] != "arg":
        return None
    try:
        bound = inspect.signature(names_fn).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return None
    if path[0][1] not in bound:
        return None
    value = bound[path[0][1]]
    for kind, name in path[1:]:
        try:
            value = getattr(value, name) if kind == "attr" else value[name]
        except Exception:
            return None
    return value


def _holds(value: Any, fn: Any) -> bool:
    """Does ``value`` hold ``fn`` in a field (a named tuple's, an attribute)?"""
    fields = getattr(type(value), "_fields", None)
    if isinstance(fields, tuple):
        return any(getattr(value, f, None) is fn for f in fields if isinstance(f, str))
    try:
        return any(v is fn for v in list(vars(value).values())[:64])
    except TypeError:
        return False


def _closure_note(value: Any, library: str) -> str:
    """A nested function of the user's held by the object moves to module level with it;
    what it reads from its function must then reach it as data."""
    code = getattr(value, "__code__", None)
    if code is None or "<locals>" not in getattr(value, "__qualname__", ""):
        return ""
    if not _compat.is_user_file(code.co_filename):
        return ""
    name = value.__name__ if value.__name__ != "<lambda>" else "the lambda"
    free = [v for v in code.co_freevars if not v.startswith("_")]
    note = f", with `{name}` defined at module level too" if name != "the lambda" else ""
    note = note or ", with the lambda a function defined at module level"
    if free:
        listed = ", ".join(f"`{v}`" for v in free[:4])
        them = "them" if len(free) > 1 else "it"
        note += f" (it reads {listed}: pass {them} in the data {library} hands it instead)"
    return note


def rebuilt_kernel(rec: Any, r: Reason, user_fn: Any, outer: str = "") -> Reason:
    """``r`` (a new wrapper of the user's function) when that function calls a kernel a library
    rebuilt around new values: what changed is those values, and the library's own builder
    (``blackjax.mcmc.nuts.build_kernel()``) takes them as arguments. ``outer``: the
    transformation the trace ran inside (``lax.scan``), run by the user's function the jit
    moves to."""
    from .._core.kinds import ReasonKind

    if r.kind is not ReasonKind.NEW_FUNCTION or r.expected:
        return r
    func = getattr(user_fn, "__func__", user_fn)
    code, cells = getattr(func, "__code__", None), getattr(func, "__closure__", None)
    if code is None or not cells:
        return r
    frame = _compat.user_frame(_compat.caller(1))
    names = builders.names_up(frame)
    for var, cell in zip(code.co_freevars, cells, strict=False):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if not callable(value):
            continue
        # spelled as the code that built it has it (`nuts.step`), not as this function's name
        found = _compat.library_closure(value, None, {k: v for k, v in names.items() if k != var})
        if found is None or found.part is None or not found.params:
            continue
        return _rebuilt(rec, r, func.__name__, var, value, found, names, frame, outer)
    return r


def _rebuilt(
    rec: Any,
    r: Reason,
    name: str,
    var: str,
    value: Any,
    found: Any,
    names: dict[str, Any],
    frame: FrameType | None,
    outer: str,
) -> Reason:
    from .._core import reasons as W
    from .._core.reasons import library as L
    from .._core.template_kinds import FixKind

    params = ", ".join(f"`{p}`" for p in found.params)
    part, factory = found.part
    call = _kernel_call(value, part, names, found.params)
    runner = frame.f_code.co_name if frame is not None and outer else ""
    if runner and runner != "<module>":
        statics = builders.int_params(frame)
        option = f", static_argnames={statics!r}" if statics else ""
        deco = f"@functools.partial(jax.jit{option})" if option else "@jax.jit"
        jit_once = f"jit `{runner}` once (`{deco}` on it), taking {params} in place of `{var}`"
    else:
        jit_once = f"define `{name}` once at module level taking {params} too, and jit it once"
    message = L.LIBRARY_REBUILT_MSG.words(
        name=name,
        var=var,
        spelled=found.spelled if found.spelled != var else var,
        library=found.library,
        params=params,
        count=REGISTRY.earlier_wrappers(rec),
        defined_at=rec.defined_at,
    )
    fix = L.LIBRARY_REBUILT_FIX.words(
        part=part,
        factory=factory,
        params=params,
        spelled=found.spelled,
        jit_once=jit_once,
        name=name,
        call=call,
        var=var,
    )
    out = W.with_fix(r, FixKind.LIBRARY_REBUILT, fix, message=message, path=name)
    return out.with_facts(Fact.LIBRARY_MADE)


def _kernel_call(step: Any, part: str, names: dict[str, Any], users: tuple[str, ...]) -> str:
    """``kernel(rng_key, state, logdensity, step_size, imm)``: the library's kernel called with
    what ``step`` (the closure it built) passes it, each value by the user's name for it."""
    func = getattr(step, "__func__", step)
    code, cells = func.__code__, func.__closure__ or ()
    free: dict[str, Any] = {}
    for n, cell in zip(code.co_freevars, cells, strict=False):
        try:
            free[n] = cell.cell_contents
        except ValueError:
            continue
    kernel = free.get(part)
    try:
        params = [
            p
            for p in inspect.signature(kernel).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return f"{part}(...)"
    own = code.co_varnames[: code.co_argcount]
    spread = [x for v in free.values() if isinstance(v, tuple) for x in v]

    def spell(v: Any, fallback: str) -> str:
        found = next((k for k, x in names.items() if x is v), None)
        if found is None and not callable(v):  # a value the library made from the user's
            unused = [u for u in users if u not in args]
            found = unused[0] if unused else fallback
        return found

    args = []
    for p in params:
        if p.name in own:
            args.append(p.name)
        elif p.name in free:
            args.append(spell(free[p.name], p.name))
        else:
            args.append(spell(spread.pop(0), p.name) if spread else p.name)
    return f"{part}({', '.join(args)})"
