"""``jitlens audit``: build a model twice and report the statics that will recompile nnx.jit."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import _compat
from .._compat.flax_api import LAZY_NNX as nnx
from .._core.files import write_atomic
from .._core.key import Entry, Path, keeping_values, short_repr
from .._core.kinds import EntryKind, ReasonKind, WordsKind
from .._core.signature import walk_graphdef
from .._core.words import Template, Words
from .._render.color import add_color_option, want_color
from .._render.text import terminal_width
from . import libraries
from .checks import _Audit
from .limits import DEFAULT_TIMEOUT, bounded
from .model import SEVERITIES as SEVERITIES
from .model import AuditFinding as AuditFinding
from .model import AuditResult as AuditResult
from .render import render_audit as render_audit
from .target import AuditError as AuditError
from .target import _exc_text, _user_frame, load_target
from .target import load_factory as load_factory

SPLIT_MSG = Template(
    WordsKind.AUDIT_SPLIT,
    "`nnx.split({root})` raises {error}: nnx.jit and every nnx transform split their arguments "
    "first, and would fail the same way.",
)
SPLIT_FIX = Template(
    WordsKind.AUDIT_SPLIT_FIX,
    "Fix the attribute the error names: arrays, Variables and Modules belong in data attributes, "
    "configuration in hashable statics.",
)
FACTORY_RAISED = "{name}() raised{at}: {error}"
#: A factory that raised in a module holding a mesh: the context its sharded layers need.
NEEDS_MESH = (
    "\nIf it builds parameters sharded over a mesh, it needs the mesh entered, as a program does "
    "around it; audit a factory that enters your `{mesh}`, then `jitlens audit FILE.py:make`:\n"
    "    def make():\n"
    "        with jax.set_mesh({mesh}):\n"
    "            return {name}()"
)
#: A Module class named where a factory is expected: the commonest first try.
NEEDS_ARGUMENTS = (
    "{name} needs arguments ({params}) and audit calls it with none; add a factory that "
    "builds it, `def make_model(): return {name}({example})`, and audit that: "
    "`jitlens audit FILE.py:make_model`"
)
#: How the example factory fills a parameter every NNX layer takes.
EXAMPLE_ARGUMENTS = {"rngs": "rngs=nnx.Rngs(0)"}
NOT_NNX = (
    "{name}() returned {what}; expected an NNX object (a Module, an nnx.Optimizer), an "
    "eqx.Module, or a tuple/list/dict of them"
)


# -- building and describing ------------------------------------------------------------------


def audit(factory: Callable[[], Any] | str) -> AuditResult:
    """Build ``factory()`` twice and report what would make its jit recompile per new instance.

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
    or a tuple/list/dict of them (paths then start with ``model``, ``optimizer``
    or the dict's keys); an ``eqx.Module``, with its optax optimizer or other
    companions, is audited for ``eqx.filter_jit``'s key instead. A
    ``"file.py:factory"`` or ``"pkg.mod:factory"`` string names one. No jitted function is called.

    Example:
        >>> from flax import nnx
        >>> audit(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0))).findings
        ()

    Raises:
        AuditError: the target cannot be loaded, the factory raises, or it
            returns no NNX object and no eqx.Module.

    See also: ``jitlens lint`` finds traps in source without running it;
    ``chex.assert_max_traces`` / ``equinox.debug.assert_max_traces`` count
    traces once training runs, where shapes and values show too.
    """
    start = time.perf_counter()
    notes: tuple[str, ...] = ()
    module, entered = None, False
    if isinstance(factory, str):
        loaded = load_target(factory)
        target, factory, notes = factory, loaded.factory, loaded.notes
        module, entered = loaded.module, loaded.in_context
    else:
        target = getattr(factory, "__qualname__", None) or repr(factory)
    name = getattr(factory, "__name__", "factory")
    built = _build(factory, name, module, entered)
    for library in libraries.declared():  # models keyed their own way (eqx.filter_jit's)
        roots = library.roots(built)
        if roots is not None:
            again = library.roots(_build(factory, name)) or []
            return dataclasses.replace(library.audit(target, roots, again, start), notes=notes)
    roots_a = _roots(built, name)
    roots_b = _roots(_build(factory, name), name)
    a, rejected = _describe(roots_a)
    b, _ = _describe(roots_b)
    split_errors = [
        AuditFinding("error", ReasonKind.GRAPH_STRUCTURE, root, "", "", msg, fix)
        for root, (msg, fix) in rejected.items()
    ]
    findings = split_errors + _Audit(a, b).run()
    return AuditResult(
        target=target,
        roots=tuple(f"{r}: {type(obj).__name__}" for r, obj in roots_a),
        statics=sum(1 for e in a.values() if e.kind == EntryKind.STATIC and e.in_graph),
        seconds=time.perf_counter() - start,
        findings=tuple(sorted(findings, key=lambda f: SEVERITIES.index(f.severity))),
        notes=notes,
    )


def _build(
    factory: Callable[[], Any], name: str, module: Any = None, in_context: bool = False
) -> Any:
    required = _required_parameters(factory)
    if required:
        example = ", ".join(EXAMPLE_ARGUMENTS.get(p, f"{p}=...") for p in required)
        raise AuditError(
            NEEDS_ARGUMENTS.format(name=name, params=", ".join(required), example=example)
        )
    try:
        return factory()
    except Exception as exc:
        error, at = _exc_text(exc), _user_frame(exc)
        text = FACTORY_RAISED.format(name=name, error=error, at=at)
        mesh = _mesh_held(module)
        if mesh is not None and not in_context:
            text += NEEDS_MESH.format(mesh=mesh, name=name)
        raise AuditError(text) from exc


def _mesh_held(module: Any) -> str | None:
    """The name of a device mesh the factory's module holds (``mesh = jax.make_mesh(...)``), or
    None: a factory whose layers shard their parameters is built inside it."""
    for key, value in vars(module).items() if module is not None else ():
        kind = type(value)
        if kind.__name__ in ("Mesh", "AbstractMesh") and kind.__module__.startswith("jax"):
            return key
    return None


def _required_parameters(factory: Callable[[], Any]) -> list[str]:
    """The parameters ``factory()`` would miss (a Module class named instead of a factory)."""
    import inspect

    try:
        if isinstance(factory, type):  # an nnx.Module's metaclass hides __init__'s signature
            params = list(inspect.signature(factory.__init__).parameters.values())[1:]
        else:
            params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # no signature to read: the call itself will tell
        return []
    kinds = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
    return [p.name for p in params if p.kind in kinds and p.default is inspect.Parameter.empty]


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
    if isinstance(obj, nnx.Rngs):
        return "rngs"
    if not isinstance(obj, nnx.Module) and callable(getattr(obj, "update", None)):
        return "optimizer"  # an optimizer of the program's own (an nnx.Pytree with `update`)
    return "model"


def _describe(
    roots: list[tuple[str, Any]],
) -> tuple[dict[Path, Entry], dict[str, tuple[Words, Words]]]:
    """The key entries of all roots, split together as one nnx.jit call splits its arguments."""
    out: dict[Path, Entry] = {}
    rejected: dict[str, tuple[Words, Words]] = {}
    ref_index = _compat.new_ref_map()
    for name, node in roots:
        flat = _compat.flatten_node(node, ref_index)
        if flat is not None:
            with keeping_values():  # the audit holds both builds itself, and drops them with it
                walk_graphdef(flat[0], flat[1], (("arg", name),), out)
            continue
        try:
            nnx.split(node)
            error = "an error jitlens could not reproduce alone"
        except Exception as exc:
            error = _exc_text(exc)
        rejected[name] = (SPLIT_MSG.words(root=name, error=error), SPLIT_FIX.words())
    return out, rejected


# -- command line -----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jitlens audit",
        description=(
            "Build a model twice, before any training step, and report the statics that make its "
            "jit recompile for every new instance (errors), that are one refactor away from it "
            "(warnings), and Python numbers that recompile if they change (info). Flax NNX "
            "objects are checked against nnx.jit's cache key, eqx.Modules against "
            "eqx.filter_jit's."
        ),
        epilog="Exit status: 0 no errors, 1 errors found, 2 the target cannot be loaded or built.",
    )
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="FILE.py:FACTORY or package.module:FACTORY; FACTORY() returns a Flax NNX Module, "
        "an nnx.Optimizer, an eqx.Module (with its optax optimizer), or a tuple/list/dict of them",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the findings as JSON to PATH")
    add_color_option(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds for importing TARGET and building the model twice "
        f"(default {DEFAULT_TIMEOUT:g})",
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
    if not args.timeout > 0:
        print(
            f"jitlens audit: error: --timeout must be positive, got {args.timeout:g}",
            file=sys.stderr,
        )
        return 2
    from .._render.outputs import output_problem

    source = args.target.rpartition(":")[0]
    problem = output_problem(args.json, [(source, f"the file {source}")] if source else [])
    if problem is not None:
        print(f"jitlens audit: error: {problem}", file=sys.stderr)
        return 2
    try:
        with bounded(args.target, args.timeout):
            result = audit(args.target)
    except AuditError as exc:
        print(f"jitlens audit: error: {exc}", file=sys.stderr)
        return 2
    color = want_color(args.color)
    width = terminal_width(args.width)
    sys.stdout.write(render_audit(result, color=color, width=width))
    sys.stdout.flush()
    if args.json:
        write_atomic(args.json, result.to_json() + "\n")
    return result.exit_code
