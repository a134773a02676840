"""Reasons stay typed data until they are printed: nothing outside ``_render`` decides by words.

A ``Reason`` carries what decisions need as data (``kinds.ReasonKind``, ``SubjectKind``,
``FixKind``, ``Fact``, the structured path ``where``), set where the difference is found.
:func:`test_no_decision_reads_words` scans every source module outside ``jitlens/_render``
for a comparison, a membership test, a ``startswith``-like call or a regex whose operand is
the ``message`` / ``fix`` / ``before`` / ``after`` of anything (a ``Reason``, an ``Advice``,
a finding), and for a ``.kind`` compared with a string literal: kinds are enum members.
The other tests check that the typed fields are right on real retraces.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib
import re

import jax
import jax.numpy as jnp
import optax
from flax import nnx

import jitlens
from jitlens._core import kinds, messages, report
from jitlens._core.kinds import Fact, FixKind, ReasonKind, SubjectKind

PKG = pathlib.Path(jitlens.__file__).resolve().parent

#: Attributes that hold words made for a reader.
WORDS = frozenset({"message", "fix", "before", "after"})
#: String methods that decide something by reading their receiver.
READING_CALLS = frozenset({"startswith", "endswith", "find", "rfind", "index", "rindex", "count"})
#: ``re`` functions (and compiled patterns' methods) that decide by matching.
REGEX_CALLS = frozenset({"search", "match", "fullmatch", "findall", "finditer"})

#: Files the libpkg helper owns this round, which decide on words until they switch to the
#: typed fields (``Reason.subject`` / ``facts`` / ``fix_kind`` / ``where``; ``ReasonKind``
#: members). Empty it once their branch is merged: every file here must then pass.
PENDING_LIBPKG: frozenset[str] = frozenset()

#: ``(file, the expression as ast.unparse writes it)`` of lines that read words or compare a
#: kind with a literal without deciding on a reason's words. Each says why.
ALLOWED = {
    # A report written before `Reason.expected` existed said it only in its fix: reading the
    # fix's first words is the one way to get that fact back from such a file.
    ("_core/report.py", "kw['fix'].startswith(EXPECTED_FIX)"),
    # The sink: the one function that words a retrace leaves out a fix or a message it has
    # already printed (words compared with the words it prints, not to decide a cause).
    ("_core/retrace_text.py", "reason.fix not in fixes"),
    ("_core/retrace_text.py", "line[1] != reason.message"),
    ("_exercise/render.py", "f.fix in seen"),
    # The types helper's file this round: merge's branch kinds ("none", "hit", ...) are to
    # become an enum with its typed render lines.
    ("_merge/render.py", "branch.kind == 'none'"),
    # The message of an exception the graded solution raised: Python's own account of the
    # error, not a jitlens reason.
    ("_exercise/criteria.py", "_CALL_MISMATCH.search(r['raised']['message'])"),
}


def _str_literal(node: ast.AST, names: frozenset[str]) -> bool:
    """A string literal, a tuple/list/set of them, or a module-level name bound to one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_str_literal(e, names) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        return node.func.id in ("frozenset", "set", "tuple") and _str_literal(node.args[0], names)
    return isinstance(node, ast.Name) and node.id in names


def _words(node: ast.AST) -> bool:
    """``x.message`` (or ``data["message"]``: a report's JSON read back)."""
    if isinstance(node, ast.Attribute):
        return node.attr in WORDS
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in WORDS
    )


def _kind(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "kind"
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == "kind"
    )


