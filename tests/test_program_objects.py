"""jitlens touches nothing of the program's (issue 44): it runs none of its code, keeps none
of its objects alive, and copies of a jitted function are what they are without it.

Ground truth: the program's own counters of every hook Python could run for jitlens
(``tests/spy_program.py``), ``weakref`` liveness after ``gc.collect()`` compared with
plain JAX's in the same scenario, and plain JAX's copies of its own jit object.
"""

from __future__ import annotations

import gc
import json
import pathlib
import weakref
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jitlens
from conftest import run_python

HERE = pathlib.Path(__file__).resolve().parent
PROGRAM = HERE / "spy_program.py"


@pytest.fixture(scope="module")
def spied(tmp_path_factory: pytest.TempPathFactory, fork_python) -> dict[str, Any]:
    """The spy program's counts without jitlens and under ``jitlens.track()`` (one process: a
    fork of the server that imported JAX, nothing of jitlens), and under ``JITLENS=1`` (a
    fresh interpreter, its start-up hook and exit report included)."""
    tmp = tmp_path_factory.mktemp("spies")
    got: dict[str, Any] = {}
    for mode, run in (("both", fork_python), ("env", run_python)):
        proc = run([str(PROGRAM), mode], cwd=tmp, env={"JITLENS": "1"} if mode == "env" else {})
        assert proc.returncode == 0, proc.stderr[-3000:]
        got.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        got[f"late {mode}"] = [line for line in proc.stderr.splitlines() if line.startswith("LATE")]
    return got


#: JAX's caches call these a number of times that varies from run to run: compared apart.
_JAXS = ("__eq__", "__hash__")


def _deterministic(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if not k.endswith(_JAXS) and "by jitlens" not in k}


@pytest.mark.parametrize("mode", ["track", "env"])
def test_no_hook_of_the_programs_objects_runs_more_often_than_under_plain_jax(
    spied: dict[str, Any], mode: str
) -> None:
    """Every ``__getattribute__`` (``__class__`` included), ``__getattr__``, ``__repr__``,
    ``__str__``, ``__format__``, ``__len__``, ``__iter__``, ``__bool__``, metaclass check and
    property of the statics, arguments, model attributes and captured objects runs exactly
    as often as under plain JAX. Before: 285 more ``__class__`` lookups of one static (the
    issue's program: 186), its ``__repr__`` 4 times, a ``shape`` property 8 times, a
    nested ``__eq__`` of a dataclass static's field, ``__getattr__`` of 7 names."""
    plain, got = spied["plain"], spied[mode]
    assert got["outs"] == plain["outs"] and got["traces"] == plain["traces"]
    assert _deterministic(got["counts"]) == _deterministic(plain["counts"])
    assert not spied[f"late {'env' if mode == 'env' else 'both'}"]  # not at exit either


@pytest.mark.parametrize("mode", ["track", "env"])
def test_jitlens_calls_no_eq_or_hash_of_the_programs_objects(
    spied: dict[str, Any], mode: str
) -> None:
    """``__eq__`` and ``__hash__`` run only where JAX calls them (its caches): never from
    jitlens' reading code, which compares statics as the builtins would or by what they
    hold. Before: the key's comparison and the explanation called them."""
    counts = spied[mode]["counts"]
    assert {k: v for k, v in counts.items() if "by jitlens" in k} == {}
    for hook in ("ByValue.__hash__", "Conf.__hash__", "FrozenMap.__hash__"):
        assert counts.get(hook) == spied["plain"]["counts"].get(hook), hook


def test_the_retraces_are_still_explained(spied: dict[str, Any]) -> None:
    """What jitlens read without the program's code still names each retrace and the stale
    hit (the compile-cost reading of a captured object: ``test_advice.py``)."""
    got = spied["track"]
    assert got["stale"] == ["f:cfg"]
    reasons = set(got["reasons"])
    for want in (
        "f:static_value:cfg.n",
        "g:identity_static:opaque",
        "h:static_value:conf.k",
        "mixed:static_value:t[1]",
        "mixed:static_value:nt.b",
        "mixed:static_value:fm['k']",
        "mixed:identity_static:p",
        "step:static_value:net.tag.n",
        "step:identity_static:net.act",
        "estep:static_value:m.tag.n",
    ):
        assert want in reasons, (want, sorted(reasons))
    assert "Captured.shape" not in got["counts"] and "Net.shape" not in got["counts"]


# ---- what jitlens keeps: the program's objects are freed when plain JAX frees them ---------


