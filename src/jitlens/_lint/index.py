"""Facts the lint rules ask of one parsed file: names, scopes, loops, classes, repeated code."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterator, Mapping

from .nodes import (
    Comprehension,
    FunctionNode,
    Loop,
    Scope,
    callee,
    contains,
    literal,
    names_loaded,
    stored,
)

JIT_FACTORIES = frozenset(
    {"jax.jit", "jax.experimental.pjit.pjit", "flax.nnx.jit", "flax.nnx.cached_partial"}
)
PARTIALS = frozenset({"functools.partial", "jax.tree_util.Partial"})
_MODULE_BASE_NAMES = (".Module", ".Pytree", ".Object")  # under flax.nnx, any submodule
_CACHES = frozenset({"functools.cache", "functools.lru_cache"})
_SWEEP_CALLS = frozenset(
    {"itertools.product", "zip", "enumerate", "reversed", "sorted", "list", "tuple"}
)
# Factories are named ``make_train_step`` too; they run once, so they are not step functions.
_FACTORY_PREFIXES = ("make_", "build_", "create_", "get_", "init_", "setup_", "compile_")


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """The names of a library the index knows without reading an import.

    JAX's, Flax's and Python's are :data:`VOCABULARY`; a lint rules module of another
    library declares that library's as its ``VOCABULARY`` (``rules_*.py``), and
    ``rules.py`` joins them (``|``) for every file it lints.
    """

    #: Conventional names resolved even without an import (``jnp`` -> ``jax.numpy``), so
    #: that snippets lint like files.
    aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: Qualified-name prefixes of decorators that trace the function (``jax.vmap``, ``nnx.scan``).
    tracing: tuple[str, ...] = ()
    #: Jits that keep an argument that is no array static (compared by identity when it has
    #: no ``__eq__``): their qualified name -> how the user writes them.
    static_argument_jits: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __or__(self, other: Vocabulary) -> Vocabulary:
        return Vocabulary(
            {**self.aliases, **other.aliases},
            tuple(dict.fromkeys(self.tracing + other.tracing)),
            {**self.static_argument_jits, **other.static_argument_jits},
        )


#: JAX's, Flax's and Python's names.
VOCABULARY = Vocabulary(
    aliases={
        "jax": "jax",
        "jnp": "jax.numpy",
        "np": "numpy",
        "nnx": "flax.nnx",
        "flax": "flax",
        "functools": "functools",
        "itertools": "itertools",
        "jit": "jax.jit",
        "partial": "functools.partial",
    },
    tracing=("jax.", "flax."),
    static_argument_jits={"flax.nnx.jit": "nnx.jit"},
)


class FileIndex:
    """One module's syntax tree with the lookups every rule shares.

    Names are resolved through the file's imports (``import jax as J``,
    ``from jax import jit``), never by importing anything, and else by the
    conventional names of ``vocabulary`` (``rules.VOCABULARY``: every library's).
    """

    def __init__(self, tree: ast.Module, vocabulary: Vocabulary = VOCABULARY) -> None:
        self.tree = tree
        self.vocabulary = vocabulary
        self.parents: dict[ast.AST, ast.AST] = {}
        self.functions: dict[str, list[FunctionNode]] = {}
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self.aliases: dict[str, str] = {}
        self._sweeps: dict[ast.AST, bool] = {}
        self._frames: dict[ast.AST, tuple[Scope, list[Loop]]] = {}
        self._changing: dict[ast.AST, set[str]] = {}
        bound: set[str] = set()
        #: Every node of the file, walked once and shared by all rules.
        self.nodes: list[ast.AST] = list(ast.walk(tree))
        self.calls: list[ast.Call] = [n for n in self.nodes if isinstance(n, ast.Call)]
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, FunctionNode):
                self.functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.partition(".")[0]
                    self.aliases[a.asname or top] = a.name if a.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
        bound |= set(self.functions) | set(self.classes)
        for name, qualname in vocabulary.aliases.items():
            if name not in bound:
                self.aliases.setdefault(name, qualname)
        self._bindings = self._binding_table()
        self.module_classes = self._module_classes()
        self.traced = self._traced_functions()
        self.jitted_names = self._jitted_names()
        self.repeated = self._repeated_functions()

    # -- names ---------------------------------------------------------------------------------

    def qualname(self, node: ast.AST) -> str | None:
        """``jax.numpy.ones`` for ``jnp.ones`` when ``jnp`` is imported as such."""
        if isinstance(node, ast.Name):
            qualname = self.aliases.get(node.id)
        elif isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            qualname = f"{base}.{node.attr}" if base else None
        else:
            return None
        if qualname and qualname.startswith("flax.experimental.nnx"):  # flax < 0.8 spelling
            return "flax.nnx" + qualname.removeprefix("flax.experimental.nnx")
        return qualname

    def spelling(self, qualname: str, default: str) -> str:
        """How this file spells a module (``jnp`` for ``jax.numpy``), for fixes in its words."""
        return next((n for n, q in self.aliases.items() if q == qualname), default)

    def jit_factory(self, node: ast.AST) -> str | None:
        """Which jit ``node`` is, if any.

        ``jax.jit``, ``nnx.jit``, ``nnx.cached_partial``, and their decorator
        factory forms ``partial(jax.jit, ...)`` and ``jax.jit(static_argnames=...)``.
        """
        qualname = self.qualname(node)
        if qualname in JIT_FACTORIES:
            return qualname
        if not isinstance(node, ast.Call):
            return None
        qualname = self.qualname(node.func)
        if qualname == "functools.partial" and node.args:
            inner = self.qualname(node.args[0])
            return inner if inner in JIT_FACTORIES else None
        return qualname if qualname in JIT_FACTORIES and not node.args else None

    def jit_decorator(self, fn: FunctionNode) -> ast.expr | None:
        """The decorator that jits ``fn`` (``@jax.jit``, ``@partial(nnx.jit, ...)``), if any."""
        return next((d for d in fn.decorator_list if self.jit_factory(d)), None)

    def bindings(self, name: str, scope: Scope, within: ast.AST | None = None) -> list[ast.AST]:
        """What code of ``scope`` binds ``name`` to: nested defs and assigned values.

        With ``within``, only the bindings inside that node (a loop body).
        """
        found = self._bindings.get((name, scope), [])
        if within is None:
            return [value for _, value in found]
        return [value for node, value in found if contains(within, node)]

    def _binding_table(self) -> dict[tuple[str, Scope], list[tuple[ast.AST, ast.AST]]]:
        table: dict[tuple[str, Scope], list[tuple[ast.AST, ast.AST]]] = {}
        for node in self.nodes:
            if isinstance(node, FunctionNode):
                pairs = [(node.name, node)]
            elif isinstance(node, ast.Assign):
                pairs = [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                pairs = [(node.target.id, node.value)] if node.value else []
            else:
                continue
            scope = self._frame(node)[0]
            for name, value in pairs:
                table.setdefault((name, scope), []).append((node, value))
        return table

    # -- where code runs -----------------------------------------------------------------------

    def frame(self, node: ast.AST) -> tuple[Scope, list[Loop]]:
        """The scope whose code evaluates ``node``, and the loops that repeat it there.

        Loops are innermost first. Decorators, default values and a ``for``
        loop's iterable belong to the enclosing code, not to the body. A
        sweep over a literal handful of values (``for lr in (0.1, 0.01)``)
        is deliberate and does not count as repeating.
        """
        scope, loops = self._frame(node)
        return scope, [loop for loop in loops if not self._is_sweep(loop, scope)]

    def _frame(self, node: ast.AST) -> tuple[Scope, list[Loop]]:
        if node not in self._frames:
            self._frames[node] = self._find_frame(node)
        return self._frames[node]

    def _find_frame(self, node: ast.AST) -> tuple[Scope, list[Loop]]:
        loops: list[Loop] = []
        child, parent = node, self.parents.get(node)
        evaluated_once = False
        while parent is not None:
            if isinstance(parent, FunctionNode | ast.ClassDef) and child in parent.body:
                return parent, loops
            if isinstance(parent, ast.Lambda) and child is parent.body:
                return parent, loops
            if isinstance(parent, ast.For | ast.AsyncFor) and child in parent.body:
                loops.append(parent)
            elif isinstance(parent, ast.While) and (child in parent.body or child is parent.test):
                loops.append(parent)
            elif isinstance(parent, ast.comprehension):
                owner = self.parents.get(parent)
                evaluated_once = child is parent.iter and owner.generators[0] is parent
            elif isinstance(parent, Comprehension):
                if not evaluated_once:
                    loops.append(parent)
                evaluated_once = False
            child, parent = parent, self.parents.get(parent)
        return self.tree, loops

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        scope = self._frame(node)[0]
        while not isinstance(scope, ast.Module):
            if isinstance(scope, ast.ClassDef):
                return scope
            scope = self._frame(scope)[0]
        return None

    def inside_traced(self, node: ast.AST) -> bool:
        """Whether ``node`` only runs while JAX traces a jitted function around it."""
        scope = self._frame(node)[0]
        while not isinstance(scope, ast.Module):
            if scope in self.traced:
                return True
            scope = self._frame(scope)[0]
        return False

    def _is_sweep(self, loop: Loop, scope: Scope) -> bool:
        if loop not in self._sweeps:
            if isinstance(loop, ast.For | ast.AsyncFor):
                self._sweeps[loop] = self._sweep_iterable(loop.iter, scope)
            elif isinstance(loop, Comprehension):
                sweeps = [self._sweep_iterable(g.iter, scope) for g in loop.generators]
                self._sweeps[loop] = all(sweeps)
            else:
                self._sweeps[loop] = False
        return self._sweeps[loop]

    def _sweep_iterable(
        self, node: ast.AST, scope: Scope, seen: frozenset[str] = frozenset()
    ) -> bool:
        """A literal collection of constants, or ``itertools.product`` and friends of them."""
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return all(literal(e) for e in node.elts)
        if isinstance(node, ast.Call):
            qualname = self.qualname(node.func) or getattr(node.func, "id", "")
            return qualname in _SWEEP_CALLS and all(
                self._sweep_iterable(a, scope, seen) for a in node.args
            )
        if isinstance(node, ast.Name) and node.id not in seen:
            if node.id in self.classes:
                return True  # an Enum: its members
            bound = self.bindings(node.id, scope) or self.bindings(node.id, self.tree)
            seen |= {node.id}
            return bool(bound) and all(self._sweep_iterable(b, scope, seen) for b in bound)
        return False

    def changing_names(self, loop: Loop) -> set[str]:
        """Names that take a new value on every iteration of ``loop``.

        The loop variables, names updated in place (``step += 1``), and names
        assigned from those.
        """
        if loop not in self._changing:
            self._changing[loop] = self._find_changing_names(loop)
        return self._changing[loop]

    def _find_changing_names(self, loop: Loop) -> set[str]:
        names: set[str] = set()
        if isinstance(loop, Comprehension):
            for generator in loop.generators:
                names |= stored(generator.target)
            return names
        if isinstance(loop, ast.For | ast.AsyncFor):
            names |= stored(loop.target)
        body = [n for stmt in loop.body for n in ast.walk(stmt)]
        names |= set().union(*(stored(n.target) for n in body if isinstance(n, ast.AugAssign)))
        changed = True
        while changed:
            changed = False
            for node in body:
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    read = {n.id for n in names_loaded(node.value)}
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    bound = set().union(*(stored(t) for t in targets))
                    if read & (names | bound) and not bound <= names:  # or `n = n + 1`
                        names |= bound
                        changed = True
        return names

    # -- classes -------------------------------------------------------------------------------

    def _module_classes(self) -> dict[ast.ClassDef, str]:
        """Classes deriving from an NNX Module or Pytree, directly or through this file."""

        def nnx(qualname: str) -> bool:
            return qualname.startswith("flax.nnx.") and qualname.endswith(_MODULE_BASE_NAMES)

        return self.subclasses_of(nnx)

    def subclasses_of(self, is_root: Callable[[str], bool]) -> dict[ast.ClassDef, str]:
        """Classes of this file deriving from a base whose qualname ``is_root`` accepts,
        directly or through other classes of this file; each with the base it was found by."""
        found: dict[ast.ClassDef, str] = {}
        changed = True
        while changed:
            changed = False
            for cls in (c for defs in self.classes.values() for c in defs if c not in found):
                for base in cls.bases:
                    local = isinstance(base, ast.Name) and any(
                        c in found for c in self.classes.get(base.id, ())
                    )
                    if local or is_root(self.qualname(base) or ""):
                        found[cls] = ast.unparse(base)
                        changed = True
                        break
        return found

    def class_family(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """``cls`` and its base classes defined in this file."""
        family, todo = [], [cls]
        while todo:
            current = todo.pop()
            if current not in family:
                family.append(current)
                names = [b.id for b in current.bases if isinstance(b, ast.Name)]
                todo.extend(c for n in names for c in self.classes.get(n, ()))
        return family

    def methods(self, cls: ast.ClassDef) -> Iterator[FunctionNode]:
        """Instance methods: not static, class, or class-creation methods."""
        for stmt in cls.body:
            if isinstance(stmt, FunctionNode) and stmt.name not in ("__new__", "__init_subclass__"):
                decorators = {ast.unparse(d) for d in stmt.decorator_list}
                if not decorators & {"staticmethod", "classmethod"}:
                    yield stmt

    def is_method(self, fn: FunctionNode) -> bool:
        return isinstance(self.parents.get(fn), ast.ClassDef)

    # -- functions -----------------------------------------------------------------------------

    def _traced_functions(self) -> set[FunctionNode]:
        """Functions whose body only runs while JAX traces them (jitted, or jitted by name)."""
        traced = {fn for fns in self.functions.values() for fn in fns if self.jit_decorator(fn)}
        for node in self.nodes:
            if isinstance(node, ast.Call) and node.args and self.jit_factory(node.func):
                if isinstance(node.args[0], ast.Name):
                    traced.update(self.functions.get(node.args[0].id, ()))
        return traced

    def _jitted_names(self) -> set[str]:
        """Names that call a jitted function: jit-decorated defs and ``f = jax.jit(g)``."""
        names = {fn.name for fn in self.traced if self.jit_decorator(fn)}
        for node in self.nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                if node.value.args and self.jit_factory(node.value.func):
                    for target in node.targets:
                        if isinstance(target, ast.Name | ast.Attribute):
                            names.add(target.id if isinstance(target, ast.Name) else target.attr)
        return names

    def _repeated_functions(self) -> dict[FunctionNode, str]:
        """Functions that run many times, each with why: called in a loop, or a step function."""
        skipped = self.traced | {
            fn
            for fns in self.functions.values()
            for fn in fns
            if any(self.qualname(callee(d)) in _CACHES for d in fn.decorator_list)
        }
        reasons: dict[FunctionNode, str] = {}
        for name, fns in self.functions.items():
            if _is_step_name(name):
                reasons.update((f, "a step function, by its name") for f in fns if f not in skipped)
        calls = [(call, *self.frame(call)) for call in self.calls]
        changed = True
        while changed:
            changed = False
            for call, scope, loops in calls:
                if loops:
                    why = f"called in the loop at line {loops[0].lineno}"
                elif isinstance(scope, FunctionNode) and scope in reasons:
                    why = f"called from `{scope.name}`, which runs repeatedly"
                else:
                    continue
                for fn in self._callees(call):
                    if fn not in reasons and fn not in skipped and fn is not scope:
                        reasons[fn] = why
                        changed = True
        return reasons

    def _callees(self, call: ast.Call) -> list[FunctionNode]:
        """Defs in this file that ``call`` may run: ``f(...)`` a function, ``x.f(...)`` a method."""
        func = call.func
        if isinstance(func, ast.Name):
            return [f for f in self.functions.get(func.id, ()) if not self.is_method(f)]
        if isinstance(func, ast.Attribute):
            return [f for f in self.functions.get(func.attr, ()) if self.is_method(f)]
        return []


def _is_step_name(name: str) -> bool:
    name = name.lstrip("_")
    return (name == "step" or name.endswith("_step")) and not name.startswith(_FACTORY_PREFIXES)
