"""Keras' MNIST convnet example (keras-io/examples/vision/mnist_convnet.py), tiny and offline.

``fit`` with a ragged last batch and a validation split, then ``evaluate``;
``predict_on_batch`` with batch sizes 1..4, ``predict`` on variable-length
inputs (keras-team/keras#20411) and with a ragged last batch. Each pattern runs again with the fix jitlens
prints applied, on a model class of its own (``Fixed``), which must not retrace.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import _truth
import keras
import numpy as np
from keras import layers

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)


class Fixed(keras.Sequential):
    """The same model, run with jitlens' fixes applied."""


def convnet(cls):
    model = cls(
        [
            keras.Input(shape=(6, 6, 1)),
            layers.Conv2D(2, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


x = rng.random((50, 6, 6, 1), dtype=np.float32)
y = keras.utils.to_categorical(rng.integers(0, 3, 50), 3)

model = convnet(keras.Sequential)
model.fit(x, y, batch_size=16, epochs=2, validation_split=0.1, verbose=0)  # 45 = 2*16 + 13
score = model.evaluate(x[:7], y[:7], verbose=0)

# the fix: a number of samples that is a multiple of batch_size, for validation too
fixed = convnet(Fixed)
n = len(x) // 16 * 16
fixed.fit(x[:32], y[:32], batch_size=16, epochs=2, validation_data=(x[32:n], y[32:n]), verbose=0)
fixed_score = fixed.evaluate(x[32:n], y[32:n], batch_size=16, verbose=0)

dense = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(2)])
for b in range(1, 5):
    dense.predict_on_batch(np.ones((b, 4), np.float32))
dense_fixed = Fixed([keras.Input(shape=(4,)), layers.Dense(2)])
B = 4
for b in range(1, 5):
    xb = np.ones((b, 4), np.float32)
    out = dense_fixed.predict_on_batch(np.pad(xb, [(0, B - len(xb))] + [(0, 0)] * (xb.ndim - 1)))
    assert out[:b].shape == (b, 2)

seqs = [np.ones((t, 3), np.float32) for t in (5, 7, 9)]
pooled = keras.Sequential(
    [keras.Input(shape=(None, 3)), layers.GlobalAveragePooling1D(), layers.Dense(2)]
)
for s in seqs:
    pooled.predict(s[None], verbose=0)
pooled_fixed = Fixed(
    [
        keras.Input(shape=(None, 3)),
        layers.Masking(),
        layers.GlobalAveragePooling1D(),
        layers.Dense(2),
    ]
)
padded = keras.utils.pad_sequences(seqs, maxlen=9, padding="post", dtype="float32")
for s in padded:
    pooled_fixed.predict(s[None], verbose=0)

# predict with a ragged last batch (10 = 4 + 4 + 2), then padded as the fix says
ragged = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(2)], name="ragged")
many = rng.random((10, 4), dtype=np.float32)
ragged.predict(many, batch_size=4, verbose=0)


class FixedPredict(keras.Sequential):
    """A model of its own for the padded predict (rows are named after the class)."""


ragged_fixed = FixedPredict([keras.Input(shape=(4,)), layers.Dense(2)])
n = -len(many) % 4
out = ragged_fixed.predict(np.pad(many, [(0, n)] + [(0, 0)] * (many.ndim - 1)), batch_size=4)
assert out[: len(out) - n].shape == (10, 2)

print("score", len(score), "fixed", len(fixed_score))
_truth.report()
