"""nn.jit serving another object's compile: a module field holding a new object at a freed one's
address (CPython reuses addresses, and an identity hash with them), or another object with the
same hash. flax keys nn.jit on a hash of the module's fields and keeps no reference, so the call
hits and runs the old compile: wrong numbers, no retrace. Ground truth: the eager apply of the
same module, a counter in the jitted body."""

from __future__ import annotations

import dataclasses
import gc

import jax.numpy as jnp
import pytest

import jitlens
from conftest import counted

nn = pytest.importorskip("flax.linen")


class Cfg:
    """A plain object: flax hashes it as it is, by identity (its address)."""

    def __init__(self, scale):
        self.scale = scale


class SameHash(Cfg):
    """Hashes by its class alone: two of them are one key to flax."""

    def __hash__(self):
        return hash(SameHash)


@dataclasses.dataclass
class DataCfg:
    """The printed fix: a dataclass, whose fields flax's hash walks."""

    scale: float


def _at(make, scale, addr, keep):
    """``make(scale)``, at the address ``addr`` when the allocator gives it back (bounded)."""
    held = []
    obj = make(scale)
    while addr is not None and id(obj) != addr and len(held) < 10_000:
        held.append(obj)
        obj = make(scale)
    keep.append(obj)  # (SameHash: every object stays alive, so no address repeats)
    return obj


def _epochs(make, reuse: bool):
    """Four applies of an nn.jit module, each with a new config; the old one freed first."""
    traces = counted()

    class Scaled(nn.Module):
        cfg: object

        @nn.compact
        def __call__(self, x):
            traces.tick()
            return x * self.cfg.scale

    x, jit_scaled = jnp.ones(2), nn.jit(Scaled)
    jitted, eager, addrs, keep = [], [], [], []
    with jitlens.track() as t:
        for epoch in range(4):
            addr = addrs[-1] if addrs and reuse else None
            if reuse:
                keep.clear()
                gc.collect()  # the last config is freed: its address is free again
            cfg = _at(make, 1.0 + epoch, addr, keep)
            addrs.append(id(cfg))
            jitted.append(float(jit_scaled(cfg).apply({}, x)[0]))
            eager.append(float(Scaled(cfg).apply({}, x)[0]))
            del cfg
    return jitted, eager, traces.n, addrs, t.report()


@pytest.mark.parametrize(
    ("make", "reuse", "other"),
    [
        (Cfg, True, "a new object at the address of the freed one its compile saw"),
        (SameHash, False, "another object than its compile saw, with the same hash"),
    ],
    ids=["freed-address", "same-hash"],
)
def test_a_field_that_is_another_object_at_an_equal_hash_is_a_stale_hit(make, reuse, other):
    with pytest.warns(jitlens.StaleCacheWarning) as said:
        jitted, eager, traces, addrs, report = _epochs(make, reuse)
    assert eager == [1.0, 2.0, 3.0, 4.0]
    if reuse:  # flax's key: the address; an epoch at an address seen runs that epoch's compile
        assert addrs[1] == addrs[0]  # the allocator gave the freed address back at once
        assert jitted == [eager[addrs.index(a)] for a in addrs] and jitted[1] == 1.0
        assert traces == len(set(addrs)) + 4  # one compile per address (and 4 eager applies)
    else:  # all four configs alive, one hash: the first compile serves them all
        assert len(set(addrs)) == 4 and jitted == [1.0] * 4 and traces == 1 + 4
    hits = [h for f in report.functions for h in f.stale_hits]
    stale = [w for w in said if issubclass(w.category, jitlens.StaleCacheWarning)]
    assert len(stale) == len(hits) >= 1  # once per field and compile, not per call
    hit = hits[0]
    assert (hit.path, hit.call_index) == ("module.cfg", 1)  # noticed at call #2
    name = make.__name__
    assert (hit.before, hit.after) == (f"{name}(scale=1.0)", f"{name}(scale=2.0)")
    assert other in hit.message and "(stale), not" in hit.message
    assert f"make `{name}` a dataclass (`@dataclasses.dataclass`)" in hit.fix
    data = report.to_dict()["functions"]
    assert [s["path"] for f in data for s in f["stale_hits"]] == ["module.cfg"] * len(hits)


def test_the_printed_fix_a_dataclass_computes_what_eager_does_at_a_reused_address():
    """The fix applied to the freed-address program: same addresses, one compile per value,
    every result equal to the eager apply's, and no warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", jitlens.StaleCacheWarning)
        jitted, eager, traces, addrs, report = _epochs(DataCfg, reuse=True)
    assert addrs[1] == addrs[0] and jitted == eager == [1.0, 2.0, 3.0, 4.0]
    assert traces == 4 + 4  # one compile per value, and the eager applies
    assert not [h for f in report.functions for h in f.stale_hits]


def test_an_equal_object_at_a_reused_address_is_no_stale_hit():
    """A new object holding what the compile's held: the old compile is right for it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", jitlens.StaleCacheWarning)
        jitted, eager, traces, addrs, report = _epochs(lambda _s: Cfg(1.0), reuse=True)
    assert addrs[1] == addrs[0] and jitted == eager == [1.0] * 4
    assert traces == len(set(addrs)) + 4
    assert not [h for f in report.functions for h in f.stale_hits]
