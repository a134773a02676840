"""Callable chains: the user function behind partials, jit wrappers and decorators.

A jitted function reaches jitlens wrapped in layers: ``functools.partial``,
``jax.jit``'s object, an nnx wrapper, an Equinox wrapper, a jitlens guard, a
``jax.grad``. :func:`unwrap_chain` is the one walk over those layers; every
other question (the user's function, where it is defined, which code two
wrappers share) is answered from its result.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import sys
import types
from typing import Any

from .._peek import class_attr, is_a, static_attr
from . import flax_api
from .frames import is_user_file, short_path

#: The longest chain followed (decorators rarely nest more than a few deep).
MAX_DEPTH = 16

#: How one layer of a chain was peeled off.
PARTIAL = "partial"
WRAPPED = "wrapped"
NNX = "nnx"
METHOD = "method"


def _inner(target: Any) -> tuple[str, Any] | None:
    if is_a(target, functools.partial):
        return PARTIAL, target.func
    if is_a(target, types.MethodType):
        return METHOD, target.__func__
    inner = _wrapped(target)
    if inner is not None:
        return WRAPPED, inner
    if flax_api.is_nnx_wrapper(target) or is_a(target, flax_api.NNX_INNER_FNS):
        inner = getattr(target, "fun", None) or getattr(target, "f", None)
        if inner is not None:
            return NNX, inner
    return None


def _wrapped(target: Any) -> Any:
    """``target.__wrapped__`` as stored, or computed by a library's property (Equinox's
    wrappers); a property or ``__getattr__`` of the program's is not run."""
    inner = static_attr(target, "__wrapped__")
    if inner is not None:
        return inner
    prop = class_attr(type(target), "__wrapped__")
    code = getattr(getattr(prop, "fget", None), "__code__", None)
    if type(prop) is not property or not is_a(code, types.CodeType):
        return None
    if is_user_file(code.co_filename):
        return None
    try:
        return getattr(target, "__wrapped__", None)
    except Exception:
        return None


def unwrap_chain(fn: Any) -> list[tuple[str, Any]]:
    """``fn`` and every callable it wraps, outermost first, with how each was reached.

    The first item is ``("", fn)``; each later one says how it was peeled off
    its parent (``partial``, ``wrapped``, ``nnx``, ``method``).

    Example:
        >>> import functools
        >>> def f(x, y): return x
        >>> [how for how, _ in unwrap_chain(functools.partial(f, 1))]
        ['', 'partial']
    """
    chain: list[tuple[str, Any]] = [("", fn)]
    seen = {id(fn)}
    target = fn
    for _ in range(MAX_DEPTH):
        step = _inner(target)
        if step is None or id(step[1]) in seen:
            break
        seen.add(id(step[1]))
        chain.append(step)
        target = step[1]
    return chain


def unwrap(fn: Any) -> Any:
    """The innermost callable behind ``fn`` (the user's function)."""
    return unwrap_chain(fn)[-1][1]


def bound_method(fn: Any) -> tuple[str, str] | None:
    """``(class name, method name)`` of the instance method ``fn`` wraps (``jax.jit(jax.grad(
    self.loss))``: ``("Trainer", "loss")``), or None: no bound method, or one of a class."""
    for how, obj in unwrap_chain(fn)[:-1]:
        del how
        if isinstance(obj, types.MethodType) and not isinstance(obj.__self__, type):
            name = getattr(obj.__func__, "__name__", None)
            if isinstance(name, str) and name.isidentifier() and _users_class(obj.__self__):
                return type(obj.__self__).__name__, name
    return None


def _users_class(obj: Any) -> bool:
    """Is ``obj``'s class defined in the user's code? A library's (numpyro's ``SVI``) has an
    ``__init__`` that is not the user's to edit."""
    module = sys.modules.get(getattr(type(obj), "__module__", ""), None)
    file = getattr(module, "__file__", None)
    return not isinstance(file, str) or is_user_file(file)


