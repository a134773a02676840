"""nn.jit serving another object's compile: a module field holding a new object at a freed one's
address (CPython reuses addresses, and an identity hash with them), or another object with the
same hash. flax keys nn.jit on a hash of the module's fields and keeps no reference, so the call
hits and runs the old compile: wrong numbers, no retrace. Ground truth: the eager apply of the
same module, a counter in the jitted body."""

from __future__ import annotations

import dataclasses
import gc
import json

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


def _at(make, scale, addrs):
    """``make(scale)``, at one of ``addrs`` (freed) when the allocator gives one back (bounded)."""
    held = []
    obj = make(scale)
    while addrs and id(obj) not in addrs and len(held) < 20_000:
        held.append(obj)
        obj = make(scale)
    return obj


def _scaled(traces):
    class Scaled(nn.Module):
        cfg: object

        @nn.compact
        def __call__(self, x):
            traces.tick()
            return x * self.cfg.scale

    return Scaled


def _epochs(make, scale_of, max_epochs=40):
    """Applies of an nn.jit module, each with a new config (the last one freed first), until
    one lands at the address of a config a compile saw: ``(jitted, eager, addresses, traces,
    report)``. Where the allocator gives an address back depends on what ran before (Python
    3.11 often at once, 3.13 a few configs later), so the loop asks until it does. A call on
    such an address is made a checked one (#2, #3, #5, #9, ...) by calls with a config kept
    alive (hits of its own compile) before it."""
    traces = counted()
    Scaled = _scaled(traces)
    x, jit_scaled = jnp.ones(2), nn.jit(Scaled)
    kept = make(-1.0)
    jitted, eager, addrs = [], [], []
    with jitlens.track() as t:
        jit_scaled(kept).apply({}, x)
        calls = 1
        for epoch in range(max_epochs):
            gc.collect()  # the last config (and the modules around it) freed
            cfg = _at(make, scale_of(epoch), set(addrs))
            reused = id(cfg) in addrs
            while reused and calls & (calls - 1):  # the next call is not a checked one
                jit_scaled(kept).apply({}, x)
                calls += 1
            addrs.append(id(cfg))
            jitted.append(float(jit_scaled(cfg).apply({}, x)[0]))
            eager.append(float(Scaled(cfg).apply({}, x)[0]))
            calls += 1
            del cfg
            if reused:
                break
    return jitted, eager, addrs, traces.n, t.report()


def test_a_new_object_at_a_freed_ones_address_is_a_stale_hit():
    with pytest.warns(jitlens.StaleCacheWarning) as said:
        jitted, eager, addrs, traces, report = _epochs(Cfg, lambda epoch: 1.0 + epoch)
    assert addrs[-1] in addrs[:-1]  # the last config took a freed one's address
    first = addrs.index(addrs[-1])
    assert eager == [1.0 + e for e in range(len(addrs))]
    # the bug under flax: the key is the address; that call ran the first config's compile
    assert jitted[:-1] == eager[:-1] and jitted[-1] == eager[first] != eager[-1]
    assert traces == 1 + len(set(addrs)) + len(addrs)  # compiles (+ the kept one's) + eager
    stale = [w for w in said if issubclass(w.category, jitlens.StaleCacheWarning)]
    (hit,) = [h for f in report.functions for h in f.stale_hits]
    assert len(stale) == 1 and (hit.path, hit.before, hit.after) == (
        "module.cfg",
        f"Cfg(scale={eager[first]})",
        f"Cfg(scale={eager[-1]})",
    )
    assert "a new object at the address of the freed one its compile saw" in hit.message
    assert f"runs with Cfg(scale={eager[first]}) (stale), not" in hit.message
    assert "make `Cfg` a dataclass (`@dataclasses.dataclass`)" in hit.fix
    data = report.to_dict()["functions"]
    assert [s["path"] for f in data for s in f["stale_hits"]] == ["module.cfg"]


