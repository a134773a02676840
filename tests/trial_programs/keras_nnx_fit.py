"""keras ``fit`` with ``KERAS_NNX_ENABLED=true``: keras jits its steps with ``nnx.jit``.

jitlens once said "no jitted function was called": the steps were flax-internal rows.
40 samples in batches of 16 end in a ragged batch of 8, so the train step compiles twice;
the fix printed (whole batches) compiles it once. Prints one ``TRUTH`` JSON line: per run,
jitlens' train-step row, JAX's own count of the step's compiles and the fix printed.
"""

import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ["KERAS_NNX_ENABLED"] = "true"

import jitlens

jitlens.track().start()  # keras binds nnx.jit at its import: as under `jitlens run`

import keras  # noqa: E402
import numpy as np  # noqa: E402
from jax_compile_log import compiles  # noqa: E402

rng = np.random.default_rng(0)
X = rng.random((40, 4)).astype("float32")
Y = rng.random((40, 2)).astype("float32")


def fit(x, y):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    with jitlens.track() as t, compiles() as names:
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    (row,) = [f for f in t.report().functions if not f.internal]
    fixes = [r.fix for e in row.events for r in e.reasons]
    return {
        "name": row.name,
        "kind": row.kind,
        "traces": row.traces,
        "compiles": row.compiles,
        "jax_compiles": sum("lambda" in n for n in names),
        "fix": fixes[0] if fixes else "",
    }


before = fit(X, Y)
n = len(X) // 16 * 16  # the fix as printed
after = fit(X[:n], Y[:n])
print("TRUTH " + json.dumps({"before": before, "after": after}))
