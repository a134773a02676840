"""numpyro: the jits ``MCMC.run`` and ``SVI.run`` make around the user's model, read only if imported.

``MCMC.run`` samples through ``numpyro.util.fori_collect``, which jits either
the whole loop (``_fori_collect_loop``, without a progress bar) or one step
(``_body_fn``, with one); each trace runs the user's model through the
sampler's kernel. ``SVI.run`` jits its step ``body_fn`` (with a progress bar).
Their rows are named after the object on the stack that built them
(``numpyro: MCMC sample loop (NUTS)``); numpyro's other jits (initialisation
helpers, ``_get_value_from_index``) stay internal.
"""

from __future__ import annotations

import weakref
from types import FrameType
from typing import TYPE_CHECKING, Any

from .frames import frames_up, is_user_file, loaded, package_of

if TYPE_CHECKING:
    from .library_jits import LibraryJit

MODULE = "numpyro"
#: numpyro function name -> (the object's method on the stack, its role, the row's words).
_JITS = {
    "_fori_collect_loop": ("MCMC", "run", "sample", "MCMC sample loop"),
    "_body_fn": ("MCMC", "run", "sample", "MCMC sample step"),
    "loop_fn": ("MCMC", "run", "sample", "MCMC sample loop"),
    "body_fn": ("SVI", "run", "svi", "SVI.run step"),
}


#: The static argument of ``_fori_collect_loop``: numpyro's step, built anew per ``run``.
LOOP_BODY = "_body_fn"

#: The parameter of ``fori_collect``'s ``_body_fn``: numpyro's loop state, never the user's.
STEP_STATE = "val"

#: The role of a numpyro jit that reaches the user's model but is never the user's business.
HIDDEN = "hidden"


def _owner(cls: str, method: str, frame: FrameType | None) -> tuple[Any, FrameType | None]:
    """The ``cls`` object whose ``method`` is on the stack, and that method's frame."""
    for f in frames_up(frame):
        if is_user_file(f.f_code.co_filename):
            return None, None
        if f.f_code.co_name == method:
            obj = f.f_locals.get("self")
            if obj is not None and any(c.__name__ == cls for c in type(obj).__mro__):
                return obj, f
    return None, None


#: MCMC object -> the model arguments of its last ``run``: (name, shape or value, weak ref).
_LAST_DATA: weakref.WeakKeyDictionary[Any, list[tuple[str, str, Any]]] = weakref.WeakKeyDictionary()


def _data(owner: Any, run: FrameType) -> list[tuple[str, str, Any]]:
    """The model arguments ``MCMC.run`` was given, named as the model names them (``y``)."""
    import inspect

    from jax.core import ShapedArray

    args, kwargs = run.f_locals.get("args", ()), run.f_locals.get("kwargs", {})
    try:
        bound = inspect.signature(owner.sampler.model).bind_partial(*args, **kwargs).arguments
    except (AttributeError, TypeError, ValueError):
        bound = {**{f"args[{i}]": a for i, a in enumerate(args)}, **kwargs}
    out = []
    for name, value in bound.items():
        shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
        if shape is not None and dtype is not None:
            text = ShapedArray(tuple(shape), dtype).str_short(short_dtypes=True)
        else:
            text = repr(value) if isinstance(value, (int, float, str, type(None))) else ""
        if isinstance(value, (int, float, str, type(None))):
            ref: Any = text  # a number compares by value
        else:
            try:
                ref = weakref.ref(value)
            except TypeError:  # a list: the same object keeps its id while it lives
                ref = id(value)
        out.append((name, text, ref))
    return out


def _new_data(owner: Any, run: FrameType | None) -> str | None:
    """How this ``run``'s model arguments differ from the last ``run``'s of ``owner``
    (``y`` f32[8] -> f32[12], or new values), or None: the first run, or the same objects."""
    if run is None:
        return None
    try:
        now = _data(owner, run)
        then = _LAST_DATA.get(owner)
        _LAST_DATA[owner] = now
    except Exception:  # the words are optional, the row is not
        return None
    if then is None:
        return None
    if [n for n, _, _ in then] != [n for n, _, _ in now]:
        return "other arguments"
    for (name, before, _), (_, after, _) in zip(then, now, strict=True):
        if before != after and before and after:
            return f"`{name}` {before} -> {after}"
    for (name, _, old), (_, _, new) in zip(then, now, strict=True):
        alive = callable(old) and callable(new)
        if (old() is not new()) if alive else old != new:
            return f"`{name}` holds new values"
    return None


def _progress_bar(frame: FrameType | None) -> bool:
    """Does the ``fori_collect`` on the stack step in Python (a progress bar, one chain)?"""
    for f in frames_up(frame):
        if f.f_code.co_name == "fori_collect":
            return bool(f.f_locals.get("progbar")) and f.f_locals.get("num_chains", 1) == 1
    return False


def step_of(fun: Any, frame: FrameType | None) -> LibraryJit | None:
    """The numpyro jit ``fun`` is (jitted at ``frame``) when it runs the user's model, or None."""
    if not loaded(MODULE):
        return None
    from .library_jits import LibraryJit  # with the library: its dataclasses cost start-up

    name = getattr(fun, "__name__", None)
    spec = _JITS.get(name) if isinstance(name, str) else None
    if spec is None or package_of(fun) != MODULE:
        return None
    cls, method, role, words = spec
    if name == "_body_fn" and not _progress_bar(frame):
        # jitted, but run inside the jitted loop only: part of the loop's trace, numpyro's
        return LibraryJit(library=MODULE, name="", entry="", role=HIDDEN)
    owner, run = _owner(cls, method, frame)
    if owner is None:
        return None  # fori_collect / a body_fn called by someone else: numpyro's business
    facts: tuple[tuple[str, Any], ...] = ()
    if cls == "MCMC":
        sampler = type(getattr(owner, "sampler", None)).__name__
        words = f"{words} ({sampler})"
        facts = (
            ("chain_method", getattr(owner, "chain_method", None)),
            ("num_chains", getattr(owner, "num_chains", None)),
            # stepped in Python (a progress bar): reused across runs with jit_model_args=True
            ("stepped", name == "_body_fn"),
            ("jit_model_args", getattr(owner, "_jit_model_args", None)),
            # this run's model arguments against the last run's (a second data set)
            ("new_data", _new_data(owner, run)),
        )
    return LibraryJit(
        library=MODULE,
        name=f"numpyro: {words}",
        entry=f"{cls}.{method}",
        role=role,
        facts=facts,
        owner=_weak(owner),
    )


def _weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:
        return None
