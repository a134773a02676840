"""Pure-JAX and Equinox users need no flax: jitlens installs, tracks, audits and lints without it.

flax is an extra (``jitlens[flax]``); every flax import is guarded or lazy. The
tests hide flax from a child process (an import blocker, as if it were not
installed) and run what an Equinox user runs.
"""

from __future__ import annotations

import pathlib
import textwrap
import tomllib

import pytest

from conftest import run_python

ROOT = pathlib.Path(__file__).resolve().parent.parent

BLOCK_FLAX = textwrap.dedent(
    """
    import importlib.abc, sys
    class NoFlax(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "flax" or name.startswith(("flax.", "optax")):
                raise ModuleNotFoundError(f"No module named {name!r}")
    sys.meta_path.insert(0, NoFlax())
    """
)


def test_flax_is_an_extra_not_a_requirement() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("flax")]
    assert any(d.startswith("flax") for d in project["optional-dependencies"]["flax"])


@pytest.mark.slow
def test_an_equinox_program_is_tracked_explained_and_audited_without_flax(tmp_path) -> None:
    code = BLOCK_FLAX + textwrap.dedent(
        """
        import jax, jax.numpy as jnp, equinox as eqx, jitlens
        runs = [0]
        with jitlens.track() as t:
            @eqx.filter_jit
            def f(x, k):
                runs[0] += 1
                return x * k
            for k in (1.0, 1.0, 2.0):
                f(jnp.ones(2), k)
        row = t.stats(f)
        print("counts", row.calls, row.traces, row.cache_hits, runs[0])
        print("kinds", [r.kind for e in row.events for r in e.reasons])

        class M(eqx.Module):
            act: object
            def __init__(self):
                self.act = lambda x: x
        print("audit", [f.kind for f in jitlens.audit(M).findings])
        print("flax", "flax" in sys.modules if (sys := __import__("sys")) else None)
        """
    )
    proc = run_python(["-c", code], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "counts 3 2 1 2" in proc.stdout
    assert "kinds ['static_value']" in proc.stdout
    assert "audit ['identity_static']" in proc.stdout
    assert "flax False" in proc.stdout


@pytest.mark.slow
def test_the_demo_says_it_needs_flax_when_flax_is_missing(tmp_path) -> None:
    code = BLOCK_FLAX + textwrap.dedent(
        """
        import importlib.util, sys
        importlib.util.find_spec = lambda name, *a: None if name == "flax" else object()
        from jitlens._cli.main import main
        sys.exit(main(["demo"]))
        """
    )
    proc = run_python(["-c", code], cwd=tmp_path)
    assert proc.returncode == 2
    assert "pip install 'jitlens[flax]'" in proc.stderr