def test_the_printed_fix_a_dataclass_computes_what_eager_does_at_a_reused_address():
    """The fix applied: the same address reused, a compile per value, every result equal to
    the eager apply's, and no warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", jitlens.StaleCacheWarning)
        jitted, eager, addrs, traces, report = _epochs(DataCfg, lambda epoch: 1.0 + epoch)
    assert addrs[-1] in addrs[:-1] and jitted == eager == [1.0 + e for e in range(len(addrs))]
    assert traces == 1 + 2 * len(addrs)  # one compile per value (+ the kept one's), eager
    assert not [h for f in report.functions for h in f.stale_hits]


def test_an_equal_object_at_a_reused_address_is_no_stale_hit():
    """A new object holding what the compile's held: the old compile is right for it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", jitlens.StaleCacheWarning)
        jitted, eager, addrs, traces, report = _epochs(Cfg, lambda epoch: 1.0)
    assert addrs[-1] in addrs[:-1] and jitted == eager == [1.0] * len(addrs)
    assert traces == 1 + len(set(addrs)) + len(addrs)  # the reused address: a hit, no compile
    assert not [h for f in report.functions for h in f.stale_hits]


def test_another_live_object_with_the_same_hash_is_a_stale_hit():
    """Two configs alive at once whose class hashes alike: one key to flax, one compile."""
    traces = counted()
    Scaled = _scaled(traces)
    x, jit_scaled = jnp.ones(2), nn.jit(Scaled)
    configs = [SameHash(1.0 + e) for e in range(3)]
    with pytest.warns(jitlens.StaleCacheWarning) as said, jitlens.track() as t:
        jitted = [float(jit_scaled(c).apply({}, x)[0]) for c in configs]
    assert jitted == [1.0] * 3 and traces.n == 1  # the bug: eager gives 1.0, 2.0, 3.0
    assert [float(Scaled(c).apply({}, x)[0]) for c in configs] == [1.0, 2.0, 3.0]
    (hit,) = [h for f in t.report().functions for h in f.stale_hits]
    assert len([w for w in said if issubclass(w.category, jitlens.StaleCacheWarning)]) == 1
    assert (hit.call_index, hit.before, hit.after) == (
        1,
        "SameHash(scale=1.0)",
        "SameHash(scale=2.0)",
    )
    assert "another object than its compile saw, with the same hash" in hit.message
    assert "make `SameHash` a dataclass (`@dataclasses.dataclass`)" in hit.fix


# ---------------------------------------------------------------- what jitlens could not check


class Big:
    """More values than a check reads; the attribute the jitted code reads is past what its
    text shows (a change there is seen by reading it all, which a check does not)."""

    def __init__(self, scale):
        self.vocab = {f"w{i}": i for i in range(3_000)}
        for i in range(7):
            setattr(self, f"unused{i}", i)
        self.scale = scale


@dataclasses.dataclass
class DataBig:
    """The remedy printed for nn.jit: a dataclass, whose fields flax's hash walks."""

    vocab: dict
    scale: float


def _big_epochs(jit: str, fix: bool):
    """A static too big to check, changed in place between calls of a jax.jit or nn.jit."""
    traces = counted()
    x, jitted, eager = jnp.ones(2), [], []

    def make_run():  # (a jax.jit made before track() opened is not counted)
        if jit == "jax.jit":
            import jax

            def step(x, cfg):
                traces.tick()
                return x * cfg.scale

            g = jax.jit(step, static_argnums=1)
            return lambda cfg: g(x, cfg)

        jit_scaled = nn.jit(_scaled(traces))
        return lambda cfg: jit_scaled(cfg).apply({}, x)

    cfg = Big(1.0)
    with jitlens.track() as t:
        run = make_run()
        for epoch in range(3):
            if fix:  # the remedy printed: a new object (jax.jit) / a dataclass (nn.jit)
                cfg = Big(1.0 + epoch) if jit == "jax.jit" else DataBig(cfg.vocab, 1.0 + epoch)
            cfg.scale = 1.0 + epoch
            jitted.append(float(run(cfg)[0]))
            eager.append(float(x[0] * cfg.scale))
    return jitted, eager, traces.n, t.report()


