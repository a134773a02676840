"""Tests of ``jitlens audit``: each finding on a minimal model, the shared cases, ground truth, CLI."""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import jitlens
from jitlens import AuditError, AuditFinding, AuditResult, audit

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
MODELS = FIXTURES / "audit_models.py"
CASES = ROOT / "tests" / "cases"
ADDR = re.compile(r"0x[0-9a-f]+")
TX = optax.sgd(0.1)
POOL = functools.partial(nnx.avg_pool, window_shape=(2, 2))
ACTIVATIONS = {"gelu": functools.partial(nnx.gelu, approximate=True)}


def _audit_cli(argv: list[str]) -> int:
    """``jitlens audit ARGV`` as a user runs it, in this process."""
    return jitlens.main(["audit", *argv])


def rngs() -> nnx.Rngs:
    return nnx.Rngs(0)


def found(result: AuditResult) -> list[tuple[str, str, str]]:
    return [(f.severity, f.kind, f.path) for f in result.findings]


def load_case(name: str) -> types.ModuleType:
    """The definitions of a shared case script (imports, classes, functions, constants), not its runs."""
    path = CASES / name
    tree = ast.parse(path.read_text())
    keep = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.Assign)
    tree.body = [node for node in tree.body if isinstance(node, keep)]
    module = types.ModuleType(f"_audit_case_{path.stem}")
    sys.modules[module.__name__] = module  # module-level objects are reachable by name
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


# -- minimal models, one per finding ----------------------------------------------------------


class Lambda(nnx.Module):
    def __init__(self) -> None:
        self.act = lambda x: x


class PerInstanceDot(nnx.Module):
    def __init__(self) -> None:
        dot = functools.partial(jax.lax.dot_general, precision="highest")
        self.lin = nnx.Linear(2, 2, dot_general=dot, rngs=rngs())


class JittedAttr(nnx.Module):
    def __init__(self) -> None:
        self.fn = jax.jit(jnp.sin)


class Layers(nnx.Module):
    def __init__(self) -> None:
        self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs()) for _ in range(4)])
        self.layers[3].avg_pool = functools.partial(nnx.avg_pool, window_shape=(2, 2))


class TupleOfFunctions(nnx.Module):
    def __init__(self) -> None:
        self.acts = (jax.nn.relu, lambda x: x)


BUILDS = iter(range(1_000_000))


class Numbered(nnx.Module):
    """A static that differs by value between builds (a global counter, a timestamp)."""

    def __init__(self) -> None:
        self.build = next(BUILDS)


class BoundMethod(nnx.Module):
    def __init__(self) -> None:
        self.linear = nnx.Linear(2, 2, rngs=rngs())
        self.forward = self.linear.__call__


class LibraryClosure(nnx.Module):
    def __init__(self) -> None:
        self.kernel_init = nnx.initializers.lecun_normal()


def sequential_lambda() -> nnx.Sequential:
    return nnx.Sequential(nnx.Linear(2, 2, rngs=rngs()), lambda x: 2 * x)


class Stable(nnx.Module):
    """Shared and stable: module-level function, partial, registry entry, enum, default arg."""

    def __init__(self, act: Callable[..., Any] = lambda x: x) -> None:
        self.relu = nnx.relu
        self.pool = POOL
        self.gelu = ACTIVATIONS["gelu"]
        self.precision = jax.lax.Precision.HIGHEST
        self.act = act
        self.window = (2, 2)
        self.training = True
        self.name = "stable"


@functools.cache
def cached_partial() -> functools.partial:
    return functools.partial(nnx.avg_pool, window_shape=(2, 2))


class Plain:
    pass


@functools.cache
def cached_plain() -> Plain:
    return Plain()


class SharedUnstable(nnx.Module):
    def __init__(self) -> None:
        self.pool = cached_partial()
        self.cfg = cached_plain()


