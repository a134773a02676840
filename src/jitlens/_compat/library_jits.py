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
import os
import sys
from types import FrameType
from typing import Any

from .frames import framework_packages, is_user_file

#: Libraries whose jits run the user's model: a jit they make whose callable reaches
#: the user's code is the user's row (JAX's, Flax's and optax's own jits are not).
LIBRARIES = ("keras", "numpyro", "blackjax")
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


def package_of(fn: Any) -> str | None:
    """The installed library (a ``framework_packages()`` name) whose file defines ``fn``."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    filename = getattr(code, "co_filename", None)
    if not isinstance(filename, str):
        return None
    return library_of_file(filename, framework_packages())


def library_of_file(filename: str, names: tuple[str, ...]) -> str | None:
    """Which of the loaded packages ``names`` holds ``filename`` (site-, dist-packages, editable)."""
    for name in names:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path and filename.startswith(os.path.dirname(os.path.abspath(path)) + os.sep):
            return name
    return None


def library_name(fn: Any) -> str | None:
    """``numpyro: SVI.update``: a library callable the user jitted, in the library's terms.

    Only for :data:`LIBRARIES`: a user's ``jax.jit(jnp.cos)`` stays JAX's (hidden).

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
    it calls says which (``blackjax.mcmc.hmc``).
    """
    own = getattr(func, "__module__", None)
    for cell in getattr(func, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        module = getattr(value, "__module__", None)
        if callable(value) and isinstance(module, str) and module != own:
            if module.split(".", 1)[0] == top:
                return module
    return None


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


def frames_up(frame: FrameType | None, limit: int = 40) -> list[FrameType]:
    out = []
    f = frame
    while f is not None and len(out) < limit:
        out.append(f)
        f = f.f_back
    return out


def loaded(module: str) -> bool:
    return module in sys.modules