def _literal_names(tree: ast.Module) -> frozenset[str]:
    """Module-level names bound to a string literal or a collection of them."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and _str_literal(value, frozenset()):
            out.add(target.id)
    return frozenset(out)


def decisions_on_words(source: str) -> list[tuple[int, str, str]]:
    """``(line, what, expression)`` of every decision ``source`` makes by reading words."""
    tree = ast.parse(source)
    names = _literal_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_words(o) for o in operands):
                found.append((node.lineno, "compares words", ast.unparse(node)))
            elif any(_kind(o) for o in operands) and any(_str_literal(o, names) for o in operands):
                found.append((node.lineno, "compares a kind with a literal", ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, node.func.value
            if method in READING_CALLS and (_words(receiver) or _kind(receiver)):
                found.append((node.lineno, f"reads words with {method}", ast.unparse(node)))
            elif method in REGEX_CALLS and any(_words(a) for a in node.args):
                found.append((node.lineno, "matches words with a regex", ast.unparse(node)))
    return found


def _modules() -> list[tuple[str, str]]:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if not rel.startswith("_render/"):
            out.append((rel, path.read_text(encoding="utf-8")))
    return out


def test_no_decision_reads_words() -> None:
    found = [
        f"{rel}:{line}: {what}: {expr}"
        for rel, source in _modules()
        if rel not in PENDING_LIBPKG
        for line, what, expr in decisions_on_words(source)
        if (rel, expr) not in ALLOWED
    ]
    assert found == []


def test_the_allow_list_is_current() -> None:
    """Every allowed line still exists (a mended one leaves the list), and no pending file is
    gone (the list names files, so a rename would hide one)."""
    seen = {
        (rel, expr) for rel, source in _modules() for _l, _w, expr in decisions_on_words(source)
    }
    assert sorted(ALLOWED - seen) == []
    assert sorted(f for f in PENDING_LIBPKG if not (PKG / f).is_file()) == []


def test_the_scan_finds_what_it_is_for() -> None:
    """The scan's own check: each shape of a decision on words is found, typed data is not."""
    source = """
STRUCTURE = ("graph_structure", "pytree_structure")
a = r.kind == "new_function"
b = r.kind in STRUCTURE
c = "optax transform" in r.message
d = r.fix.startswith(PREFIX)
e = re.search(r"\\[", r.after)
f = d["kind"] != "retrace"
g = r.before != "equal key"
h = r.kind is ReasonKind.SHAPE and Fact.EQUAL_KEY in r.facts
i = r.subject is SubjectKind.LAMBDA
"""
    lines = sorted(line for line, _what, _expr in decisions_on_words(source))
    assert lines == [3, 4, 5, 6, 7, 8, 9]


# ---------------------------------------------------------------- fix kinds


_TEMPLATE_MODULES = {
    "jitlens._core.messages": "",
    "jitlens._core.messages_static": "",
    "jitlens._core.messages_evidence": "",
    "jitlens._core.messages_transforms": "",
    "jitlens._track.frontends.equinox.words": "EQX_",
    "jitlens._core.messages_library": "",
}


def _fix_templates() -> dict[str, str]:
    """Every ``*_FIX`` template of ``_core/messages*.py`` and the front-ends' words, by its
    ``FixKind`` member's name."""
    import importlib

    out: dict[str, str] = {}
    seen = {id(v) for v in vars(report).values()}  # report.EXPECTED_FIX is no template
    for module, prefix in _TEMPLATE_MODULES.items():  # defining modules before importers
        for name, value in vars(importlib.import_module(module)).items():
            if name.endswith("_FIX") and isinstance(value, str) and id(value) not in seen:
                out[prefix + name.removesuffix("_FIX")] = value
        seen |= {id(v) for v in out.values()}
    return out


def test_every_fix_template_is_one_fix_kind() -> None:
    members = {m.name for m in FixKind if m is not FixKind.UNSET}
    assert sorted(set(_fix_templates()) - members) == []
    assert sorted(members - set(_fix_templates())) == []


