"""Every fix jitlens prints, applied to a program: the retrace is gone and the results are kept.

``FIXES`` is the table: each fix template of ``jitlens._core.reasons`` and
the test that proves it on the installed jax/flax/optax, or ``OPTION`` for a
template phrased as an option with its condition ("Expected once per mode.
If ..."). A template without a row fails :func:`test_every_fix_template_has_a_row`.

Each proof runs the faulty program (jitlens must print the template's fix)
and the program with that fix applied (one trace, no reason) and compares
their outputs.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
import pickle
import re
import sys
import types
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx, struct

import jitlens
from jitlens._compat import cache_keys
from jitlens._core import reasons as M
from jitlens._core import report as R
from jitlens._core.kinds import Fact, ReasonKind
from jitlens._core.template_kinds import FixKind
from jitlens._track import stale
from jitlens._track.frontends.equinox import words as F

OPTION = "option"

FIXES: dict[str, str] = {
    "NEW_FUNCTION_FIX": "test_new_function_fix",
    "CLOSURE_FIX": "test_closure_fix",
    "METHOD_FIX": "test_method_fix",
    "NEW_LAMBDA_FIX": "test_new_lambda_fix",
    "NEW_PARTIAL_FIX": "test_new_partial_fix",
    "NEW_PARTIAL_STATIC_FIX": "test_new_partial_static_fix",
    "SHAPE_FIX": "test_shape_fix",
    "GROWING_FIX": "test_growing_fix",
    "PARAM_SHAPE_FIX": OPTION,
    "LAYER_FIX": OPTION,
    "DTYPE_FIX": "test_dtype_fix",
    "KEY_FIX": "test_key_fix",
    "WEAK_FIX": "test_weak_fix",
    "SHARDING_FIX": "test_sharding_fix",
    "SHARDING_GROUP_FIX": (
        "test_first_hour_e.py::test_the_printed_fix_applied_compiles_the_step_once_with_the_same_losses"
    ),
    "STATIC_GRAPH_FIX": "test_static_graph_fix",
    "STATIC_ROLE_FIX": "test_static_role_fix",
    "COUNTER_FIX": "test_counter_fix",
    "SIZE_FIX": OPTION,
    "VAR_WEAK_FIX": "test_var_weak_fix",
    "STATIC_ARG_FIX": "test_static_arg_fix",
    "STATIC_ARG_UNSURE_FIX": OPTION,  # said until the trace's program shows where it went
    "STATIC_SHAPE_FIX": "test_static_shape_fix_is_expected_and_tracing_it_breaks",
    "VAR_ASSIGN_FIX": "test_var_assign_fix",
    "STATIC_RULE_FIX": "test_static_rule_fix",
    "WEAK_VALUE_FIX": "test_weak_value_fix",
    "WEAK_LIBRARY_FIX": "test_weak_library_fix",
    "STATIC_AUX_FIX": "test_static_aux_fix",
    "STATIC_FIELD_FIX": "test_static_field_fix",
    "STATIC_CHOICE_FIX": OPTION,
    "DIFF_STATIC_FIX": OPTION,  # jitlens diff: two runs' keys, the baseline's value or not
    "DIFF_STRUCTURE_FIX": OPTION,
    "STATIC_DATACLASS_FIX": "test_first_hour.py::test_a_static_config_with_a_changing_float_field_gets_a_fix_that_traces_it",
    "MODE_FIX": OPTION,
    "CLASS_FIX": "test_class_fix",
    "NODE_TYPE_FIX": OPTION,
    "SOW_FIX": "test_sow_fix",
    "OWN_VARIABLE_FIX": "test_trial_e.py::test_a_variable_the_model_sets_and_one_step_pops_gets_the_pop_fix",
    "GRAPH_FIX": "test_graph_fix",
    "GRAPH_KIND_FIX": "test_graph_kind_fix",
    "VAR_REPLACED_FIX": "test_var_replaced_fix",
    "PYTREE_KEY_FIX": "test_pytree_key_fix",
    "NONE_FIX": "test_none_fix",
    "LENGTH_FIX": "test_length_fix",
    "PYTREE_KIND_FIX": "test_pytree_kind_fix",
    "VAR_META_FIX": "test_var_meta_fix",
    "ARG_FIX": "test_arg_fix",
    "SIGNATURE_FIX": "test_signature_fix",
    "CONFIG_FIX": "test_config_fix",
    "MESH_FIX": "test_mesh_fix",
    "MESH_DEVICES_FIX": "test_trial_o.py::test_a_mesh_of_the_same_devices_in_another_order_is_named_with_its_fix",
    "EVICTED_FIX": OPTION,
    "CLEARED_FIX": "test_cleared_fix",
    "UNKNOWN_FIX": OPTION,
    "NO_DIFFERENCE_FIX": OPTION,
    "STATIC_TYPE_FIX": "test_static_type_fix",
    "NAN_FIELD_FIX": "test_nan_fix_module_attribute",
    "JIT_OPTION_FIX": "test_jit_option_fix",
    "PARTIAL_GRAPH_FIX": "test_partial_graph_fix",
    "PARTIAL_DATA_FIX": "test_partial_graph_fix",
    "PARTIAL_ARG_FIX": "test_partial_arg_fix",
    "BOUND_METHOD_FIX": "test_bound_method_fix",
    "BOUND_METHOD_ARG_FIX": "test_trial_programs.py::test_a_linen_train_state_rebuilt_per_epoch_gets_fixes_that_work",
    "FUNCTION_FIX": "test_function_fix",
    "JITTED_FIX": "test_jitted_fix",
    "OPTAX_FIX": "test_optax_fix",
    "OPTAX_REBUILT_FIX": "test_trial_programs.py::test_a_linen_train_state_rebuilt_per_epoch_gets_fixes_that_work",
    "OPTAX_STATE_FIX": OPTION,  # worded by test_optax_state_is_said_to_be_optax_s
    "OPTAX_KIND_FIX": OPTION,
    "LIBRARY_MADE_FIX": OPTION,  # worded by test_explain.py::test_a_layer_s_own_state_is_the_layer_s
    "NO_EQ_FIX": "test_no_eq_fix",
    "NO_EQ_TRACED_FIX": "test_leftovers2.py::test_a_new_instance_per_step_is_never_told_to_reuse_one",
    "NO_EQ_VALUES_FIX": "test_leftovers2.py::test_a_new_configuration_per_call_is_frozen_not_reused",
    "ARRAYS_PYTREE_FIX": "test_trial_programs.py::test_a_static_self_holding_arrays_gets_the_pytree_fix",
    "NAN_FIX": "test_nan_fix_static_argument",
    "MUTATED_FIX": "test_mutated_fix",
    "DTYPE_SPELLING_FIX": "test_dtype_spelling_fix",
    # eqx.filter_jit's words (jitlens._track.frontends.equinox.words), proven in test_equinox.py
    "eqx.NEW_FUNCTION_FIX": "test_equinox.py::test_new_function_fix_applied_gives_one_trace_and_the_same_results",
    "eqx.SCALAR_FIX": "test_equinox.py::test_python_scalars_are_static_under_filter_jit_and_fix",
    "eqx.STATIC_FIX": OPTION,
    "eqx.FIELD_NUMBER_FIX": "test_equinox.py::test_static_field_value_and_fix",
    "eqx.FIELD_FIX": OPTION,
    "eqx.MODULE_FUNCTION_FIX": "test_equinox.py::test_module_field_lambda_in_process_and_fix",
    "eqx.MODULE_LIBRARY_FUNCTION_FIX": "test_equinox.py::test_eqx_partial_of_a_lambda_per_call_and_fix",
    "eqx.MODULE_PARTIAL_FIX": "test_equinox.py::test_module_partial_fix_applied_gives_one_trace_and_the_same_results",
    "eqx.MODE_FIX": OPTION,
    "eqx.MODE_ARGUMENT_FIX": OPTION,
    "eqx.SCALAR_FIELD_FIX": "test_equinox.py::test_a_number_field_set_per_step_gets_a_field_fix_that_works",
    "eqx.SCALAR_DATACLASS_FIX": "test_trial_f.py::test_a_number_in_a_flax_dataclass_state_gets_a_replace_fix_that_works",
    "eqx.OPTAX_FIX": "test_equinox.py::test_new_optax_optimizer_per_run_and_both_fixes",
    # a stale nnx.cached_partial (jitlens._track.stale): no retrace, a stale result
    "stale.STALE_FIX": "test_off_path.py::test_stale_cached_partial_fix_gives_the_new_result",
    "stale.INPLACE_FIX": "test_off_path.py::"
    "test_a_static_changed_in_place_is_a_stale_hit_and_its_fix_gives_the_new_result",
    "stale.INPLACE_LINEN_FIX": "test_leftovers.py::"
    "test_a_linen_field_changed_in_place_is_a_stale_hit_and_its_fix_gives_the_new_result",
}

#: Words that make a template an option with its condition.
CONDITIONS = ("Expected", "If ", "if ")


#: Fix kinds whose fixes other test modules apply: the transformations' words
#: (``tests/test_frontends_more.py``) and the libraries' (``tests/test_libraries.py``).
APPLIED_ELSEWHERE = ("PMAP_", "LINEN_", "NESTED_", "KERAS_", "NUMPYRO_", "DIFFERENT_FUNCTION")


def templates() -> dict[str, str]:
    """Every fix template a retrace (or stale-cache) explanation can print, by table name."""
    out = {
        f"{kind.name}_FIX": text
        for spec in M.SPECS.values()
        for kind, text in spec.fixes.items()
        if not kind.name.startswith(APPLIED_ELSEWHERE)
    }
    for prefix, mod in (("eqx.", F), ("stale.", stale)):
        for name, value in vars(mod).items():
            reexported = getattr(M, name, None) is value  # e.g. F's LAYER_FIX
            if name.endswith("_FIX") and isinstance(value, str) and not reexported:
                out[prefix + name] = value
    return out


def _has_test(row: str) -> bool:
    if "::" not in row:
        return callable(globals().get(row))
    file, test = row.split("::")
    source = (pathlib.Path(__file__).parent / file).read_text()
    return re.search(rf"^def {re.escape(test)}\(", source, re.M) is not None


def test_every_fix_template_has_a_row() -> None:
    assert sorted(set(templates()) - set(FIXES)) == []
    assert sorted(set(FIXES) - set(templates())) == []
    # the reasons name their template: each row is a FixKind (the stale hit's is no reason's)
    assert all(isinstance(fix_kind(n), FixKind) for n in FIXES if not n.startswith("stale."))
    for name, row in FIXES.items():
        if row == OPTION:
            assert any(c in templates()[name] for c in CONDITIONS), name
        else:
            assert _has_test(row), f"{name}: no test {row}"


# ---------------------------------------------------------------- the harness


def fix_kind(name: str) -> FixKind:
    """The ``FixKind`` of the template ``name`` of ``FIXES`` (``eqx.SCALAR_FIX``: ``EQX_SCALAR``)."""
    prefix, _, base = name.rpartition(".")
    return FixKind[(f"{prefix.upper()}_" if prefix else "") + base.removesuffix("_FIX")]


#: A fix made from one template that says another's words whole: ``PARTIAL_DATA`` is
#: ``PARTIAL_GRAPH`` followed by its ``nnx.data`` alternative.
INCLUDES = {FixKind.PARTIAL_DATA: {FixKind.PARTIAL_GRAPH}}


def printed(name: str, said: Any) -> bool:
    """Was the fix of ``said`` (a reason, an audit finding) made from the template ``name``?

    The reason says which template made its fix (``fix_kind``); nothing is read from the words.
    """
    kind = fix_kind(name)
    return said.fix_kind == kind or kind in INCLUDES.get(said.fix_kind, set())


def run(program: Callable[[], tuple[Any, Any]]) -> tuple[Any, list[jitlens.Reason], Any]:
    with jitlens.track() as t:
        fn, out = program()
    s = t.stats(fn)
    return s, [r for e in s.events for r in e.reasons], out


def prove(
    name: str,
    broken: Callable[[], tuple[Any, Any]],
    fixed: Callable[[], tuple[Any, Any]],
    *,
    compiles: bool = False,
) -> None:
    """``broken`` prints the fix ``name``; ``fixed`` (the fix applied) compiles once, same results."""
    # The fixed program runs first: it must not inherit the broken one's wrappers.
    s2, rs2, out_f = run(fixed)
    assert rs2 == [], [r.message for r in rs2]
    assert (s2.compiles if compiles else s2.traces) == 1
    _s, rs, out_b = run(broken)
    assert any(printed(name, r) for r in rs), [(r.fix_kind, r.fix) for r in rs]
    for a, b in zip(jax.tree.leaves(out_b), jax.tree.leaves(out_f), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)


def fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A new function object with ``fn``'s code: JAX's caches are per function object."""
    return types.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )


