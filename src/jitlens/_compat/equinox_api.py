"""Equinox's ``eqx.filter_jit``, seen from JAX: the private pieces jitlens reads.

``eqx.filter_jit(f)`` hands ``jax.jit`` a closure of its own, ``fun_wrapped``
(in ``equinox/_jit.py``), with ``static_argnums=2``, and calls it as
``jitted(dynamic_donate, dynamic_nodonate, static)``: the user's function and
arguments split into array leaves (the two dicts, keys ``fun``/``first``/``rest``)
and everything else (``static``: three ``(leaves, treedef)`` pairs). Every user
call goes through the module-level ``equinox._jit._call(wrapper, is_lower,
args, kwargs)`` (a ``_JitWrapper`` method before equinox 0.12).

This module undoes the split: the user's function and arguments back from
JAX's view, and a hashable key equal for equal user callables (the
``static`` part equinox itself builds, so it compares as JAX does). It never
imports equinox: every accessor looks in ``sys.modules`` and answers ``None``
(or ``False``) when equinox is not loaded or has moved a piece.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .libraries import Library

#: The module that defines ``filter_jit``'s pieces.
JIT_MODULE = "equinox._jit"
#: The ``co_name`` of the closure equinox hands to ``jax.jit``.
INNER_NAME = "fun_wrapped"
#: The row kind of an ``eqx.filter_jit`` function.
KIND = "eqx.filter_jit"
#: The oldest and newest equinox releases the layout below was checked on.
TESTED_EQUINOX = ((0, 13, 0), (0, 13, 8))

#: piece -> what jitlens loses without it.
EQX_ROWS = "eqx.filter_jit rows (its traces would be filed as equinox-internal)"
EQX_CALLS = "calls and cache hits of eqx.filter_jit functions"
EQX_ARGS = "explanations of eqx.filter_jit retraces in the user's arguments"

_FILES: dict[str, bool] = {}


def _jit_module() -> Any:
    return sys.modules.get(JIT_MODULE)


def loaded() -> bool:
    """Has the user's program imported equinox (its jit module)?"""
    return JIT_MODULE in sys.modules


def _is_jit_file(filename: str) -> bool:
    hit = _FILES.get(filename)
    if hit is None:
        mod = _jit_module()
        path = getattr(mod, "__file__", None)
        if path is None:
            return False
        try:
            hit = os.path.samefile(filename, path)
        except OSError:
            hit = False
        _FILES[filename] = hit
    return hit


def is_inner(fun: Any) -> bool:
    """Is ``fun`` the closure ``eqx.filter_jit`` handed to ``jax.jit``?

    Its ``__name__``/``__qualname__`` are the user's, so the code object decides.
    """
    code = getattr(fun, "__code__", None)
    return (
        code is not None
        and getattr(code, "co_name", None) == INNER_NAME
        and loaded()
        and _is_jit_file(code.co_filename)
    )


def _is_jit_args(args: tuple[Any, ...]) -> bool:
    if len(args) != 3 or not isinstance(args[0], dict) or not isinstance(args[1], dict):
        return False
    static = args[2]
    return (
        isinstance(static, tuple)
        and len(static) == 3
        and set(args[0]) | set(args[1]) == {"fun", "first", "rest"}
    )


def _combine(dynamic: Any, static: Any) -> Any:
    from equinox._compile_utils import hashable_combine  # loaded with equinox._jit

    return hashable_combine(dynamic, static)


def _fun(jit_args: tuple[Any, ...]) -> Any:
    dynamic = {**jit_args[0], **jit_args[1]}
    return _combine(dynamic["fun"], jit_args[2][0])


def _module_method(fun: Any) -> Any:
    """``type(fun).__call__`` when ``fun`` is an ``eqx.Module`` instance used as the function.

    ``eqx.filter_jit(model)`` jits a callable pytree: its arrays are traced
    arguments and its other fields are part of the key, like the fields of an
    argument. jitlens then files every instance of the class under one row
    (named ``Class.__call__``) and describes the instance as the argument
    ``self``, so a changed field is named (``self.act``) instead of "a new
    function".
    """
    if isinstance(fun, type) or not is_eqx_module_class(type(fun)):
        return None
    module = type(fun).__module__ or ""
    if hasattr(fun, "__wrapped__") or (
        module.startswith("equinox.") and not module.startswith("equinox.nn.")
    ):
        return None  # a wrapper of the user's function (filter_vmap, Partial, assert_max_traces)
    method = vars(type(fun)).get("__call__") or getattr(type(fun), "__call__", None)  # noqa: B004
    return method if getattr(method, "__code__", None) is not None else None


def user_function(jit_args: tuple[Any, ...]) -> Any:
    """The callable the user passed to ``filter_jit`` (a function, a partial; for a Module,
    its class's ``__call__``)."""
    if not _is_jit_args(jit_args):
        return None
    fun = _fun(jit_args)
    method = _module_method(fun)
    return method if method is not None else fun


