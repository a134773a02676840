"""Keras 3 on JAX: a ``keras.Model`` subclass with its own ``train_step`` (keras.io's guide
"Customizing what happens in fit() with JAX"), then ``evaluate``.

``fit``'s train step runs the user's ``train_step``: the user's row. ``evaluate``'s test step is
keras' own ``test_step`` over keras layers, none of the user's code: jitlens once counted it
as the user's (traces read 2 where the program's counter reads 1). It stays visible under
``--include-internal``. Nothing to fix.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax
import keras
import numpy as np

LIBRARIES = ("keras",)
NO_FIX = True
T = [0]


class CustomModel(keras.Model):
    def train_step(self, state, data):
        T[0] += 1
        trainable, non_trainable, optimizer_vars, metrics_vars = state
        x, y = data

        def loss_fn(tr):
            y_pred, nt = self.stateless_call(tr, non_trainable, x, training=True)
            return self.compute_loss(x, y, y_pred), nt

        (loss, non_trainable), grads = jax.value_and_grad(loss_fn, has_aux=True)(trainable)
        trainable, optimizer_vars = self.optimizer.stateless_apply(optimizer_vars, grads, trainable)
        return {"loss": loss}, (trainable, non_trainable, optimizer_vars, metrics_vars)


def run(fixed: bool) -> dict:
    T[0] = 0
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(4,))
    model = CustomModel(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((16, 4), "float32"), np.ones((16, 1), "float32")
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    score = model.evaluate(x, y, batch_size=8, verbose=0)
    return {"truth": T[0], "out": [round(float(score), 4)], "function": "fit train step"}
