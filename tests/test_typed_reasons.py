"""Reasons stay typed data until they are printed: nothing outside ``_render`` decides by words.

A ``Reason`` carries what decisions need as data (``kind``, ``subject``, ``fix_kind``,
``facts``, the structured path ``where``), set where the difference is found; each is an enum
member that equals its string (``jitlens._core.kinds``), so these tests name the strings and
need no private import (``tests/test_fixes.py`` checks the templates and ``FixKind`` match).
:func:`test_no_decision_reads_words` scans every source module outside ``jitlens/_render``
for a comparison, a membership test, a ``startswith``-like call or a regex whose operand is
the ``message`` / ``fix`` / ``before`` / ``after`` of anything (a ``Reason``, an ``Advice``,
a finding), for a rendered ``path`` taken apart (``startswith``, ``split``, ``"[" in``), and
for a ``.kind`` compared with a string literal: kinds are enum members.
The other tests check that the typed fields are right on real retraces.
"""

from __future__ import annotations

import ast
import json
import pathlib
import pickle

import jax
import jax.numpy as jnp
import optax
from flax import nnx

import jitlens
from jitlens import ReasonKind

PKG = pathlib.Path(jitlens.__file__).resolve().parent

#: Attributes that hold words made for a reader.
WORDS = frozenset({"message", "fix", "before", "after"})
#: String methods that decide something by reading their receiver.
READING_CALLS = frozenset({"startswith", "endswith", "find", "rfind", "index", "rindex", "count"})
#: ``re`` functions (and compiled patterns' methods) that decide by matching.
REGEX_CALLS = frozenset({"search", "match", "fullmatch", "findall", "finditer"})
#: ... and those that take a rendered path apart (``Reason.where`` is the path as data).
SPLITTING_CALLS = frozenset({"split", "rsplit", "partition", "rpartition"})

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
    # ... and prints a fix once, under the last of the changes next to each other that it
    # fixes (the words it is about to print, compared with the next change's)
    ("_core/retrace_text.py", "shown[i + 1].reasons[0].fix != reason.fix"),
    ("_exercise/render.py", "f.fix in seen"),
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


