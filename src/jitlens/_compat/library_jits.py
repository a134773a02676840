"""Jits a library makes around the user's model, loss or data: which, and in whose terms.

Keras 3 (JAX backend) jits its train, test and predict steps; numpyro jits its
MCMC sample loop and ``SVI.run``'s step. Their code lives in the library's files,
so seen from JAX they look like library-internal helpers, yet each trace runs
the user's model on the user's data: they are the user's business. A
:class:`LibraryJit` names such a jit in the library's terms (``keras:
Sequential.fit train step``) and says what its arguments are in the user's
terms (``data[0]`` is ``x`` of ``fit``). The library-specific knowledge is in
:mod:`.keras_api` and :mod:`.numpyro_api`; this module reads neither library
unless the program imported it.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
from types import FrameType
from typing import Any

from .._peek import class_attr, instance_dict, is_a, static_attr
from .frames import frames_up as frames_up
from .frames import is_user_file
from .frames import library_of_file as library_of_file
from .frames import loaded as loaded
from .frames import name_in_frame as name_in_frame
from .frames import package_of as package_of
from .libraries import JIT_LIBRARIES

LIBRARIES = JIT_LIBRARIES
#: How deep :func:`reaches_user` looks through partials, closures and tuples of functions.
REACH_DEPTH = 6


@dataclasses.dataclass(frozen=True)
class LibraryJit:
    """One library jit that runs the user's code, as the library's user knows it."""

    #: The library (``keras``, ``numpyro``): the row kind.
    library: str
    #: The row's name, in the library's terms (``keras: Sequential.fit train step``).
    name: str
    #: The user's method that built it (``fit``, ``predict_on_batch``, ``MCMC.run``).
    entry: str
    #: The step's role (``train``, ``test``, ``predict``, ``sample``, ``svi``).
    role: str
    #: Leading key paths -> the user's names (``data[0]`` -> ``x``).
    paths: tuple[tuple[str, str], ...] = ()
    #: Facts the words need (``batch_size``, ``samples``), as ``(name, value)``.
    facts: tuple[tuple[str, Any], ...] = ()
    #: A weak reference to the library object the jit serves (the keras model), not compared.
    owner: Any = dataclasses.field(default=None, compare=False, repr=False)

    def fact(self, name: str) -> Any:
        return dict(self.facts).get(name)


def library_name(fn: Any) -> str | None:
    """``numpyro: SVI.update``: a library callable the user jitted, in the library's terms.

    Only for :data:`LIBRARIES`: a user's ``jax.jit(jnp.cos)`` or ``jax.jit(opt.update)`` is
    named by the registry as the user reaches it (``cos``, ``opt.update``).

    A bound method names its object's class (``svi.update`` -> ``SVI.update``);
    a closure the library's factory built (blackjax's ``step_fn`` inside
    ``hmc.as_top_level_api``) names the factory's module (``hmc.step_fn``).
    """
    top = package_of(fn)
    if top not in LIBRARIES:  # JAX's, Flax's, optax's own functions stay theirs (jnp.cos)
        return None
    owner = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", fn)
    name = getattr(func, "__name__", "?")
    qualname = getattr(func, "__qualname__", name)
    if owner is not None and not isinstance(owner, type):
        return f"{top}: {type(owner).__name__}.{name}"
    if "<locals>" in qualname:
        module = _callee_module(func, top) or getattr(func, "__module__", "") or ""
        return f"{top}: {module.rsplit('.', 1)[-1]}.{name}"
    return f"{top}: {qualname}"


def _callee_module(func: Any, top: str) -> str | None:
    """The module of another of the library's functions a generic closure calls.

    blackjax's ``base.step_fn`` is one closure for every sampler: the ``kernel``
    it calls says which (``blackjax.mcmc.hmc``). A closure that calls a function of its
    own module is that module's (sgld's ``step_fn`` calls sgld's ``kernel`` and the
    ``gradients`` module's estimator: ``sgld.step_fn``).
    """
    own = getattr(func, "__module__", None)
    found = None
    for cell in getattr(func, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        module = getattr(value, "__module__", None)
        if not callable(value) or not isinstance(module, str):
            continue
        if module == own:  # its own module's kernel: a sampler's own closure (sgld's step_fn)
            return None
        if found is None and module.split(".", 1)[0] == top:
            found = module
    return found


def reaches_user(fn: Any, depth: int = REACH_DEPTH) -> bool:
    """Does ``fn`` call a function of the user's through its partials and closures?

    ``jit(partial(lax.scan, one_step))`` in ``blackjax.util.run_inference_algorithm``:
    ``one_step`` closes over the sampler (a tuple of functions) built around the
    user's ``logdensity_fn``. Functions, bound methods, ``functools.partial`` and
    tuples / lists / dicts of them are followed, nothing else (no attribute reads).
    """
    if depth <= 0 or fn is None:
        return False
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is not None and hasattr(code, "co_filename"):
        if is_user_file(code.co_filename):
            return True
        cells = getattr(func, "__closure__", None) or ()
        values = []
        for cell in cells:
            try:
                values.append(cell.cell_contents)
            except ValueError:
                continue
        return any(reaches_user(v, depth - 1) for v in values if _followed(v))
    if isinstance(fn, (tuple, list)):
        return any(reaches_user(v, depth - 1) for v in fn[:16] if _followed(v))
    if isinstance(fn, dict):
        return any(reaches_user(v, depth - 1) for v in list(fn.values())[:16] if _followed(v))
    inner = getattr(fn, "func", None)  # functools.partial
    if inner is not None and callable(inner):
        parts = [inner, *getattr(fn, "args", ()), *getattr(fn, "keywords", {}).values()]
        return any(reaches_user(v, depth - 1) for v in parts if _followed(v))
    wrapped = getattr(fn, "__wrapped__", None)
    return wrapped is not None and reaches_user(wrapped, depth - 1)


def _followed(v: Any) -> bool:
    return callable(v) or isinstance(v, (tuple, list, dict))


def built_by_library(fn: Any, made_at: FrameType | None) -> str | None:
    """``blackjax: run_inference_algorithm``: a jit a library made around the user's code.

    ``made_at`` is the frame that called ``jax.jit``: a function of one of
    :data:`LIBRARIES`, whose jitted callable reaches the user's code.
    """
    if made_at is None:
        return None
    top = library_of_file(made_at.f_code.co_filename, LIBRARIES)
    if top is None or not reaches_user(fn):
        return None
    code = made_at.f_code
    return f"{top}: {getattr(code, 'co_qualname', code.co_name)}"


@dataclasses.dataclass(frozen=True)
class LibraryClosure:
    """A function a library's factory builds around values the user passed (blackjax's
    ``hmc.step``: ``step_fn`` over ``kernel`` and ``kernel_args``), as the user knows it."""

    #: The library (``blackjax``).
    library: str
    #: How the user's code reaches it (``hmc.step``), or its own name.
    spelled: str
    #: The data it closes over (``kernel_args``).
    free: tuple[str, ...]
    #: The user's variables it holds by identity (``step_size``): the values to pass instead.
    params: tuple[str, ...]
    #: A function of the library's it closes over that a public factory of the library made:
    #: ``(its free variable, the factory's call)``: ``("kernel", "blackjax.mcmc.hmc.build_kernel()")``.
    part: tuple[str, str] | None


#: Values whose identity says nothing (interned or cached by Python).
_SHARED_VALUES = (bool, int, str, bytes, type(None))


def library_closure(
    fn: Any, user: FrameType | None, names: dict[str, Any] | None = None
) -> LibraryClosure | None:
    """``fn`` as a :class:`LibraryClosure` when a factory of one of :data:`LIBRARIES` made
    it (a closure in the library's file holding data); ``user``: the user's frame that
    called it, whose variables name what the user passed (or ``names``, the variables of
    several frames)."""
    top = package_of(fn)
    func = static_attr(fn, "__func__", fn)
    code, cells = static_attr(func, "__code__"), static_attr(func, "__closure__")
    if (
        top not in LIBRARIES
        or not is_a(code, types.CodeType)
        or not is_a(cells, tuple)
        or not cells
    ):
        return None
    data: dict[str, Any] = {}
    part = None
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if callable(value):
            part = part or _factory_call(name, value, top)
        elif not is_a(value, (type, types.ModuleType)):
            data[name] = value
    if not data:
        return None
    local = names if names is not None else dict(user.f_locals) if user is not None else {}
    held = {
        id(v)
        for v in _leaves(list(data.values()))
        if not callable(v) and not is_a(v, _SHARED_VALUES)
    }
    params = tuple(k for k, v in local.items() if id(v) in held and not k.startswith("_"))
    name = static_attr(func, "__name__")
    spelled = _spelled(fn, local) or (name if is_a(name, str) else "?")
    return LibraryClosure(top, spelled, tuple(data), params[:4], part)


def _leaves(values: list[Any], limit: int = 128) -> list[Any]:
    """The values in ``values``, in their tuples, lists and dicts and in the closures of the
    functions among them (an optax transform's ``learning_rate``), breadth first."""
    out: list[Any] = []
    queue = list(values)
    while queue and len(out) < limit:
        v = queue.pop(0)
        out.append(v)
        t = type(v)
        if issubclass(t, (tuple, list)):  # (a named tuple too, read by the builtin's own methods)
            base = tuple if issubclass(t, tuple) else list
            queue.extend(list(base.__iter__(v))[:16])
        elif issubclass(t, dict):
            queue.extend(list(dict.values(v))[:16])
        elif callable(v):
            cells = static_attr(static_attr(v, "__func__", v), "__closure__")
            for cell in cells if is_a(cells, tuple) else ():
                try:
                    queue.append(cell.cell_contents)
                except ValueError:
                    continue
    return out


def _factory_call(name: str, value: Any, top: str) -> tuple[str, str] | None:
    """``("kernel", "blackjax.mcmc.hmc.build_kernel()")``: ``value`` made by a public function
    of its module (``build_kernel.<locals>.kernel``), called with no argument when it made
    ``value`` from its defaults alone (else ``(...)``)."""
    func = static_attr(value, "__func__", value)
    qualname, module = static_attr(func, "__qualname__"), static_attr(func, "__module__")
    if not is_a(qualname, str):
        return None
    outer, sep, _ = qualname.partition(".<locals>.")
    if not sep or "." in outer or outer.startswith("_") or not isinstance(module, str):
        return None
    if module.split(".", 1)[0] != top or any(p.startswith("_") for p in module.split(".")):
        return None
    factory = getattr(sys.modules.get(module), outer, None)
    if not callable(factory) or getattr(factory, "__code__", None) is None:
        return None
    return name, f"{module}.{outer}({'' if _from_defaults(factory, func) else '...'})"


def _from_defaults(factory: Any, made: Any) -> bool:
    """Did ``factory`` make ``made`` from its defaults (every parameter ``made`` reads is its
    default, and the factory needs no argument)?"""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    if any(
        p.default is p.empty
        for p in params.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ):
        return False
    code, cells = made.__code__, made.__closure__ or ()
    for name, cell in zip(code.co_freevars, cells, strict=False):
        if name in params:
            try:
                if cell.cell_contents is not params[name].default:
                    return False
            except ValueError:
                return False
    return True


def _spelled(fn: Any, local: dict[str, Any]) -> str | None:
    """``hmc.step``: a variable of the user's holding ``fn``, or a field of one (a named tuple's
    field, an attribute in its ``__dict__``)."""
    for name, v in local.items():
        if v is fn:
            return name
    for name, v in local.items():
        fields = class_attr(type(v), "_fields")
        if not is_a(fields, tuple):
            fields = list(instance_dict(v) or ())[:32]
        for attr in fields:
            if is_a(attr, str) and static_attr(v, attr) is fn:
                return f"{name}.{attr}"
    return None


@dataclasses.dataclass(frozen=True)
class LibraryEntry:
    """Where the user's code called into one of :data:`LIBRARIES` (numpyro's
    ``Predictive.__call__``), found from a frame inside the library."""

    library: str
    #: The outermost library function below the user's frame, as ``Class.method``.
    entry: str
    #: The entry's code (stable across calls: one row per entry point).
    code: Any
    #: The user's variable holding the object whose method is the entry (``pred``), or "".
    spelled: str
    #: How the user's code reaches the entry function (``warmup.run``, ``pred``), or "".
    callee: str = ""
    #: The entry's parameters holding Python ints or strings now (``num_steps``): static
    #: under a jit of the call (they set lengths or branches).
    statics: tuple[str, ...] = ()


def library_entry(frame: FrameType | None, limit: int = 40) -> LibraryEntry | None:
    """The library call the user made that is running at ``frame`` (a frame of one of
    :data:`LIBRARIES`), or None when no user frame is above it."""
    top = library_of_file(frame.f_code.co_filename, LIBRARIES) if frame is not None else None
    if top is None:
        return None
    entry = None
    for f in frames_up(frame, limit):
        filename = f.f_code.co_filename
        if is_user_file(filename):
            if entry is None:
                return None
            code = entry.f_code
            owner = entry.f_locals.get("self")
            spelled = ""
            if owner is not None:
                spelled = next((k for k, v in f.f_locals.items() if v is owner), "")
            name = getattr(code, "co_qualname", code.co_name)
            callee = spelled or _callee(code, f.f_locals)
            return LibraryEntry(top, name, code, spelled, callee, _statics(entry))
        if library_of_file(filename, (top,)) is not None:
            entry = f
    return None


def library_call_above(frame: FrameType | None, limit: int = 60) -> LibraryEntry | None:
    """The library call the user made that is running above ``frame`` (a frame of JAX or
    of jitlens), or None when the user's code is reached first."""
    for f in frames_up(frame, limit):
        filename = f.f_code.co_filename
        if library_of_file(filename, LIBRARIES) is not None:
            return library_entry(f, limit)
        if is_user_file(filename):
            return None
    return None


def _callee(code: Any, local: dict[str, Any]) -> str:
    """``warmup.run``: the user's variable, or a field of one, whose function runs ``code``."""
    for name, v in local.items():
        if getattr(getattr(v, "__func__", v), "__code__", None) is code:
            return name
    for name, v in local.items():
        fields = getattr(type(v), "_fields", None) or list(getattr(v, "__dict__", {}))[:32]
        for attr in fields if isinstance(fields, (tuple, list)) else ():
            try:
                field = getattr(v, attr, None)
            except Exception:
                continue
            if getattr(getattr(field, "__func__", field), "__code__", None) is code:
                return f"{name}.{attr}"
    return ""


def _statics(entry: FrameType) -> tuple[str, ...]:
    """The entry's parameters holding a Python int, bool or string now."""
    code = entry.f_code
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    local = entry.f_locals
    return tuple(
        p for p in params if p != "self" and isinstance(local.get(p), (int, str)) and p in local
    )
