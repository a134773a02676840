"""``jitlens audit``: build a model twice and report the statics that will recompile nnx.jit."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import functools
import importlib
import importlib.util
import inspect
import io
import json
import os
import sys
import textwrap
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
from flax import nnx

from . import _compat
from . import _messages as M
from ._errors import JitlensError
from ._explain import diff_keys
from ._report import Reason, write_atomic
from ._signature import (
    Entry,
    Key,
    Path,
    StaticVal,
    compares_by_identity,
    render_path,
    short_repr,
    walk_graphdef,
)

#: ``AuditFinding.severity``, most severe first.
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")

ERROR_CONSEQUENCE = "every new instance holds a new object and the cache key never matches"
HOLDING_DESC = "a `{type}` holding {desc}"
SHARED_MSG = (
    "{what} is {desc}, which compares by identity; both builds share one object today, but once "
    "it is built per instance every new model recompiles."
)
NUMBER_MSG = (
    "{what} is a Python {type} ({value}) kept as a static: it is part of the cache key, so if it "
    "changes during training (a step counter, a schedule) every new value compiles again."
)
VAR_NUMBER_MSG = (
    "{what} is a number ({value}) in the metadata of `{var}` ({type}): metadata is part of the "
    "cache key, so if it changes during training every new value compiles again."
)
UNHASHABLE_MSG = (
    "{what} is a `{type}`, which is not hashable: nnx.jit copes (it only compares GraphDefs), but "
    "`hash(graphdef)` raises, so `jax.jit(f, static_argnums=0)(graphdef, state)` fails."
)
UNHASHABLE_FIX = "Store a hashable value: {suggestion}."
UNHASHABLE_SUGGESTIONS = {
    "list": "`self.{attr} = tuple(...)`",
    "set": "`self.{attr} = frozenset(...)`",
    "dict": "`self.{attr} = flax.core.FrozenDict(...)` (or a tuple of items)",
    "dataclass": "declare `{type}` with `@dataclasses.dataclass(frozen=True)`",
    "other": "define `__hash__` on `{type}`, consistent with its `__eq__`",
}
COMPARE_MSG = (
    "Comparing {what} of two builds raises {error}: nnx.jit compares each call's GraphDef with the "
    "cached ones, so a second instance fails ('Exception raised while checking equality ...')."
)
COMPARE_FIX = (
    "Give `{type}` an `__eq__` that returns a plain bool (e.g. "
    "`@dataclasses.dataclass(frozen=True)` over hashable fields), or share one object."
)
HIDDEN_MSG = (
    "{what} is a static `{type}` holding {inner}{where}: nnx does not track data inside statics, "
    "so nnx.jit fails on it or freezes it into the compiled code as a constant."
)
HIDDEN_TOP_MSG = (
    "{what} is {inner} kept as a static: nnx compares it on every call, so nnx.jit fails on it or "
    "freezes it into the compiled code as a constant."
)
HIDDEN_ARRAY_FIX = (
    "Keep arrays in Variables (`self.{attr} = nnx.Variable(jnp.asarray(...))`) and only "
    "configuration (numbers, strings, tuples) in statics."
)
HIDDEN_NODE_FIX = (
    "Store Modules and Variables as attributes of the Module itself (`self.{attr} = ...`, or an "
    "`nnx.List` / `nnx.Dict` of them), not inside a plain object or a partial."
)
NOT_ARRAY_MSG = (
    "{what} holds a `{type}` ({value}) as data, not an array: nnx.jit fails with 'Error "
    "interpreting argument ... as an abstract array'."
)
NOT_ARRAY_FIX = (
    "Hold arrays in Variables (`nnx.Param(jnp.asarray(...))`); keep a non-array value as a plain "
    "static attribute (`self.{attr} = ...`, without nnx.data or a Variable)."
)
SPLIT_MSG = (
    "`nnx.split({root})` raises {error}: nnx.jit and every nnx transform split their arguments "
    "first, and would fail the same way."
)
SPLIT_FIX = (
    "Fix the attribute the error names: arrays, Variables and Modules belong in data attributes, "
    "configuration in hashable statics."
)
FLAX_ARG_FIX = (
    "Create it once at module level (`{const} = {expr}`) and pass that same object: "
    "`{cls}(..., {attr}={const})`."
)

LIBRARY_CLOSURE_FIX = (
    "Make it once at module level (`{const} = ...`, the call that returned this "
    "`{expr}` closure) and assign that same object to `self.{attr}`."
)

HEADER = "jitlens audit {target}: built twice; {roots}; {statics} statics compared"
SUMMARY = "{errors} error{es}, {warnings} warning{ws}, {infos} info."
ERRORS_FOOTER = "Each error recompiles every nnx.jit function for each new instance (exit 1)."
CLEAN = "No recompile traps found: two fresh builds give equal cache keys."
EVIDENCE_BUILDS = "builds: {before} -> {after}"
EVIDENCE_NEW = "builds: {value}, a new object in each"
EVIDENCE_SHARED = "value: {value}, one object shared by both builds"
EVIDENCE_VALUE = "value: {value}"

BAD_TARGET = "TARGET must be FILE.py:FACTORY or package.module:FACTORY, got {target!r}"
NO_FILE = "file not found: {path}"
NO_MODULE = "no module named {module!r} (is it installed, or on PYTHONPATH?)"
IMPORT_FAILED = "importing {where} raised {error}{at}"
NO_ATTR = "{where} has no attribute {name!r}; callables defined there: {names}"
NOT_CALLABLE = "{where}:{name} is a {type}, not a callable that builds the model"
FACTORY_RAISED = "{name}() raised {error}{at}"
NOT_NNX = (
    "{name}() returned {what}; expected an NNX object (a Module, an nnx.Optimizer) or a "
    "tuple/list/dict of them"
)

_LIBRARIES = frozenset(_compat._FRAMEWORK_PACKAGES)
_MAX_ITEMS = 64
_MAX_DEPTH = 4
_MAX_VISITS = 2000


class AuditError(JitlensError, ValueError):
    """The audit target cannot be loaded or built (bad TARGET, import error, factory raised)."""


@dataclasses.dataclass(frozen=True)
class AuditFinding:
    """One recompile trap at one user path, in the explainer's words."""

    severity: str
    kind: str
    path: str
    before: str
    after: str
    message: str
    fix: str


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Everything ``audit`` found, errors first; ``exit_code`` is what the CLI returns."""

    target: str
    roots: tuple[str, ...]
    statics: int
    seconds: float
    findings: tuple[AuditFinding, ...]

    def _of(self, severity: str) -> tuple[AuditFinding, ...]:
        return tuple(f for f in self.findings if f.severity == severity)

    @property
    def errors(self) -> tuple[AuditFinding, ...]:
        return self._of("error")

    @property
    def warnings(self) -> tuple[AuditFinding, ...]:
        return self._of("warning")

    @property
    def infos(self) -> tuple[AuditFinding, ...]:
        return self._of("info")

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["seconds"] = round(self.seconds, 3)
        data["counts"] = {s: len(self._of(s)) for s in SEVERITIES}
        data["exit_code"] = self.exit_code
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return render_audit(self)


# -- building and describing ------------------------------------------------------------------


def audit(factory: Callable[[], Any] | str) -> AuditResult:
    """Build ``factory()`` twice and report what would make ``nnx.jit`` recompile.

    ``nnx.jit`` keys its cache on the GraphDef, which holds every static
    attribute by value: two fresh, identically configured models must give
    equal keys, or each new instance compiles again (the seed's
    ``functools.partial`` stored on a Module). The two builds are compared with
    the explainer's own key walk and diff, so findings read like ``jitlens run``:

    * ``error``: statics that differ between the builds, and statics nnx or
      JAX rejects later (unhashable, ``==`` raising, arrays or Modules hidden
      in a static, data that is not an array, ``nnx.split`` raising);
    * ``warning``: identity-compared statics both builds happen to share that
      are not reachable by name, one refactor away from a recompile;
    * ``info``: Python numbers on user Modules (and in Variable metadata),
      a recompile per value if they change during training.

    ``factory`` takes no arguments and returns a Module, an ``nnx.Optimizer``,
    or a tuple/list/dict of them (paths then start with ``model``,
    ``optimizer`` or the dict's keys); a ``"file.py:factory"`` or
    ``"pkg.mod:factory"`` string names one. No jitted function is called.

    Example:
        >>> from flax import nnx
        >>> audit(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0))).findings
        ()

    Raises:
        AuditError: the target cannot be loaded, the factory raises, or it
            returns no NNX object.

    See also: ``jitlens lint`` finds traps in source without running it;
    ``chex.assert_max_traces`` / ``equinox.debug.assert_max_traces`` count
    traces once training runs, where shapes and values show too.
    """
    start = time.perf_counter()
    if isinstance(factory, str):
        target, factory = factory, load_factory(factory)
    else:
        target = getattr(factory, "__qualname__", None) or repr(factory)
    name = getattr(factory, "__name__", "factory")
    roots_a = _roots(_build(factory, name), name)
    roots_b = _roots(_build(factory, name), name)
    a, rejected = _describe(roots_a)
    b, _ = _describe(roots_b)
    split_errors = [
        AuditFinding("error", "graph_structure", root, "", "", M._cap(msg), M._cap(fix))
        for root, (msg, fix) in rejected.items()
    ]
    findings = split_errors + _Audit(a, b).run()
    return AuditResult(
        target=target,
        roots=tuple(f"{r}: {type(obj).__name__}" for r, obj in roots_a),
        statics=sum(1 for e in a.values() if e.kind == "static" and e.in_graph),
        seconds=time.perf_counter() - start,
        findings=tuple(sorted(findings, key=lambda f: SEVERITIES.index(f.severity))),
    )


def _build(factory: Callable[[], Any], name: str) -> Any:
    try:
        return factory()
    except Exception as exc:
        error, at = _exc_text(exc), _user_frame(exc)
        raise AuditError(FACTORY_RAISED.format(name=name, error=error, at=at)) from exc


def _roots(obj: Any, name: str) -> list[tuple[str, Any]]:
    """``[(name a user would write, graph node)]`` for what the factory returned."""
    if _compat.is_graph_node(obj):
        return [(_role(obj), obj)]
    items: list[tuple[str, Any]] = []
    if isinstance(obj, Mapping):
        items = [(str(k), v) for k, v in obj.items()]
    elif isinstance(obj, (tuple, list)):
        roles = [_role(v) for v in obj]
        items = [
            (r if roles.count(r) == 1 else f"{r}_{i}", v)
            for i, (r, v) in enumerate(zip(roles, obj, strict=True))
        ]
    bad = [v for _, v in items if not _compat.is_graph_node(v)] or ([] if items else [obj])
    if bad:
        what = f"{short_repr(bad[0], 60)} (a {type(bad[0]).__name__})"
        raise AuditError(NOT_NNX.format(name=name, what=what))
    return items


def _role(obj: Any) -> str:
    if isinstance(obj, nnx.Optimizer):
        return "optimizer"
    if isinstance(obj, nnx.metrics.Metric):
        return "metrics"
    return "rngs" if isinstance(obj, nnx.Rngs) else "model"


def _describe(roots: list[tuple[str, Any]]) -> tuple[dict[Path, Entry], dict[str, tuple[str, str]]]:
    """The key entries of all roots, split together as one nnx.jit call splits its arguments."""
    out: dict[Path, Entry] = {}
    rejected: dict[str, tuple[str, str]] = {}
    ref_index = _compat.new_ref_map()
    for name, node in roots:
        flat = _compat.flatten_node(node, ref_index)
        if flat is not None:
            walk_graphdef(flat[0], flat[1], (("arg", name),), out)
            continue
        try:
            nnx.split(node)
            error = "an error jitlens could not reproduce alone"
        except Exception as exc:
            error = _exc_text(exc)
        rejected[name] = (SPLIT_MSG.format(root=name, error=error), SPLIT_FIX)
    return out, rejected


# -- the checks -------------------------------------------------------------------------------


def _finding(severity: str, r: Reason) -> AuditFinding:
    return AuditFinding(severity, r.kind, r.path, r.before, r.after, r.message, r.fix)


def _at(
    kind: str, p: Path, before: str, after: str, message: str, fix: str, path: str = ""
) -> Reason:
    return M._reason(kind, str(p[0][1]), path or render_path(p), before, after, message, fix)


def _attr(p: Path) -> str:
    return str(p[-1][1]) if p else ""


class _Audit:
    """The findings of two builds' key entries: errors, warnings, infos, in graph order."""

    def __init__(self, a: dict[Path, Entry], b: dict[Path, Entry]) -> None:
        self.a, self.b = a, b
        self.names = _Reachable()
        self.order = {p: i for i, p in enumerate(a)}

    def run(self) -> list[AuditFinding]:
        errors: dict[Path, list[Reason]] = {}
        broken: set[Path] = set()  # statics whose diff would say nothing more
        for p, e in self.a.items():
            if e.kind != "static" or e.static is None:
                continue
            found, fatal = (
                self._not_array(p, e.static) if not e.in_graph else self._static_errors(p, e.static)
            )
            if found:
                errors[p] = found
            if fatal:
                broken.add(p)
        by_text = {render_path(p): p for p in self.b} | {render_path(p): p for p in self.a}
        for r in diff_keys(Key(self.a, (), "", ""), Key(self.b, (), "", "")):
            p = by_text.get(r.path, ())
            if not p and r.kind == "variable_metadata":  # named ``var.key``
                var, _, key = r.path.rpartition(".")
                p = (*by_text.get(var, ()), ("attr", key))
            if p not in broken:
                errors.setdefault(p, []).append(self._refine(p, r))
        found = [(p, _finding("error", r)) for p, rs in errors.items() for r in rs]
        for p, e in self.a.items():
            if e.kind == "var":
                found += [(p, f) for f in self._metadata(p, e, errors)]
            elif e.kind == "static" and e.in_graph and e.static is not None and p not in errors:
                shared, number = self._shared_identity(p, e.static), self._number(p, e.static)
                found += [(p, _finding("warning", shared))] if shared else []
                found += [(p, _finding("info", number))] if number else []
        found.sort(key=lambda pf: self.order.get(pf[0], self.order.get(pf[0][:-1], -1)))
        return [f for _, f in found]

    def _owner(self, p: Path) -> type | None:
        e = self.a.get(p[:-1])
        t = e.type_ref() if e is not None and e.kind == "node" and e.type_ref is not None else None
        return t if isinstance(t, type) else None

    # errors

    def _static_errors(self, p: Path, sv: StaticVal) -> tuple[list[Reason], bool]:
        """Errors of one static of the first build, and whether diffing it is meaningless."""
        value, path, attr = sv.value(), render_path(p), _attr(p)
        hidden = _hidden_data(value)
        if hidden is not None:
            inner, sub = hidden
            if sub is None:
                msg = HIDDEN_TOP_MSG.format(what=f"`{path}`", inner=inner)
            else:
                where = f" (at `{sub}`)" if sub else ""
                msg = HIDDEN_MSG.format(
                    what=f"`{path}`", type=type(value).__name__, inner=inner, where=where
                )
            fix = (HIDDEN_ARRAY_FIX if "array" in inner else HIDDEN_NODE_FIX).format(attr=attr)
            return [_at("graph_structure", p, sv.display(), sv.display(), msg, fix)], True
        out, fatal = [], False
        other = self.b.get(p)
        if other is not None and other.kind == "static" and other.static is not None:
            try:
                bool(value == other.static.value())
            except Exception as exc:
                msg = COMPARE_MSG.format(what=f"`{path}`", error=_exc_text(exc, 60))
                fix = COMPARE_FIX.format(type=type(value).__name__)
                out.append(_at("static_value", p, sv.display(), other.static.display(), msg, fix))
                fatal = True
        try:
            hash(value)
        except Exception:
            msg = UNHASHABLE_MSG.format(what=f"`{path}`", type=type(value).__name__)
            out.append(_at("static_value", p, sv.text, sv.text, msg, _unhashable_fix(value, attr)))
        return out, fatal

    def _not_array(self, p: Path, sv: StaticVal) -> tuple[list[Reason], bool]:
        """A data leaf (Variable value, ``nnx.data``) that JAX cannot turn into an array."""
        is_var = p[-1] == ("attr", "value") and getattr(self.a.get(p[:-1]), "kind", "") == "var"
        var = p[:-1] if is_var else p
        path = render_path(var)
        msg = NOT_ARRAY_MSG.format(
            what=f"`{path}`", type=sv.type_name, value=short_repr(sv.value(), 40)
        )
        fix = NOT_ARRAY_FIX.format(attr=_attr(var))
        return [_at("graph_structure", p, sv.text, sv.text, msg, fix, path=path)], True

    def _refine(self, p: Path, r: Reason) -> Reason:
        """The diff's reason; a static rebuilt per instance is described by what is rebuilt."""
        pair = self._statics(p)
        if pair is None or pair[1].value() is None:  # not a static, or not kept alive
            return r
        sa, sb = pair
        old, new = sa.value(), sb.value()
        if not (compares_by_identity(new) or _rebuilt(old, new)):
            if r.kind != "identity_static":
                return r
            return M.static_value(str(p[0][1]), r.path, _attr(p), sa, sb, in_graph=True)
        whole = compares_by_identity(new) or "GradientTransformation" in sb.type_name
        part = new if whole else (_first_rebuilt(old, new) or (old, new))[1]
        desc, fix = self._identity_words(p, part, new)
        msg = M.IDENTITY_MSG.format(what=f"`{r.path}`", desc=desc, consequence=ERROR_CONSEQUENCE)
        kind = "variable_metadata" if r.kind == "variable_metadata" else "identity_static"
        return _at(kind, p, sa.display(), sb.display(), msg, fix)

    def _statics(self, p: Path) -> tuple[StaticVal, StaticVal] | None:
        """The two builds' values at ``p``: a static attribute, or a Variable's metadata."""
        pair = []
        for entries in (self.a, self.b):
            e, var = entries.get(p), entries.get(p[:-1])
            if e is not None and e.static is not None:
                pair.append(e.static)
            elif var is not None and var.kind == "var" and p[-1][1] in dict(var.meta):
                pair.append(dict(var.meta)[p[-1][1]])
            else:
                return None
        return pair[0], pair[1]

    def _identity_words(self, p: Path, part: Any, value: Any) -> tuple[str, str]:
        """The explainer's description and fix of ``part``, an identity-compared object in ``value``.

        A static of a flax layer, or Variable metadata, is fixed where the
        layer or Variable is built (``nnx.Linear(dot_general=...)``); a closure
        made by a library where it is made; list items have no ``self.<name>``.
        """
        path, attr, owner = render_path(p), _attr(p), self._owner(p)
        item = p[-1][0] != "attr" or not attr.isidentifier()
        sv = StaticVal(part)
        if item:
            desc, fix = M._identity_fix(part, "fn", path, path, False, sv)
        else:
            desc, fix = M._identity_fix(part, attr, path, str(p[0][1]), True, sv)
        if part is not value:
            desc = HOLDING_DESC.format(type=type(value).__name__, desc=desc)
        expr = _construction(part)
        var = self.a.get(p[:-1])
        if var is not None and var.kind == "var":
            cls = f"nnx.{var.type_name}" if hasattr(nnx, var.type_name) else var.type_name
            fix = FLAX_ARG_FIX.format(const=attr.upper(), expr=expr or "...", cls=cls, attr=attr)
        elif expr and owner is not None and _is_library(owner) and attr in _init_params(owner):
            cls = _flax_name(owner)
            fix = FLAX_ARG_FIX.format(const=attr.upper(), expr=expr, cls=cls, attr=attr)
        elif expr and not item and inspect.isfunction(part) and _is_library(part):
            fix = LIBRARY_CLOSURE_FIX.format(const=attr.upper(), expr=expr, attr=attr)
        return desc, M._cap(fix)

    # warnings and infos

    def _shared_identity(self, p: Path, sv: StaticVal) -> Reason | None:
        value, owner = sv.value(), self._owner(p)
        defaults = _init_defaults(owner) if owner is not None else frozenset()
        parts = _unstable_parts(value, lambda x: id(x) in defaults or self.names.stable(x))
        if not parts:
            return None
        desc, fix = self._identity_words(p, parts[0], value)
        msg = SHARED_MSG.format(what=f"`{render_path(p)}`", desc=desc)
        return _at("identity_static", p, sv.display(), sv.display(), msg, fix)

    def _number(self, p: Path, sv: StaticVal) -> Reason | None:
        value, owner, attr = sv.value(), self._owner(p), _attr(p)
        if not _is_number(value) or owner is None or not issubclass(owner, nnx.Pytree):
            return None
        if _is_library(owner) or attr in _library_attrs(owner):
            return None
        msg = NUMBER_MSG.format(
            what=f"`{render_path(p)}`", type=type(value).__name__, value=sv.text
        )
        fix = M.STATIC_GRAPH_FIX.format(attr=attr, before=sv.text)
        return _at("static_value", p, sv.text, sv.text, msg, fix)

    def _metadata(self, p: Path, e: Entry, errors: Mapping[Path, Any]) -> list[AuditFinding]:
        """Numbers, and shared identity-compared values, in a Variable's metadata."""
        out = []
        for key, sv in e.meta:
            mp = (*p, ("attr", key))
            if mp in errors:
                continue
            if _is_number(sv.value()):
                what, var = f"`{render_path(mp)}`", render_path(p)
                msg = VAR_NUMBER_MSG.format(what=what, value=sv.text, var=var, type=e.type_name)
                fix = M.VAR_META_FIX.format(key=key)
                out.append(
                    _finding("info", _at("variable_metadata", mp, sv.text, sv.text, msg, fix))
                )
            elif (shared := self._shared_identity(mp, sv)) is not None:
                out.append(
                    _finding("warning", dataclasses.replace(shared, kind="variable_metadata"))
                )
        return out


