"""``jitlens audit FILE.py:factory`` on factories that return ``eqx.Module``s.

Each error the audit reports is a retrace ``eqx.filter_jit`` really makes for
every new build (checked with a counter in the jitted body), and the fixed
factory is clean and compiles once.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from conftest import counted
from jitlens import audit, main

eqx = pytest.importorskip("equinox")
optax = pytest.importorskip("optax")

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "audit_eqx_models.py"


@pytest.fixture(scope="module")
def models():
    import importlib.util

    spec = importlib.util.spec_from_file_location("audit_eqx_models", FIXTURE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_errors_name_each_per_instance_object():
    result = audit(f"{FIXTURE}:make")
    assert result.jit == "eqx.filter_jit" and result.exit_code == 1
    assert result.roots == ("model: MLP", "optimizer: GradientTransformationExtraArgs")
    errors = {(f.path, f.kind) for f in result.errors}
    assert errors == {("model.act", "identity_static"), ("model.norm", "identity_static")}
    # issue 47: the optax optimizer returned beside the model is a warning, as for NNX: Equinox
    # passes `opt_state` to filter_jit, and the factory's help says to return the optimizer
    assert [(f.path, f.kind) for f in result.warnings] == [("optimizer", "identity_static")]
    by_path = {f.path: f for f in result.findings}
    assert "`self.act = act`" in by_path["model.act"].fix
    assert "optax.inject_hyperparams" in by_path["optimizer"].fix
    # a Python float field is static under filter_jit: info; a declared static field is not
    assert {(f.path, f.severity) for f in result.infos} == {("model.scale", "info")}
    assert "eqx.filter_jit function" in str(result)


def test_fixed_factory_is_clean(capsys, tmp_path):
    out = tmp_path / "a.json"
    assert main(["audit", f"{FIXTURE}:make_fixed", "--json", str(out), "--color", "never"]) == 0
    assert "No recompile traps found" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["jit"] == "eqx.filter_jit" and data["counts"]["error"] == 0


def test_audit_errors_are_real_retraces_and_the_fix_compiles_once(models):
    count = counted()

    @eqx.filter_jit
    def step(model, opt, x):
        count.tick()
        return model(x), opt.init(eqx.filter(model, eqx.is_array))

    x = jnp.ones(3)
    outs = [step(*models.make(), x)[0] for _ in range(3)]
    assert count.n == 3
    count.n = 0
    fixed = [step(*models.make_fixed(), x)[0] for _ in range(3)]
    assert count.n == 1
    for a, b in zip(outs, fixed, strict=True):
        np.testing.assert_allclose(a, b)
