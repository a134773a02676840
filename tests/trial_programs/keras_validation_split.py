"""keras ``fit(..., validation_split=0.2)`` on 600 samples, then with jitlens' fix applied.

Adapted from keras' examples/demo_functional.py (synthetic data, a tiny model). The
split-off validation set (120 samples) ends in a ragged batch of 24, so the test step
compiles twice. jitlens' fix splits the validation data off by hand, each part in whole
batches (480 / 96), passed as ``validation_data``: each step compiles once.
Then ``validation_data`` of 120 samples: the test step's ragged batch is cut from it (once
said to be cut from ``x``). Prints one ``TRUTH`` JSON line: per run, each keras step's
traces, the fix printed and the culprit's path. Last, ``predict`` then ``predict_on_batch``
on one model: keras hands its predict step the batch in two containers. Then a
learning-rate sweep that calls ``model.compile`` again per rate (keras drops its jitted
steps), before and after the fix printed (compile once, set the optimizer's rate). Last,
a model with named inputs fit and predicted on dicts of arrays, before and after the fixes.
"""

import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import collections

import jax.monitoring
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
        reasons = [r for e in fn.events for r in e.reasons if r.fix]
        rows[fn.name.rsplit(" ", 2)[-2]] = {
            "traces": fn.traces,
            "fix": reasons[0].fix if reasons else "",
            "path": reasons[0].path if reasons else "",
        }
    return rows


before = fit(X, Y, validation_split=0.2)
x, y = X, Y  # the fix as printed: split the validation data off by hand, in whole batches
v = int(len(x) * 0.2) // 32 * 32
t = (len(x) - v) // 32 * 32
after = fit(x[:t], y[:t], validation_data=(x[t : t + v], y[t : t + v]))
# validation_data of 120 samples (3 x 32 + 24): the test step's ragged batch is cut from it
val = (X[480:], Y[480:])
data_before = fit(X[:480], Y[:480], validation_data=val)
n = len(val[0]) // 32 * 32  # the fix as printed, done "for the validation data"
data_after = fit(X[:480], Y[:480], validation_data=(val[0][:n], val[1][:n]))


def predict(fixed: bool) -> dict:
    """``predict`` on a set, then ``predict_on_batch`` on a batch of the same size."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
    with jitlens.track() as t:
        if fixed:  # the fix as printed: `predict_on_batch(x)` on every batch
            first = np.concatenate([model.predict_on_batch(X[i : i + 32]) for i in (0, 32)])
        else:
            first = model.predict(X[:64], batch_size=32, verbose=0)
        second = model.predict_on_batch(X[:32])
    (fn,) = t.report().functions
    reasons = [r for e in fn.events for r in e.reasons]
    return {
        "traces": fn.traces,
        "fix": reasons[0].fix if reasons else "",
        "outputs": [np.asarray(first).tolist(), np.asarray(second).tolist()],
    }


mixed = {"before": predict(fixed=False), "after": predict(fixed=True)}

#: JAX's own traces of keras' train step (the truth of the sweep).
STEP_TRACES = collections.Counter()


def _on_event(event: str, secs: float, **kw: object) -> None:
    if event == "/jax/core/compile/jaxpr_trace_duration":
        STEP_TRACES[str(kw.get("fun_name"))] += 1


jax.monitoring.register_event_duration_secs_listener(_on_event)


def sweep(fixed: bool) -> dict:
    """One model fitted at three learning rates."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
    STEP_TRACES.clear()
    moved = []
    with jitlens.track() as t:
        if fixed:  # the fix as printed: compile once, then set the rate
            model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        for lr in (0.1, 0.0, 0.01):
            if fixed:
                model.optimizer.learning_rate = lr
            else:
                model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
            w = model.get_weights()[0].copy()
            model.fit(X[:64], Y[:64], batch_size=32, epochs=1, verbose=0, shuffle=False)
            moved.append(bool(np.abs(model.get_weights()[0] - w).max() > 0))
    reasons = [r for fn in t.report().functions for e in fn.events for r in e.reasons]
    return {
        "traces": sum(fn.traces for fn in t.report().functions),
        "jax_traces": STEP_TRACES["train_step"],
        "path": reasons[0].path if reasons else "",
        "message": reasons[0].message if reasons else "",
        "fix": reasons[0].fix if reasons else "",
        "moved": moved,
    }


recompile = {"before": sweep(fixed=False), "after": sweep(fixed=True)}


def named_inputs(fixed: bool) -> dict:
    """A model with two named inputs, fit and predict on dicts of 50 samples, batches of 16."""
    keras.utils.set_random_seed(0)
    a, b = keras.Input((4,), name="title"), keras.Input((3,), name="body")
    out = keras.layers.Dense(1)(keras.layers.concatenate([a, b]))
    model = keras.Model(inputs=[a, b], outputs=out)
    model.compile(optimizer="sgd", loss="mse")
    x = {"title": X[:50, :4], "body": X[:50, 4:7]}
    y = Y[:50, :1]
    px = x
    if fixed:  # the fixes as printed
        n = len(y) // 16 * 16
        x = {k: v[:n] for k, v in x.items()}
        y = y[:n]
        n = -len(next(iter(px.values()))) % 16
        px = {k: np.pad(v, [(0, n)] + [(0, 0)] * (v.ndim - 1)) for k, v in px.items()}
    with jitlens.track() as t:  # predict first: the same weights in both runs
        pred = model.predict(px, batch_size=16, verbose=0)
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    if fixed:
        pred = pred[: len(pred) - n]
    rows = {}
    for fn in t.report().functions:
        reasons = [r for e in fn.events for r in e.reasons if r.fix]
        rows[fn.name.rsplit(" ", 2)[-2]] = {
            "traces": fn.traces,
            "fix": reasons[0].fix if reasons else "",
            "path": reasons[0].path if reasons else "",
        }
    rows["predictions"] = np.asarray(pred).round(5).tolist()
    return rows


named = {"before": named_inputs(fixed=False), "after": named_inputs(fixed=True)}
print(
    "TRUTH "
    + json.dumps(
        {
            "before": before,
            "after": after,
            "data_before": data_before,
            "data_after": data_after,
            "mixed": mixed,
            "recompile": recompile,
            "named": named,
        }
    )
)
