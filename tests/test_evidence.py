"""No guessed causes: when two keys look equal, a reason is printed only with its evidence.

Statics equal in value but of different types are named (jax.jit keys on the type:
jax-ml/jax#9273), where JAX keys on the type and nowhere else; a clear is reported
only when jitlens saw one; an equal key with no evidence is ``unknown``, listing
what was compared. Counters inside the jitted bodies are the truth.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jitlens

X = jnp.ones(2)


def run(make: object, body: object, values: tuple[object, ...], *, keyword: bool = False):
    """Call ``make(body)`` with each static value; return (traced values, reasons, stats).

    Each test has a body of its own: wrappers of one code are compared with each other."""
    traced: list[object] = []
    f = make(body(traced))
    with jitlens.track() as t:
        for v in values:
            f(X, flag=v) if keyword else f(X, v)
    s = t.stats(f)
    return traced, [r for e in s.events for r in e.reasons], s


def counting(traced: list[object]):
    def body(x, flag):
        traced.append(flag)
        return x * 2 if flag else x

    return body


def test_equal_statics_of_different_types_are_named_for_jax_jit():
    """1, True, 1.0 compare and hash equal; JAX compiles each type (jax-ml/jax#9273)."""
    traced, rs, s = run(lambda b: jax.jit(b, static_argnums=1), counting, (1, True, 1.0, True))
    assert [type(v) for v in traced] == [int, bool, float] and s.traces == 3
    assert [(r.kind, r.before, r.after) for r in rs] == [
        ("static_type", "int 1", "bool True"),
        ("static_type", "bool True", "float 1.0"),
    ]
    assert (
        "equal values of different types: int 1 -> bool True; JAX's cache key includes the type"
        in rs[0].message
    )
    assert "`bool(flag)`" in rs[0].fix
    assert all(r.kind != "cache_cleared" for r in rs)


def test_numpy_scalars_next_to_python_numbers_are_named_for_static_argnames():
    def numbers(traced):
        def body(x, flag):
            traced.append(flag)
            return x * flag

        return body

    traced, rs, s = run(
        lambda b: jax.jit(b, static_argnames="flag"),
        numbers,
        (3, np.int64(3), np.float32(0.5), 0.5),
        keyword=True,
    )
    assert s.traces == len(traced) == 4
    assert [(r.kind, r.before, r.after) for r in rs][::2] == [
        ("static_type", "int 3", "np.int64 3"),
        ("static_type", "np.float32 0.5", "float 0.5"),
    ]
    assert "`int(flag)`" in rs[0].fix and "`float(flag)`" in rs[2].fix


def test_nnx_jit_static_argnums_keys_on_the_type_too():
    def flags(traced):
        def body(x, flag):
            traced.append(flag)
            return x * 2 if flag else x

        return body

    traced, rs, s = run(lambda b: nnx.jit(b, static_argnums=1), flags, (1, True))
    assert s.traces == len(traced) == 2
    assert [r.kind for r in rs] == ["static_type"]


class Flagged(nnx.Module):
    def __init__(self, flag: object, n: int) -> None:
        self.flag = flag
        self.w = nnx.Param(jnp.ones(n))


def test_nnx_attributes_do_not_key_on_the_type():
    """flax compares graph attributes with ==: 1, True, 1.0 hit, and a retrace for another
    cause does not blame the type."""
    traced = []

    @nnx.jit
    def forward(model, x):
        traced.append(model.flag)
        return model.w * x

    with jitlens.track() as t:
        for flag, n in ((1, 2), (True, 2), (1.0, 2), (True, 3)):
            forward(Flagged(flag, n), jnp.ones(n))
    s = t.stats(forward)
    assert len(traced) == s.traces == 2
    assert {r.kind for e in s.events for r in e.reasons} == {"shape"}


def test_eqx_statics_do_not_key_on_the_type():
    """eqx.filter_jit keys its Python-number statics by ==: 1, True, 1.0 are one compile."""
    eqx = pytest.importorskip("equinox")

    def eqx_flags(traced):
        def body(x, flag):
            traced.append(flag)
            return x * 2 if flag else x

        return body

    eqx_traced, rs, s = run(eqx.filter_jit, eqx_flags, (1, True, 1.0))
    assert len(eqx_traced) == s.traces == 1 and rs == []


def test_a_seen_clear_is_evidence():
    """(A full cache as evidence, on made-up keys: test_robustness.py.)"""

    traced = []

    def body(x):
        traced.append(1)
        return x + 1

    f = jax.jit(body)
    with jitlens.track() as t:
        f(X)
        jax.clear_caches()  # seen through a witness in JAX's own cache registry
        f(X)
    (r,) = [r for e in t.stats(f).events for r in e.reasons]
    assert len(traced) == t.stats(f).traces == 2
    assert r.kind == "cache_cleared" and r.after == "cleared"