def _calls_setting_a_fix(tree: ast.Module) -> list[ast.Call]:
    """``Reason(...)``, ``_reason(...)`` and ``dataclasses.replace(..., fix=...)`` calls."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        keywords = {k.arg for k in node.keywords}
        if (name in ("Reason", "_reason") and len(node.args) >= 7) or (
            name == "replace" and "fix" in keywords
        ):
            out.append(node)
    return out


def test_a_fix_is_set_with_the_template_that_made_it() -> None:
    """Words and their template travel together: a fix set without ``fix_kind`` would keep the
    template of the fix it replaced (``messages.with_fix`` sets both)."""
    missing = []
    for rel, source in _modules():
        if rel in PENDING_LIBPKG:
            continue
        for call in _calls_setting_a_fix(ast.parse(source)):
            if "fix_kind" not in {k.arg for k in call.keywords}:
                missing.append(f"{rel}:{call.lineno}: {ast.unparse(call)[:80]}")
    assert missing == []


# ---------------------------------------------------------------- the JSON


def test_the_typed_fields_round_trip_and_an_older_report_loads() -> None:
    r = messages.new_function("step", "jax.jit", "a.py:1", 2, False, True)
    rep = report.Report(
        2, "0", "0", "", "cpu", 0, 1, "h", 0.0, 1.0,
        (report.FunctionReport(
            "f", "f", "jax.jit", "a.py:1", "a.py:2", 2, 2, 2, 0, 0, 0.0, 0.0, 0.0,
            events=(report.Event(1, "retrace", "a.py:3", "x: f32[2]", reasons=(r,)),),
        ),),
    )  # fmt: skip
    data = json.loads(rep.to_json())
    written = data["functions"][0]["events"][0]["reasons"][0]
    assert written["subject"] == "lambda" and written["fix_kind"] == "new_lambda"
    assert written["facts"] == [] and "where" not in written
    back = report.report_from_dict(data).functions[0].events[0].reasons[0]
    assert back == r and back.subject is SubjectKind.LAMBDA and back.fix_kind is FixKind.NEW_LAMBDA
    for key in ("subject", "fix_kind", "facts"):  # a report from before the fields
        del written[key]
    old = report.report_from_dict(data).functions[0].events[0].reasons[0]
    assert (old.subject, old.fix_kind, old.facts) == (SubjectKind.UNSET, FixKind.UNSET, ())
    written["facts"] = ["equal_key", "a_fact_of_a_newer_jitlens"]
    newer = report.report_from_dict(data).functions[0].events[0].reasons[0]
    assert newer.facts == (Fact.EQUAL_KEY, "a_fact_of_a_newer_jitlens")


def test_facts_are_kept_in_the_enum_s_order_once_each() -> None:
    r = messages.cache_cleared().with_facts(Fact.NESTED, Fact.EQUAL_KEY, Fact.NESTED)
    assert r.facts == (Fact.EQUAL_KEY, Fact.NESTED)
    assert [f for f in kinds.Fact] == sorted(kinds.Fact, key=list(kinds.Fact).index)


# ---------------------------------------------------------------- real retraces


def _reasons(program) -> list[jitlens.Reason]:  # type: ignore[no-untyped-def]
    with jitlens.track() as t:
        fn = program()
    return [r for e in t.stats(fn).events for r in e.reasons]


def test_an_array_s_changes_are_typed() -> None:
    def program():  # type: ignore[no-untyped-def]
        f = jax.jit(lambda x: x * 2)
        f(jnp.ones(3))
        f(jnp.ones(4))
        f(jnp.ones(4, jnp.int32))
        f(2.0)
        return f

    by_kind: dict[object, jitlens.Reason] = {}
    for r in _reasons(program):  # the first reason of each kind
        by_kind.setdefault(r.kind, r)
    shape, dtype = by_kind[ReasonKind.SHAPE], by_kind[ReasonKind.DTYPE]
    assert (shape.subject, shape.fix_kind, shape.where) == (
        SubjectKind.ARRAY,
        FixKind.SHAPE,
        (("arg", "x"),),
    )
    assert (dtype.subject, dtype.fix_kind) == (SubjectKind.ARRAY, FixKind.DTYPE)
    old, new = shape.entries  # the evidence as data: no shape is parsed back from `before`
    assert (old.aval.shape, new.aval.shape) == ((3,), (4,))
    assert by_kind[ReasonKind.WEAK_TYPE].fix_kind in (FixKind.WEAK, FixKind.WEAK_VALUE)


class _Scaled(nnx.Module):
    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        self.fn = fn
        self.w = nnx.Param(jnp.ones(2))

    def __call__(self, x):  # type: ignore[no-untyped-def]
        return self.fn(x * self.w)


class _Doubler:
    def double(self, x):  # type: ignore[no-untyped-def]
        return x * 2


def _apply(model, x):  # type: ignore[no-untyped-def]
    return model(x)


def test_identity_statics_say_what_the_object_is() -> None:
    """What ``_identity_fix`` described in words is data: a lambda, a partial, a bound method."""
    import functools

    objects = [
        (lambda x: x, SubjectKind.LAMBDA, FixKind.FUNCTION),
        (functools.partial(jnp.multiply, 2.0), SubjectKind.PARTIAL, None),
        (_Doubler().double, SubjectKind.BOUND_METHOD, FixKind.BOUND_METHOD),
    ]
    for make, subject, fix_kind in objects:

        def program(make=make):  # type: ignore[no-untyped-def]
            f = nnx.jit(_apply)
            x = jnp.ones(2)
            for _ in range(2):
                f(_Scaled(_rebuild(make)), x)
            return f

        found = [r for r in _reasons(program) if r.kind is ReasonKind.IDENTITY_STATIC]
        assert [r.subject for r in found] == [subject], found
        assert fix_kind is None or found[0].fix_kind is fix_kind
        if subject is SubjectKind.PARTIAL:
            assert found[0].fix_kind in (FixKind.PARTIAL_GRAPH, FixKind.PARTIAL_DATA)
        assert Fact.IN_GRAPH in found[0].facts
        assert found[0].where[-1] == ("attr", "fn")


def _rebuild(obj):  # type: ignore[no-untyped-def]
    """A new object alike ``obj``: a fresh lambda, partial or bound method per call."""
    import functools
    import types

    if isinstance(obj, functools.partial):
        return functools.partial(obj.func, *obj.args, **obj.keywords)
    if isinstance(obj, types.MethodType):
        return types.MethodType(obj.__func__, type(obj.__self__)())
    return types.FunctionType(obj.__code__, obj.__globals__, obj.__name__)


def test_an_optimizer_s_state_is_said_to_be_optax_s_from_the_data() -> None:
    """A new optax optimizer of another kind: the transform is typed ``OPTAX_TRANSFORM``, the
    state change ``OPTAX_MADE``, and the transform's fix says it is another optimizer."""

    def program():  # type: ignore[no-untyped-def]
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        f = nnx.jit(lambda opt: opt.step)
        for tx in (optax.sgd(0.1), optax.adam(0.1)):
            f(nnx.Optimizer(model, tx, wrt=nnx.Param))
        return f

    rs = _reasons(program)
    made = [r for r in rs if Fact.OPTAX_MADE in r.facts]
    assert made and all(r.fix_kind is FixKind.OPTAX_STATE for r in made)
    tx = [r for r in rs if r.subject is SubjectKind.OPTAX_TRANSFORM]
    assert [r.fix_kind for r in tx] == [FixKind.OPTAX_KIND]
    assert rs.index(tx[0]) < rs.index(made[0])  # the new optimizer leads what it causes