X = jnp.arange(4.0).reshape(2, 2)


# ---------------------------------------------------------------- new wrappers


def square(x):
    return x * x


SQUARE_NNX = nnx.jit(square)


def test_new_function_fix() -> None:
    def broken():
        outs = []
        for i in range(2):
            f = nnx.jit(square)
            outs.append(f(X + i))
        return f, outs

    def fixed():
        return SQUARE_NNX, [SQUARE_NNX(X + i) for i in range(2)]

    prove("NEW_FUNCTION_FIX", broken, fixed)


class Trainer:
    """A method that jits the gradient of another method on every call (a common first try)."""

    def __init__(self, lr: float, once: bool) -> None:
        self.lr = lr
        if once:  # METHOD_FIX as printed: `self.grad_loss_jit = jax.jit(jax.grad(self.loss))`
            self.grad_loss_jit = jax.jit(jax.grad(self.loss))

    def loss(self, w, x):
        return jnp.sum((x @ w) ** 2) * self.lr

    def step(self, w, x):
        if not hasattr(self, "grad_loss_jit"):
            self.last = jax.jit(jax.grad(self.loss))
            return w - self.last(w, x)
        return w - self.grad_loss_jit(w, x)


def test_method_fix() -> None:
    def calls(once):
        trainer, w, outs = Trainer(0.1, once), X, []
        for _ in range(3):
            w = trainer.step(w, X)
            outs.append(w)
        return (trainer.grad_loss_jit if once else trainer.last), outs

    prove("METHOD_FIX", lambda: calls(False), lambda: calls(True))


def make_step(lr):
    def step(w):
        return w - lr * w

    return jax.jit(step)


def step(w, lr):
    return w - lr * w


STEP_JIT = jax.jit(step)


def test_closure_fix() -> None:
    def broken():
        outs = []
        for lr in (0.1, 0.2):
            f = make_step(lr)
            outs.append(f(X))
        return f, outs

    def fixed():
        return STEP_JIT, [STEP_JIT(X, lr) for lr in (0.1, 0.2)]

    prove("CLOSURE_FIX", broken, fixed)


def test_new_lambda_fix() -> None:
    def broken():
        outs = []
        for i in range(2):
            f = jax.jit(lambda x: x * 3)
            outs.append(f(X + i))
        return f, outs

    def fixed():
        step_fn_jit = jax.jit(lambda x: x * 3)  # before the loop
        return step_fn_jit, [step_fn_jit(X + i) for i in range(2)]

    prove("NEW_LAMBDA_FIX", broken, fixed)


def scale(x, k):
    return x * k


def test_new_partial_fix() -> None:
    def broken():
        outs = []
        for k in (2.0, 3.0):
            f = jax.jit(functools.partial(scale, k=k))
            outs.append(f(X))
        return f, outs

    def fixed():
        f = jax.jit(scale)
        return f, [f(X, k=k) for k in (2.0, 3.0)]

    prove("NEW_PARTIAL_FIX", broken, fixed)


def gram(kernel, xs):  # jax's examples/kernel_lsq.py
    return jax.vmap(lambda x: jax.vmap(lambda y: kernel(x, y))(xs))(xs)


def dot_kernel(x, y):
    return jnp.dot(x, y)


def test_new_partial_static_fix() -> None:
    """``jax.jit(partial(gram, kernel))`` per call binds a function: the fix says `kernel`
    must be static, in the program's names, and applied it traces once with the same results.
    Before: "pass `kernel` as arguments (list them in static_argnames if they must stay
    static)", where a function passed as a traced argument fails."""

    def broken():
        outs = []
        for _ in range(2):
            f = jax.jit(functools.partial(gram, dot_kernel))
            outs.append(f(X))
        return f, outs

    def fixed():
        gram_jit = jax.jit(gram, static_argnames="kernel")  # the fix, as printed
        return gram_jit, [gram_jit(dot_kernel, X) for _ in range(2)]

    def hoisted():  # the fix's other way: the partial built and jitted once, outside the loop
        f = jax.jit(functools.partial(gram, dot_kernel))
        return f, [f(X) for _ in range(2)]

    s, rs, out_h = run(hoisted)  # first: no earlier wrapper of `gram` to compare with
    assert (s.traces, rs) == (1, [])
    prove("NEW_PARTIAL_STATIC_FIX", broken, fixed)
    _s, (r,), out_b = run(broken)
    np.testing.assert_allclose(np.asarray(out_h), np.asarray(out_b), rtol=1e-5)
    assert "`kernel` static" in r.fix, r.fix
    assert "`gram_jit = jax.jit(gram, static_argnames='kernel')`" in r.fix, r.fix
    assert "`gram_jit(kernel, ...)`" in r.fix, r.fix


# ---------------------------------------------------------------- avals


def test_shape_fix() -> None:
    batches = [jnp.ones((4, 2)), jnp.ones((3, 2))]

    def broken():
        f = jax.jit(lambda x: x.sum())
        return f, [f(b) for b in batches]

    def fixed():  # pad to the larger batch and mask the padding
        f = jax.jit(lambda x, mask: (x * mask[:, None]).sum())

        def padded(b):
            n = b.shape[0]
            return jnp.pad(b, ((0, 4 - n), (0, 0))), (jnp.arange(4) < n).astype(b.dtype)

        return f, [f(*padded(b)) for b in batches]

    prove("SHAPE_FIX", broken, fixed)


def next_token(tokens, pos):  # a causal toy model: the token after position `pos`
    return jnp.cumsum(tokens, axis=1)[:, pos] % 7 + 1


def test_growing_fix() -> None:
    """A decode loop running the jitted step on the growing prefix (flax's gemma sampler and
    lm1b decode, written naively): the fix preallocates the full-length buffer and passes the
    position as an array; applied, one trace and the same tokens."""
    prompt, steps = jnp.array([[3, 1]]), 4

    def broken():
        f = jax.jit(fresh(next_token))  # JAX's caches are per function object
        tokens = prompt
        for _ in range(steps):
            t = f(tokens, -1)
            tokens = jnp.concatenate([tokens, t[:, None]], axis=1)
        return f, tokens

    def fixed():  # the fix, as printed
        f = jax.jit(next_token)
        tokens = jnp.pad(prompt, ((0, 0), (0, steps)))
        for i in range(steps):
            pos = prompt.shape[1] + i
            t = f(tokens, jnp.asarray(pos - 1))
            tokens = jax.lax.dynamic_update_slice(tokens, t[:, None], (0, pos))
        return f, tokens

    prove("GROWING_FIX", broken, fixed)
    _s, rs, _ = run(broken)
    rs = [r for r in rs if r.kind == "shape"]
    assert [r.after for r in rs] == ["i32[1,3]", "i32[1,4]", "i32[1,5]"]
    fix = rs[0].fix
    assert "`tokens` grows by one on axis 1" in fix, fix
    assert "`tokens.at[:, pos].set(t)`" in fix and "`lax.dynamic_update_slice`" in fix, fix
    assert "`jnp.asarray(pos)`" in fix, fix


