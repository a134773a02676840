"""max_traces, no_retrace, get_num_traces and reset against ground truth: a counter in the function."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from types import TracebackType
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

import jitlens
from jitlens import (
    ConfigError,
    RecompileError,
    RecompileWarning,
    get_num_traces,
    max_traces,
    no_retrace,
    reset,
    track,
)

#: ``jax.jit`` as JAX ships it, even while jitlens' hooks are installed: what a
#: module imported before jitlens gets (a jit jitlens only sees through monitoring).
PLAIN_JIT = getattr(jax.jit, "__jitlens_original__", jax.jit)

#: jitlens' package directory: its frames are the ones a user must not see.
JITLENS_DIR = os.path.dirname(os.path.abspath(jitlens.__file__)) + os.sep


def _visible_files(tb: TracebackType | None) -> list[str]:
    """Files of the frames pytest shows (those without ``__tracebackhide__``)."""
    files = []
    while tb is not None:
        if not tb.tb_frame.f_locals.get("__tracebackhide__"):
            files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return files


def _counted() -> tuple[Callable[[Any], Any], list[int]]:
    """A function and its ground truth: one entry per run of its Python body (= per trace)."""
    runs: list[int] = []

    def step(x: Any) -> Any:
        runs.append(1)
        return x * 2

    return step, runs


GUARDS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "above jax.jit": lambda f: max_traces(1)(jax.jit(f)),
    "above plain jax.jit": lambda f: max_traces(1)(PLAIN_JIT(f)),
    "above nnx.jit": lambda f: max_traces(1)(nnx.jit(f)),
    "below jax.jit": lambda f: jax.jit(max_traces(1)(f)),
    "below plain jax.jit": lambda f: PLAIN_JIT(max_traces(1)(f)),
    "below nnx.jit": lambda f: nnx.jit(max_traces(1)(f)),
    "existing jax.jit": lambda f: max_traces(PLAIN_JIT(f), 1),
}


@pytest.mark.parametrize("how", list(GUARDS))
def test_budget_counts_traces_and_fails_with_the_reason(how: str) -> None:
    step, runs = _counted()
    guarded = GUARDS[how](step)
    for _ in range(3):
        guarded(jnp.ones(3))
    assert len(runs) == get_num_traces(guarded) == 1

    with pytest.raises(RecompileError) as info:
        guarded(jnp.ones(4))

    message = str(info.value)
    assert message.startswith(
        "jitlens: `test_budget_counts_traces_and_fails_with_the_reason.<locals>._counted"
    ) or message.startswith("jitlens: `_counted.<locals>.step` was traced 2 times")
    assert "was traced 2 times, over its budget of 1 (max_traces)." in message
    assert "x  shape" in message and "f32[3] -> f32[4]" in message and "fix: " in message
    assert len(runs) == 1, "the error comes before JAX traces again"
    visible = _visible_files(info.tb)
    assert visible[-1] == __file__, visible

    reset(guarded)
    assert get_num_traces(guarded) == 0
    guarded(jnp.ones(4))
    assert len(runs) == 2 and get_num_traces(guarded) == 1


def test_existing_function_counts_from_the_guards_first_call() -> None:
    step, runs = _counted()
    jitted = PLAIN_JIT(step)
    jitted(jnp.ones(3))
    guarded = max_traces(jitted, 1)
    guarded(jnp.ones(3))  # a cache hit: nothing to count
    assert get_num_traces(guarded) == 0
    guarded(jnp.ones(4))
    assert get_num_traces(guarded) == 1 and len(runs) == 2
    with pytest.raises(RecompileError, match="traced 2 times, over its budget of 1"):
        guarded(jnp.ones(5))


@pytest.mark.parametrize("below", [False, True], ids=["above", "below"])
def test_warn_mode_warns_at_the_users_line_and_lets_the_trace_run(below: bool) -> None:
    step, runs = _counted()
    guarded = (
        jax.jit(max_traces(1, on_exceed="warn")(step))
        if below
        else max_traces(1, on_exceed="warn")(jax.jit(step))
    )
    guarded(jnp.ones(3))
    with pytest.warns(RecompileWarning, match="over its budget of 1") as caught:
        guarded(jnp.ones(4))
    # jitlens' runaway warning counts the whole process's recompiles: the suite's own add up
    # and it can land in this block too, at the same line; the guard's own warning is one
    budget = [w for w in caught if not issubclass(w.category, jitlens.RunawayRecompileWarning)]
    assert [w.filename for w in budget] == [__file__]
    assert len(runs) == get_num_traces(guarded) == 2

    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        with pytest.raises(RecompileWarning, match="traced 3 times") as info:
            guarded(jnp.ones(5))
    assert _visible_files(info.tb)[-1] == __file__


def test_budget_none_counts_and_zero_forbids_the_first_trace() -> None:
    step, runs = _counted()
    counted = jax.jit(max_traces(None)(step))
    for n in (2, 2, 3, 4):
        counted(jnp.ones(n))
    assert get_num_traces(counted) == len(runs) == 3

    never = max_traces(0)(jax.jit(lambda x: x + 1))
    with pytest.raises(RecompileError, match="traced 1 times, over its budget of 0"):
        never(jnp.ones(2))


def test_method_of_an_nnx_module() -> None:
    runs: list[int] = []

    class Scale(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(3))

        @max_traces(1)
        @nnx.jit
        def __call__(self, x: jax.Array) -> jax.Array:
            runs.append(1)
            return self.w * x

    model = Scale()
    model(jnp.ones(3))
    model(jnp.ones(3))
    assert len(runs) == 1
    with pytest.raises(RecompileError, match="x  dtype"):
        model(jnp.ones(3, jnp.int32))


@pytest.mark.max_traces(1)
def test_errors_of_the_function_itself_pass_through() -> None:
    @jax.jit
    @max_traces(1)
    def broken(x: jax.Array) -> jax.Array:
        raise ValueError("user bug")

    with pytest.raises(ValueError, match="user bug"):
        broken(jnp.ones(2))


@pytest.mark.max_traces(1)
def test_a_guarded_train_step_compiles_once() -> None:
    runs: list[int] = []

    class Model(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones(2))
            self.steps = nnx.Variable(jnp.zeros((), jnp.int32))

    @max_traces(1)
    @nnx.jit
    def train_step(model: Model, x: jax.Array) -> jax.Array:
        runs.append(1)
        loss, grads = nnx.value_and_grad(lambda m: ((m.w[...] * x) ** 2).sum())(model)
        model.w[...] = model.w[...] - 0.1 * grads["w"][...]
        model.steps[...] += 1
        return loss

    model = Model()
    for _ in range(4):
        train_step(model, jnp.ones(2))
    assert len(runs) == get_num_traces(train_step) == 1
    assert int(model.steps[...]) == 4


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: max_traces(-1), ConfigError, "int >= 0"),
        (lambda: max_traces(True), ConfigError, "int >= 0"),
        (lambda: max_traces(1.5), ConfigError, "int >= 0"),
        (lambda: max_traces(1, on_exceed="explode"), ConfigError, "'raise', 'warn'"),
        (lambda: max_traces(jax.jit(abs)), TypeError, r"max_traces\(abs, n\)"),
        (lambda: no_retrace(on_exceed="ignore"), ConfigError, "'raise', 'warn'"),
        (lambda: get_num_traces(lambda x: x), ValueError, "not watched by jitlens"),
        (lambda: reset(print), ValueError, "not watched by jitlens"),
    ],
    ids=["negative", "bool", "float", "on_exceed", "no budget", "no_retrace", "count", "reset"],
)
def test_bad_arguments_fail_at_once(call: Callable[[], Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_get_num_traces_of_an_unguarded_function_seen_by_a_tracker() -> None:
    step, runs = _counted()
    with track():
        jitted = jax.jit(step)
        for n in (2, 3, 3):
            jitted(jnp.ones(n))
    assert get_num_traces(jitted) == get_num_traces(step) == len(runs) == 2
    reset(step)
    assert get_num_traces(jitted) == 0


def test_no_retrace_fails_on_a_retrace_and_allows_new_functions() -> None:
    runs: list[int] = []

    @jax.jit
    def jitted(x: jax.Array) -> jax.Array:
        runs.append(1)
        return x - 1

    with no_retrace():
        jitted(jnp.ones(3))  # first trace: allowed
        jitted(jnp.ones(3))
        with pytest.raises(RecompileError) as info:
            jitted(jnp.ones(4))
    message = str(info.value)
    assert "was traced again inside `jitlens.no_retrace()`" in message
    assert "f32[3] -> f32[4]" in message
    assert len(runs) == 1
    # jitlens' own package, not any path with "jitlens" in it (a clone is named jitlens/)
    assert not [f for f in _visible_files(info.tb) if f.startswith(JITLENS_DIR)]


def test_no_retrace_allow_new_false_threads_and_internal_helpers() -> None:
    runs: list[int] = []

    @jax.jit
    def jitted(x: jax.Array) -> jax.Array:
        runs.append(1)
        return x / 2

    with no_retrace(allow_new=False):
        _ = jnp.arange(11) * 3  # JAX's own jitted helpers compile: not the user's
        with pytest.raises(RecompileError, match=r"for the first time inside"):
            jitted(jnp.ones(3))
        other = threading.Thread(target=lambda: jitted(jnp.ones(6)))
        other.start()
        other.join()
    assert len(runs) == 1, "another thread is outside the block"


def test_no_retrace_catches_a_jit_recreated_in_the_loop_and_works_as_a_decorator() -> None:
    @no_retrace(on_exceed="warn")
    def loop() -> None:
        for _ in range(2):
            jax.jit(lambda x: x + 1)(jnp.ones(2))

    with pytest.warns(RecompileWarning, match="new_function"):
        loop()


def test_a_budget_on_a_compiled_executable_raises_instead_of_passing() -> None:
    """``.lower().compile()`` never traces: a guard on it could only pass without counting."""
    import jax
    import jax.numpy as jnp

    import jitlens

    lowered = jax.jit(lambda x: x + 1).lower(jnp.ones(2))
    compiled = lowered.compile()
    for target in (compiled, lowered):
        with pytest.raises(jitlens.JitlensError, match="never traces again") as info:
            jitlens.max_traces(target, 1)
        assert isinstance(info.value, TypeError)
        assert "jitlens.max_traces(jax.jit(fn), 1)" in str(info.value)
    with pytest.raises(jitlens.JitlensError, match="compiled executable"):
        jitlens.max_traces(1)(compiled)


def test_no_retrace_misuse_says_what_happened_not_an_internal_index_error() -> None:
    """A second exit, an exit without enter, or an exit in another thread: a clear error.

    Ground truth: after each misuse the guard still works (a retrace inside a
    proper block raises) and no budget stays open (a retrace outside passes).
    """
    runs: list[int] = []

    @jax.jit
    def jitted(x: jax.Array) -> jax.Array:
        runs.append(1)
        return x + 3

    guard = no_retrace()
    with pytest.raises(jitlens.JitlensError, match="exited without a matching enter") as info:
        guard.__exit__(None, None, None)
    assert isinstance(info.value, RuntimeError)
    assert "`with jitlens.no_retrace():`" in str(info.value)
    with guard:
        jitted(jnp.ones(2))
    with pytest.raises(RuntimeError, match="exited twice"):
        guard.__exit__(None, None, None)
    with guard, guard:  # the same object nested (or a recursive decorated function)
        jitted(jnp.ones(2))
    errors: list[BaseException] = []

    def exit_elsewhere() -> None:
        try:
            guard.__exit__(None, None, None)
        except BaseException as error:
            errors.append(error)

    with guard:
        other = threading.Thread(target=exit_elsewhere)
        other.start()
        other.join()
        with pytest.raises(RecompileError):
            jitted(jnp.ones(3))  # still open in this thread
    assert [type(e) for e in errors] == [type(info.value)]
    assert "same thread" in str(errors[0])
    jitted(jnp.ones(4))  # every block closed: a retrace outside passes
    assert len(runs) == 2
    # an exception in flight is the user's: misuse then warns instead of replacing it
    with pytest.raises(ValueError, match="theirs"), pytest.warns(RuntimeWarning, match="exited"):
        try:
            raise ValueError("theirs")
        except ValueError as error:
            guard.__exit__(ValueError, error, error.__traceback__)
            raise