class Big:
    """A static compared by value, holding 8 MiB."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.payload = np.zeros(1 << 20)

    def __eq__(self, other: object) -> bool:
        return type(other) is Big and other.n == self.n

    def __hash__(self) -> int:
        return hash(self.n)


class Opaque:
    """A static compared by identity, holding 8 MiB."""

    def __init__(self) -> None:
        self.payload = np.zeros(1 << 20)


class Model(nnx.Module):
    def __init__(self, tag: Any) -> None:
        self.w = nnx.Param(jnp.ones(2))
        self.big = nnx.Variable(jnp.zeros(1 << 18))
        self.tag = tag

    def __call__(self, x: Any) -> Any:
        return x * self.w


def _deleted_function() -> list[Any]:
    """Two statics, each passed twice (equal objects), then the jitted function deleted."""
    refs = []

    def f(x: Any, s: Any) -> Any:
        return x * s.n

    j = jax.jit(f, static_argnums=1)
    for n in (1, 1, 2, 2):
        s = Big(n)
        refs.append(weakref.ref(s))
        j(jnp.ones(2), s)
    del j, f, s
    return refs


def _cleared_caches() -> list[Any]:
    """A static, then another: ``jax.clear_caches()`` while the function lives."""
    s = Big(2)
    refs = [weakref.ref(s)]

    def f(x: Any, s: Any) -> Any:
        return x * s.n

    j = jax.jit(f, static_argnums=1)
    for _ in range(3):
        j(jnp.ones(2), s)
    j(jnp.ones(2), Big(4))
    del s
    jax.clear_caches()
    j(jnp.ones(2), Big(4))
    return refs


def _replaced_static() -> list[Any]:
    """Statics of a value, then one within a tuple, each replaced by a new one: the old ones
    are freed once JAX's cache lets go of them (the function's cache cleared)."""
    old, inner = Big(1), Big(2)
    refs = [weakref.ref(old), weakref.ref(inner)]

    def f(x: Any, s: Any, t: Any) -> Any:
        return x * s.n * t[0].n

    j = jax.jit(f, static_argnums=(1, 2))
    for _ in range(3):
        j(jnp.ones(2), old, (inner, 1))
    new = (Big(3), (Big(4), 1))
    j(jnp.ones(2), *new)
    del old, inner
    j.clear_cache()
    j(jnp.ones(2), *new)
    return refs


def _model_deleted() -> list[Any]:
    """A model passed to an nnx.jit function (that lives on), its static attribute replaced,
    then the model deleted and the caches cleared."""
    m = Model(Big(1))
    refs = [weakref.ref(m), weakref.ref(m.tag)]

    @nnx.jit
    def step(m: Any, x: Any) -> Any:
        return m(x)

    for _ in range(3):
        step(m, jnp.ones(2))
    m.tag = Big(2)
    step(m, jnp.ones(2))
    refs.append(weakref.ref(m.tag))
    del m
    jax.clear_caches()
    _model_deleted.step = step  # type: ignore[attr-defined]
    return refs


SCENARIOS: dict[str, Callable[[], list[Any]]] = {
    "del of the jitted function": _deleted_function,
    "jax.clear_caches()": _cleared_caches,
    "a static replaced": _replaced_static,
    "a model passed and deleted": _model_deleted,
}


def _alive(scenario: Callable[[], list[Any]]) -> list[bool]:
    """Which of the scenario's objects are alive after a full collection of what was made
    since it began: what existed before (JAX, flax, pytest: 0.15 CPU s a collection) is
    frozen, not scanned; an object made since is freed unless something reaches it."""
    gc.freeze()
    try:
        refs = scenario()
        gc.collect()
        return [r() is not None for r in refs]
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_jitlens_keeps_nothing_alive_that_plain_jax_frees(name: str) -> None:
    """Each object is alive after ``gc.collect()`` exactly when it is without jitlens; in
    these scenarios plain JAX frees all of them (once warm: the first run of a jitted code in
    a process leaves some of its statics in a cache of JAX's until the next run). Before:
    every static compared by value (the 8 MiB ``Big``) stayed in jitlens' keys, and so did
    a tuple static, a model's static attribute and an equinox module's static field."""
    scenario = SCENARIOS[name]
    _alive(scenario)  # warm: JAX's cache of this code now holds this run's objects
    plain = _alive(scenario)
    assert plain == [False] * len(plain), plain  # the ground truth, as these scenarios make it
    with jitlens.track() as t:
        tracked = _alive(scenario)
    assert tracked == plain, (name, tracked)
    assert any(f.traces for f in t.report().functions)


def test_a_retrace_is_explained_after_its_statics_were_freed() -> None:
    """The explanation keeps what it needs as jitlens' own text: the report, made after the
    statics are gone, still says what changed."""
    _alive(_replaced_static)  # warm (see above)
    with jitlens.track() as t:
        assert _alive(_replaced_static) == [False, False]
    reasons = [(r.kind, r.path, r.before, r.after) for f in t.report().functions
               for e in f.events for r in e.reasons]  # fmt: skip
    assert ("static_value", "s.n", "1", "3") in reasons, reasons