def _construction(part: Any) -> str:
    """Code that builds ``part`` again, for a module-level constant (``""``: none to offer)."""
    if isinstance(part, functools.partial):
        args = [M._qualified(part.func), *(short_repr(a, 30) for a in part.args)]
        args += [f"{k}={short_repr(v, 30)}" for k, v in part.keywords.items()]
        return f"functools.partial({', '.join(args)})"
    if not inspect.isfunction(part):
        return ""
    if part.__name__ == "<lambda>":
        return "lambda ...: ..."
    maker, _, rest = part.__qualname__.partition(".<locals>.")
    return f"{maker}(...)" if rest else part.__name__


def _unhashable_fix(value: Any, attr: str) -> str:
    tn = type(value).__name__
    key = tn if tn in ("list", "set", "dict") else "other"
    key = "dataclass" if dataclasses.is_dataclass(value) else key
    return UNHASHABLE_FIX.format(suggestion=UNHASHABLE_SUGGESTIONS[key].format(attr=attr, type=tn))


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


# -- what compares how ------------------------------------------------------------------------


def _children(x: Any) -> list[tuple[str, Any]]:
    """``(sub-path, child)`` of containers, dataclasses and partials (not arbitrary objects)."""
    if isinstance(x, (tuple, list)):
        fields = getattr(x, "_fields", None)
        if fields is not None:
            return [(f".{f}", v) for f, v in zip(fields, x, strict=False)]
        return [(f"[{i}]", v) for i, v in enumerate(x[:_MAX_ITEMS])]
    if isinstance(x, (set, frozenset)):
        return [("", v) for v in list(x)[:_MAX_ITEMS]]
    if isinstance(x, Mapping):
        return [(f"[{k!r}]", v) for k, v in list(x.items())[:_MAX_ITEMS]]
    if isinstance(x, functools.partial):
        return [(f"({i})", a) for i, a in enumerate(x.args)] + [
            (f"({k}=)", v) for k, v in x.keywords.items()
        ]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [(f".{f.name}", getattr(x, f.name, None)) for f in dataclasses.fields(x)]
    return []


