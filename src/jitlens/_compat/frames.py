"""Where is user code? Frames, files and call sites, read with ``sys._getframe``.

jitlens reports every figure at the user's line: the call that retraced, the
line that defined the function. This module is the only place that walks the
interpreter's frames; it knows which files belong to frameworks (JAX, Flax,
Equinox, optax, jitlens itself, the standard library) and which to the user.
:class:`TraceFrame` is what jitlens reads from JAX's own trace frame
(``jax_api.trace_frame_info`` reads it), typed once here for every reader.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from collections.abc import Mapping
from types import CodeType, FrameType
from typing import Any

from .._peek import is_a, static_attr
from .._record import record
from . import libraries


@record(slots=True)
class TraceFrame:
    """What JAX's ``pjit._trace_for_jit`` frame says about the call it is tracing.

    Read from the frame's locals at a trace-start event (or, for a jit traced
    inside another trace, from its frame still on the stack): the callable JAX
    traces and the arguments as JAX holds them, which a counted call above may
    not show (nnx's split ``NodeState`` s, a library's wrapper's arguments, the
    abstract tracers of a nested trace). What the frame does not hold is
    ``None`` (unknown), never an empty default that would read as "none".
    """

    #: The callable JAX traces: the user's function, or a library's wrapper around it
    #: (nnx's split function, ``equinox``'s filter function, a pmap's shard_map body).
    fun: Any
    #: The positional arguments JAX traces ``fun`` with.
    args: tuple[Any, ...]
    #: The keyword arguments JAX traces ``fun`` with (read-only: a copy of the frame's).
    kwargs: Mapping[str, Any]
    #: JAX's ``DebugInfo`` of the traced function (its name and source line), or None.
    debug_info: Any | None
    #: The jit's ``static_argnums`` as JAX normalised them; None when the frame has no
    #: jit info to read them from.
    static_argnums: tuple[int, ...] | None
    #: The jit's ``static_argnames``; None when unknown, as ``static_argnums``.
    static_argnames: tuple[str, ...] | None
    #: ``(treedef, leaves, names)`` of ``((args, kwargs), {})`` as JAX flattened them for
    #: this trace (statics are leafless nodes; ``names``: each leaf's path as JAX's debug info
    #: wrote it, or None); None when the frame does not hold them.
    flat: tuple[Any, tuple[Any, ...], tuple[str, ...] | None] | None = None

    def statics_or(
        self, argnums: tuple[int, ...], argnames: tuple[str, ...]
    ) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """``(static_argnums, static_argnames)``, each the given one where the frame's is unknown.

        The callers pass the record's (the options jitlens saw at ``jax.jit``): the
        best knowledge left, where an empty default would call every argument traced.
        """
        return (
            argnums if self.static_argnums is None else self.static_argnums,
            argnames if self.static_argnames is None else self.static_argnames,
        )


#: The directory of the installed ``jitlens`` package.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Packages whose files are frameworks', not the user's, besides those of the libraries
#: ``_compat/*_api`` modules declare (``libraries.packages()``): :func:`framework_packages`.
FRAMEWORK_PACKAGES = (
    "jax",
    "jaxlib",
    "optax",
    "chex",
    "orbax",
    "numpy",
    # libraries whose jits run the user's model: internal unless their trace is
    # the user's business (``_compat/library_jits``)
    "keras",
    "numpyro",
    "blackjax",
    "treescope",
    "ml_dtypes",
    "jitlens",
    "_pytest",
    "pluggy",
)

#: jitlens' own examples of user code (the demo, the exercise) count as user code:
#: these files of the installed package, not any file whose path ends alike.
_USER_CODE_IN_JITLENS = frozenset(
    os.path.join(PACKAGE_DIR, "_exercise", name) for name in ("demo.py", "forward.py")
)
_ROOTS: tuple[str, ...] | None = None
_USER_CACHE: dict[str, bool] = {}
_LOADED = [0]


def caller(depth: int) -> FrameType | None:
    """The frame ``depth`` levels above the caller of this function (None past the top)."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:
        return None


@functools.cache
def framework_packages() -> tuple[str, ...]:
    """Every package whose files are a framework's: :data:`FRAMEWORK_PACKAGES` and the
    packages of the declared libraries (Flax, Equinox, ...)."""
    return tuple(dict.fromkeys(FRAMEWORK_PACKAGES + libraries.packages()))


def _framework_roots() -> tuple[str, ...]:
    roots = []
    for name in framework_packages():
        mod = sys.modules.get(name)
        f = getattr(mod, "__file__", None)
        if f:
            roots.append(os.path.dirname(os.path.abspath(f)) + os.sep)
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.append(os.path.abspath(p) + os.sep)
    return tuple(dict.fromkeys(roots))