def test_dtype_fix() -> None:
    def broken():
        f = jax.jit(lambda x, decay: x * decay)
        return f, [f(X, jnp.asarray(d)) for d in (1, 0.99)]

    def fixed():  # the wider of the two dtypes: 0.99 stays 0.99
        f = jax.jit(lambda x, decay: x * decay)
        return f, [f(X, jnp.asarray(d, jnp.float32)) for d in (1, 0.99)]

    prove("DTYPE_FIX", broken, fixed)
    _s, rs, _ = run(broken)
    assert "jnp.float32" in rs[0].fix and "int32" not in rs[0].fix


def test_key_fix() -> None:
    def broken():
        f = jax.jit(lambda key: jax.random.normal(key, (2,)))
        return f, [f(jax.random.PRNGKey(0)), f(jax.random.key(0))]

    def fixed():
        f = jax.jit(lambda key: jax.random.normal(key, (2,)))
        return f, [f(jax.random.wrap_key_data(jax.random.PRNGKey(0))), f(jax.random.key(0))]

    prove("KEY_FIX", broken, fixed)


def test_weak_fix() -> None:
    def broken():
        f = jax.jit(lambda acc, x: acc + x.sum())
        acc = 0.0
        for _ in range(2):
            acc = f(acc, X)
        return f, acc

    def fixed():
        f = jax.jit(lambda acc, x: acc + x.sum())
        acc = 0.0
        acc = jnp.asarray(acc, jnp.float32)  # the fix, as printed
        for _ in range(2):
            acc = f(acc, X)
        return f, acc

    prove("WEAK_FIX", broken, fixed)


def test_weak_library_fix() -> None:
    """optax#1171: a linesearch's state made by optax's ``init`` holds a Python int (weak), its
    ``update`` returns a typed one: the jitted step compiles twice. The number is made in
    optax's code; the state is typed once after ``init``."""

    def value(x):
        return jnp.sum((x - 1.0) ** 2)

    opt = optax.chain(optax.sgd(1.0), optax.scale_by_backtracking_linesearch(3))

    def program(typed: bool):
        @jax.jit
        def step(params, state):
            v, g = jax.value_and_grad(value)(params)
            updates, state = opt.update(g, state, params, value=v, grad=g, value_fn=value)
            return optax.apply_updates(params, updates), state

        params = jnp.zeros(2)
        state = opt.init(params)
        if typed:  # the fix, as printed
            state = jax.tree.map(
                lambda x: jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x, state
            )
        for _ in range(2):
            params, state = step(params, state)
        return step, params

    prove("WEAK_LIBRARY_FIX", lambda: program(False), lambda: program(True))


def test_a_python_int_that_becomes_float32_is_one_reason_with_one_fix() -> None:
    """A carry started from the Python ``0`` and fed the float32 output back changes dtype and
    weak type at once (``i32[]{weak} -> f32[]``): one change, one reason, one fix, which
    applied removes the retrace. Before: a dtype reason and a weak-type reason for it."""

    def broken():
        f = jax.jit(lambda acc, x: acc + x.sum())
        acc = 0
        for _ in range(2):
            acc = f(acc, X)
        return f, acc

    def fixed():
        f = jax.jit(lambda acc, x: acc + x.sum())
        acc = 0
        acc = jnp.asarray(acc, jnp.float32)  # the fix, as printed
        for _ in range(2):
            acc = f(acc, X)
        return f, acc

    prove("WEAK_FIX", broken, fixed)
    _s, (r,), _ = run(broken)
    assert (r.kind, r.before, r.after) == ("weak_type", "i32[]{weak}", "f32[]")
    assert "`acc = jnp.asarray(acc, jnp.float32)`" in r.fix, r.fix


def test_weak_fix_keeps_a_non_zero_value() -> None:
    """A hyper-parameter passed as a Python float, then as a numpy scalar: the value is kept."""

    def broken():
        f = jax.jit(lambda x, scale: x * scale)
        return f, [f(X, 0.5), f(X, np.float32(0.7))]

    def fixed():
        f = jax.jit(lambda x, scale: x * scale)
        outs = []
        for scale in (0.5, np.float32(0.7)):
            scale = jnp.asarray(scale, jnp.float32)  # the fix, as printed
            outs.append(f(X, scale))
        return f, outs

    prove("WEAK_FIX", broken, fixed)


def test_sharding_fix() -> None:
    device = jax.devices()[0]

    def broken():
        f = jax.jit(lambda x: x * 2)
        return f, [f(X), f(jax.device_put(X, device))]

    def fixed():
        f = jax.jit(lambda x: x * 2)
        x = jax.device_put(X, device)
        return f, [f(x), f(jax.device_put(X, device))]

    prove("SHARDING_FIX", broken, fixed, compiles=True)


# ---------------------------------------------------------------- statics