def _hidden_data(value: Any) -> tuple[str, str | None] | None:
    """``(what, where)`` of the first array / Variable / graph node inside a static value.

    ``where`` is ``None`` when the static itself is one, else its sub-path
    (``.inner``, ``[0]``); the search is breadth-first and bounded.
    """
    queue: list[tuple[Any, str, int]] = [(value, "", 0)]
    for x, where, depth in queue:
        what = _data_kind(x)
        if what is not None:
            return what, where if depth else None
        if depth >= _MAX_DEPTH or len(queue) > _MAX_VISITS:
            continue
        kids = _children(x)
        if not kids and not callable(x) and not _is_library(type(x)):
            try:  # a plain user object: its attributes
                kids = [(f".{k}", v) for k, v in list(vars(x).items())[:_MAX_ITEMS]]
            except TypeError:
                kids = []
        queue += [(child, where + sub, depth + 1) for sub, child in kids]
    return None


def _data_kind(x: Any) -> str | None:
    if isinstance(x, (jax.Array, np.ndarray)):
        return "an array"
    if _compat.is_graph_node(x):
        kind = "Variable" if isinstance(x, nnx.Variable) else "Module"
        return f"a {kind} (`{type(x).__name__}`)"
    return None


def _rebuilt(a: Any, b: Any, depth: int = 0) -> bool:
    """True when ``a != b`` only because identity-compared objects inside were built anew."""
    if type(a) is not type(b) or depth > _MAX_DEPTH:
        return False
    if compares_by_identity(a):
        return True
    if inspect.ismethod(a):  # equal only when bound to the same object
        return a.__func__ is b.__func__
    ka, kb = _children(a), _children(b)
    if not ka or [k for k, _ in ka] != [k for k, _ in kb]:
        return False
    return all(
        _equal(x, y) or _rebuilt(x, y, depth + 1) for (_, x), (_, y) in zip(ka, kb, strict=True)
    )