#: Folders pip installs packages into: every file under one is a library's (dm-haiku,
#: diffrax, optimistix... whichever), never the user's to edit. A project installed editable
#: (``pip install -e .``) stays in its own folder, the user's.
INSTALLED_FOLDERS = tuple(os.sep + name + os.sep for name in ("site-packages", "dist-packages"))


def is_user_file(filename: str) -> bool:
    """False for JAX, Flax, optax, Equinox, jitlens, the standard library, any installed
    package (a file under ``site-packages``: :data:`INSTALLED_FOLDERS`) and friends.

    Decided by the folders the loaded packages live in and the folders pip installs into,
    never by a name in the path: a project cloned into ``jitlens/`` or named
    ``jax-experiments`` is the user's.
    """
    hit = _USER_CACHE.get(filename)
    if hit is not None:
        return hit
    global _ROOTS
    frameworks = framework_packages()
    loaded = sum(name in sys.modules for name in frameworks)
    if _ROOTS is None or loaded != _LOADED[0]:  # a framework imported since: its files too
        _ROOTS = _framework_roots()
        _LOADED[0] = loaded
    if filename.startswith("<frozen") or filename.startswith("<built-in"):
        result = False
    else:
        path = _absolute(filename) if not filename.startswith("<") else filename
        installed = any(folder in path for folder in INSTALLED_FOLDERS)
        result = not (path.startswith(_ROOTS) or installed) or path in _USER_CODE_IN_JITLENS
    _USER_CACHE[filename] = result
    return result


_MODEL_CACHE: dict[str, bool] = {}


def is_model_library_file(filename: str) -> bool:
    """Is ``filename`` part of a library whose loops build the user's model (``nnx.Sequential``,
    ``eqx.nn.Sequential``: ``Library.builds_models``), as imported by the program? A loop
    there that the trace unrolls is the user's program's size too."""
    hit = _MODEL_CACHE.get(filename)
    if hit is None:
        roots = []
        for name in libraries.model_packages():
            f = getattr(sys.modules.get(name), "__file__", None)
            if f:
                roots.append(os.path.dirname(os.path.abspath(f)) + os.sep)
        hit = bool(roots) and _absolute(filename).startswith(tuple(roots))
        if len(_MODEL_CACHE) > 10_000:
            _MODEL_CACHE.clear()
        _MODEL_CACHE[filename] = hit
    return hit


_API_CACHE: dict[str, str] = {}


def model_api(filename: str) -> str:
    """The model API a library file belongs to (``Library.model_apis``: ``nnx``, ``linen``,
    ``haiku``, ``eqx``), as imported by the program; "" for any other file. A loop whose
    body runs such a file's modules is fixed in that API's terms."""
    hit = _API_CACHE.get(filename)
    if hit is None:
        path = _absolute(filename)
        hit = ""
        for module, api in libraries.model_apis():
            f = getattr(sys.modules.get(module), "__file__", None)
            if f and path.startswith(os.path.dirname(os.path.abspath(f)) + os.sep):
                hit = api
                break
        if len(_API_CACHE) > 10_000:
            _API_CACHE.clear()
        _API_CACHE[filename] = hit
    return hit


def short_path(filename: str) -> str:
    """A path as Python's tracebacks and pytest show it, normalised (``sub/../prog.py`` is
    ``prog.py``): relative to the working directory when below it (as pytest shows a test);
    package-relative for installed code; else absolute, as a traceback names a script run
    from another folder (``python ../../x/y.py`` fails "in /home/me/x/y.py", never in
    ``../../x/y.py``, which reads wrong as soon as the reader is in another folder)."""
    if filename.startswith("<"):
        return filename
    here = working_dir()
    if here is None:
        return _absolute(filename)
    try:
        rel = os.path.relpath(filename, here)
    except ValueError:  # another drive
        return os.path.normpath(filename)
    if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
        return rel
    full = _absolute(filename)
    if full.startswith(PACKAGE_DIR + os.sep):
        return "jitlens" + full[len(PACKAGE_DIR) :]
    site = os.sep + "site-packages" + os.sep
    if site in full:
        return full.split(site, 1)[1]
    return full


#: The working folder as last read: the program may remove it (``os.chdir(d); os.rmdir(d)``),
#: after which ``os.getcwd()`` raises, and a path is shown from where it was.
_LAST_CWD: list[str | None] = [None]


def working_dir() -> str | None:
    """The working folder, never raising: the last one read once the program removed it
    (``None``: removed before jitlens ever read it)."""
    try:
        _LAST_CWD[0] = os.getcwd()
    except OSError:
        pass
    return _LAST_CWD[0]


