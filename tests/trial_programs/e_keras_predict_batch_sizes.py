"""keras.io's "The Sequential model" / "Training & evaluation with the built-in methods"
guides (keras-team/keras-io, guides/training_with_built_in_methods.py) on the JAX backend:
``model.fit(x, y, batch_size=...)``, ``model.evaluate(x_test, y_test, batch_size=...)`` and
``model.predict(x_test)``. Shrunk to a Dense model, 64 training samples in batches of 16
(full batches), 20 test samples: evaluate's and predict's last batches are smaller (20 = 16
+ 4, and 20 = 8 + 8 + 4), so their steps compile twice.

``run(fixed=True)`` applies jitlens' fixes as printed: ``evaluate`` with a ``batch_size`` that
divides the 20 samples (10), ``x`` padded up to a multiple of 8 for ``predict`` and the padded
rows dropped from its output: one compile each, the same loss and predictions. (jitlens' fix
for ``evaluate`` was once fit's "pad `x` and `y` ... with `sample_weight` 0 on the padding":
applied, the loss it reports went 0.6213 -> 0.3883, keras dividing by the padded count.)

The truth: a layer counts its calls under a step's trace (its stateless call), per method.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax
import keras
import numpy as np
from keras.src.backend.common.stateless_scope import in_stateless_scope

T = [0]


class Counted(keras.layers.Dense):
    def call(self, x):
        if isinstance(x, jax.core.Tracer) and in_stateless_scope():  # a step's trace, not a build
            T[0] += 1
        return super().call(x)


def counted(f, *args, **kwargs):
    before = T[0]
    return f(*args, **kwargs), T[0] - before


def run(fixed: bool = False) -> dict:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(4,)), Counted(3), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 4)), rng.random((64, 1))
    x_test, y_test = rng.random((20, 4)), rng.random((20, 1))
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)  # full batches (its first call of the
    # layer on tracers is keras' symbolic build, not a trace of the step: not counted here)
    if fixed:
        ev, ev_traces = counted(model.evaluate, x_test, y_test, batch_size=10, verbose=0)
        n = -len(x_test) % 8
        padded = np.pad(x_test, [(0, n)] + [(0, 0)] * (x_test.ndim - 1))
        pred, pred_traces = counted(model.predict, padded, batch_size=8, verbose=0)
        pred = pred[: len(pred) - n]
    else:
        ev, ev_traces = counted(model.evaluate, x_test, y_test, batch_size=16, verbose=0)
        pred, pred_traces = counted(model.predict, x_test, batch_size=8, verbose=0)
    out = [round(float(ev), 4)] + [round(float(v), 4) for v in pred[:, 0]]
    truth = {
        "evaluate test step": ev_traces,
        "predict predict step": pred_traces,
    }
    return {"truth": truth, "out": out, "functions": list(truth)}


if __name__ == "__main__":
    print(run())
