"""``jitlens audit`` for factories that return ``eqx.Module``s: two builds, one filter_jit key.

``eqx.filter_jit`` keys its cache on the non-array part of every argument:
Module fields that are not arrays (compared by identity when they are
functions), ``eqx.field(static=True)`` values, Python numbers, the pytree
structure. Two identically configured builds must give equal keys, or every
new instance compiles again. The builds are described and diffed with the
explainer's own key walk (``static_leaves``, as for filter_jit), and the
differences worded as ``jitlens run`` words them for equinox.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from .._compat.equinox_api import is_eqx_module_class
from .._core.explain import diff_keys
from .._core.key import Entry, Key, Path, StaticVal, keeping_values, render_path
from .._core.kinds import EntryKind, ReasonKind, RowKind, WordsKind
from .._core.signature import describe_value
from .._core.words import Template
from .._track.frontends.equinox.words import frontend_words
from .libraries import LibraryAudit
from .model import SEVERITIES, AuditFinding, AuditResult, Evidence

NUMBER_MSG = Template(
    WordsKind.AUDIT_EQX_NUMBER,
    "`{path}` is a Python {type} ({value}) in an eqx.Module: eqx.filter_jit keeps it static, so "
    "if it changes during training (a step counter, a schedule) every new value compiles again.",
)
NUMBER_FIX = Template(
    WordsKind.AUDIT_EQX_NUMBER_FIX,
    "If it changes, store an array instead (`jnp.asarray({value})`) so filter_jit traces it; "
    "a constant configuration value is fine as it is.",
)


def _is_module(obj: Any) -> bool:
    return is_eqx_module_class(type(obj))


def equinox_roots(obj: Any) -> list[tuple[str, Any]] | None:
    """``[(name, root)]`` when the factory returned eqx Modules (and their companions)."""
    if isinstance(obj, Mapping):
        items = [(str(k), v) for k, v in obj.items()]
    elif isinstance(obj, (tuple, list)):
        items = [(_role(v, i), v) for i, v in enumerate(obj)]
    else:
        items = [(_role(obj, 0), obj)]
    if not any(_is_module(v) for _, v in items):
        return None
    names = [n for n, _ in items]
    return [(n if names.count(n) == 1 else f"{n}_{i}", v) for i, (n, v) in enumerate(items)]


def _role(obj: Any, i: int) -> str:
    if _is_module(obj):
        return "model"
    if callable(getattr(obj, "init", None)) and callable(getattr(obj, "update", None)):
        return "optimizer"
    return f"item_{i}"


def _describe(roots: list[tuple[str, Any]]) -> dict[Path, Entry]:
    out: dict[Path, Entry] = {}
    with keeping_values():  # the audit holds both builds itself, and drops them with it
        for name, obj in roots:
            describe_value(obj, (("arg", name),), out, None, static_leaves=True)
    return out


def audit_equinox(
    target: str, roots_a: list[tuple[str, Any]], roots_b: list[tuple[str, Any]], start: float
) -> AuditResult:
    """The findings of two builds' filter_jit keys (see :func:`jitlens.audit`)."""
    a, b = _describe(roots_a), _describe(roots_b)
    key_a = Key(entries=a, config=(), signature="", fingerprint="")
    key_b = Key(entries=b, config=(), signature="", fingerprint="")
    reasons = frontend_words(diff_keys(key_a, key_b), key_b)
    # the optax optimizer returned beside the model: Equinox passes `opt_state` to filter_jit,
    # not the optimizer (its examples close over it, built once); rebuilt and passed, it would
    # compile again: a warning, as an nnx.Optimizer's transform is
    beside = {name for name, obj in roots_b if not _is_module(obj)}
    findings = [
        AuditFinding(_severity(r, beside), r.kind, r.path, r.before, r.after, *r.said)
        for r in reasons
    ]
    differing = {r.path for r in reasons}
    findings += [f for p, e in b.items() if (f := _number(p, e, b, differing)) is not None]
    return AuditResult(
        target=target,
        roots=tuple(f"{r}: {type(obj).__name__}" for r, obj in roots_a),
        statics=sum(1 for e in a.values() if e.kind == EntryKind.STATIC),
        seconds=time.perf_counter() - start,
        findings=tuple(sorted(findings, key=lambda f: SEVERITIES.index(f.severity))),
        jit=RowKind.EQX_FILTER_JIT,
    )


def _severity(r: Any, beside: set[str]) -> str:
    """An error where a model's own key differs; a warning for what the factory returned beside
    the models (the optimizer): a recompile only if the program passes it to the jit rebuilt."""
    root = r.where[0][1] if r.where and r.where[0][0] == "arg" else None
    return "warning" if root in beside else "error"


def _number(p: Path, e: Entry, entries: dict[Path, Entry], skip: set[str]) -> AuditFinding | None:
    """A Python number held by an eqx.Module field: static under filter_jit."""
    if e.kind != EntryKind.STATIC or e.static is None or len(p) < 2:
        return None
    value = e.static.value()
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    parent = entries.get(p[:-1])
    owner = parent.type_ref() if parent is not None and parent.type_ref is not None else None
    if owner is None or not is_eqx_module_class(owner) or _library(owner):
        return None  # eqx.nn layers' sizes are configuration, not a schedule
    if _declared_static(owner, str(p[-1][1])):
        return None  # eqx.field(static=True): configuration, deliberately static
    path = render_path(p)
    if path in skip:
        return None
    text = StaticVal(value).text
    return AuditFinding(
        "info",
        ReasonKind.STATIC_VALUE,
        path,
        text,
        text,
        NUMBER_MSG.words(path=path, type=type(value).__name__, value=text),
        NUMBER_FIX.words(value=text),
        evidence=Evidence.VALUE,  # one build's value, not a change between the builds
    )


def _declared_static(cls: type, name: str) -> bool:
    try:
        fields = dataclasses.fields(cls)
    except TypeError:
        return False
    return any(f.name == name and f.metadata.get("static", False) for f in fields)


def _library(cls: type) -> bool:
    return (getattr(cls, "__module__", "") or "").startswith("equinox.")


#: How ``jitlens audit`` finds and audits eqx.Modules (``_audit/libraries``).
AUDIT = LibraryAudit(roots=equinox_roots, audit=audit_equinox)