@pytest.mark.parametrize(
    ("jit", "remedy"),
    [
        ("jax.jit", "assign a new object instead of changing it"),
        ("nn.jit", "make its class a dataclass (`@dataclasses.dataclass`)"),
    ],
)
def test_a_static_jitlens_could_not_check_is_in_the_report_and_its_remedy_works(
    jit, remedy, tmp_path, capsys
):
    """Said at the call (a warning), kept as data (``FunctionReport.unchecked``) and
    rendered from it in text, JSON and HTML; the remedy applied gives the eager results."""
    with pytest.warns(UserWarning, match="could not check") as said:
        jitted, eager, traces, report = _big_epochs(jit, fix=False)
    assert traces == 1 and jitted == [1.0, 1.0, 1.0] and eager == [1.0, 2.0, 3.0]  # the bug
    notices = [w for w in said if "could not check" in str(w.message)]
    assert len(notices) == 1 and remedy in str(notices[0].message)
    (fn,) = [f for f in report.functions if f.unchecked]
    (u,) = fn.unchecked
    assert isinstance(u, jitlens.Unchecked) and not fn.stale_hits  # not known stale either
    path = "cfg" if jit == "jax.jit" else "module.cfg"
    assert (u.call_index, u.path, u.why, u.limit) == (1, path, "too_big", 2000)
    caller = "lambda cfg: g(x, cfg)" if jit == "jax.jit" else "lambda cfg: jit_scaled(cfg)"
    assert u.call_site.endswith(f"test_stale2.py:{_line_of(caller)}")  # the jit's caller
    data = json.loads(report.to_json())
    (row,) = [f for f in data["functions"] if f["unchecked"]]
    assert row["unchecked"] == [dataclasses.asdict(u)]
    text = report.to_text(width=100)
    assert f"warning: not checked at {u.call_site} (call #2): `{path}`" in text
    assert "1 static(s) not checked" in text and remedy in " ".join(text.split())
    assert 'class="retrace unchecked"' in report.to_html() and "2,000 values" in report.to_html()
    jitted, eager, traces, report = _big_epochs(jit, fix=True)  # the remedy, applied
    assert jitted == eager and traces == 3
    assert not [u for f in report.functions for u in f.unchecked]


def _line_of(code: str) -> int:
    import inspect

    lines = inspect.getsource(_big_epochs).splitlines()
    start = _big_epochs.__code__.co_firstlineno
    return start + next(i for i, line in enumerate(lines) if code in line)


def test_reports_written_before_the_field_read_as_not_known(tmp_path, capsys):
    """``jitlens report`` and ``jitlens diff`` (in process, as the command runs) read a report
    without ``unchecked``: it is null (not known), never an empty list (none)."""
    with pytest.warns(UserWarning, match="could not check"):
        *_, report = _big_epochs("jax.jit", fix=False)
    new, old, again = tmp_path / "new.json", tmp_path / "old.json", tmp_path / "again.json"
    new.write_text(report.to_json())
    data = json.loads(new.read_text())
    for f in data["functions"]:
        del f["unchecked"]
    old.write_text(json.dumps(data))
    assert jitlens.main(["report", str(old), "--json", str(again), "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "not checked" not in out and "step" in out
    assert {f["unchecked"] is None for f in json.loads(again.read_text())["functions"]} == {True}
    assert jitlens.load_report(old).functions[0].unchecked is None
    assert jitlens.main(["report", str(new), "--color", "never"]) == 0
    assert "warning: not checked at" in capsys.readouterr().out
    assert jitlens.main(["diff", str(old), str(new)]) == 0
    assert "nothing got worse" in capsys.readouterr().out


def test_versions_jitlens_does_not_vouch_for_are_in_the_report(tmp_path, capsys):
    """The start-up notice on versions outside the tested range is data (``run``'s
    ``untested_versions`` and ``self_checked``), shown by ``jitlens report`` in text and HTML;
    an older report without them reads as not known and shows nothing."""
    with jitlens.track() as t:
        import jax

        jax.jit(lambda x: x + 1)(jnp.ones(2))
    data = json.loads(t.report().to_json())
    assert data["run"]["untested_versions"] == ""  # this machine's pair is a tested one
    assert isinstance(data["run"]["self_checked"], bool)
    why = "jax 0.13.0 is newer than the newest tested (0.12.0.1)"
    data["run"].update(untested_versions=why, self_checked=False)
    saved, page = tmp_path / "untested.json", tmp_path / "untested.html"
    saved.write_text(json.dumps(data))
    assert jitlens.main(["report", str(saved), "--html", str(page), "--color", "never"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert f"warning: {why}, and no self-check has run on them: run `jitlens selfcheck`" in said
    assert f'<section class="notices"><h3>Warnings</h3><p class="message">{why}' in (
        page.read_text()
    )
    for key in ("untested_versions", "self_checked"):
        del data["run"][key]
    saved.write_text(json.dumps(data))
    assert jitlens.load_report(saved).run.untested_versions is None
    assert jitlens.main(["report", str(saved), "--color", "never"]) == 0
    assert "tested" not in capsys.readouterr().out