def _absolute(path: str) -> str:
    """``os.path.abspath`` that never raises (a relative path is taken from :func:`working_dir`)."""
    if os.path.isabs(path):
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(working_dir() or os.sep, path))


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The first user frame at or above ``frame``."""
    f = frame
    while f is not None:
        if is_user_file(f.f_code.co_filename):
            return f
        f = f.f_back
    return None


def user_call_site(frame: FrameType | None) -> str:
    """``file:line`` of the first user frame at or above ``frame``."""
    f = user_frame(frame)
    if f is None:
        return "?"
    return f"{short_path(f.f_code.co_filename)}:{f.f_lineno}"


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the caller point at user code."""
    frame = caller(2)  # stacklevel 2: the caller's caller
    level = 2
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level if frame is not None else 2


def find_locals(
    frame: FrameType | None, codes: frozenset[object], limit: int
) -> tuple[int, dict[str, object], object] | None:
    """``(id, locals, code)`` of the first frame at or above ``frame`` running one of ``codes``."""
    f = frame
    for _ in range(limit):
        if f is None:
            return None
        if f.f_code in codes:
            return id(f), f.f_locals, f.f_code
        f = f.f_back
    return None


def package_of(fn: Any) -> str | None:
    """The installed library (a ``framework_packages()`` name) whose file defines ``fn``."""
    code = static_attr(
        static_attr(fn, "__func__", fn), "__code__"
    )  # (no code of the program's runs)
    if not is_a(code, CodeType):
        return None
    return library_of_file(code.co_filename, framework_packages())


def holds_user_code(obj: Any) -> bool:
    """Does ``obj``, a library's object (a keras model), hold code of the user's: a method of
    its class (or a base of it) defined in a user file (``class CustomModel(keras.Model)`` with
    its own ``train_step``)? A model built of the library's parts alone holds none."""
    if obj is None:
        return False
    try:
        mro = type(obj).__mro__
    except Exception:
        return False
    for cls in mro[:-1]:
        for value in list(vars(cls).values())[:256]:
            func = getattr(value, "__func__", value)
            code = getattr(func, "__code__", None)
            filename = getattr(code, "co_filename", None)
            if isinstance(filename, str) and is_user_file(filename):
                return True
    return False


def library_of_file(filename: str, names: tuple[str, ...]) -> str | None:
    """Which of the loaded packages ``names`` holds ``filename`` (site-, dist-packages, editable)."""
    for name in names:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path and filename.startswith(os.path.dirname(os.path.abspath(path)) + os.sep):
            return name
    return None


def frames_up(frame: FrameType | None, limit: int = 40) -> list[FrameType]:
    out = []
    f = frame
    while f is not None and len(out) < limit:
        out.append(f)
        f = f.f_back
    return out


def loaded(module: str) -> bool:
    return module in sys.modules


def name_in_frame_matching(match: Any, frame: FrameType | None) -> str:
    """The first name the code at ``frame`` holds a value by for which ``match(value)`` is
    true (its locals, then its globals), or ""."""
    if frame is None:
        return ""
    for scope in (frame.f_locals, frame.f_globals):
        for k, v in list(scope.items()):
            if isinstance(k, str) and k.isidentifier() and not k.startswith("_") and match(v):
                return k
    return ""


def name_in_frame(obj: Any, frame: FrameType | None) -> str:
    """The name the code at ``frame`` holds ``obj`` by (its locals, then its globals), or ""."""
    if frame is None:
        return ""
    for scope in (frame.f_locals, frame.f_globals):
        for k, v in scope.items():
            if v is obj and k.isidentifier() and not k.startswith("_"):
                return k
    return ""


def users_spelling(fun: Any, frame: Any) -> str | None:
    """A library's callable as the code at ``frame`` reaches it: ``model.apply`` for a bound
    method of its ``model``, ``opt.update`` for optax's ``update_fn`` closure held in a field of
    its NamedTuple ``opt``; None when the function's own name reads well (``sin``)."""
    import types

    owner = getattr(fun, "__self__", None)
    if owner is not None and not isinstance(owner, (type, types.ModuleType)):
        name = name_in_frame(owner, frame)
        method = getattr(fun, "__name__", None)
        return f"{name}.{method}" if name and isinstance(method, str) else None
    if "<locals>" not in getattr(fun, "__qualname__", ""):
        return None

    def holds(value: Any) -> bool:
        fields = getattr(value, "_fields", None)
        return isinstance(fields, tuple) and any(
            isinstance(f, str) and getattr(value, f, None) is fun for f in fields
        )

    owner = name_in_frame_matching(holds, frame)
    if not owner:
        return getattr(fun, "__name__", None)
    value = frame.f_locals.get(owner, frame.f_globals.get(owner))
    field = next(f for f in value._fields if getattr(value, f, None) is fun)
    return f"{owner}.{field}"