def test_an_equal_key_is_a_fact_not_words() -> None:
    r = messages.new_function("f", "jax.jit", "a.py:1", 1, True, False)
    assert Fact.EQUAL_KEY not in r.facts  # an earlier wrapper's key, not two equal keys
    from jitlens._core import messages_evidence as E

    assert Fact.EQUAL_KEY in E.no_difference("1 key position(s)").facts
    assert Fact.EQUAL_KEY in E.cache_evicted(8, 8).facts


def test_a_named_sharding_is_typed() -> None:
    mesh = jax.make_mesh((1,), ("b",))
    named = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("b"))

    def program():  # type: ignore[no-untyped-def]
        f = jax.jit(lambda x: x + 1)
        f(jnp.ones(4))
        f(jax.device_put(jnp.ones(4), named))
        return f

    sharding = [r for r in _reasons(program) if r.kind is ReasonKind.SHARDING]
    assert [r.subject for r in sharding] == [SubjectKind.NAMED_SHARDING]
    assert sharding[0].fix_kind is FixKind.SHARDING


def test_a_words_only_change_keeps_the_data() -> None:
    """Rewording (a fix from another template) changes ``fix_kind`` with the words, and keeps
    everything else."""
    r = messages.shape("x", "x", "f32[2]", "f32[3]")
    again = messages.with_fix(r, FixKind.PARAM_SHAPE, messages.PARAM_SHAPE_FIX)
    assert again.fix_kind is FixKind.PARAM_SHAPE and again.fix == messages.PARAM_SHAPE_FIX
    same = {f.name for f in dataclasses.fields(r)} - {"fix", "fix_kind"}
    assert all(getattr(again, k) == getattr(r, k) for k in same)
    assert re.fullmatch(r"[a-z_]+", FixKind.PARAM_SHAPE)