class Counter(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.step = 0

    def __call__(self, x):
        self.step += 1
        return self.lin(x) * self.step


class VarCounter(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.step = nnx.Variable(jnp.array(0))

    def __call__(self, x):
        self.step[...] = self.step[...] + 1
        return self.lin(x) * self.step[...]


def nnx_forward():
    @nnx.jit
    def forward(model, x):
        return model(x)

    return forward


def test_counter_fix() -> None:
    """bayesflow-org/bayesflow#223: a plain-int step counter bumped in ``__call__``: one folded
    reason, one fix that names the first value (0), not the current one."""

    def calls(model):
        f = nnx_forward()
        return f, [f(model, X) for _ in range(4)]

    prove("COUNTER_FIX", lambda: calls(Counter()), lambda: calls(VarCounter()))
    s, rs, _ = run(lambda: calls(Counter()))
    rs = [r for r in rs if r.kind != "new_function"]  # `forward` was wrapped by earlier runs too
    assert s.traces == 4 and len(rs) == 3
    assert {r.fix for r in rs} == {rs[0].fix}, [r.fix for r in rs]
    assert "changes on every call: a counter" in rs[0].message
    assert "jnp.asarray(0, jnp.int32)" in rs[0].fix and "self.step[...] += 1" in rs[0].fix
    report = str(_report_of(lambda: calls(Counter())))
    assert report.count("static_value") == 1 and "(in 3 retraces)" in report, report


def _report_of(program: Callable[[], tuple[Any, Any]]) -> jitlens.Report:
    with jitlens.track() as t:
        program()
    return t.report()


class Offset(nnx.Module):
    def __init__(self, offset):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.offset = offset

    def __call__(self, x):
        return self.lin(x) + self.offset


class VarOffset(nnx.Module):
    def __init__(self, offset):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.offset = nnx.Variable(jnp.asarray(offset))  # the fix's second option, as printed

    def __call__(self, x):
        return self.lin(x) + self.offset


def test_static_graph_fix() -> None:
    """``jitlens audit``'s words for a number on a user Module, applied: one compile."""
    from jitlens._audit.audit import audit

    found = [f for f in audit(Counter).findings if f.path.endswith("step")]
    assert found and printed("STATIC_GRAPH_FIX", found[0]), found

    def calls(model):
        f = nnx_forward()
        return f, [f(model, X) for _ in range(2)]

    s, _rs, out_f = run(lambda: calls(VarCounter()))
    _s, _rs, out_b = run(lambda: calls(Counter()))
    assert s.traces == 1
    np.testing.assert_allclose(np.asarray(out_f), np.asarray(out_b))


def test_static_role_fix() -> None:
    """A module's number of unknown role changed: the fix says when it must stay static and
    how to make it state otherwise (proven here), naming the first value compiled."""

    def calls(make):
        f = nnx_forward()
        model = make(0.5)
        out = [f(model, X)]
        model.offset = 2.0 if isinstance(model, Offset) else model.offset
        if isinstance(model, VarOffset):
            model.offset[...] = 2.0
        return f, [*out, f(model, X)]

    prove("STATIC_ROLE_FIX", lambda: calls(Offset), lambda: calls(VarOffset))
    _s, rs, _ = run(lambda: calls(Offset))
    fix = next(r.fix for r in rs if r.kind == "static_value")
    assert "jnp.asarray(0.5)" in fix and "shape" in fix, fix


class Heads(nnx.Module):
    """google/flax#3863: a static ``num_heads`` used as a shape."""

    def __init__(self, num_heads):
        self.num_heads = num_heads

    def __call__(self, x):
        return x.reshape(self.num_heads, -1).sum(0)


class VarHeads(Heads):
    def __init__(self, num_heads):
        self.num_heads = nnx.Variable(jnp.asarray(num_heads))


def test_size_fix_keeps_a_shape_static() -> None:
    """A static used as a shape must stay static: a Variable fails, so the fix says so."""

    def calls(heads):
        f = nnx_forward()
        return f, [f(Heads(h), jnp.ones(8)) for h in heads]

    s, rs, _ = run(lambda: calls((2, 4)))
    rs = [r for r in rs if r.kind != "new_function"]  # `forward` was wrapped by earlier runs too
    assert s.traces == 2 and [r.kind for r in rs] == ["static_value"]
    assert printed("SIZE_FIX", rs[0]) and "nnx.Variable(" not in rs[0].fix, rs[0].fix
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
        nnx_forward()(VarHeads(2), jnp.ones(8))  # the advice it must not give
    s, rs, _ = run(lambda: calls((2, 2)))  # the same value: one compile, as the fix says
    assert s.traces == 1 and [r for r in rs if r.kind != "new_function"] == []


class Metric(nnx.Module):
    """A hand-written NNX metric: ``nnx.Variable(0.0)`` is weakly typed until its first update."""

    def __init__(self, typed):
        self.total = nnx.Variable(jnp.asarray(0.0, jnp.float32) if typed else 0.0)

    def update(self, x):
        self.total[...] = self.total[...] + x.sum()


def test_var_weak_fix() -> None:
    def calls(typed):
        @nnx.jit
        def update(metric, x):
            metric.update(x)

        metric = Metric(typed)
        for _ in range(3):
            update(metric, X)
        return update, metric.total[...]

    prove("VAR_WEAK_FIX", lambda: calls(False), lambda: calls(True))
    _s, rs, _ = run(lambda: calls(False))
    fix = next(r.fix for r in rs if r.kind == "weak_type")
    assert "self.total = nnx.Variable(jnp.asarray(value, jnp.float32))" in fix, fix
    assert "metric.total = jnp.asarray" not in fix


def test_static_arg_fix() -> None:
    def broken():
        f = jax.jit(lambda x, t: x / t, static_argnames="t")
        return f, [f(X, t=t) for t in (1.0, 2.0)]

    def fixed():
        f = jax.jit(lambda x, t: x / t)
        return f, [f(X, t=t) for t in (1.0, 2.0)]

    prove("STATIC_ARG_FIX", broken, fixed)


#: A static config dataclass and a static number, made static by the jit options
#: ``{options}``: the fixes must name the option the program wrote, with its value.
_STATIC_OPTIONS_PROGRAM = """
import dataclasses
import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Config:
    lr: float = 0.1
    hidden: int = 4


def step(w, cfg, n):
    TRACES[0] += 1
    return w * n - cfg.lr * w


step = jax.jit(step, {options})
TRACES = [0]
w = jnp.ones(3)
for i in range(3):
    w = step(w, {cfg}, {n})
"""


_NEW_LR = "Config(lr=0.1 / (i + 1))"


@pytest.mark.parametrize(
    ("options", "cfg", "n"),
    [
        ("static_argnames='cfg'", _NEW_LR, "2.0"),
        ("static_argnums=(1,)", _NEW_LR, "2.0"),
        ("static_argnums=-2", _NEW_LR, "2.0"),
        ("static_argnames=('cfg', 'n')", _NEW_LR, "2.0"),
        ("static_argnums=1, static_argnames='cfg'", _NEW_LR, "2.0"),
        ("static_argnames=('cfg', 'n')", "Config()", "2.0 + i"),  # STATIC_ARG_FIX
    ],
)
def test_a_static_fix_names_the_option_the_program_wrote(options: str, cfg: str, n: str) -> None:
    """The fixes that make a static traced say how, in the jit's own option and value
    (``drop `static_argnames='cfg'` ``, ``change `static_argnums=(1, 2)` to
    `static_argnums=(2,)` ``): each edit, applied to the program as written, with the printed
    ``register_dataclass`` line, leaves one trace and the same numbers."""
    source = _STATIC_OPTIONS_PROGRAM.format(options=options, cfg=cfg, n=n)
    with jitlens.track() as t:
        before: dict[str, Any] = {}
        exec(compile(source, "static_options.py", "exec"), before)
    reasons = [r for e in t.report().function("step").events for r in e.reasons]
    fixes = {r.fix_kind: r.fix for r in reasons}
    assert "static_argnums/static_argnames" not in " ".join(fixes.values()), fixes
    fixed = source
    for fix in fixes.values():
        register = re.search(r"`(jax\.tree_util\.register_dataclass\(.*?\))`", fix)
        if register:
            fixed = fixed.replace("\n\n\ndef step", f"\n\n{register.group(1)}\n\n\ndef step")
        for old, new in re.findall(r"change `([^`]*)` to `([^`]*)`", fix):
            assert old in fixed, (old, fix)
            fixed = fixed.replace(old, new)
        for old in re.findall(r"drop `([^`]*)`", fix):
            assert old in fixed, (old, fix)
            fixed = fixed.replace(f", {old}", "")
    after: dict[str, Any] = {}
    exec(compile(fixed, "static_options_fixed.py", "exec"), after)
    assert (before["TRACES"][0], after["TRACES"][0]) == (3, 1), fixed
    np.testing.assert_allclose(before["w"], after["w"], rtol=1e-6)


def _normal(k, n):  # jax#648: a static that sets a shape
    return jax.random.normal(k, (n,))


def _prefix_sum(x, n):  # jax#4531: a static that sets a slice length
    return x[:n].sum()


def _power(x, n):  # a static loop count (a Python for loop unrolled n times)
    for _ in range(n):
        x = x * 1.5
    return x


def _branch(x, n):  # a static that picks a Python branch
    if n > 2:
        return x.sum()
    return x.mean()


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (_normal, (jax.random.key(0),)),
        (_prefix_sum, (jnp.arange(8.0),)),
        (_power, (X,)),
        (_branch, (X,)),
    ],
    ids=["shape", "slice", "loop", "branch"],
)
def test_static_shape_fix_is_expected_and_tracing_it_breaks(fn: Any, args: tuple) -> None:
    """A static number that sets a shape, a slice, a loop count or a branch: jitlens says the
    compile is expected once per value (no time lost), since the "pass it traced" fix breaks."""

    def broken():
        f = jax.jit(fresh(fn), static_argnums=len(args))
        return f, [f(*args, n) for n in (2, 3, 2)]

    s, rs, _ = run(broken)
    assert s.traces == 2 and len(rs) == 1, [r.fix for r in rs]
    (r,) = rs
    assert printed("STATIC_SHAPE_FIX", r) and r.expected and r.flow == "shape", r.fix
    with pytest.raises((TypeError, IndexError, jax.errors.ConcretizationTypeError)):
        jax.jit(fresh(fn))(*args, 3)  # the static made a traced argument


def test_static_number_that_is_data_keeps_the_traced_fix() -> None:
    """The same static number used only in arithmetic: the programs differ by a literal."""

    def broken():
        f = jax.jit(lambda x, n: x * n + 1, static_argnums=1)
        return f, [f(X, n) for n in (2, 3)]

    _s, rs, _ = run(broken)
    assert [r.flow for r in rs] == ["data"] and printed("STATIC_ARG_FIX", rs[0])
    assert not rs[0].expected


def _clip_program(nondiff: bool) -> tuple[Any, Any]:
    """jax-ml/jax#4617: custom_vjp's clip_gradient, bounds in nondiff_argnums (made static to
    avoid UnexpectedTracerError), or (the fix) regular arguments with a None cotangent."""
    if nondiff:
        clip = jax.custom_vjp(lambda lo, hi, x: x, nondiff_argnums=(0, 1))
        clip.defvjp(lambda lo, hi, x: (x, None), lambda lo, hi, _, g: (jnp.clip(g, lo, hi),))
        f = jax.jit(
            lambda x, lo, hi: jax.grad(lambda y: (clip(lo, hi, y) ** 3).sum())(x),
            static_argnames=("lo", "hi"),
        )
    else:
        clip = jax.custom_vjp(lambda lo, hi, x: x)
        clip.defvjp(
            lambda lo, hi, x: (x, (lo, hi)),
            lambda res, g: (None, None, jnp.clip(g, res[0], res[1])),
        )
        f = jax.jit(lambda x, lo, hi: jax.grad(lambda y: (clip(lo, hi, y) ** 3).sum())(x))
    return f, [f(jnp.arange(3.0), lo=-b, hi=b) for b in (1.0, 2.0)]


def test_static_rule_fix() -> None:
    prove("STATIC_RULE_FIX", lambda: _clip_program(True), lambda: _clip_program(False))
    _s, rs, _ = run(lambda: _clip_program(True))
    assert {r.flow for r in rs} == {"rule"} and not any(r.expected for r in rs)


def test_weak_value_fix() -> None:
    """A Python float inside a tuple state (google/jaxopt#451): no `state[1] = ...`."""

    def calls(typed):
        f = jax.jit(lambda state, g: (state[0] - state[1] * g, jnp.minimum(state[1], g.max())))
        state = (X, jnp.asarray(1.0, jnp.float32) if typed else 1.0)  # the fix, as printed
        for _ in range(2):
            state = f(state, X)
        return f, state

    prove("WEAK_VALUE_FIX", lambda: calls(False), lambda: calls(True))
    _s, rs, _ = run(lambda: calls(False))
    assert "state[1] =" not in rs[0].fix and "`jnp.asarray(value, jnp.float32)`" in rs[0].fix


def _lr_sweep(typed: bool) -> tuple[Any, Any]:
    """optax#577's workaround, inject_hyperparams, with the learning rate set after the compile
    (flax nnx.Optimizer): a Python float written into the float32 hyper-parameter."""
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    opt = nnx.Optimizer(model, tx, wrt=nnx.Param)

    @nnx.jit
    def step(model, opt, x):
        opt.update(model, nnx.grad(lambda m: (m(x) ** 2).sum())(model))

    step(model, opt, X)
    if typed:  # the fix as printed
        opt.opt_state.hyperparams["learning_rate"][...] = jnp.asarray(0.05, jnp.float32)
    else:
        opt.opt_state.hyperparams["learning_rate"].value = 0.05
    step(model, opt, X)
    return step, model.kernel[...]


def test_var_assign_fix() -> None:
    prove("VAR_ASSIGN_FIX", lambda: _lr_sweep(False), lambda: _lr_sweep(True))
    _s, rs, _ = run(lambda: _lr_sweep(False))
    assert "opt.opt_state.hyperparams['learning_rate'][...] = jnp.asarray(" in rs[0].fix
    assert "__init__" not in rs[0].fix  # strong -> weak: the fix is at the assignment