def user_args(
    jit_args: tuple[Any, ...], jit_kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """``(args, kwargs)`` as the user's function receives them (``None`` if unrecognised).

    As equinox's ``fun_wrapped`` does: combine ``first`` and ``rest``, drop the
    dummy ``None`` equinox appends. Arguments were normalised by
    ``inspect.Signature.bind`` (a keyword for a positional parameter arrives
    positionally; defaults are not filled in).
    """
    if jit_kwargs or not _is_jit_args(jit_args):
        return None
    dynamic = {**jit_args[0], **jit_args[1]}
    _, static_first, static_rest = jit_args[2]
    first = _combine(dynamic["first"], static_first)
    rest, kwargs = _combine(dynamic["rest"], static_rest)
    *args, dummy = (first, *tuple(rest))
    if dummy is not None:
        return None
    fun = _fun(jit_args)
    if _module_method(fun) is not None:  # the Module itself is the argument `self`
        args = [fun, *args]
    return tuple(args), dict(kwargs)


#: (donate first argument, donate the rest) -> ``filter_jit(donate=...)`` ("warn" modes
#: donate as the plain ones do).
_DONATE = {(True, True): "all", (False, True): "all-except-first", (True, False): "first"}


def jit_options(jit_args: tuple[Any, ...]) -> tuple[tuple[str, Any], ...]:
    """The call's ``filter_jit`` options that change its compiled key: ``donate``.

    equinox jits every ``filter_jit`` with one ``jax.jit`` per function name and
    says which arrays are donated by the dict it puts them in (``jit_args[0]``):
    two wrappers of one function with different ``donate=`` share the jit but
    not its cache entries. ``donate="none"`` (the default) gives no option.
    """
    if not _is_jit_args(jit_args):
        return ()
    donated = (("first" in jit_args[0]), ("rest" in jit_args[0]))
    mode = _DONATE.get(donated)
    return (("donate", mode),) if mode is not None else ()


def cache_key(jit_args: tuple[Any, ...]) -> Any:
    """The static half of the user's callable: equal for callables equinox jits alike."""
    return jit_args[2][0] if _is_jit_args(jit_args) else None


def wrapper_key(wrapper: Any) -> Any:
    """:func:`cache_key` from the ``_JitWrapper`` a call goes through."""
    return getattr(wrapper, "_static_fun", None)


def wrapper_user_function(wrapper: Any) -> Any:
    """The callable behind a ``_JitWrapper`` (``__wrapped__`` recombines it), as
    :func:`user_function` names it."""
    fun = getattr(wrapper, "__wrapped__", None)
    method = _module_method(fun)
    return method if method is not None else fun


def call_entry() -> tuple[Any, str] | None:
    """``(owner, name)`` of the function every ``filter_jit`` call goes through.

    Called as ``(wrapper, is_lower, args, kwargs)``: the module-level ``_call``
    since equinox 0.12, the ``_JitWrapper._call`` method before.
    """
    mod = _jit_module()
    if mod is None:
        return None
    if callable(getattr(mod, "_call", None)):
        return mod, "_call"
    cls = getattr(mod, "_JitWrapper", None)
    if cls is not None and callable(vars(cls).get("_call")):
        return cls, "_call"
    return None


def is_equinox_callable(fn: Any) -> bool:
    """Is ``fn`` one of equinox's layers (``eqx.nn.Linear.__call__``)? equinox never
    ``filter_jit``s its layers itself: such a jit is the user's."""
    return (getattr(fn, "__module__", "") or "").startswith("equinox.nn.")


def is_eqx_module_class(cls: Any) -> bool:
    """Is ``cls`` an ``eqx.Module`` subclass (checked by name: no import)?"""
    mro = getattr(cls, "__mro__", ())
    return any(c.__name__ == "Module" and (c.__module__ or "").startswith("equinox.") for c in mro)


def _has_inner() -> bool:
    mod = _jit_module()
    fn = getattr(getattr(mod, "_filter_jit_cache", None), "__wrapped__", None)
    consts = getattr(getattr(fn, "__code__", None), "co_consts", ())
    return any(getattr(c, "co_name", None) == INNER_NAME for c in consts)


def _has_combine() -> bool:
    mod = sys.modules.get("equinox._compile_utils")
    return callable(getattr(mod, "hashable_combine", None))


def missing() -> list[tuple[str, str]]:
    """``(piece, what jitlens loses)`` for each equinox piece not found (none if not loaded)."""
    if not loaded():
        return []
    out = []
    if not _has_inner():
        out.append((f"{JIT_MODULE}._filter_jit_cache.{INNER_NAME}", EQX_ROWS))
    if call_entry() is None:
        out.append((f"{JIT_MODULE}._call", EQX_CALLS))
    if not _has_combine():
        out.append(("equinox._compile_utils.hashable_combine", EQX_ARGS))
    return out


#: What jitlens knows of equinox (``_compat/libraries``): its files and reprs are the library's,
#: ``eqx.nn.Sequential``'s loop builds the user's model, a layer is written ``eqx.nn.Linear``.
LIBRARY = Library(
    distribution="equinox",
    packages=("equinox",),
    loaded=loaded,
    builds_models=True,
    layer_prefix="eqx.nn.",
    model_apis=(("equinox", "eqx"),),
    missing=missing,
)
