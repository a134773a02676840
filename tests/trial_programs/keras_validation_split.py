"""keras ``fit(..., validation_split=0.2)`` on 600 samples, then with jitlens' fix applied.

Adapted from keras' examples/demo_functional.py (synthetic data, a tiny model). The
split-off validation set (120 samples) ends in a ragged batch of 24, so the test step
compiles twice. jitlens' fix splits the validation data off by hand, each part in whole
batches (480 / 96), passed as ``validation_data``: each step compiles once.
Prints one ``TRUTH`` JSON line: per run, each keras step's traces and the fix printed.
"""

import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras
import numpy as np

import jitlens

rng = np.random.default_rng(0)
X = rng.random((600, 8)).astype("float32")
Y = rng.random((600, 2)).astype("float32")


def fit(x, y, **split):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    with jitlens.track() as t:
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, **split)
    rows = {}
    for fn in t.report().functions:
        fixes = [r.fix for e in fn.events for r in e.reasons if r.fix]
        rows[fn.name.rsplit(" ", 2)[-2]] = {"traces": fn.traces, "fix": fixes[0] if fixes else ""}
    return rows


before = fit(X, Y, validation_split=0.2)
x, y = X, Y  # the fix as printed: split the validation data off by hand, in whole batches
v = int(len(x) * 0.2) // 32 * 32
t = (len(x) - v) // 32 * 32
after = fit(x[:t], y[:t], validation_data=(x[t : t + v], y[t : t + v]))
print("TRUTH " + json.dumps({"before": before, "after": after}))