def user_function(fn: Any) -> Any:
    """The innermost user callable behind jit wrappers, partials and bound methods."""
    return unwrap(fn)


def definition_site(fn: Any) -> tuple[str, str, str]:
    """``(name, qualname, 'file:line')`` of the user function behind a wrapper."""
    target = unwrap(fn)
    name = getattr(target, "__name__", None) or type(target).__name__
    qualname = getattr(target, "__qualname__", None) or name
    if not isinstance(name, str):
        name = type(target).__name__
    if not isinstance(qualname, str):
        qualname = name
    code = getattr(target, "__code__", None)
    if not isinstance(code, types.CodeType):
        # a callable object: where its class's __call__ is defined
        code = getattr(vars(type(target)).get("__call__"), "__code__", None)
    if isinstance(code, types.CodeType):
        where = f"{short_path(code.co_filename)}:{code.co_firstlineno}"
    else:
        try:
            where = f"{short_path(inspect.getsourcefile(target) or '?')}:?"
        except TypeError:
            where = "?"
    return name, qualname, where


def code_key(fn: Any) -> Any:
    """What makes two jitted callables "the same code".

    The innermost function's code plus every wrapper on the way, so that
    ``jax.grad(loss)`` is not ``loss`` and ``partial(f, 1)`` is not ``f``.
    """
    chain = unwrap_chain(fn)
    tags: list[Any] = []
    for (_how, obj), (next_how, _next) in itertools.pairwise(chain):
        if next_how == PARTIAL:
            tags.append(PARTIAL)
        elif next_how == WRAPPED:
            tags.append(getattr(obj, "__code__", type(obj)))
    target = chain[-1][1]
    code = getattr(target, "__code__", None)
    base = (
        code
        if isinstance(code, types.CodeType)
        else ("obj", type(target).__qualname__, getattr(target, "__qualname__", None))
    )
    return (base, *tags) if tags else base


_TRANSFORM_NAMES = {"fun_remat": "checkpoint"}


def _transform_name(obj: Any) -> str | None:
    """``grad`` for the object ``jax.grad(f)`` returns (JAX keeps the transform in a closure)."""
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        name = getattr(getattr(inner, "__code__", None), "co_name", "")
        if name in _TRANSFORM_NAMES:
            return _TRANSFORM_NAMES[name]
        if (
            name.endswith("_f")
            and len(name) > 2
            and "jax" in (getattr(inner, "__module__", "") or "")
        ):
            return name[:-2]
    return None


def transform_names(fn: Any) -> list[str]:
    """JAX transforms between a jitted callable and the user's function, outermost first.

    ``jax.jit(jax.grad(loss))`` gives ``['grad']``: the row is named ``grad(loss)``.
    """
    out = []
    for _how, obj in unwrap_chain(fn)[:-1]:
        name = _transform_name(obj)
        if name:
            out.append(name)
    return out


#: How deep :func:`closure_callees` follows functions held by closures.
CALLEE_DEPTH = 3


def closure_callees(fn: Any, depth: int = CALLEE_DEPTH) -> tuple[Any, ...]:
    """The functions a closure calls through its free variables, as comparable plain data.

    ``((free name, 'module.qualname', code, (the callee's own callees)), ...)``:
    two wrappers of one code (``one_step`` rebuilt per sampler) whose closures
    hold different functions (``kernel``: blackjax's hmc, then mala) are
    different functions on purpose, not a wrapper rebuilt by mistake.
    """
    target = unwrap(fn)
    code, cells = getattr(target, "__code__", None), getattr(target, "__closure__", None)
    if depth <= 0 or not isinstance(code, types.CodeType) or not cells:
        return ()
    out = []
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if not callable(value) or isinstance(value, type):
            continue
        inner = unwrap(value)
        inner_code = getattr(inner, "__code__", None)
        if not isinstance(inner_code, types.CodeType):
            continue
        label = f"{getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', '?')}"
        out.append((name, label, inner_code, closure_callees(inner, depth - 1)))
    return tuple(out)