class Numbers(nnx.Linear):
    """A user subclass of a flax layer: its own numbers are infos, flax's are not."""

    def __init__(self) -> None:
        super().__init__(2, 3, rngs=rngs())
        self.scale = 0.5
        self.step = 0
        self.debug = False


@dataclasses.dataclass
class MutableConfig:
    features: int = 8


class Unhashable(nnx.Module):
    def __init__(self) -> None:
        self.sizes = [1, 2]
        self.cfg = MutableConfig()


class RaisingEq:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("cannot compare")

    def __hash__(self) -> int:
        return 0


class BadEq(nnx.Module):
    def __init__(self) -> None:
        self.x = RaisingEq()
        self.w = nnx.Param(jnp.ones(2))


class Holder:
    def __init__(self, inner: Any) -> None:
        self.inner = inner


class HiddenModule(nnx.Module):
    def __init__(self) -> None:
        self.holder = Holder(nnx.Linear(2, 2, rngs=rngs()))


class HiddenArray(nnx.Module):
    def __init__(self) -> None:
        self.scaled = functools.partial(jnp.multiply, np.ones(2))


class StringParam(nnx.Module):
    def __init__(self) -> None:
        self.v = nnx.Param("abc")


def lambda_metadata() -> Callable[[Any], Any]:
    return lambda x: x


class Metadata(nnx.Module):
    def __init__(self) -> None:
        self.w = nnx.Param(jnp.ones(2), last_update=-1, on_read=lambda_metadata())