def _path(node: ast.AST) -> bool:
    """A reason's rendered ``path`` (``model.layers[3]``): compared whole it names a place
    (across two reports, say); taken apart it is a structured path read back from words."""
    if not isinstance(node, ast.Attribute) or node.attr != "path":
        return False
    return not (isinstance(node.value, ast.Name) and node.value.id in ("os", "sys"))


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
            inside = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
            if inside and _path(node.comparators[-1]) and _str_literal(node.left, names):
                found.append((node.lineno, "parses a rendered path", ast.unparse(node)))
            elif any(_words(o) for o in operands):
                found.append((node.lineno, "compares words", ast.unparse(node)))
            elif any(_kind(o) for o in operands) and any(_str_literal(o, names) for o in operands):
                found.append((node.lineno, "compares a kind with a literal", ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, node.func.value
            if method in READING_CALLS and (_words(receiver) or _kind(receiver)):
                found.append((node.lineno, f"reads words with {method}", ast.unparse(node)))
            elif method in READING_CALLS | SPLITTING_CALLS and _path(receiver):
                found.append((node.lineno, "parses a rendered path", ast.unparse(node)))
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
j = r.path.startswith("model.")
k = "[" in r.path
m = r.path.rsplit(".", 1)[0]
n = r.path in paths
o = r.where[:-1]
q = os.path.split(file)
"""
    lines = sorted(line for line, _what, _expr in decisions_on_words(source))
    assert lines == [3, 4, 5, 6, 7, 8, 9, 12, 13, 14]


# ---------------------------------------------------------------- fixes and their templates


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
    """The new fields are written as the enums' strings, read back as members, and a report
    from before them loads with their defaults; ``where`` / ``entries`` stay out of the JSON."""
    r = jitlens.Reason(
        "new_function", "", "step", "2 earlier wrapper(s)", "new wrapper", "m", "f",
        subject="lambda", fix_kind="new_lambda", facts=("nested", "equal_key", "nested"),
        where=(("arg", "step"),),
    )  # fmt: skip
    assert r.facts == ("equal_key", "nested")  # once each, in the enum's order
    event = jitlens.Event(1, "retrace", "a.py:3", "x: f32[2]", reasons=(r,))
    function = jitlens.FunctionReport(
        "f", "f", "jax.jit", "a.py:1", "a.py:2", 2, 2, 2, 0, 0, 0.0, 0.0, 0.0, events=(event,)
    )
    rep = jitlens.Report(2, "0", "0", "", "cpu", 0, 1, "h", 0.0, 1.0, (function,))
    data = json.loads(rep.to_json())
    written = data["functions"][0]["events"][0]["reasons"][0]
    assert (written["subject"], written["fix_kind"]) == ("lambda", "new_lambda")
    assert written["facts"] == ["equal_key", "nested"]
    assert "where" not in written and "entries" not in written
    back = jitlens.Report.from_dict(data).functions[0].events[0].reasons[0]
    assert back == r and type(back.subject) is not str and back.where == ()
    for key in ("subject", "fix_kind", "facts"):  # a report from before the fields
        del written[key]
    old = jitlens.Report.from_dict(data).functions[0].events[0].reasons[0]
    assert (old.subject, old.fix_kind, old.facts) == ("", "", ())
    written["facts"] = ["equal_key", "a_fact_of_a_newer_jitlens"]
    newer = jitlens.Report.from_dict(data).functions[0].events[0].reasons[0]
    assert newer.facts == ("equal_key", "a_fact_of_a_newer_jitlens")


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
    assert (shape.subject, shape.fix_kind, shape.where) == ("array", "shape", (("arg", "x"),))
    assert (dtype.subject, dtype.fix_kind) == ("array", "dtype")
    old, new = shape.entries  # the evidence as data: no shape is parsed back from `before`
    assert (old.aval.shape, new.aval.shape) == ((3,), (4,))
    again = pickle.loads(pickle.dumps(shape))  # a report stays plain data: the entries stay
    assert again == shape and again.where == shape.where and again.entries == (None, None)
    assert by_kind[ReasonKind.WEAK_TYPE].fix_kind in ("weak", "weak_value")


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
        (lambda x: x, "lambda", "function"),
        (functools.partial(jnp.multiply, 2.0), "partial", None),
        (_Doubler().double, "bound_method", "bound_method"),
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
        assert type(found[0].subject) is not str  # an enum member, not the bare string
        assert fix_kind is None or found[0].fix_kind == fix_kind
        if subject == "partial":
            assert found[0].fix_kind in ("partial_graph", "partial_data")
        assert "in_graph" in found[0].facts
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
    made = [r for r in rs if "optax_made" in r.facts]
    assert made and all(r.fix_kind == "optax_state" for r in made)
    tx = [r for r in rs if r.subject == "optax_transform"]
    assert [r.fix_kind for r in tx] == ["optax_kind"]
    assert rs.index(tx[0]) < rs.index(made[0])  # the new optimizer leads what it causes


def test_a_named_sharding_is_typed() -> None:
    mesh = jax.make_mesh((1,), ("b",))
    named = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("b"))

    def program():  # type: ignore[no-untyped-def]
        f = jax.jit(lambda x: x + 1)
        f(jnp.ones(4))
        f(jax.device_put(jnp.ones(4), named))
        return f

    sharding = [r for r in _reasons(program) if r.kind is ReasonKind.SHARDING]
    assert [r.subject for r in sharding] == ["named_sharding"]
    assert sharding[0].fix_kind == "sharding"


def test_a_trace_inside_another_transformation_is_a_fact() -> None:
    """Under ``jax.grad`` the reason gets the suffix once and the fact ``nested``; a shape
    ``jax.vmap`` batched says so itself (``batched``) and gets no suffix."""

    def program():  # type: ignore[no-untyped-def]
        @jax.jit
        def energy(x):  # type: ignore[no-untyped-def]
            return (x**2).sum()

        jax.vmap(energy)(jnp.ones((2, 3)))
        jax.vmap(energy)(jnp.ones((2, 4)))
        jax.grad(energy)(jnp.ones(5))
        return energy

    batched, nested = [r for r in _reasons(program) if r.kind is ReasonKind.SHAPE]
    assert "batched" in batched.facts and "nested" not in batched.facts
    assert "traced inside" not in batched.message
    assert "nested" in nested.facts and nested.message.count("traced inside jax.grad") == 1


# ---------------------------------------------------------------- words made at the sink


def test_words_read_from_a_report_are_kept_as_written() -> None:
    """A report's reasons are words only: read back, they print as they were written (no cap,
    no template), and the JSON written from them is the same."""
    long = "m" * 300
    r = jitlens.Reason("shape", "x", "x", "f32[2]", "f32[3]", long, "Keep `x` one shape.")
    assert r.said[0].template is None and r.message == long and r.fix == "Keep `x` one shape."
    event = jitlens.Event(1, "retrace", "a.py:3", "x: f32[3]", reasons=(r,))
    function = jitlens.FunctionReport(
        "f", "f", "jax.jit", "a.py:1", "a.py:2", 2, 2, 2, 0, 0, 0.0, 0.0, 0.0, events=(event,)
    )
    rep = jitlens.Report(2, "0", "0", "", "cpu", 0, 1, "h", 0.0, 1.0, (function,))
    back = jitlens.Report.from_dict(json.loads(rep.to_json()))
    assert back.to_json() == rep.to_json() and back.functions[0].events[0].reasons[0] == r
