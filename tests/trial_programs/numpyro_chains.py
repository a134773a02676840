"""numpyro's ``MCMC`` with two chains, each ``chain_method``, then jitlens' fix applied.

Adapted from numpyro's examples (a tiny linear regression, HMC with few steps).
``"parallel"`` maps the chains with ``jax.pmap`` (two host devices): the sample loop is
traced inside numpyro's pmap, whose compile is the loop's. ``"sequential"`` compiles the
loop once per chain; the fix printed (``chain_method="vectorized"``) compiles it once.
Prints one ``TRUTH`` JSON line: per method, jitlens' row, JAX's compiles, the fix, the mean.
Then ``MCMC.run`` twice with a progress bar (a sample step stepped in Python) on data of
one shape, before and after the fix printed (``jit_model_args=True``). Then HMC with a fixed ``num_steps`` and a progress bar, whose own state flips weak type
after a step, before and after the fix printed (``progress_bar=False``). Then an SVI epoch function that jits ``svi.update`` on every call (a new jit per epoch),
before and after the fix printed (``update_jit = jax.jit(svi.update)`` once). Last,
``Predictive`` called per key (a ``lax.map`` outside jit over a function it builds per call),
before and after the fix printed (``pred_jit = jax.jit(pred)``).
"""

import json
import os

import jitlens

# numpyro turns its progress bar off where "CI" or "PYTEST_XDIST_WORKER" is set (MCMC's
# __init__): the runs below are about the bar as a user's terminal run has it
for _name in ("CI", "PYTEST_XDIST_WORKER"):
    os.environ.pop(_name, None)

import fast_xla  # noqa: F401, E402 (sets XLA_FLAGS before JAX starts its backend)

# numpyro binds `jax.jit` at its import: tracking starts first, as under `jitlens run`
jitlens.track().start()

import numpyro  # noqa: E402

numpyro.set_host_device_count(2)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from jax_compile_log import compiles  # noqa: E402
from numpyro.infer import HMC, MCMC, NUTS, SVI, Predictive, Trace_ELBO  # noqa: E402
from numpyro.infer.autoguide import AutoDelta  # noqa: E402


def model(x, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(w * x, 1.0), obs=y)


X = jnp.linspace(0.0, 1.0, 8)
Y = 2.0 * X


def sample(method: str) -> dict:
    mcmc = MCMC(
        HMC(model, num_steps=2, adapt_step_size=False),
        num_warmup=2,
        num_samples=3,
        num_chains=2,
        chain_method=method,
        progress_bar=False,
    )
    with jitlens.track() as t, compiles() as names:
        mcmc.run(jax.random.key(0), X, Y)
    rows = [f for f in t.report().functions if not f.internal]  # one per wrapper
    reasons = [r for f in rows for e in f.events for r in e.reasons]
    fixes = [r.fix for r in reasons]
    loop = "_fun" if method == "parallel" else "_fori_collect_loop"
    return {
        "evidence": [(r.path, r.before, r.after) for r in reasons],
        "rows": sorted({f.name for f in rows}),
        "traces": sum(f.traces for f in rows),
        "compiles": sum(f.compiles for f in rows),
        "jax_compiles": names.count(loop),
        "fix": fixes[0] if fixes else "",
        "mean": float(mcmc.get_samples()["w"].mean()),
    }


def rerun(jit_model_args: bool) -> dict:
    mcmc = MCMC(
        NUTS(model, max_tree_depth=1),
        num_warmup=2,
        num_samples=3,
        progress_bar=True,
        jit_model_args=jit_model_args,
    )
    with jitlens.track() as t, compiles() as names:
        for i in range(2):
            mcmc.run(jax.random.key(i), X, Y * (i + 1))
    rows = [f for f in t.report().functions if not f.internal]  # one per wrapper
    reasons = [r for f in rows for e in f.events for r in e.reasons]
    return {
        "rows": sorted({f.name for f in rows}),
        "traces": sum(f.traces for f in rows),
        "jax_compiles": names.count("_body_fn"),
        "message": reasons[0].message if reasons else "",
        "fix": reasons[0].fix if reasons else "",
        "mean": float(mcmc.get_samples()["w"].mean()),
    }


def stepped_hmc(progress_bar: bool) -> dict:
    """HMC with a fixed `num_steps`, stepped with a progress bar: numpyro's own state flips type."""
    mcmc = MCMC(
        HMC(model, num_steps=2, adapt_step_size=False),
        num_warmup=2,
        num_samples=3,
        progress_bar=progress_bar,
    )
    with jitlens.track() as t, compiles() as names:
        mcmc.run(jax.random.key(0), X, Y)
    rows = [f for f in t.report().functions if not f.internal]
    reasons = [r for f in rows for e in f.events for r in e.reasons]
    return {
        "traces": sum(f.traces for f in rows),
        "jax_compiles": names.count("_body_fn") + names.count("_fori_collect_loop"),
        "path": reasons[0].path if reasons else "",
        "fix": reasons[0].fix if reasons else "",
        "mean": float(mcmc.get_samples()["w"].mean()),
    }


svi = SVI(model, AutoDelta(model), numpyro.optim.Adam(0.05), Trace_ELBO())


def epochs(fixed: bool) -> dict:
    state = svi.init(jax.random.key(1), X, Y)
    update_jit = jax.jit(svi.update) if fixed else None  # the fix as printed

    def epoch(state):
        update = update_jit if fixed else jax.jit(svi.update)
        for _ in range(2):
            state, loss = update(state, X, Y)
        return state, loss

    with jitlens.track() as t, compiles() as names:
        losses = [float(epoch(state)[1]) for _ in range(2)]
    rows = [f for f in t.report().functions if not f.internal]  # one per wrapper
    reasons = [r for f in rows for e in f.events for r in e.reasons]
    return {
        "rows": sorted({f.name for f in rows}),
        "traces": sum(f.traces for f in rows),
        "jax_compiles": names.count("update"),
        "path": reasons[0].path if reasons else "",
        "message": reasons[0].message if reasons else "",
        "fix": reasons[0].fix if reasons else "",
        "losses": losses,
    }


def predictive() -> dict:
    traces = [0]

    def counted_model(x, y=None):
        traces[0] += 1
        model(x, y)

    x = jnp.linspace(0.0, 1.0, 4)
    pred = Predictive(counted_model, {"w": jnp.ones(3)})
    with jitlens.track() as t, compiles() as names:
        bad = [float(pred(jax.random.key(i), x)["y"].mean()) for i in range(3)]
    rows = [f for f in t.report().functions if not f.internal]
    before = {
        "truth": traces[0],
        "jax_compiles": names.count("scan"),
        "rows": [{"name": f.name, "traces": f.traces, "compiles": f.compiles} for f in rows],
        "fixes": sorted({r.fix for f in rows for e in f.events for r in e.reasons}),
        "out": bad,
    }
    traces[0] = 0
    pred_jit = jax.jit(pred)  # the fix applied
    fixed = [float(pred_jit(jax.random.key(i), x)["y"].mean()) for i in range(3)]
    after = {"truth": traces[0], "compiled": pred_jit._cache_size(), "out": fixed}
    return {"before": before, "after": after}


truth = {m: sample(m) for m in ("parallel", "sequential", "vectorized")}
truth["hmc"] = {"before": stepped_hmc(True), "after": stepped_hmc(False)}
truth["rerun"] = {"before": rerun(False), "after": rerun(True)}
truth["svi"] = {"before": epochs(fixed=False), "after": epochs(fixed=True)}
truth["predictive"] = predictive()
print("TRUTH " + json.dumps(truth))