def _likelihood(w, x):
    return jnp.sum((x @ w) ** 2)


def test_new_function_fix_of_a_transformed_function_is_python() -> None:
    """``jax.jit(jax.grad(loss))`` rebuilt per call: the printed code runs as written."""

    def broken():
        outs = []
        for i in range(2):
            g = jax.jit(jax.grad(_likelihood))
            outs.append(g(jnp.ones(3), X[:, :1].repeat(3, 1) + i))
        return g, outs

    code = "grad_likelihood_jit = jax.jit(jax.grad(_likelihood))"
    ns: dict[str, Any] = {"jax": jax, "_likelihood": _likelihood}
    exec(code, ns)  # the fix, as printed (checked below)

    def fixed():
        g = ns["grad_likelihood_jit"]
        return g, [g(jnp.ones(3), X[:, :1].repeat(3, 1) + i) for i in range(2)]

    # the fixed program first: the broken one's wrappers (alive as long as the GC keeps
    # them, longer on Python 3.13) would be its earlier wrappers of the same code
    prove("NEW_FUNCTION_FIX", broken, fixed)
    _s, rs, _ = run(broken)
    (printed_code,) = re.findall(r"`([^`]+)`", rs[-1].fix)
    assert printed_code == code, rs[-1].fix


def test_code_that_does_not_parse_is_printed_as_words() -> None:
    r = jitlens.Reason("new_function", "", "f", "a", "b", "m", "Use `f(x)_jit = 1` or `g = 2`.")
    assert r.fix == "Use f(x)_jit = 1 or `g = 2`."


class AuxScaled:
    def __init__(self, x, k):
        self.x, self.k = x, k


jax.tree_util.register_pytree_node(
    AuxScaled, lambda a: ((a.x,), a.k), lambda k, ch: AuxScaled(ch[0], k)
)


class ChildScaled:
    def __init__(self, x, k):
        self.x, self.k = x, k


jax.tree_util.register_pytree_node(
    ChildScaled, lambda a: ((a.x, a.k), None), lambda _, ch: ChildScaled(*ch)
)


def test_static_aux_fix() -> None:
    def calls(cls):
        f = jax.jit(lambda a: a.x * a.k)
        return f, [f(cls(X, k)) for k in (1.0, 2.0)]

    prove("STATIC_AUX_FIX", lambda: calls(AuxScaled), lambda: calls(ChildScaled))


@struct.dataclass
class StaticScale:
    x: jax.Array
    scale: float = struct.field(pytree_node=False)


@struct.dataclass
class DataScale:
    x: jax.Array
    scale: float


def test_static_field_fix() -> None:
    def calls(cls):
        f = jax.jit(lambda b: b.x * b.scale)
        return f, [f(cls(X, s)) for s in (1.0, 2.0)]

    prove("STATIC_FIELD_FIX", lambda: calls(StaticScale), lambda: calls(DataScale))


# ---------------------------------------------------------------- identity statics


def make_local_class():
    class Local(nnx.Module):
        def __init__(self):
            self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

        def __call__(self, x):
            return self.lin(x)

    return Local()


class Local(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    def __call__(self, x):
        return self.lin(x)


def test_class_fix() -> None:
    def calls(make):
        f = nnx_forward()
        return f, [f(make(), X) for _ in range(2)]

    prove("CLASS_FIX", lambda: calls(make_local_class), lambda: calls(Local))


class PartialPool(nnx.Module):
    def __init__(self):
        self.pool = functools.partial(nnx.avg_pool, window_shape=(2,), strides=(2,))

    def __call__(self, x):
        return self.pool(x)


class CallPool(nnx.Module):
    def __call__(self, x):
        return nnx.avg_pool(x, window_shape=(2,), strides=(2,))


class DataPool(nnx.Module):
    def __init__(self):
        self.pool = nnx.data(jax.tree_util.Partial(nnx.avg_pool, window_shape=(2,), strides=(2,)))

    def __call__(self, x):
        return self.pool(x)


def test_partial_graph_fix() -> None:
    x = jnp.ones((1, 4, 2))

    def calls(cls):
        f = nnx_forward()
        return f, [f(cls(), x) for _ in range(2)]

    prove("PARTIAL_GRAPH_FIX", lambda: calls(PartialPool), lambda: calls(CallPool))
    prove("PARTIAL_DATA_FIX", lambda: calls(PartialPool), lambda: calls(DataPool))


def test_partial_arg_fix() -> None:
    def broken():
        f = jax.jit(lambda x, op: op(x), static_argnums=1)
        return f, [f(X, functools.partial(jnp.sum, axis=0)) for _ in range(2)]

    def fixed():
        f = jax.jit(lambda x, op: op(x), static_argnums=1)
        op = functools.partial(jnp.sum, axis=0)  # built once, outside the loop
        return f, [f(X, op) for _ in range(2)]

    prove("PARTIAL_ARG_FIX", broken, fixed)


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


class WithMethod(nnx.Module):
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)


class WithFunction(nnx.Module):
    """The fix: the function (one object), and the object's data, called in ``__call__``."""

    def __init__(self, scaler):
        self.fn = type(scaler).apply
        self.k = scaler.k

    def __call__(self, x):
        return self.fn(Scaler(self.k), x)


def test_bound_method_fix() -> None:
    def calls(make):
        f = nnx_forward()
        return f, [f(make(Scaler(2.0)), X) for _ in range(2)]

    prove(
        "BOUND_METHOD_FIX",
        lambda: calls(lambda s: WithMethod(s.apply)),
        lambda: calls(WithFunction),
    )


def double(x):
    return x * 2


def test_function_fix() -> None:
    def calls(make):
        f = nnx_forward()
        return f, [f(WithMethod(make()), X) for _ in range(2)]

    prove("FUNCTION_FIX", lambda: calls(lambda: lambda x: x * 2), lambda: calls(lambda: double))


DOUBLE_JIT = jax.jit(double)


def test_jitted_fix() -> None:
    def calls(make):
        f = nnx_forward()
        return f, [f(WithMethod(make()), X) for _ in range(2)]

    prove(
        "JITTED_FIX",
        lambda: calls(lambda: jax.jit(lambda x: x * 2)),
        lambda: calls(lambda: DOUBLE_JIT),
    )


def sweep(make_tx: Callable[[float], Any], set_lr: bool) -> tuple[Any, Any]:
    @nnx.jit
    def update(model, opt, x):
        grads = nnx.grad(lambda m: m(x).sum())(model)
        opt.update(model, grads)
        return model(x)

    outs = []
    for lr in (1e-3, 1e-2):
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        opt = nnx.Optimizer(model, make_tx(lr), wrt=nnx.Param)
        if set_lr:
            opt.opt_state.hyperparams["learning_rate"][...] = lr
        outs.append(update(model, opt, X))
    return update, outs


TX = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)


@pytest.mark.parametrize(
    "make",
    [optax.adam, optax.adamw, lambda lr: optax.sgd(lr, momentum=0.9)],
    ids=["adam", "adamw", "sgd-momentum"],
)
def test_optax_fix(make: Callable[[float], Any]) -> None:
    """The sweep's fix wraps the optax function that built the program's optimizer, read from
    the transform (``optax.adamw`` for an adamw, never ``optax.adam``); where that is not sure
    (``sgd`` with momentum builds what no rate-only call does) it says so in general. The
    printed line, run as it is, compiles once with the same results."""
    _s, rs, _ = run(lambda: sweep(make, set_lr=False))
    (fix,) = {r.fix for r in rs if r.fix_kind == FixKind.OPTAX}
    code = re.search(r"`(TX = optax\.inject_hyperparams\(optax\.(\w+)\)\(.*?\))`", fix)
    if make is optax.adam or make is optax.adamw:
        assert code is not None and code.group(2) == make.__name__, fix
        printed_tx: dict[str, Any] = {"optax": optax}
        exec(code.group(1), printed_tx)
        prove(
            "OPTAX_FIX",
            lambda: sweep(make, set_lr=False),
            lambda: sweep(lambda lr: printed_tx["TX"], set_lr=True),
        )
    else:
        assert code is None and "optax.adam" not in fix and "`optax.inject_hyperparams`" in fix


def test_two_builds_of_an_optax_transform_are_alike_only_with_equal_hyper_parameters() -> None:
    from jitlens._core.reasons.identity_static import same_build

    def sched(peak: float) -> optax.Schedule:
        return optax.warmup_cosine_decay_schedule(0.0, peak, 10, 100)

    assert same_build(optax.adam(1e-3), optax.adam(1e-3))
    assert same_build(optax.adamw(sched(1e-3)), optax.adamw(sched(1e-3)))
    assert not same_build(optax.adam(1e-3), optax.adam(1e-2))
    assert not same_build(optax.adamw(sched(1e-3)), optax.adamw(sched(1e-2)))
    assert not same_build(optax.adam(1e-3), optax.sgd(1e-3))
    tx = optax.adam(1e-3)
    assert not same_build(tx, tx) and not same_build(None, tx)  # one object; the old one gone


