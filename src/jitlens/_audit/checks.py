"""The findings of two builds' cache-key entries: the errors, warnings and infos of ``audit``."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Mapping
from typing import Any

from .._compat.flax_api import LAZY_NNX as nnx
from .._core import reasons as M
from .._core import reasons as S
from .._core.explain import diff_keys
from .._core.key import (
    Entry,
    Key,
    Path,
    StaticVal,
    compares_by_identity,
    looks_alike,
    render_path,
    short_repr,
)
from .._core.kinds import EntryKind, Fact, ReasonKind, WordsKind
from .._core.report import Reason
from .._core.template_kinds import FixKind
from .._core.words import Template, Words
from .model import AuditFinding, Evidence
from .target import _exc_text
from .values import (
    _first_rebuilt,
    _flax_name,
    _hidden_data,
    _init_defaults,
    _init_params,
    _is_library,
    _library_attrs,
    _Reachable,
    _rebuilt,
    _unstable_parts,
)

ERROR_CONSEQUENCE = "every new instance holds a new object and the cache key never matches"
#: An optimizer is usually built once (the Flax tutorials): its transform only
#: costs a compile when the optimizer is rebuilt, so it is a warning, not an error.
OPTIMIZER_CONSEQUENCE = (
    "nnx.jit recompiles if you rebuild the optimizer (once per run of a sweep, say); an "
    "optimizer built once compiles once"
)
HOLDING_DESC = Template(WordsKind.AUDIT_HOLDING, "a `{type}` holding {desc}")
SHARED_MSG = Template(
    WordsKind.AUDIT_SHARED,
    "{what} is {desc}, which compares by identity; both builds share one object today, but once "
    "it is built per instance every new model recompiles.",
)
NUMBER_MSG = Template(
    WordsKind.AUDIT_NUMBER,
    "{what} is a Python {type} ({value}) kept as a static: it is part of the cache key, so if it "
    "changes during training (a step counter, a schedule) every new value compiles again.",
)
VAR_NUMBER_MSG = Template(
    WordsKind.AUDIT_VAR_NUMBER,
    "{what} is a number ({value}) in the metadata of `{var}` ({type}): metadata is part of the "
    "cache key, so if it changes during training every new value compiles again.",
)
UNHASHABLE_MSG = Template(
    WordsKind.AUDIT_UNHASHABLE,
    "{what} is a `{type}`, which is not hashable: nnx.jit copes (it only compares GraphDefs), but "
    "`hash(graphdef)` raises, so `jax.jit(f, static_argnums=0)(graphdef, state)` fails.",
)
UNHASHABLE_FIX = Template(WordsKind.AUDIT_UNHASHABLE_FIX, "Store a hashable value: {suggestion}.")
UNHASHABLE_SUGGESTIONS = {
    "list": "`self.{attr} = tuple(...)`",
    "set": "`self.{attr} = frozenset(...)`",
    "dict": "`self.{attr} = flax.core.FrozenDict(...)` (or a tuple of items)",
    "dataclass": "declare `{type}` with `@dataclasses.dataclass(frozen=True)`",
    "other": "define `__hash__` on `{type}`, consistent with its `__eq__`",
}
COMPARE_MSG = Template(
    WordsKind.AUDIT_COMPARE,
    "Comparing {what} of two builds raises {error}: nnx.jit compares each call's GraphDef with the "
    "cached ones, so a second instance fails ('Exception raised while checking equality ...').",
)
COMPARE_FIX = Template(
    WordsKind.AUDIT_COMPARE_FIX,
    "Give `{type}` an `__eq__` that returns a plain bool (e.g. "
    "`@dataclasses.dataclass(frozen=True)` over hashable fields), or share one object.",
)
HIDDEN_MSG = Template(
    WordsKind.AUDIT_HIDDEN,
    "{what} is a static `{type}` holding {inner}{where}: nnx does not track data inside statics, "
    "so nnx.jit fails on it or freezes it into the compiled code as a constant.",
)
HIDDEN_TOP_MSG = Template(
    WordsKind.AUDIT_HIDDEN_TOP,
    "{what} is {inner} kept as a static: nnx compares it on every call, so nnx.jit fails on it or "
    "freezes it into the compiled code as a constant.",
)
HIDDEN_ARRAY_FIX = Template(
    WordsKind.AUDIT_HIDDEN_ARRAY_FIX,
    "Keep arrays in Variables (`self.{attr} = nnx.Variable(jnp.asarray(...))`) and only "
    "configuration (numbers, strings, tuples) in statics.",
)
HIDDEN_NODE_FIX = Template(
    WordsKind.AUDIT_HIDDEN_NODE_FIX,
    "Store Modules and Variables as attributes of the Module itself (`self.{attr} = ...`, or an "
    "`nnx.List` / `nnx.Dict` of them), not inside a plain object or a partial.",
)
NOT_ARRAY_MSG = Template(
    WordsKind.AUDIT_NOT_ARRAY,
    "{what} holds a `{type}` ({value}) as data, not an array: nnx.jit fails with 'Error "
    "interpreting argument ... as an abstract array'.",
)
NOT_ARRAY_FIX = Template(
    WordsKind.AUDIT_NOT_ARRAY_FIX,
    "Hold arrays in Variables (`nnx.Param(jnp.asarray(...))`); keep a non-array value as a plain "
    "static attribute (`self.{attr} = ...`, without nnx.data or a Variable).",
)
FLAX_ARG_FIX = Template(
    WordsKind.AUDIT_FLAX_ARG_FIX,
    "Create it once at module level (`{const} = {expr}`) and pass that same object: "
    "`{cls}(..., {attr}={const})`.",
)

LIBRARY_CLOSURE_FIX = Template(
    WordsKind.AUDIT_LIBRARY_CLOSURE_FIX,
    "Make it once at module level (`{const} = ...`, the call that returned this "
    "`{expr}` closure) and assign that same object to `self.{attr}`.",
)


def _finding(severity: str, r: Reason) -> AuditFinding:
    if Fact.SAME_VALUE not in r.facts:
        evidence = Evidence.BUILDS
    elif r.kind is not ReasonKind.IDENTITY_STATIC:
        evidence = Evidence.VALUE
    elif severity != "error" and Fact.SHARED_OBJECT in r.facts:
        evidence = Evidence.SHARED
    else:
        evidence = Evidence.NEW
    message, fix = r.said  # the makings: worded when the finding is printed
    return AuditFinding(
        severity, r.kind, r.path, r.before, r.after, message, fix, evidence, r.fix_kind
    )


def _at(
    kind: str,
    p: Path,
    before: str,
    after: str,
    message: Words,
    fix: Words,
    path: str = "",
    facts: tuple[Fact, ...] = (),
    fix_kind: FixKind = FixKind.UNSET,
) -> Reason:
    """An audit's reason at ``p``. ``facts``: ``SAME_VALUE`` when ``before`` and ``after`` are
    one build's one value (a finding about it, not a change between the builds); ``fix_kind``:
    the explainer's template ``fix`` was made from (the audit's own ones have none)."""
    r = M._reason(
        kind, str(p[0][1]), path or render_path(p), before, after, message, fix,
        fix_kind=fix_kind, facts=facts,
    )  # fmt: skip
    return r.replace(where=p)


#: The facts of a finding about one build's one value.
_ONE = (Fact.SAME_VALUE,)


def _entry_above(p: Path, *entries: Mapping[Path, Entry]) -> Path:
    """The entry a reason inside a static (``model.acts[1]``) belongs to (``model.acts``)."""
    for i in range(len(p) - 1, 0, -1):
        if any(p[:i] in e for e in entries):
            return p[:i]
    return ()


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
            if e.kind != EntryKind.STATIC or e.static is None:
                continue
            found, fatal = (
                self._not_array(p, e.static) if not e.in_graph else self._static_errors(p, e.static)
            )
            if found:
                errors[p] = found
            if fatal:
                broken.add(p)
        for r in diff_keys(Key(self.a, (), "", ""), Key(self.b, (), "", "")):
            p = r.where
            if p not in self.a and p not in self.b and r.kind is not ReasonKind.VARIABLE_METADATA:
                p = _entry_above(p, self.a, self.b)  # a part inside a static: the static's entry
            if p not in broken:
                errors.setdefault(p, []).append(self._refine(p, r))
        found = [
            (p, _finding("warning" if self._optimizer_tx(p) else "error", r))
            for p, rs in errors.items()
            for r in rs
        ]
        for p, e in self.a.items():
            if e.kind == EntryKind.VAR:
                found += [(p, f) for f in self._metadata(p, e, errors)]
            elif (
                e.kind == EntryKind.STATIC
                and e.in_graph
                and e.static is not None
                and p not in errors
            ):
                shared, number = self._shared_identity(p, e.static), self._number(p, e.static)
                found += [(p, _finding("warning", shared))] if shared else []
                found += [(p, _finding("info", number))] if number else []
        found.sort(key=lambda pf: self.order.get(pf[0], self.order.get(pf[0][:-1], -1)))
        return [f for _, f in found]

    def _owner(self, p: Path) -> type | None:
        e = self.a.get(p[:-1])
        t = (
            e.type_ref()
            if e is not None and e.kind == EntryKind.NODE and e.type_ref is not None
            else None
        )
        return t if isinstance(t, type) else None

    # errors

    def _static_errors(self, p: Path, sv: StaticVal) -> tuple[list[Reason], bool]:
        """Errors of one static of the first build, and whether diffing it is meaningless."""
        value, path, attr = sv.value(), render_path(p), _attr(p)
        hidden = _hidden_data(value)
        if hidden is not None:
            inner, sub = hidden
            if sub is None:
                msg = HIDDEN_TOP_MSG.words(what=f"`{path}`", inner=inner)
            else:
                where = f" (at `{sub}`)" if sub else ""
                msg = HIDDEN_MSG.words(
                    what=f"`{path}`", type=type(value).__name__, inner=inner, where=where
                )
            fix = (HIDDEN_ARRAY_FIX if "array" in inner else HIDDEN_NODE_FIX).words(attr=attr)
            one = _at(
                ReasonKind.GRAPH_STRUCTURE, p, sv.display(), sv.display(), msg, fix, facts=_ONE
            )
            return [one], True
        out, fatal = [], False
        other = self.b.get(p)
        if other is not None and other.kind == EntryKind.STATIC and other.static is not None:
            try:
                bool(value == other.static.value())
            except Exception as exc:
                msg = COMPARE_MSG.words(what=f"`{path}`", error=_exc_text(exc, 60))
                fix = COMPARE_FIX.words(type=type(value).__name__)
                out.append(
                    _at(
                        ReasonKind.STATIC_VALUE,
                        p,
                        sv.display(),
                        other.static.display(),
                        msg,
                        fix,
                        facts=_ONE if looks_alike(sv, other.static) else (),
                    )
                )
                fatal = True
        try:
            hash(value)
        except Exception:
            msg = UNHASHABLE_MSG.words(what=f"`{path}`", type=type(value).__name__)
            out.append(
                _at(
                    ReasonKind.STATIC_VALUE,
                    p,
                    sv.text,
                    sv.text,
                    msg,
                    _unhashable_fix(value, attr),
                    facts=_ONE,
                )
            )
        return out, fatal

    def _not_array(self, p: Path, sv: StaticVal) -> tuple[list[Reason], bool]:
        """A data leaf (Variable value, ``nnx.data``) that JAX cannot turn into an array."""
        is_var = (
            p[-1] == ("attr", "value") and getattr(self.a.get(p[:-1]), "kind", "") == EntryKind.VAR
        )
        var = p[:-1] if is_var else p
        path = render_path(var)
        msg = NOT_ARRAY_MSG.words(
            what=f"`{path}`", type=sv.type_name, value=short_repr(sv.value(), 40)
        )
        fix = NOT_ARRAY_FIX.words(attr=_attr(var))
        one = _at(ReasonKind.GRAPH_STRUCTURE, p, sv.text, sv.text, msg, fix, path=path, facts=_ONE)
        return [one], True

    def _refine(self, p: Path, r: Reason) -> Reason:
        """The diff's reason; a static rebuilt per instance is described by what is rebuilt."""
        pair = self._statics(p)
        if pair is None or pair[1].value() is None:  # not a static, or not kept alive
            return r
        sa, sb = pair
        old, new = sa.value(), sb.value()
        if not (compares_by_identity(new) or _rebuilt(old, new)):
            if r.kind != ReasonKind.IDENTITY_STATIC:
                return r
            return S.static_value(str(p[0][1]), r.path, _attr(p), sa, sb, in_graph=True)
        whole = compares_by_identity(new) or "GradientTransformation" in sb.type_name
        part = new if whole else (_first_rebuilt(old, new) or (old, new))[1]
        desc, fix, fix_kind = self._identity_words(p, part, new)
        consequence = OPTIMIZER_CONSEQUENCE if self._optimizer_tx(p) else ERROR_CONSEQUENCE
        what = f"`{render_path(p) if p else r.path}`"
        msg = M.IDENTITY_MSG.words(what=what, desc=desc, consequence=consequence)
        kind = (
            ReasonKind.VARIABLE_METADATA
            if r.kind == ReasonKind.VARIABLE_METADATA
            else ReasonKind.IDENTITY_STATIC
        )
        # a new object in each build that looks the same (its repr, the address aside): one
        # value shown, "a new object in each"
        alike = _ONE if looks_alike(sa, sb) else ()
        return _at(kind, p, sa.display(), sb.display(), msg, fix, facts=alike, fix_kind=fix_kind)

    def _optimizer_tx(self, p: Path) -> bool:
        """Is ``p`` an optax transform (the ``tx`` of an ``nnx.Optimizer``)?"""
        pair = self._statics(p) if p else None
        return pair is not None and "GradientTransformation" in pair[1].type_name

    def _statics(self, p: Path) -> tuple[StaticVal, StaticVal] | None:
        """The two builds' values at ``p``: a static attribute, or a Variable's metadata."""
        pair = []
        for entries in (self.a, self.b):
            e, var = entries.get(p), entries.get(p[:-1])
            if e is not None and e.static is not None:
                pair.append(e.static)
            elif var is not None and var.kind == EntryKind.VAR and p[-1][1] in dict(var.meta):
                pair.append(dict(var.meta)[p[-1][1]])
            else:
                return None
        return pair[0], pair[1]

    def _identity_words(self, p: Path, part: Any, value: Any) -> tuple[Words | str, Words, FixKind]:
        """The explainer's description and fix of ``part``, an identity-compared object in ``value``.

        A static of a flax layer, or Variable metadata, is fixed where the
        layer or Variable is built (``nnx.Linear(dot_general=...)``); a closure
        made by a library where it is made; list items have no ``self.<name>``.
        """
        path, attr, owner = render_path(p), _attr(p), self._owner(p)
        item = p[-1][0] != "attr" or not attr.isidentifier()
        sv = StaticVal(part)
        if item:
            found = S._identity_fix(part, "fn", path, path, False, sv)
        else:
            found = S._identity_fix(part, attr, path, str(p[0][1]), True, sv)
        desc: Words | str = found.desc
        fix, fix_kind = dataclasses.replace(found.words, capped=True), found.fix_kind
        if part is not value:
            desc = HOLDING_DESC.words(type=type(value).__name__, desc=desc)
        expr = _construction(part)
        var = self.a.get(p[:-1])
        if var is not None and var.kind == EntryKind.VAR:  # the audit's own templates: no kind
            cls = f"nnx.{var.type_name}" if hasattr(nnx, var.type_name) else var.type_name
            fix = FLAX_ARG_FIX.words(const=attr.upper(), expr=expr or "...", cls=cls, attr=attr)
            fix_kind = FixKind.UNSET
        elif expr and owner is not None and _is_library(owner) and attr in _init_params(owner):
            cls = _flax_name(owner)
            fix = FLAX_ARG_FIX.words(const=attr.upper(), expr=expr, cls=cls, attr=attr)
            fix_kind = FixKind.UNSET
        elif expr and not item and inspect.isfunction(part) and _is_library(part):
            fix = LIBRARY_CLOSURE_FIX.words(const=attr.upper(), expr=expr, attr=attr)
            fix_kind = FixKind.UNSET
        return desc, fix, fix_kind

    # warnings and infos

    def _shared_identity(self, p: Path, sv: StaticVal) -> Reason | None:
        value, owner = sv.value(), self._owner(p)
        defaults = _init_defaults(owner) if owner is not None else frozenset()
        parts = _unstable_parts(value, lambda x: id(x) in defaults or self.names.stable(x))
        if not parts:
            return None
        desc, fix, fix_kind = self._identity_words(p, parts[0], value)
        msg = SHARED_MSG.words(what=f"`{render_path(p)}`", desc=desc)
        facts = (*_ONE, Fact.SHARED_OBJECT)
        return _at(
            ReasonKind.IDENTITY_STATIC, p, sv.display(), sv.display(), msg, fix,
            facts=facts, fix_kind=fix_kind,
        )  # fmt: skip

    def _number(self, p: Path, sv: StaticVal) -> Reason | None:
        value, owner, attr = sv.value(), self._owner(p), _attr(p)
        if not _is_number(value) or owner is None or not issubclass(owner, nnx.Pytree):
            return None
        if _is_library(owner) or attr in _library_attrs(owner):
            return None
        msg = NUMBER_MSG.words(what=f"`{render_path(p)}`", type=type(value).__name__, value=sv.text)
        # a size (`n_layers`, `features`) as a Variable fails where it sets a shape or a split
        size = M.number_role(attr, [value], calls=False) == "size"
        fix = (
            M.SIZE_FIX.words(attr=attr)
            if size
            else M.STATIC_GRAPH_FIX.words(attr=attr, before=sv.text)
        )
        return _at(
            ReasonKind.STATIC_VALUE, p, sv.text, sv.text, msg, fix,
            facts=_ONE, fix_kind=FixKind.SIZE if size else FixKind.STATIC_GRAPH,
        )  # fmt: skip

    def _metadata(self, p: Path, e: Entry, errors: Mapping[Path, Any]) -> list[AuditFinding]:
        """Numbers, and shared identity-compared values, in a Variable's metadata."""
        out = []
        for key, sv in e.meta:
            mp = (*p, ("attr", key))
            if mp in errors:
                continue
            if _is_number(sv.value()):
                what, var = f"`{render_path(mp)}`", render_path(p)
                msg = VAR_NUMBER_MSG.words(what=what, value=sv.text, var=var, type=e.type_name)
                fix = M.VAR_META_FIX.words(key=key)
                out.append(
                    _finding(
                        "info",
                        _at(
                            ReasonKind.VARIABLE_METADATA,
                            mp,
                            sv.text,
                            sv.text,
                            msg,
                            fix,
                            facts=_ONE,
                            fix_kind=FixKind.VAR_META,
                        ),
                    )
                )
            elif (shared := self._shared_identity(mp, sv)) is not None:
                out.append(_finding("warning", shared.replace(kind=ReasonKind.VARIABLE_METADATA)))
        return out


def _construction(part: Any) -> str:
    """Code that builds ``part`` again, for a module-level constant (``""``: none to offer)."""
    if isinstance(part, functools.partial):
        args = [S._qualified(part.func), *(short_repr(a, 30) for a in part.args)]
        args += [f"{k}={short_repr(v, 30)}" for k, v in part.keywords.items()]
        return f"functools.partial({', '.join(args)})"
    if not inspect.isfunction(part):
        return ""
    if part.__name__ == "<lambda>":  # its own parameters: a printed fix is code that parses
        try:
            params = str(inspect.signature(part))[1:-1]
        except (TypeError, ValueError):
            params = "*args"
        return f"lambda {params}: ..." if params else "lambda: ..."
    maker, _, rest = part.__qualname__.partition(".<locals>.")
    return f"{maker}(...)" if rest else part.__name__


def _unhashable_fix(value: Any, attr: str) -> Words:
    tn = type(value).__name__
    key = tn if tn in ("list", "set", "dict") else "other"
    key = "dataclass" if dataclasses.is_dataclass(value) else key
    return UNHASHABLE_FIX.words(suggestion=UNHASHABLE_SUGGESTIONS[key].format(attr=attr, type=tn))


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)
