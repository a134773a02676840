"""Flax's NNX VAE toy example (google/flax, examples/nnx_toy_examples/05_vae.py): the encoder
stores its KL term as a new ``Loss`` variable on itself (``self.kl_loss = Loss(...)``) inside
``__call__``, ``train_step`` pops it (``nnx.pop(model, Loss)``) in its loss, and ``forward``
(the reconstruction) does not. Shrunk to 2x2 "images" and layers 4 wide (every kernel 4x4: its
initializer compiles once, not once per shape), 3 steps per epoch; and, as a user watching the
training would, ``forward`` is called after every epoch (the example calls it once, after the
last). ``forward`` leaves ``kl_loss`` on the model, so the next epoch's first ``train_step``
sees another graph and compiles again.

jitlens once gave the fix of an attribute added by the program's code ("Create
`model.encoder.kl_loss` in `__init__` ... and only update its values"): applied, the next call
raised AttributeError (``train_step``'s pop removes it). ``run(fixed=True)`` applies its fix
now: ``nnx.pop(model, Loss)`` before ``forward`` returns too: one compile of each, the same
losses and reconstructions.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

T = {"train_step": 0, "forward": 0}
FIXED = [False]


class Loss(nnx.Variable):
    pass


class Encoder(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.linear_mean = nnx.Linear(dmid, dout, rngs=rngs)
        self.linear_std = nnx.Linear(dmid, dout, rngs=rngs)
        self.rngs = rngs

    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))
        x = jax.nn.relu(self.linear1(x))
        mean = self.linear_mean(x)
        std = jnp.exp(self.linear_std(x))
        self.kl_loss = Loss(
            jnp.mean(0.5 * jnp.mean(-jnp.log(std**2) - 1.0 + std**2 + mean**2, axis=-1))
        )
        key = self.rngs.noise()
        return mean + std * jax.random.normal(key, mean.shape)


class Decoder(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, z):
        return self.linear2(jax.nn.relu(self.linear1(z)))


class VAE(nnx.Module):
    def __init__(self, din, hidden_size, latent_size, output_shape, *, rngs):
        self.output_shape = output_shape
        self.encoder = Encoder(din, hidden_size, latent_size, rngs=rngs)
        self.decoder = Decoder(latent_size, hidden_size, int(np.prod(output_shape)), rngs=rngs)

    def __call__(self, x):
        logits = self.decoder(self.encoder(x))
        return jnp.reshape(logits, (-1, *self.output_shape))


@nnx.jit
def train_step(model, optimizer, x):
    T["train_step"] += 1

    def loss_fn(model):
        logits = model(x)
        losses = nnx.pop(model, Loss)
        kl_loss = sum(jax.tree_util.tree_leaves(losses), 0.0)
        reconstruction_loss = jnp.mean(optax.sigmoid_binary_cross_entropy(logits, x))
        return reconstruction_loss + 0.1 * kl_loss

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def forward(model, x):
    T["forward"] += 1
    y = jax.nn.sigmoid(model(x))
    if FIXED[0]:
        nnx.pop(model, Loss)
    return y


def run(fixed: bool = False) -> dict:
    T.update(train_step=0, forward=0)
    FIXED[0] = fixed
    rng = np.random.RandomState(42)
    X_train = (rng.rand(32, 2, 2) > 0.5).astype(np.float32)
    X_test = (rng.rand(5, 2, 2) > 0.5).astype(np.float32)
    model = VAE(4, 4, 4, (2, 2), rngs=nnx.Rngs(0, noise=1))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    out = []
    for _epoch in range(2):
        losses = []
        for _ in range(3):
            x_batch = X_train[rng.randint(0, len(X_train), size=(4,))]
            losses.append(float(train_step(model, optimizer, x_batch)))
        out.append(round(float(np.mean(losses)), 5))
        y_pred = forward(model, X_test)
        out.append(round(float(jnp.sum(y_pred)), 4))
    return {"truth": dict(T), "out": out, "functions": ["train_step", "forward"]}


if __name__ == "__main__":
    print(run())
