"""keras.io's guide "Customizing what happens in fit() with JAX": a ``keras.Model`` subclass
with its own stateless ``train_step``, ``fit`` on 100 samples with ``batch_size=32``: the
last batch of each epoch holds 4 samples, a new shape, so the step compiles twice.

jitlens once closed its fix with "do the same for the validation data", which this program
has none of. ``run(fixed=True)`` applies the fix printed (the remainder dropped): one
compile. It trains on fewer samples, so its losses differ by design (``same_out``).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax
import keras
import numpy as np

T = [0]


class CustomModel(keras.Model):
    def compute_loss_and_updates(self, trainable, non_trainable, x, y, training=False):
        y_pred, non_trainable = self.stateless_call(trainable, non_trainable, x, training=training)
        return self.compute_loss(x, y, y_pred), (y_pred, non_trainable)

    def train_step(self, state, data):
        T[0] += 1
        trainable, non_trainable, optimizer_vars, metrics_vars = state
        x, y = data
        grad_fn = jax.value_and_grad(self.compute_loss_and_updates, has_aux=True)
        (loss, (y_pred, non_trainable)), grads = grad_fn(
            trainable, non_trainable, x, y, training=True
        )
        trainable, optimizer_vars = self.optimizer.stateless_apply(optimizer_vars, grads, trainable)
        new_metrics_vars, logs = [], {}
        for metric in self.metrics:
            n = len(new_metrics_vars)
            these = metrics_vars[n : n + len(metric.variables)]
            if metric.name == "loss":
                these = metric.stateless_update_state(these, loss)
            else:
                these = metric.stateless_update_state(these, y, y_pred)
            logs[metric.name] = metric.stateless_result(these)
            new_metrics_vars += these
        return logs, (trainable, non_trainable, optimizer_vars, new_metrics_vars)


def run(fixed: bool) -> dict:
    T[0] = 0
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(4,))
    model = CustomModel(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    rng = np.random.default_rng(0)
    x, y = rng.random((100, 4)), rng.random((100, 1))
    if fixed:
        n = len(x) // 32 * 32
        x, y = x[:n], y[:n]
    history = model.fit(x, y, epochs=2, batch_size=32, verbose=0)
    out = [round(v, 6) for v in history.history["loss"]]
    return {"truth": T[0], "out": out, "function": "fit train step", "same_out": False}


if __name__ == "__main__":
    print(run(fixed=False))