def build_update_fn(optimizer):
    """optax's gradient-accumulation example: the update is jitted anew per optimizer."""

    @jax.jit
    def update(params, opt_state, batch):
        grads = jax.grad(lambda p: ((batch @ p) ** 2).mean())(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return update


def fit(optimizer, params, batches):
    update = build_update_fn(optimizer)
    opt_state = optimizer.init(params)
    for batch in batches:
        params, opt_state = update(params, opt_state, batch)
    return params


def test_a_new_wrapper_whose_key_differs_is_not_the_headline() -> None:
    """optax's gradient accumulation: `fit` rebuilds the jitted update *and* changes the
    optimizer and the batch shape. Reusing the wrapper would not remove the trace, so its
    reason comes last; the optimizer's state, made by optax, leads, named as optax's."""
    data = jnp.ones((9, 2))
    with jitlens.track() as t:
        fit(optax.sgd(0.1), jnp.ones(2), [data])
        fit(optax.MultiSteps(optax.sgd(0.1), every_k_schedule=3), jnp.ones(2), [data[:3]] * 3)
    (event,) = [e for f in t.report().functions for e in f.events if e.kind == "retrace"]
    kinds = [r.kind for r in event.reasons]
    assert kinds[0] == "pytree_structure" and kinds[-1] == "new_function", kinds
    head = event.reasons[0]
    assert head.path == "opt_state" and printed("OPTAX_STATE_FIX", head), head.fix
    assert "`EmptyState`" in head.fix and "__init__" not in head.fix
    block = str(t.report()).split("retrace #1")[1].split("\n\n")[0].splitlines()
    assert block[1].split()[0] == "opt_state" and "pytree_structure" in block[1], block
    assert all("new_function" not in line for line in block[:4]), block


def optimizer_runs(txs):
    @nnx.jit
    def train_step(model, optimizer, x):
        grads = nnx.grad(lambda m: (m(x) ** 2).sum())(model)
        optimizer.update(model, grads)

    for tx in txs:
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        train_step(model, nnx.Optimizer(model, tx, wrt=nnx.Param), X)
    return train_step


def test_optax_state_is_said_to_be_optax_s() -> None:
    """An nnx.Optimizer rebuilt with another kind of optax chain: the new `tx` leads (rebuild
    it once), and its new state is optax's, not something to create in `__init__`."""
    with jitlens.track() as t:
        step = optimizer_runs([optax.sgd(0.1), optax.chain(optax.clip(1.0), optax.adam(1e-3))])
    rs = [r for e in t.stats(step).events for r in e.reasons]
    assert [r.path for r in rs] == ["optimizer.tx", "optimizer.opt_state[1]"], rs
    assert printed("OPTAX_KIND_FIX", rs[0]) and "inject_hyperparams" not in rs[0].fix
    assert printed("OPTAX_STATE_FIX", rs[1]) and "nnx.Optimizer" in rs[1].fix
    with jitlens.track() as t:  # the fix, reusing one optimizer: one compile
        tx = optax.adam(1e-3)
        step = optimizer_runs([tx, tx])
    assert t.stats(step).traces == 1


class NoEq:
    def __init__(self, k):
        self.k = k


@dataclasses.dataclass(frozen=True)
class FrozenCfg:
    k: int


def test_no_eq_fix() -> None:
    def calls(cls):
        f = jax.jit(lambda x, cfg: x * cfg.k, static_argnums=1)
        return f, [f(X, cls(2)) for _ in range(2)]

    prove("NO_EQ_FIX", lambda: calls(NoEq), lambda: calls(FrozenCfg))


def test_nan_fix_static_argument() -> None:
    """A static NaN made per call never hits; `math.nan` (one object) does, same results."""

    def calls(fill):
        f = jax.jit(lambda x, v: jnp.where(x > 1, v, x), static_argnums=1)
        return f, [f(X, fill()) for _ in range(3)]

    prove("NAN_FIX", lambda: calls(lambda: float("nan")), lambda: calls(lambda: math.nan))


class Filler(nnx.Module):
    def __init__(self, fill: float):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.fill = fill

    def __call__(self, x):
        return jnp.where(x > 1, self.fill, self.lin(x))


class NoneFiller(Filler):
    """NAN_FIELD_FIX applied: None in the attribute, `jnp.nan` where it is read."""

    def __call__(self, x):
        fill = jnp.nan if self.fill is None else self.fill
        return jnp.where(x > 1, fill, self.lin(x))


def test_nan_fix_module_attribute() -> None:
    """Every new instance holding `float('nan')` retraces an nnx.jit. `math.nan` hits where
    dataclass fields compare with the identity shortcut (Python <= 3.12); on Python 3.13 no NaN
    object hits, and jitlens says so: keep None in the attribute."""

    def calls(cls, fill):
        f = nnx_forward()
        return f, [f(cls(fill()), X) for _ in range(3)]

    broken = functools.partial(calls, Filler, lambda: float("nan"))
    if not cache_keys.dataclass_fields_skip_identity():
        prove("NAN_FIX", broken, functools.partial(calls, Filler, lambda: math.nan))
        return
    prove("NAN_FIELD_FIX", broken, functools.partial(calls, NoneFiller, lambda: None))
    s, rs, _out = run(functools.partial(calls, Filler, lambda: math.nan))  # the other fix fails
    assert s.traces == 3 and all(printed("NAN_FIELD_FIX", r) for r in rs)


def test_static_type_fix() -> None:
    """jax-ml/jax#9273: a static flag passed as 1, True, 1.0 is three compiles (JAX keys on the
    type); converted at the call site, `bool(flag)`, one compile and the same results."""
    traced = []

    def calls(convert):
        def body(x, flag):
            traced.append(flag)
            return x * 2 if flag else x

        f = jax.jit(body, static_argnums=1)
        return f, [f(X, convert(v)) for v in (1, True, 1.0)]

    prove("STATIC_TYPE_FIX", lambda: calls(lambda v: v), lambda: calls(bool))
    assert [type(v) for v in traced] == [bool, int, bool, float]  # fixed first, then broken


def test_dtype_spelling_fix() -> None:
    """`dtype=jnp.float32` in one place and `dtype="float32"` in another: two compiles."""

    def calls(spellings):
        f = nnx_forward()
        models = [nnx.Linear(2, 2, dtype=d, rngs=nnx.Rngs(0)) for d in spellings]
        return f, [f(m, X) for m in models]

    prove(
        "DTYPE_SPELLING_FIX",
        lambda: calls((jnp.float32, "float32")),
        lambda: calls((jnp.float32, jnp.float32)),
    )


class MutableCfg:
    """A static with value equality, changed in place: what JAX's docs forbid."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MutableCfg) and other.k == self.k

    def __hash__(self) -> int:
        return hash(self.k)


@dataclasses.dataclass(frozen=True)
class FrozenK:
    k: int


def test_mutated_fix() -> None:
    """A static changed in place: up to jax 0.10 JAX serves the old code (a stale result) until
    an equal new value misses; from jax 0.11 the changed object misses too. jitlens names the
    mutation either way. Applied, the fix gives the right results."""
    traced = []

    def body(x, cfg):
        traced.append(cfg.k)
        return x * cfg.k

    f = jax.jit(body, static_argnums=1)
    with jitlens.track() as t:
        cfg = MutableCfg(1)
        first = f(X, cfg)
        cfg.k = 5
        second = f(X, cfg)
        f(X, MutableCfg(1))  # equal to what was compiled, unequal to the mutated key: a miss
    reasons = [r for e in t.stats(f).events for r in e.reasons]
    if cache_keys.mutated_static_hits():
        np.testing.assert_allclose(second, first)  # the stale result jitlens warns about
        assert traced == [1, 1] and "ran the old code" in reasons[0].message
    else:
        np.testing.assert_allclose(second, X * 5)  # jax >= 0.11: the changed object misses
        assert traced == [1, 5, 1] and "matches nothing any more" in reasons[0].message
    assert t.stats(f).traces == len(traced) and len(reasons) == len(traced) - 1
    for reason in reasons:
        assert reason.kind is ReasonKind.MUTATED_STATIC and printed("MUTATED_FIX", reason)
        assert "MutableCfg(k=1) then, MutableCfg(k=5) now" in reason.message

    with jitlens.track() as t:
        g = jax.jit(lambda x, cfg: x * cfg.k, static_argnums=1)
        cfg2 = FrozenK(1)
        outs = [g(X, cfg2)]
        cfg2 = dataclasses.replace(cfg2, k=5)  # the fix: a new object, not a mutation
        outs.append(g(X, cfg2))
        outs.append(g(X, FrozenK(1)))
    np.testing.assert_allclose(outs[1], X * 5)  # right, not stale
    np.testing.assert_allclose(outs[2], first)
    kinds = [r.kind for e in t.stats(g).events for r in e.reasons]
    assert kinds == ["static_value"] and t.stats(g).cache_hits == 1


# ---------------------------------------------------------------- graph structure


class Sower(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    def __call__(self, x):
        y = self.lin(x)
        self.sow(nnx.Intermediate, "hidden", y)
        return y


def test_sow_fix() -> None:
    def broken():
        f = nnx_forward()
        m = Sower()
        return f, [f(m, X) for _ in range(2)]

    def fixed():
        @nnx.jit
        def forward(model, x):
            y = model(x)
            nnx.pop(model, nnx.Intermediate)
            return y

        m = Sower()
        return forward, [forward(m, X) for _ in range(2)]

    prove("SOW_FIX", broken, fixed)


class Growing(nnx.Module):
    """Adds a layer after the first call (the lazy pattern)."""

    def __init__(self):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    def __call__(self, x):
        y = self.lin(x)
        return y if not hasattr(self, "extra") else y + self.extra(x) * 0


class Built(Growing):
    def __init__(self):
        super().__init__()
        self.extra = nnx.Linear(2, 2, rngs=nnx.Rngs(1))  # created in __init__, as it will be


def test_graph_fix() -> None:
    def broken():
        f, m = nnx_forward(), Growing()
        a = f(m, X)
        m.extra = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
        return f, [a, f(m, X)]

    def fixed():
        f, m = nnx_forward(), Built()
        return f, [f(m, X), f(m, X)]

    prove("GRAPH_FIX", broken, fixed)


class Scaled(nnx.Module):
    def __init__(self, k):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.k = k

    def __call__(self, x):
        return self.lin(x) * (self.k[...] if isinstance(self.k, nnx.Variable) else self.k)


def test_graph_kind_fix() -> None:
    def broken():
        f, m = nnx_forward(), Scaled(nnx.data(2.0))
        a = f(m, X)
        m.k = nnx.Variable(jnp.array(3.0))  # a plain number replaced by a Variable
        return f, [a, f(m, X)]

    def fixed():
        f, m = nnx_forward(), Scaled(nnx.Variable(jnp.array(2.0)))
        a = f(m, X)
        m.k[...] = 3.0  # always a Variable
        return f, [a, f(m, X)]

    prove("GRAPH_KIND_FIX", broken, fixed)


def test_var_replaced_fix() -> None:
    # float16: a key of its own (the same key as test_graph_kind_fix's is a new-wrapper hit)
    def broken():
        f, m = nnx_forward(), Scaled(nnx.Variable(jnp.array(2.0, jnp.float16)))
        a = f(m, X)
        m.k = 3.0  # a Variable replaced by a plain number
        return f, [a, f(m, X)]

    def fixed():
        f, m = nnx_forward(), Scaled(nnx.Variable(jnp.array(2.0, jnp.float16)))
        a = f(m, X)
        m.k[...] = 3.0  # written into the Variable, as the fix prints
        return f, [a, f(m, X)]

    prove("VAR_REPLACED_FIX", broken, fixed)


class Stamped(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(2), last_update=-1)
        self.last_update = nnx.Variable(jnp.array(-1))

    def __call__(self, x):
        return x * self.w[...]


def test_var_meta_fix() -> None:
    def calls(in_metadata):
        f, m = nnx_forward(), Stamped()
        outs = []
        for step in range(2):
            if in_metadata:
                m.w.set_metadata(last_update=step)
            else:
                m.last_update[...] = step
            outs.append(f(m, X))
        return f, outs

    prove("VAR_META_FIX", lambda: calls(True), lambda: calls(False))


# ---------------------------------------------------------------- pytrees and arguments


def total(b):
    return b["x"].sum() + b.get("y", jnp.zeros(2)).sum()


def test_pytree_key_fix() -> None:
    def f_of():
        return jax.jit(fresh(total))

    def broken():
        f = f_of()
        return f, [f({"x": X}), f({"x": X, "y": jnp.zeros(2)})]

    def fixed():
        f = f_of()
        return f, [f({"x": X, "y": jnp.zeros(2)}), f({"x": X, "y": jnp.zeros(2)})]

    prove("PYTREE_KEY_FIX", broken, fixed)


def history_sum(history):
    return sum(h.sum() for h in history)


def buffer_sum(buf, n):
    return jnp.where(jnp.arange(buf.shape[0])[:, None] < n, buf, 0.0).sum()


def test_length_fix() -> None:
    """A list that grows by one item per step (a history): one compile per length; the fix, a
    preallocated buffer written with `.at[i].set(item)` and its count passed as an array."""
    items = [X[0] * i for i in range(1, 4)]

    def broken():
        f, history, outs = jax.jit(fresh(history_sum)), [], []
        for item in items:
            history.append(item)
            outs.append(f(history))
        return f, outs

    def fixed():
        f, buf, outs = jax.jit(fresh(buffer_sum)), jnp.zeros((len(items), 2)), []
        for i, item in enumerate(items):
            buf = buf.at[i].set(item)
            outs.append(f(buf, jnp.asarray(i + 1)))
        return f, outs

    prove("LENGTH_FIX", broken, fixed)
    _s, rs, _out = run(broken)
    assert [(r.path, r.before, r.after) for r in rs] == [
        ("history", "list of 1", "list of 2"),
        ("history", "list of 2", "list of 3"),
    ]


def masked_sum(x, mask):
    return (x if mask is None else x * mask).sum()


def test_none_fix() -> None:
    def broken():
        f = jax.jit(fresh(masked_sum))
        return f, [f(X, None), f(X, jnp.ones_like(X))]

    def fixed():
        f = jax.jit(fresh(masked_sum))
        return f, [f(X, jnp.ones_like(X)), f(X, jnp.ones_like(X))]

    prove("NONE_FIX", broken, fixed)


def test_pytree_kind_fix() -> None:
    def broken():
        f = jax.jit(lambda xs: xs[0] + xs[1])
        return f, [f((X, X)), f([X, X])]

    def fixed():
        f = jax.jit(lambda xs: xs[0] + xs[1])
        return f, [f((X, X)), f((X, X))]

    prove("PYTREE_KIND_FIX", broken, fixed)


def add(x, y=None):
    return x if y is None else x + y


def test_arg_fix() -> None:
    def broken():
        f = jax.jit(fresh(add))
        return f, [f(X, jnp.zeros_like(X)), f(X)]

    def fixed():
        f = jax.jit(fresh(add))
        return f, [f(X, jnp.zeros_like(X)), f(X, jnp.zeros_like(X))]

    prove("ARG_FIX", broken, fixed)


def test_signature_fix() -> None:
    def broken():
        f = jax.jit(fresh(add))
        return f, [f(X, X), f(X, y=X)]

    def fixed():
        f = jax.jit(fresh(add))
        return f, [f(X, y=X), f(X, y=X)]

    prove("SIGNATURE_FIX", broken, fixed)


def test_config_fix() -> None:
    def broken():
        f = jax.jit(lambda x: x @ x)
        a = f(X)
        with jax.default_matmul_precision("highest"):
            b = f(X)
        return f, [a, b]

    def fixed():
        f = jax.jit(lambda x: x @ x)
        with jax.default_matmul_precision("highest"):
            return f, [f(X), f(X)]

    prove("CONFIG_FIX", broken, fixed)


def test_mesh_fix() -> None:
    mesh = jax.make_mesh((1,), ("d",))

    def broken():
        f = jax.jit(lambda x: x * 2)
        a = f(X)
        with jax.set_mesh(mesh):
            b = f(X)
        return f, [a, b]

    def fixed():
        f = jax.jit(lambda x: x * 2)
        with jax.set_mesh(mesh):
            return f, [f(X), f(X)]

    prove("MESH_FIX", broken, fixed)


def times5(x):
    return x * 5


def times7(x):
    return x * 7


def test_cleared_fix() -> None:
    def calls(clear):
        f = jax.jit(fresh(times5))
        a = f(X)
        if clear:
            f.clear_cache()
        return f, [a, f(X)]

    prove("CLEARED_FIX", lambda: calls(True), lambda: calls(False))

    def evicting(clear):
        f = jax.jit(fresh(times7))
        a = f(X)
        if clear:
            jax.clear_caches()
        return f, [a, f(X)]

    prove("CLEARED_FIX", lambda: evicting(True), lambda: evicting(False))  # seen, not guessed


def test_jit_option_fix() -> None:
    def broken():
        outs, g = [], fresh(double)
        for donate in ((), (0,)):
            f = jax.jit(g, donate_argnums=donate)
            outs.append(f(X + 0))
        return f, outs

    def fixed():
        def double_once(x):  # other code than `double`: not compared with its wrappers
            return x * 2

        f = jax.jit(double_once, donate_argnums=(0,))
        return f, [f(X + 0) for _ in range(2)]

    prove("JIT_OPTION_FIX", broken, fixed)


@pytest.mark.parametrize("name", [n for n, row in FIXES.items() if row == OPTION])
def test_option_rows_name_their_condition(name: str) -> None:
    assert any(c in templates()[name] for c in CONDITIONS)


def _fix_rate() -> types.ModuleType:
    import importlib.util

    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "fix_rate.py"
    spec = importlib.util.spec_from_file_location("fix_rate", path)
    assert spec is not None and spec.loader is not None
    fix_rate = importlib.util.module_from_spec(spec)
    sys.modules["fix_rate"] = fix_rate  # its dataclasses look their module up
    spec.loader.exec_module(fix_rate)
    return fix_rate


def test_printed_fixes_applied_to_the_corpus_remove_the_retrace() -> None:
    """``benchmarks/fix_rate.py``: every headline fix on the corpus, applied (mechanically
    where it is code), traces once and keeps the outputs; expected compiles say so; and every
    fix printed edits only names the program's own file defines (issue 46: never a library's
    function or class, also where the changing object is built by a library)."""
    import importlib.util

    fix_rate = _fix_rate()
    outcomes = fix_rate.measure()
    assert len(fix_rate.CASES) >= 34  # issue 33: twice the 17 programs it had
    left_out = [c for c in fix_rate.CASES if fix_rate.missing_libraries(c)]
    # only programs of an optional library are left out (the newest-JAX job has none), and
    # none where the test extra is installed
    for case in left_out:
        assert fix_rate.missing_libraries(case) <= fix_rate.OPTIONAL_LIBRARIES, case.name
    assert len(outcomes) == len(fix_rate.CASES) - len(left_out)
    if importlib.util.find_spec("keras") is not None:  # the test extra: all but these
        assert all(fix_rate.missing_libraries(c) <= fix_rate.NOT_IN_TEST_EXTRA for c in left_out)
    assert [(o.case, o.foreign) for o in outcomes if o.foreign] == []
    assert [o for o in outcomes if not o.works] == []
    library_made = [o for o in outcomes if o.template.startswith("LIBRARY_")]
    own = {c.name for c in fix_rate.CASES if "import jl_fakelib" in c.source}  # runs everywhere
    own_library = [o for o in outcomes if o.case in own]
    assert len(own_library) == 2 and all(o in library_made for o in own_library), own_library
    if importlib.util.find_spec("keras") is not None:  # and the test extra's libraries' own
        assert len(library_made) >= 5, library_made
    assert sum(o.how == "mechanical" for o in outcomes) >= 6
    assert [o.fix for o in outcomes if o.fix.endswith("…")] == []  # never cut mid-code


def test_a_fix_that_edits_a_librarys_function_or_class_is_told_apart() -> None:
    """The check the corpus runs on every fix, on the fixes jitlens once printed for issue 46's
    reports: Haiku's ``apply_fn`` redefined, ``diffrax.Event.__init__`` given a field."""
    foreign = _fix_rate().foreign_edits
    haiku = (
        "def forward(x):\n    return x\n\ndef predict(params, x):\n    f = hk.transform(forward)\n"
    )
    once = (
        "Define `f.apply` once at module level with `f` as parameters, jit it once, and pass "
        "`f` on every call; jitting the inner function once as it is would freeze their first values."
    )
    assert foreign(once, haiku) == ("f.apply",)
    now = "Build it once, at module level, and jit it once there: `f = hk.transform(forward)`"
    assert foreign(now, haiku) == ()
    diffrax = (
        "def solve(y0):\n    def cond_fn(t, y, args):\n        return y\n    event = E(cond_fn)\n"
    )
    once = (
        "Define it once at module level (`def cond_fn(...)`) and store that one object: "
        "`self.cond_fn = cond_fn` in `__init__`; every instance then shares it."
    )
    assert foreign(once, diffrax) == ("self.cond_fn",)
    assert foreign("Make `NUTS` a frozen dataclass", "kernel = NUTS(model)\n") == ("NUTS",)
    assert foreign("Make `Cfg` a frozen dataclass", "class Cfg:\n    n: int\n") == ()