class FlaxOnly(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.conv = nnx.Conv(1, 2, kernel_size=(3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=2, in_features=4, decode=False, rngs=rngs)
        self.norm = nnx.LayerNorm(4, rngs=rngs)
        self.embed = nnx.Embed(5, 4, rngs=rngs)
        self.seq = nnx.Sequential(nnx.Linear(4, 4, rngs=rngs), nnx.relu)


def flax_only_training() -> tuple[FlaxOnly, nnx.Optimizer]:
    model = FlaxOnly(rngs())
    return model, nnx.Optimizer(model, TX, wrt=nnx.Param)


def inline_optax() -> nnx.Optimizer:
    return nnx.Optimizer(nnx.Linear(2, 2, rngs=rngs()), optax.adam(1e-3), wrt=nnx.Param)


def class_in_factory() -> nnx.Module:
    class Local(nnx.Module):
        def __init__(self) -> None:
            self.linear = nnx.Linear(2, 2, rngs=rngs())

    return Local()


@pytest.fixture(scope="module")
def results() -> dict[str, AuditResult]:
    """Each factory audited once for the whole module (building is the slow part)."""
    factories: dict[str, Callable[[], Any]] = {
        "lambda": Lambda,
        "dot": PerInstanceDot,
        "jitted": JittedAttr,
        "layers": Layers,
        "tuple": TupleOfFunctions,
        "numbered": Numbered,
        "method": BoundMethod,
        "closure": LibraryClosure,
        "sequential": sequential_lambda,
        "stable": Stable,
        "shared": SharedUnstable,
        "numbers": Numbers,
        "unhashable": Unhashable,
        "bad_eq": BadEq,
        "hidden_module": HiddenModule,
        "hidden_array": HiddenArray,
        "string_param": StringParam,
        "metadata": Metadata,
        "flax_only": flax_only_training,
        "optax": inline_optax,
        "class": class_in_factory,
    }
    return {name: audit(factory) for name, factory in factories.items()}


# -- errors: statics that differ between two builds -------------------------------------------


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_lambda_is_an_error(results: dict[str, AuditResult]) -> None:
    (f,) = results["lambda"].findings
    assert (f.severity, f.kind, f.path) == ("error", "identity_static", "model.act")
    assert f.message.startswith("`model.act` is a lambda, which compares by identity")
    assert "def act(" in f.fix
    assert f.before != f.after
    assert results["lambda"].exit_code == 1


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_flax_layer_argument_fix_is_at_the_call(results: dict[str, AuditResult]) -> None:
    (f,) = results["dot"].findings
    assert (f.severity, f.path) == ("error", "model.lin.dot_general")
    assert f.fix == (
        "Create it once at module level (`DOT_GENERAL = functools.partial(jax.lax.dot_general, "
        "precision='highest')`) and pass that same object: `nnx.Linear(..., dot_general=DOT_GENERAL)`."
    )


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_jitted_function_per_instance(results: dict[str, AuditResult]) -> None:
    assert found(results["jitted"]) == [("error", "identity_static", "model.fn")]
    assert "jitted function" in results["jitted"].findings[0].message


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_nested_path_names_the_layer(results: dict[str, AuditResult]) -> None:
    assert found(results["layers"]) == [("error", "identity_static", "model.layers[3].avg_pool")]


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_container_names_what_is_rebuilt_inside(results: dict[str, AuditResult]) -> None:
    (f,) = results["tuple"].findings
    assert (f.severity, f.kind, f.path) == ("error", "identity_static", "model.acts")
    assert f.message.startswith("`model.acts` is a `tuple` holding a lambda")


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_static_value_that_differs(results: dict[str, AuditResult]) -> None:
    (f,) = results["numbered"].findings
    assert (f.severity, f.kind, f.path) == ("error", "static_value", "model.build")
    assert int(f.after) == int(f.before) + 1
    assert "changed value" in f.message and "nnx.Variable" in f.fix


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_bound_method_library_closure_and_list_item(results: dict[str, AuditResult]) -> None:
    (method,) = results["method"].findings
    assert (method.kind, method.path) == ("identity_static", "model.forward")
    assert "a bound method" in method.message and "type(obj).__call__" in method.fix
    (closure,) = results["closure"].findings
    assert closure.fix.startswith("Make it once at module level (`KERNEL_INIT = ...`, the call")
    (item,) = results["sequential"].findings
    assert item.path.endswith("[1]") and "is a lambda" in item.message
    assert item.fix.startswith("Define the function once at module level (`def fn(...)`)")


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_optax_transform_built_in_the_factory(results: dict[str, AuditResult]) -> None:
    (f,) = results["optax"].findings
    # the Flax tutorial builds the optimizer once: a warning that names the condition
    assert (f.severity, f.kind, f.path) == ("warning", "identity_static", "optimizer.tx")
    assert "optax transform" in f.message and "rebuild the optimizer" in f.message
    assert "optax.inject_hyperparams" in f.fix
    assert results["optax"].exit_code == 0


@pytest.mark.parametrize(
    ("make", "named"),
    [(lambda: optax.adamw(1e-3), "optax.adamw"), (lambda: optax.sgd(1e-3, momentum=0.9), None)],
    ids=["adamw", "sgd-momentum"],
)
def test_optax_fix_names_the_optimizer_built(make: Callable[[], Any], named: str | None) -> None:
    """The audit's sweep fix named `optax.adam` for any optimizer: it names the optax function
    that built this one, read from the transform, or, where no one function is sure (sgd with
    momentum), says it in general, naming none."""
    (f,) = audit(
        lambda: nnx.Optimizer(nnx.Linear(2, 2, rngs=rngs()), make(), wrt=nnx.Param)
    ).findings
    assert f.path == "optimizer.tx" and "optax.inject_hyperparams" in f.fix, f.fix
    shown = re.findall(r"optax\.inject_hyperparams\((optax\.\w+)\)", f.fix)
    assert shown == ([named] if named else []), f.fix


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_class_defined_in_the_factory(results: dict[str, AuditResult]) -> None:
    (f,) = results["class"].findings
    assert (f.severity, f.kind, f.path) == ("error", "identity_static", "model")
    assert "Local" in f.message and "class Local" in f.fix


# -- errors: what nnx or JAX would reject later -----------------------------------------------


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_unhashable_statics(results: dict[str, AuditResult]) -> None:
    assert found(results["unhashable"]) == [
        ("error", "static_value", "model.cfg"),
        ("error", "static_value", "model.sizes"),
    ]
    cfg, sizes = results["unhashable"].findings
    assert "not hashable" in sizes.message and "tuple(...)" in sizes.fix
    assert "frozen=True" in cfg.fix
    # data until printed: the makings of its words, templates with kinds, made when read
    assert [w.id for w in sizes.said] == ["audit_unhashable", "audit_unhashable_fix"]
    assert json.loads(results["unhashable"].to_json())["findings"][1]["fix"] == sizes.fix


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_comparison_that_raises(results: dict[str, AuditResult]) -> None:
    (f,) = results["bad_eq"].findings
    assert (f.severity, f.kind, f.path) == ("error", "static_value", "model.x")
    assert "RuntimeError: cannot compare" in f.message


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_data_hidden_in_a_static(results: dict[str, AuditResult]) -> None:
    (module,) = results["hidden_module"].findings
    assert (module.severity, module.kind, module.path) == (
        "error",
        "graph_structure",
        "model.holder",
    )
    assert "a Module (`Linear`) (at `.inner`)" in module.message
    (array,) = results["hidden_array"].findings
    assert array.path == "model.scaled" and "an array" in array.message
    assert "nnx.Variable" in array.fix


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_data_that_is_not_an_array(results: dict[str, AuditResult]) -> None:
    (f,) = results["string_param"].findings
    assert (f.severity, f.kind, f.path) == ("error", "graph_structure", "model.v")
    assert "`str` ('abc') as data" in f.message


# -- warnings and infos -----------------------------------------------------------------------


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_module_level_and_default_objects_are_stable(results: dict[str, AuditResult]) -> None:
    assert results["stable"].findings == ()


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_shared_but_unnamed_identity_statics_warn(results: dict[str, AuditResult]) -> None:
    assert found(results["shared"]) == [
        ("warning", "identity_static", "model.cfg"),
        ("warning", "identity_static", "model.pool"),
    ]
    cfg, pool = results["shared"].findings
    assert "both builds share one object today" in pool.message
    assert pool.before == pool.after
    assert "frozen dataclass" in cfg.fix
    assert results["shared"].exit_code == 0


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_numbers_on_user_modules_are_infos(results: dict[str, AuditResult]) -> None:
    assert found(results["numbers"]) == [
        ("info", "static_value", "model.scale"),
        ("info", "static_value", "model.step"),
    ]
    step = results["numbers"].findings[1]
    assert step.fix.startswith("If it changes during training, make it state: `self.step = ")
    assert results["numbers"].exit_code == 0


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_variable_metadata(results: dict[str, AuditResult]) -> None:
    assert found(results["metadata"]) == [
        ("error", "variable_metadata", "model.w.on_read"),
        ("info", "variable_metadata", "model.w.last_update"),
    ]
    on_read, last_update = results["metadata"].findings
    assert on_read.message.startswith("`model.w.on_read` is a lambda, which compares by identity")
    assert on_read.fix == (
        "Create it once at module level (`ON_READ = lambda x: ...`) and pass that same "
        "object: `nnx.Param(..., on_read=ON_READ)`."
    )
    assert "(-1) in the metadata of `model.w` (Param)" in last_update.message


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_flax_layers_and_shared_optimizer_are_clean(results: dict[str, AuditResult]) -> None:
    result = results["flax_only"]
    assert result.findings == ()
    assert result.roots == ("model: FlaxOnly", "optimizer: Optimizer")
    assert result.statics > 100


@pytest.mark.xdist_group("audit_results")  # its module fixture runs once
def test_kinds_come_from_the_explainer_vocabulary(results: dict[str, AuditResult]) -> None:
    for result in results.values():
        for f in result.findings:
            assert f.kind in set(jitlens.ReasonKind) and f.severity in ("error", "warning", "info")
            assert len(f.message) <= 240 and len(f.fix) <= 240


# -- the shared cases -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def case01() -> types.ModuleType:
    return load_case("01_nnx_functools_partial_attr.py")


@pytest.mark.parametrize("cls", ["Buggy", "TreeUtilPartial"])
def test_case01_partials_are_errors(case01: types.ModuleType, cls: str) -> None:
    result = audit(lambda: getattr(case01, cls)(rngs()))
    assert found(result) == [("error", "identity_static", "model.avg_pool")]


@pytest.mark.parametrize("cls", ["Fixed", "DataPartial"])
def test_case01_fixes_are_clean(case01: types.ModuleType, cls: str) -> None:
    assert audit(lambda: getattr(case01, cls)(rngs())).findings == ()


def test_case06_step_counter_is_info() -> None:
    case = load_case("06_nnx_int_step_counter.py")
    assert found(audit(lambda: case.Buggy(rngs()))) == [("info", "static_value", "model.step")]
    assert audit(lambda: case.Fixed(rngs())).findings == ()


class Stacked(nnx.Module):
    """flax's scan-over-layers example in small: `n_layers` sets the split of the rngs."""

    def __init__(self, n_layers: int, rngs: nnx.Rngs) -> None:
        self.n_layers = n_layers
        self.linear = nnx.Linear(2, 2, rngs=rngs)


def test_a_size_is_told_to_stay_static_not_to_become_a_variable() -> None:
    # `self.n_layers = 3` (a split count) was told "make it state: nnx.Variable(jnp.array(3))",
    # which fails where it sets a shape; the runtime says "expected once per value" for it
    (finding,) = audit(lambda: Stacked(3, rngs())).findings
    assert (finding.severity, finding.path) == ("info", "model.n_layers")
    assert finding.fix.startswith("Expected once per value: `n_layers` looks like a size")
    assert "nnx.Variable(jnp.array" not in finding.fix


def test_a_lazy_module_attribute_is_not_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program that imported ``six``: ``six.moves``' class attributes import a module when
    asked for anything (``dbm.gnu``: ModuleNotFoundError _gdbm) and audit crashed reading
    them. Audit reads what a class stores and never runs the program's code."""

    class Lazy:
        def __getattr__(self, name: str) -> Any:
            raise ModuleNotFoundError("No module named '_gdbm'")

    moves = types.ModuleType("fake_six_moves")
    moves.Items = type("Items", (), {"__module__": "fake_six_moves", "dbm_gnu": Lazy()})
    monkeypatch.setitem(sys.modules, "fake_six_moves", moves)
    shared = lambda x: x  # noqa: E731  (one object, shared by every model: is it named?)

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.act = shared

    result = audit(Model)
    assert [f.path for f in result.findings] == ["model.act"], result.findings


def test_case13_class_in_factory() -> None:
    case = load_case("13_nnx_class_defined_in_factory.py")
    (f,) = audit(lambda: case.make_model(8, 0)).findings
    assert (f.severity, f.kind, f.path) == ("error", "identity_static", "model")
    assert "MLP" in f.message
    assert audit(lambda: case.MLP(8, rngs())).findings == ()


def test_case33_negative_control_is_clean() -> None:
    case = load_case("33_nnx_negative_fresh_model.py")

    def factory() -> tuple[nnx.Module, nnx.Optimizer]:
        model = case.MLP(rngs())
        return model, nnx.Optimizer(model, case.TX, wrt=nnx.Param)

    assert audit(factory).findings == ()


# -- ground truth: what the findings claim is what nnx.jit and jax.jit do ----------------------


def traces(factory: Callable[[], Any]) -> int:
    count = 0

    @nnx.jit
    def step(obj: Any) -> jax.Array:
        nonlocal count
        count += 1
        return jnp.zeros(())

    step(factory())
    step(factory())
    return count


@pytest.mark.parametrize(
    "factory",
    [
        Lambda,
        JittedAttr,
        TupleOfFunctions,
        BoundMethod,
        Metadata,
        Numbered,
        inline_optax,
        class_in_factory,
    ],
)
def test_errors_recompile_per_instance(factory: Callable[[], Any]) -> None:
    result = audit(factory)
    if factory is inline_optax:  # a warning that names the condition: rebuilding the optimizer
        assert [f.severity for f in result.findings] == ["warning"]
        assert "rebuild the optimizer" in result.findings[0].message
    else:
        assert result.errors
    assert traces(factory) == 2


@pytest.mark.parametrize("factory", [Stable, SharedUnstable, Numbers])
def test_clean_models_compile_once(factory: Callable[[], Any]) -> None:
    assert not audit(factory).errors and traces(factory) == 1


def test_rejections_are_real() -> None:
    graphdef, state = nnx.split(Unhashable())
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(lambda g, s: 0, static_argnums=0)(graphdef, state)
    with pytest.raises(ValueError, match="checking equality"):
        traces(BadEq)
    with pytest.raises(TypeError, match="abstract array"):
        traces(StringParam)


# -- roots and the Python API -----------------------------------------------------------------


def test_root_names() -> None:
    pair = audit(lambda: [nnx.Linear(1, 1, rngs=rngs()), nnx.Linear(1, 1, rngs=rngs())])
    assert pair.roots == ("model_0: Linear", "model_1: Linear")
    named = audit(lambda: {"encoder": Lambda()})
    assert found(named) == [("error", "identity_static", "encoder.act")]


def test_factory_errors() -> None:
    with pytest.raises(AuditError, match=r"returned 3 \(a int\); expected an NNX object"):
        audit(lambda: 3)
    with pytest.raises(AuditError, match=r"returned 'x' \(a str\)"):
        audit(lambda: (nnx.Linear(1, 1, rngs=rngs()), "x"))
    with pytest.raises(
        AuditError, match=r"boom\(\) raised at \S*test_audit.py:\d+: KeyError: 'x'$"
    ):

        def boom() -> None:
            raise KeyError("x")

        audit(boom)


def test_string_target_and_json_round_trip() -> None:
    result = audit(f"{MODELS}:make_counter")
    data = json.loads(result.to_json())
    assert data["counts"] == {"error": 0, "warning": 0, "info": 1}
    assert data["exit_code"] == 0
    assert AuditFinding(**data["findings"][0]) == result.findings[0]


# -- rendering and the command line ------------------------------------------------------------

GOLDEN = """\
jitlens audit T: built twice; model: Classifier, optimizer: Optimizer; 32 statics compared

error    model.avg_pool  (identity_static)
    `model.avg_pool` is a functools.partial, which compares by identity: every new instance holds a
      new object and the cache key never matches.
    builds: functools.partial(avg_pool, window_shape=(2, 2), strides=(2, 2)) at 0x…, a new object in
      each
    fix: Call `nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))` in `__call__` instead of
      storing a partial, or assign one module-level partial, or `self.avg_pool =
      nnx.data(jax.tree_util.Partial(nnx.avg_pool, ...))`.

warning  model.act  (identity_static)
    `model.act` is a functools.partial, which compares by identity; both builds share one object
      today, but once it is built per instance every new model recompiles.
    value: functools.partial(gelu, approximate=True) at 0x…, one object shared by both builds
    fix: Call `jax.nn.gelu(x, approximate=True)` in `__call__` instead of storing a partial, or
      assign one module-level partial, or `self.act = nnx.data(jax.tree_util.Partial(jax.nn.gelu,
      approximate=True))`.

warning  optimizer.tx  (identity_static)
    `optimizer.tx` is an optax transform (a tuple of closures made by each optax.* call), which
      compares by identity: nnx.jit recompiles if you rebuild the optimizer (once per run of a
      sweep, say); an optimizer built once compiles once.
    builds: <GradientTransformationExtraArgs made by chain()> at 0x…, a new object in each
    fix: Expected once per optimizer build. To sweep hyperparameters with one compile, build
      `TX = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)` once and set
      `optimizer.opt_state.hyperparams['learning_rate'][...] = lr` per run.

info     model.step  (static_value)
    `model.step` is a Python int (0) kept as a static: it is part of the cache key, so if it changes
      during training (a step counter, a schedule) every new value compiles again.
    value: 0
    fix: If it changes during training, make it state: `self.step = nnx.Variable(jnp.array(0))` and
      update it with `self.step[...] = ...`; else keep it constant.

1 error, 2 warnings, 1 info.
Each error recompiles every nnx.jit function for each new instance (exit 1).
"""


def normalise(result: AuditResult) -> AuditResult:
    """Addresses out of the evidence, before it is wrapped."""
    findings = tuple(
        dataclasses.replace(f, before=ADDR.sub("0x…", f.before), after=ADDR.sub("0x…", f.after))
        for f in result.findings
    )
    return dataclasses.replace(result, target="T", findings=findings)


@pytest.fixture(scope="module")
def classifier() -> AuditResult:
    return audit(f"{MODELS}:make_classifier")


def test_golden_text(classifier: AuditResult) -> None:
    assert str(normalise(classifier)) == GOLDEN


def test_colour_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = [f"{MODELS}:make_classifier", "--color", "always", "--width", "120"]
    assert _audit_cli(args) == 1
    text = capsys.readouterr().out
    assert "\x1b[" in text and "optimizer.tx" in text and "severity" in text
    assert max(len(line) for line in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()) <= 120


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_json = tmp_path / "audit.json"
    assert _audit_cli([f"{MODELS}:make_cnn", "--json", str(out_json)]) == 1
    out = capsys.readouterr().out
    assert "error    model.avg_pool  (identity_static)" in out
    assert "\x1b[" not in out  # not a terminal: plain text
    assert json.loads(out_json.read_text())["findings"][0]["path"] == "model.avg_pool"
    assert _audit_cli([f"{MODELS}:make_fixed"]) == 0
    assert capsys.readouterr().out.endswith(
        "No recompile traps found: two fresh builds give equal cache keys.\n"
    )
    assert _audit_cli([f"{MODELS}:make_counter"]) == 0
    assert _audit_cli([f"{MODELS}:make_training"]) == 0  # the tutorial pattern: a warning
    assert "warning  optimizer.tx" in capsys.readouterr().out
    assert jitlens.main(["audit", f"{MODELS}:make_shared_training"]) == 0


def test_cli_module_target(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    assert _audit_cli(["audit_models:make_fixed"]) == 0
    assert capsys.readouterr().out.startswith("jitlens audit audit_models:make_fixed: built twice")


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("no_colon.py", "TARGET must be FILE.py:FACTORY or package.module:FACTORY"),
        ("tests/fixtures/missing.py:make", "file not found: tests/fixtures/missing.py"),
        ("no_such_package_xyz.models:make", "no module named 'no_such_package_xyz'"),
        (
            f"{MODELS}:make_modle",
            "has no attribute 'make_modle'; callables defined there: CNN, Classifier",
        ),
        (f"{MODELS}:CONFIG", "audit_models.py:CONFIG is a dict, not a callable"),
        (
            f"{MODELS}:make_broken",
            "make_broken() raised at tests/fixtures/audit_models.py:",
        ),
        (f"{MODELS}:make_number", "make_number() returned 3 (a int)"),
        (
            f"{FIXTURES / 'audit_import_error.py'}:make_model",
            "raised at tests/fixtures/audit_import_error.py:5: ValueError: invalid literal for int() "
            "with base 10: 'eight'",
        ),
    ],
)
def test_cli_bad_targets(
    target: str, error: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert _audit_cli([target]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("jitlens audit: error: ")
    assert error in captured.err


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert _audit_cli(["--help"]) == 0
    assert "usage: jitlens audit" in capsys.readouterr().out
    assert _audit_cli([]) == 2


HOSTILE_FACTORIES = """
import os, sys, time

def sleeper():
    time.sleep(1000)

def looper():
    while True:
        try:
            time.sleep(0.01)
        except Exception:  # a broad except must not swallow the time limit
            pass

def exiter():
    sys.exit(0)

def hard_exiter():
    os._exit(0)
"""


@pytest.mark.parametrize(
    ("factory", "words"),
    [
        ("sleeper", "did not finish within 0.5 s"),
        ("looper", "did not finish within 0.5 s"),
        ("exiter", "called sys.exit(0)"),
        ("hard_exiter", "called os._exit(0)"),
    ],
)
def test_a_factory_that_hangs_or_exits_fails_the_audit(tmp_path, capsys, factory, words):
    (tmp_path / "facs.py").write_text(HOSTILE_FACTORIES)
    target = f"{tmp_path / 'facs.py'}:{factory}"
    assert jitlens.main(["audit", target, "--timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


FRESH_API = """
import importlib.util, json, sys
import jitlens
spec = importlib.util.spec_from_file_location("models", sys.argv[1])
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)
out = {}
for name, target in (
    ("make_cnn", models.make_cnn),  # first: a bare CNN, as jitlens.audit(make)
    ("make_shared_training", sys.argv[1] + ":make_shared_training"),  # a dict, by string
    ("make_training", models.make_training),  # a tuple (model, optimizer)
):
    result = jitlens.audit(target)
    out[name] = [result.exit_code, list(result.roots), [f.path for f in result.errors]]
print(json.dumps(out))
"""


def test_audit_as_a_user_runs_it_in_a_fresh_process(fork_python, capsys) -> None:
    """Nothing imported before: the front-end's pieces load because audit asks for them.

    (Before, flax's accessors were read only when tracking installed the nnx
    front-end: every NNX model was "not an NNX object" in a fresh process.) Each command runs
    in a fork of a server that imported JAX and nothing else: no jitlens, no flax, no equinox,
    which is what this shows; JAX's own import is not what it is about.
    """
    eqx_models = FIXTURES / "audit_eqx_models.py"
    commands = {
        "cli nnx tuple": [
            "-m",
            "jitlens",
            "audit",
            "--color",
            "never",
            f"{MODELS}:make_classifier",
        ],
        "cli eqx": ["-m", "jitlens", "audit", "--color", "never", f"{eqx_models}:make"],
        "api": ["-c", FRESH_API, str(MODELS)],
    }
    started = {
        name: fork_python.submit(args, env={"COLUMNS": "100"}, timeout=240)
        for name, args in commands.items()
    }
    done = {}
    for name, handle in started.items():
        proc = fork_python.wait(handle)
        done[name] = ((proc.stdout, proc.stderr), proc.returncode)

    (out, err), code = done["cli nnx tuple"]
    assert code == 1, err
    assert "model: Classifier, optimizer: Optimizer" in out and "error    model.avg_pool" in out, (
        out
    )
    (out, err), code = done["cli eqx"]
    assert code == 1 and "model.act" in out, err
    (out, err), code = done["api"]
    assert code == 0, err
    api = json.loads(out)
    assert api["make_shared_training"] == [0, ["model: FixedCNN", "optimizer: Optimizer"], []]
    assert api["make_cnn"][0] == 1 and api["make_cnn"][2] == ["model.avg_pool"]
    assert api["make_training"][:2] == [0, ["model: FixedCNN", "optimizer: Optimizer"]]
    # the help names what the runs above show working: NNX objects and eqx.Modules (its
    # words need no fresh process: read in this one)
    code = jitlens.main(["audit", "--help"])
    out, err = capsys.readouterr()
    assert code == 0, err
    text = " ".join(out.split())
    assert "NNX model" not in text, text
    assert "Flax NNX" in text and "nnx.jit" in text, text
    assert "eqx.Module" in text and "eqx.filter_jit" in text, text
