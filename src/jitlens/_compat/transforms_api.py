"""Which JAX transformation a trace runs inside: the frames of ``lax.scan``, ``jax.vmap``, ...

A jitted function called inside another transformation is traced inside that
transformation's own trace (JAX emits no monitoring event for it). To explain
it in the user's terms jitlens names the enclosing transformation, found by
walking up from the nested trace's frame to the first frame of a known JAX
entry point (``scan`` in ``lax/control_flow/loops.py``, ``vmap_f`` in
``api.py``, another ``_trace_for_jit``: an enclosing jit). It also reads the
name a jitted lambda was assigned to (``one_step = jax.jit(lambda ...)``)
from its source line. Both are best-effort and degrade to None.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
import sys
import weakref
from types import FrameType
from typing import Any

from .frames import is_user_file
from .jax_api import TRACE_FRAME_NAME

_JAX_DIR: list[str] = []


def _in_jax(path: str) -> bool:
    """Is ``path`` (``/``-separated) a file of the installed jax, not merely under a ``jax/`` folder?"""
    if not _JAX_DIR:
        root = getattr(sys.modules.get("jax"), "__file__", None)
        if not root:
            return "/jax/" in path
        _JAX_DIR.append(os.path.dirname(os.path.abspath(root)).replace("\\", "/") + "/")
    return path.startswith(_JAX_DIR[0])


#: (code name, the end of its file's path) -> how the user spells the transformation.
OUTER_FRAMES: dict[tuple[str, str], str] = {
    ("scan", "lax/control_flow/loops.py"): "lax.scan",
    ("fori_loop", "lax/control_flow/loops.py"): "lax.fori_loop",
    ("while_loop", "lax/control_flow/loops.py"): "lax.while_loop",
    ("map", "lax/control_flow/loops.py"): "lax.map",
    ("cond", "lax/control_flow/conditionals.py"): "lax.cond",
    ("switch", "lax/control_flow/conditionals.py"): "lax.switch",
    ("vmap_f", "_src/api.py"): "jax.vmap",
    ("grad_f", "_src/api.py"): "jax.grad",
    ("grad_f_aux", "_src/api.py"): "jax.grad",
    ("value_and_grad_f", "_src/api.py"): "jax.value_and_grad",
    ("jacfun", "_src/api.py"): "jax.jacobian",
    ("vjp", "_src/api.py"): "jax.vjp",
    ("jvp", "_src/api.py"): "jax.jvp",
    ("make_jaxpr_f", "_src/api.py"): "jax.make_jaxpr",
    ("fun_remat", "_src/ad_checkpoint.py"): "jax.checkpoint",
    ("wrapped", "_src/pmap.py"): "jax.pmap",
    # pmap over shard_map (jax 0.10): the body runs in pmap's ``_fun`` inside its own jit
    ("_fun", "_src/pmap.py"): "jax.pmap",
}
#: An enclosing ``jax.jit`` (its own trace frame, above the nested one).
OUTER_JIT = "jax.jit"

_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*[\w.]*jit\b")


def outer_transformation(frame: FrameType | None, limit: int = 80) -> str | None:
    """The transformation whose trace the nested trace at ``frame`` runs in, or None.

    ``frame`` is at or below the nested jit's own ``_trace_for_jit`` frame.
    The outermost JAX entry point below the user's call wins (``jax.grad``
    runs through ``vjp``: the user called ``grad``).
    """
    f = frame
    seen_own = False
    found: str | None = None
    for _ in range(limit):
        if f is None:
            break
        code = f.f_code
        path = code.co_filename.replace("\\", "/")
        if code.co_name == TRACE_FRAME_NAME:
            if seen_own:
                return found or OUTER_JIT
            seen_own = True
        elif found is not None and not _in_jax(path):
            return found  # the user's frame that called the transformation
        else:
            for (name, tail), spelled in OUTER_FRAMES.items():
                if code.co_name == name and path.endswith(tail):
                    found = spelled
        f = f.f_back
    return found


def assigned_name(fn: Any) -> str | None:
    """``one_step`` for a lambda defined on ``one_step = jax.jit(lambda c, _: ...)``."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    try:
        line = linecache.getline(code.co_filename, code.co_firstlineno)
    except Exception:
        return None
    m = _ASSIGNED.match(line)
    return m.group(1) if m else None