def _first_rebuilt(a: Any, b: Any) -> tuple[Any, Any] | None:
    if compares_by_identity(b) and a is not b:
        return a, b
    for (_, x), (_, y) in zip(_children(a), _children(b), strict=False):
        found = None if _equal(x, y) else _first_rebuilt(x, y)
        if found is not None:
            return found
    return None


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _unstable_parts(value: Any, stable: Callable[[Any], bool]) -> list[Any]:
    """Identity-compared objects in ``value`` not reachable by name, shallowest first (bounded)."""
    found: list[Any] = []
    queue: list[tuple[Any, int]] = [(value, 0)]
    for x, depth in queue:
        if x is None or isinstance(x, (bool, int, float, complex, str, bytes, enum.Enum)):
            continue
        if stable(x):
            continue
        if compares_by_identity(x):
            found.append(x)
        elif depth < _MAX_DEPTH and len(queue) <= _MAX_VISITS:
            queue += [(child, depth + 1) for _, child in _children(x)]
    return found


class _Reachable:
    """Objects a user can name: module-level functions, classes, constants, class attributes.

    Such an object is created once per process, so sharing it between
    instances is stable; anything else shared (a cached lambda, a partial
    returned by a memoised helper) holds only as long as that cache does.
    """

    def __init__(self) -> None:
        self._index: dict[int, Any] | None = None

    def stable(self, value: Any) -> bool:
        if value is None or value is ... or value is NotImplemented:
            return True
        if isinstance(value, (types.ModuleType, enum.Enum)) or _by_qualname(value):
            return True
        if self._index is None:
            self._index = _name_index()
        return self._index.get(id(value)) is value