# ---------------------------------------------------------------- fix kinds (Reason.fix_kind)


def _modules() -> dict[str, types.ModuleType]:
    """The modules of ``jitlens._core.reasons`` that hold templates, by file name: one per
    reason kind, and one per library whose words reword reasons of other kinds (pmap, linen)."""
    import importlib

    folder = pathlib.Path(M.__file__).parent
    names = sorted(
        p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "base", "spec")
    )
    return {n: importlib.import_module(f"jitlens._core.reasons.{n}") for n in names}


def _kind_modules() -> dict[str, types.ModuleType]:
    kinds = {k.value for k in ReasonKind}
    return {n: m for n, m in _modules().items() if n in kinds}


def test_every_reason_kind_is_one_module_with_one_spec() -> None:
    """A kind is one module of ``_core/reasons/`` (named as its string) declaring its ``SPEC``;
    the package lists them in ``ReasonKind``'s order. Its other modules are a library's words
    (no spec: the fixes they make are ``kinds.REWORDED``'s)."""
    modules = _kind_modules()
    assert sorted(modules) == sorted(k.value for k in ReasonKind)
    assert list(M.SPECS) == list(ReasonKind)
    for name, module in modules.items():
        assert module.SPEC.kind == name and M.SPECS[ReasonKind(name)] is module.SPEC
        assert module.SPEC.what and module.SPEC.example
    for name, module in _modules().items():
        assert (name in modules) == hasattr(module, "SPEC"), name