def eager_caller(frame: FrameType | None, limit: int = 80) -> FrameType | None:
    """The frame that called the transformation whose body is traced at ``frame``.

    The first frame above the JAX ones (``lax.map`` -> ``scan`` -> ``_create_jaxpr``);
    None when there is none.
    """
    f = frame
    for _ in range(limit):
        if f is None:
            return None
        if not _in_jax(f.f_code.co_filename.replace("\\", "/")):
            return f
        f = f.f_back
    return None


def primitive_caller(frame: FrameType | None, limit: int = 80) -> FrameType | None:
    """The frame that called the transformation (``lax.scan``, ...) running at ``frame``:
    the first frame above that transformation's own that is not JAX's (None if none).

    Unlike :func:`eager_caller`, ``frame`` may be below frames of others (jitlens'
    listener of a compile event): only frames above the transformation's count.
    """
    f = frame
    seen = False
    for _ in range(limit):
        if f is None:
            return None
        code = f.f_code
        path = code.co_filename.replace("\\", "/")
        if seen and not _in_jax(path):
            return f
        if not seen:
            seen = any(code.co_name == name and path.endswith(tail) for name, tail in OUTER_FRAMES)
        f = f.f_back
    return None


def scan_length(frame: FrameType | None, limit: int = 80) -> int | None:
    """The length of the ``lax.scan`` running at or above ``frame`` (``lax.fori_loop`` with
    concrete bounds runs one: its trip count), once JAX has worked it out; else None."""
    f = frame
    for _ in range(limit):
        if f is None:
            return None
        code = f.f_code
        if code.co_name == "scan" and code.co_filename.replace("\\", "/").endswith(
            "lax/control_flow/loops.py"
        ):
            length = f.f_locals.get("length")
            return length if type(length) is int else None
        f = f.f_back
    return None


def user_body(fun: Any, depth: int = 3) -> Any:
    """The user's function a control-flow primitive traces as ``fun``, or None.

    ``lax.map(f, xs)`` traces a lambda of its own around ``f``, ``lax.fori_loop``
    a ``_fori_body_fun`` closure holding a weak reference to it, numpyro's
    ``Predictive`` a closure over the user's model inside a handler object: the
    user's function is found in closures, weak references, ``functools.partial``
    and the instance dictionaries of wrapper objects (``handlers.mask(fn=model)``;
    no attribute is read through Python code), at most ``depth`` levels down.
    """
    if depth < 0 or fun is None:
        return None
    code = getattr(fun, "__code__", None)
    if code is not None and is_user_file(code.co_filename):
        return fun
    for value in _inner_callables(fun):
        found = user_body(value, depth - 1)
        if found is not None:
            return found
    return None


def _inner_callables(fun: Any) -> list[Any]:
    """The callables ``fun`` holds: its closure's, a partial's function, a wrapper's fields."""
    if isinstance(fun, functools.partial):
        return [fun.func]
    if hasattr(fun, "__code__"):
        values = []
        for cell in getattr(fun, "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:
                continue
    else:
        try:
            values = list(object.__getattribute__(fun, "__dict__").values())[:16]
        except (AttributeError, TypeError):
            return []
    out = []
    for value in values:
        if isinstance(value, weakref.ref):
            value = value()
        if callable(value) and not isinstance(value, type):
            out.append(value)
    return out


def untraceable_params(frame: FrameType) -> tuple[str, ...]:
    """The parameters of the function running at ``frame`` that hold what jit cannot trace (a
    function, an optax transformation, a string): under ``jax.jit`` they must be static."""
    code = frame.f_code
    if code.co_name.startswith("<"):
        return ()
    import jax  # the program runs JAX already: a trace is under way

    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    found = []
    for name in params:
        try:
            value = frame.f_locals.get(name)
            leaves = jax.tree_util.tree_leaves(value)
        except Exception:  # an object whose flattening fails: not jitlens' business
            continue
        if value is not None and not all(_traceable(leaf) for leaf in leaves):
            found.append(name)
    return tuple(found)


def _traceable(leaf: Any) -> bool:
    return isinstance(leaf, (bool, int, float, complex)) or (
        hasattr(leaf, "shape") and hasattr(leaf, "dtype")
    )