def _by_qualname(value: Any) -> bool:
    try:  # user objects may answer any attribute with anything, or raise
        mod = sys.modules.get(getattr(value, "__module__", None) or "")
        qualname = getattr(value, "__qualname__", None)
        if mod is None or not isinstance(qualname, str) or "<" in qualname:
            return False
        obj: Any = mod
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        return obj is value
    except Exception:
        return False


def _name_index() -> dict[int, Any]:
    """id -> object for every module global; in user modules, class attributes and registries."""
    index: dict[int, Any] = {}
    for modname, mod in list(sys.modules.items()):
        try:
            values = list(vars(mod).values())
        except TypeError:
            continue
        user = modname.partition(".")[0] not in _LIBRARIES
        for v in values:
            index[id(v)] = v
            if not user:
                continue
            if isinstance(v, type) and v.__module__ == modname:
                inner = [getattr(a, "__func__", a) for a in list(vars(v).values())]
            elif isinstance(v, (dict, list, tuple)):  # a registry: ``ACTIVATIONS["gelu"]``
                inner = list(v.values() if isinstance(v, dict) else v)[: _MAX_ITEMS * 4]
            else:
                continue
            index.update((id(x), x) for x in inner)
    return index


def _is_library(obj: Any) -> bool:
    """A class or function defined in flax, jax, optax... (``_compat``'s framework packages)."""
    return (getattr(obj, "__module__", "") or "").partition(".")[0] in _LIBRARIES


