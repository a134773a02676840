"""Gaps left by earlier rounds: linen's nn.jit serving a field changed in place, statics too
big to snapshot, the live log's lock, the words for a model grown on purpose, the HTML
report's hits that no compiled entry can be tied to. Ground truth: the eager run, a counter
in the jitted body."""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
import pytest

import jitlens
from conftest import counted


class Box:
    """A plain object: flax hashes it by identity, so its attributes are not in the key."""

    def __init__(self, scale):
        self.scale = scale


def _linen_epochs(fix: bool):
    """An nn.jit module holding ``Box`` in a field, changed in place between applies."""
    nn = pytest.importorskip("flax.linen")
    traces = counted()

    class Scaled(nn.Module):
        cfg: Box

        @nn.compact
        def __call__(self, x):
            traces.tick()
            return self.param("w", nn.initializers.ones, (2,)) * x * self.cfg.scale

    x = jnp.ones(2)
    jitted, eager = [], []
    with jitlens.track() as t:
        m = nn.jit(Scaled)(Box(1.0))
        variables = m.init(jax.random.key(0), x)
        for epoch in range(4):
            if fix:  # the printed fix: a new module holding a new object, then the change
                m = m.clone(cfg=copy.copy(m.cfg))
            m.cfg.scale = 1.0 + epoch
            jitted.append(float(m.apply(variables, x)[0]))
            eager.append(float(Scaled(m.cfg).apply(variables, x)[0]))
    return jitted, eager, traces.n, t.report()


def test_a_linen_field_changed_in_place_is_a_stale_hit_and_its_fix_gives_the_new_result():
    """flax keys nn.jit on a hash of the module's fields; a plain object hashes by identity,
    so its change in place keeps the hash and the call runs the old compile (wrong results,
    no retrace). jitlens warns at the next scheduled check with a fix in linen's terms."""
    with pytest.warns(jitlens.StaleCacheWarning, match="noticed at call #3"):
        jitted, eager, traces, report = _linen_epochs(fix=False)
    # init + the first apply (eager applies trace as well: 2 + 4); the bug: stale results
    assert traces == 2 + 4 and jitted[1:] != eager[1:]
    (hit,) = [h for f in report.functions for h in f.stale_hits]
    assert (hit.path, hit.call_index) == ("m.cfg", 2)
    assert (hit.before, hit.after) == ("Box(scale=1.0)", "Box(scale=2.0)")
    assert "nn.jit keys on a hash of the module's fields" in hit.message
    assert "`m = m.clone(cfg=copy.copy(m.cfg))` before `m.cfg.scale = 2.0`" in hit.fix
    jitted, eager, traces, report = _linen_epochs(fix=True)  # the fix, applied above
    assert jitted == eager and traces == 1 + 4 + 4  # one compile per new object, each right
    assert not [h for f in report.functions for h in f.stale_hits]