def test_every_fix_kind_belongs_to_one_kind_s_templates() -> None:
    """Each ``FixKind`` is one ``*_FIX`` template of one kind's module, or a library's words
    for a reason of one kind (``kinds.REWORDED``: ``_core/reasons/pmap.py``, ``linen.py``, the
    equinox front-end's words); each kind's module declares every template it holds."""
    from jitlens._core.template_kinds import REWORDED

    owners: dict[FixKind, list[str]] = {}
    for name, module in _kind_modules().items():
        spec = module.SPEC
        for k in spec.fix_kinds:
            owners.setdefault(k, []).append(name)
        fixes = {
            n: v for n, v in vars(module).items() if n.endswith("_FIX") and v is not R.EXPECTED_FIX
        }
        assert {f"{k.name}_FIX": t for k, t in spec.fixes.items()} == fixes, name
        messages = {n for n, v in vars(module).items() if n.endswith("_MSG")}
        assert messages <= {n for n, v in vars(module).items() if v in spec.messages}, name
        assert not set(spec.fixes) & set(REWORDED), name
    assert {k: v for k, v in owners.items() if len(v) != 1} == {}
    assert sorted(set(FixKind) - {FixKind.UNSET} - set(owners)) == []
    library_fixes = {  # the fix templates of the libraries' words, by their FixKind's name
        f"{v.id.name}"
        for n, module in _modules().items()
        if n not in _kind_modules()
        for name, v in vars(module).items()
        if name.endswith("_FIX") and v is not R.EXPECTED_FIX
    }
    own = {n: v for n, v in vars(F).items() if n.endswith("_FIX") and getattr(M, n, None) is not v}
    library_fixes |= {f"EQX_{n.removesuffix('_FIX')}" for n in own}
    assert library_fixes == {k.name for k in REWORDED}


def test_the_reason_table_is_the_specs() -> None:
    """The documentation's reason table is generated from the specs, one row per kind."""
    sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "docs" / "_ext"))
    try:
        import jitlens_reference
    finally:
        sys.path.pop(0)
    table = jitlens_reference.reason_kinds()
    for kind, spec in M.SPECS.items():
        assert f"| `{kind}` |" in table and spec.example.split(" ")[0] in table


def test_an_equal_key_is_a_fact_not_words() -> None:
    r = M.new_function("f", "jax.jit", "a.py:1", 1, True, False)
    assert Fact.EQUAL_KEY not in r.facts  # an earlier wrapper's key, not two equal keys
    assert Fact.EQUAL_KEY in M.no_difference("1 key position(s)").facts
    assert Fact.EQUAL_KEY in M.cache_evicted(8, 8).facts


def test_a_words_only_change_keeps_the_data() -> None:
    """Rewording (a fix from another template) changes ``fix_kind`` with the words, and keeps
    everything else."""
    r = M.shape("x", "x", "f32[2]", "f32[3]")
    again = M.with_fix(r, FixKind.PARAM_SHAPE, M.PARAM_SHAPE_FIX)
    assert again.fix_kind is FixKind.PARAM_SHAPE and again.fix == M.PARAM_SHAPE_FIX
    same = {f.name for f in dataclasses.fields(r)} - {"fix", "fix_kind"}
    assert all(getattr(again, k) == getattr(r, k) for k in same)
    assert re.fullmatch(r"[a-z_]+", FixKind.PARAM_SHAPE)


def test_every_message_template_is_one_message_kind() -> None:
    """Each template of a kind's module is named as its id (``SHAPE_MSG``: ``MessageKind.SHAPE``,
    ``SHAPE_FIX``: ``FixKind.SHAPE``), and every ``MessageKind`` is one template of one kind or
    of the equinox front-end's words (``MODE_MSG`` there: ``MessageKind.EQX_MODE``)."""
    from jitlens._core.template_kinds import MessageKind
    from jitlens._core.words import Template

    ids = []
    for name, module in _modules().items():
        for n, v in vars(module).items():
            if isinstance(v, Template) and not n.startswith("_"):
                assert v.id.name == n.removesuffix("_MSG").removesuffix("_FIX"), (name, n)
                if isinstance(v.id, MessageKind):
                    assert not hasattr(module, "SPEC") or v in module.SPEC.messages, (name, n)
                    ids.append(v.id)
    for n, v in vars(F).items():  # eqx.filter_jit's words: ``EQX_`` + the template's name
        if isinstance(v, Template) and getattr(M, n, None) is not v:
            assert v.id.name == "EQX_" + n.removesuffix("_MSG").removesuffix("_FIX"), n
            if isinstance(v.id, MessageKind):
                ids.append(v.id)
    assert sorted(ids) == sorted(MessageKind)


def test_a_reason_carries_the_makings_of_its_words_until_it_is_printed() -> None:
    """A builder gives a reason its templates and their parameters as data; the words are made
    once, the first time they are read, by one function (``reasons.words``), and a copy of the
    reason made before that carries the makings, not words."""
    from jitlens._core import reasons
    from jitlens._core.template_kinds import FixKind, MessageKind

    r = reasons.dtype("x", "x", "f32[3]", "i32[3]", "i32", "f32")
    message, fix = r.said
    assert (message.id, fix.id) == (MessageKind.DTYPE, FixKind.DTYPE)
    assert dict(message.params)["before"] == "f32[3]" and dict(fix.params)["dtype"] == "float32"
    moved = r.replace(where=(("arg", "x"),))
    assert "_made" not in vars(r) and moved.said == r.said  # nothing worded yet
    assert (r.message, r.fix) == reasons.words(r) and "_made" in vars(r)
    assert r.fix is r.fix and moved == r  # made once, and the same words from the same makings
    again = reasons.with_fix(r, FixKind.KEY, reasons.KEY_FIX)
    assert again.said[1].id is FixKind.KEY and again.said[0] is message
    back = pickle.loads(pickle.dumps(moved))
    assert back == r and back.said == r.said


# jax#9672 / #15338 (tests/test_trial_f.py runs the programs)
def test_a_method_that_reads_an_enclosing_scope_still_gets_the_per_object_fix() -> None:
    # once: a method of a class made inside a function (reading that function's `traces`)
    # was told "Define `f` once at module level with `traces` as parameters": a bound method
    # jitted per call is jitted once per object, whatever its code reads
    r = M.new_function("f", "jax.jit", "p.py:3", 2, True, False, ("traces",), method=("S", "f"))
    assert r.fix_kind is FixKind.METHOD
    assert "`self.f_jit = jax.jit(self.f)`" in r.fix and "traces" not in r.fix, r.fix
    r = M.new_function("step", "jax.jit", "p.py:3", 1, True, False, options=", static_argnums=1")
    assert "`step_jit = jax.jit(step, static_argnums=1)`" in r.fix, r.fix