@functools.lru_cache(maxsize=256)
def _init_params(cls: type) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(cls.__init__).parameters) - {"self"}
    except (TypeError, ValueError):
        return frozenset()


@functools.lru_cache(maxsize=256)
def _library_attrs(cls: type) -> frozenset[str]:
    """Attribute names a library base class (``nnx.Linear``...) sets: not the user's numbers."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if _is_library(base):
            names |= _init_params(base) | set(getattr(base, "__annotations__", {}))
    return frozenset(names)


@functools.lru_cache(maxsize=256)
def _init_defaults(cls: type) -> frozenset[int]:
    """ids of ``__init__`` default arguments in the MRO: one object for the whole process."""
    ids: set[int] = set()
    for base in cls.__mro__:
        init = vars(base).get("__init__")
        ids |= {id(v) for v in getattr(init, "__defaults__", None) or ()}
        ids |= {id(v) for v in (getattr(init, "__kwdefaults__", None) or {}).values()}
    return frozenset(ids)


def _flax_name(cls: type) -> str:
    return f"nnx.{cls.__name__}" if getattr(nnx, cls.__name__, None) is cls else cls.__name__


# -- loading a TARGET -------------------------------------------------------------------------


def load_factory(target: str) -> Callable[[], Any]:
    """The callable named by ``FILE.py:FACTORY`` or ``package.module:FACTORY``.

    Raises:
        AuditError: malformed target, missing file or module, import error,
            no such attribute, or not callable.
    """
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise AuditError(BAD_TARGET.format(target=target))
    if where.endswith(".py") or "/" in where or os.sep in where:
        if not os.path.isfile(where):
            raise AuditError(NO_FILE.format(path=where))
        module = _import_file(where)
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
    return obj


def _defined_callables(module: types.ModuleType) -> list[str]:
    return [
        k
        for k, v in vars(module).items()
        if callable(v)
        and not k.startswith("_")
        and getattr(v, "__module__", None) == module.__name__
    ]


def _import_file(path: str) -> types.ModuleType:
    """Import a file under a private name (never as ``__main__``), beside its neighbours."""
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
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[modname]
        raise AuditError(_import_failed(_compat.short_path(path), exc)) from exc
    return module


def _import_failed(where: str, exc: BaseException) -> str:
    return IMPORT_FAILED.format(where=where, error=_exc_text(exc), at=_user_frame(exc))


def _exc_text(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:limit] if text else type(exc).__name__


def _user_frame(exc: BaseException) -> str:
    """`` at file:line`` of the innermost user frame of ``exc``'s traceback."""
    tb, found = exc.__traceback__, ""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if _compat.is_user_file(filename):
            found = f" at {_compat.short_path(filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


