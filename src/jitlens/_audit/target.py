"""Load the ``FILE.py:FACTORY`` or ``package.module:FACTORY`` callable a TARGET names."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from .. import _compat
from .. import _pyast as pyast
from .._errors import JitlensError
from .._record import record
from . import script

BAD_TARGET = "TARGET must be FILE.py:FACTORY or package.module:FACTORY, got {target!r}"
NO_FILE = "file not found: {path}"
NO_MODULE = "no module named {module!r} (is it installed, or on PYTHONPATH?)"
#: ``at``: where in the user's code (`` at file:line``), before the error's own words (which
#: may end in a URL: nothing follows them).
IMPORT_FAILED = "importing {where} raised{at}: {error}"
NO_ATTR = "{where} has no attribute {name!r}; callables defined there: {names}"
NOT_CALLABLE = "{where}:{name} is a {type}, not a callable that builds the model"


class AuditError(JitlensError, ValueError):
    """The audit target cannot be loaded or built (bad TARGET, import error, factory raised)."""


@record
class Target:
    """A loaded ``TARGET``: the callable to build with, and what the audit should say about
    how it loaded it (the statements of a script it left out, the ``with`` it builds in)."""

    factory: Callable[[], Any]
    notes: tuple[str, ...] = ()
    #: Built inside the ``with`` block its script calls it in.
    in_context: bool = False
    #: The module the factory is defined in (what a failing build's hint reads).
    module: types.ModuleType | None = None


def load_factory(target: str) -> Callable[[], Any]:
    """The callable named by ``FILE.py:FACTORY`` or ``package.module:FACTORY``.

    Raises:
        AuditError: malformed target, missing file or module, import error,
            no such attribute, or not callable.
    """
    return load_target(target).factory


def load_target(target: str) -> Target:
    """:func:`load_factory`, and how it was loaded (:class:`Target`)."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise AuditError(BAD_TARGET.format(target=target))
    found: script.Script | None = None
    if where.endswith(".py") or "/" in where or os.sep in where:
        if not os.path.isfile(where):
            raise AuditError(NO_FILE.format(path=where))
        module, found = _import_file(where)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            if exc.name and (where == exc.name or where.startswith(exc.name + ".")):
                raise AuditError(NO_MODULE.format(module=exc.name)) from exc
            raise AuditError(_import_failed(where, exc)) from exc
        except Exception as exc:
            raise AuditError(_import_failed(where, exc)) from exc
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            names = ", ".join(sorted(_defined_callables(module))) or "none"
            raise AuditError(NO_ATTR.format(where=where, name=name, names=names))
        obj = getattr(obj, part)
    if not callable(obj):
        raise AuditError(NOT_CALLABLE.format(where=where, name=name, type=type(obj).__name__))
    if found is None:
        return Target(obj, (), module=module)
    file = _compat.short_path(os.path.abspath(where))
    notes = [n for n in (found.note(file),) if n]
    obj, context = script.in_context(obj, module, found, name.rpartition(".")[2], file)
    notes += [context] if context else []
    return Target(obj, tuple(notes), module=module, in_context=context is not None)


def _defined_callables(module: types.ModuleType) -> list[str]:
    return [
        k
        for k, v in vars(module).items()
        if callable(v)
        and not k.startswith("_")
        and getattr(v, "__module__", None) == module.__name__
    ]


def _import_file(path: str) -> tuple[types.ModuleType, script.Script]:
    """Import a file under a private name (never as ``__main__``), beside its neighbours: whole
    when it guards its main part, else its definitions only (``script.run_definitions``)."""
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    modname = "_jitlens_audit_" + "".join(c if c.isalnum() else "_" for c in stem)
    if os.path.dirname(path) not in sys.path:
        sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module  # dataclasses and pickling look classes up here
    try:
        with open(path, encoding="utf-8") as stream:
            source = stream.read()
        tree = pyast.parse(source, path)
        if script.guarded(tree):
            spec.loader.exec_module(module)
            return module, script.Script((), script.contexts(tree))
        return module, script.run_definitions(module, source, path)
    except Exception as exc:
        del sys.modules[modname]
        raise AuditError(_import_failed(_compat.short_path(path), exc)) from exc


def _import_failed(where: str, exc: BaseException) -> str:
    return IMPORT_FAILED.format(where=where, error=_exc_text(exc), at=_user_frame(exc))


#: Longest error text quoted; a longer one is cut at a space, never inside a word or a URL.
EXC_LIMIT = 600


def _exc_text(exc: BaseException, limit: int = EXC_LIMIT) -> str:
    text = " ".join(str(exc).split())
    whole = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if len(whole) <= limit:
        return whole
    return whole[: whole.rfind(" ", 0, limit)].rstrip(" .,;:") + " …"


def _user_frame(exc: BaseException) -> str:
    """`` at file:line`` of the innermost user frame of ``exc``'s traceback."""
    tb, found = exc.__traceback__, ""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if _compat.is_user_file(filename):
            found = f" at {_compat.short_path(filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found