# -- rendering --------------------------------------------------------------------------------

_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _header(result: AuditResult) -> str:
    roots = ", ".join(result.roots)
    return HEADER.format(target=result.target, roots=roots, statics=result.statics)


def _summary(result: AuditResult) -> str:
    n_err, n_warn = len(result.errors), len(result.warnings)
    es, ws = "" if n_err == 1 else "s", "" if n_warn == 1 else "s"
    text = SUMMARY.format(errors=n_err, es=es, warnings=n_warn, ws=ws, infos=len(result.infos))
    if n_err:
        return f"{text} {ERRORS_FOOTER}"
    return text if n_warn else f"{CLEAN} {text}" if result.infos else CLEAN


def _evidence(f: AuditFinding) -> str:
    if f.before != f.after:
        return EVIDENCE_BUILDS.format(before=f.before, after=f.after)
    if f.kind == "identity_static":
        return (EVIDENCE_NEW if f.severity == "error" else EVIDENCE_SHARED).format(value=f.before)
    return EVIDENCE_VALUE.format(value=f.before)


def render_audit(result: AuditResult, *, color: bool = False, width: int = 100) -> str:
    """The findings as text: a rich table when ``color``, plain wrapped lines otherwise.

    Never raises: if rich fails, the plain text comes back instead.
    """
    if color:
        try:
            return _render_rich(result, width)
        except Exception:
            pass
    lines = [_header(result)]
    for f in result.findings:
        lines += ["", f"{f.severity:<8} {f.path}  ({f.kind})"]
        for text in (f.message, _evidence(f), f"fix: {f.fix}"):
            lines += textwrap.wrap(
                text,
                width,
                initial_indent="    ",
                subsequent_indent="      ",
                break_on_hyphens=False,
                break_long_words=False,
            )
    lines += ["", _summary(result)]
    return "\n".join(lines) + "\n"


def _render_rich(result: AuditResult, width: int) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, highlight=False, emoji=False)
    console.print(Text(_header(result), style="bold"))
    if result.findings:
        table = Table(box=box.SIMPLE_HEAD, expand=True, pad_edge=False, leading=1)
        table.add_column("severity", no_wrap=True)
        table.add_column("path", overflow="fold")
        table.add_column("finding", ratio=1, overflow="fold")
        for f in result.findings:
            body = Text(f.message)
            body.append(f"\n{_evidence(f)}", style="dim")
            body.append(f"\nfix: {f.fix}", style="green")
            severity = Text(f.severity, style=_STYLES[f.severity])
            table.add_row(severity, Text(f"{f.path}\n{f.kind}"), body)
        console.print(table)
    console.print(Text(_summary(result), style="bold red" if result.errors else "green"))
    return buffer.getvalue()


# -- command line -----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jitlens audit",
        description=(
            "Build an NNX model twice, before any training step, and report the statics that make "
            "nnx.jit recompile for every new instance (errors), that are one refactor away from it "
            "(warnings), and Python numbers that recompile if they change (info)."
        ),
        epilog="Exit status: 0 no errors, 1 errors found, 2 the target cannot be loaded or built.",
    )
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="FILE.py:FACTORY or package.module:FACTORY; FACTORY() returns a Module, an "
        "nnx.Optimizer, or a tuple/list/dict of them",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the findings as JSON to PATH")
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="a coloured table (default: when stdout is a terminal)",
    )
    parser.add_argument(
        "--width", type=int, default=None, help="text width (default: terminal, 100)"
    )
    return parser


def cli_main(argv: Sequence[str]) -> int:
    """Run ``jitlens audit`` with ``argv`` (without the program name); return the exit status."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else 2
    try:
        result = audit(args.target)
    except AuditError as exc:
        print(f"jitlens audit: error: {exc}", file=sys.stderr)
        return 2
    tty = sys.stdout.isatty()
    color = args.color == "always" or (args.color == "auto" and tty)
    width = args.width or (os.get_terminal_size().columns if tty else 100)
    sys.stdout.write(render_audit(result, color=color, width=width))
    sys.stdout.flush()
    if args.json:
        write_atomic(args.json, result.to_json() + "\n")
    return result.exit_code
