"""Snippets for the Equinox lint rules (JL1xx): a positive and a negative one each.

``tests/test_lint.py`` runs them with every other rule's examples (lines
marked ``# <-`` must be flagged, with that code only; the fixed code must be
silent); ``tests/test_lint_eqx.py`` checks the Equinox-specific details.
"""

from __future__ import annotations

EQX_HEADER = """\
import functools
import math
import equinox as eqx
import jax
import jax.numpy as jnp
"""

#: code -> (source with findings on the marked lines, source with no finding)
EQX_RULE_EXAMPLES: dict[str, tuple[str, str]] = {
    "JL101": (
        EQX_HEADER
        + """
def loss(model, x):
    return model(x)

def evaluate(model, x, scale):
    @eqx.filter_jit  # <-
    def forward(m, v):
        return m(v) * scale
    return forward(model, x)

for x in batches:
    eqx.filter_jit(lambda m, v: loss(m, v))(model, x)  # <-
    eqx.filter_jit(functools.partial(loss, model))(x)  # <-
    evaluate(model, x, 2.0)
""",
        EQX_HEADER
        + """
@eqx.filter_jit
def loss(model, x):
    return model(x)

@eqx.filter_jit
def forward(m, v, scale):
    return m(v) * scale

def evaluate(model, x, scale):
    return forward(model, x, jnp.asarray(scale))

for x in batches:
    loss(model, x)
    eqx.filter_jit(loss)(model, x)  # the same function object: equinox's cache hits
    evaluate(model, x, 2.0)
steps = {name: eqx.filter_jit(lambda m, v: m(v)) for name in ("a", "b")}  # stored: setup
""",
    ),
    "JL102": (
        EQX_HEADER
        + """
@eqx.filter_jit
def step(model, x, lr):
    return model(x) * lr

class Trainer(eqx.Module):
    @eqx.filter_jit
    def update(self, x, scale):
        return x * scale

NUM_STEPS = 100

def lr_at(i):
    return 0.1 * 0.5 ** (i // 10)

for lr in (1e-3, 3e-4, 1e-4):
    step(model, x, lr)  # <-
for i in range(100):
    step(model, x, lr=0.1 / (i + 1))  # <-
    decayed = 0.1 * 0.99**i
    trainer.update(x, decayed)  # <-
for i in range(NUM_STEPS):
    lr = 0.1 * (1 - i / NUM_STEPS)
    step(model, x, lr)  # <-
    step(model, x, lr_at(i))  # <-
    step(model, x, 0.5 * (1 + math.cos(math.pi * i / len(batches))))  # <-
""",
        EQX_HEADER
        + """
NUM_STEPS = 100

def lr_at(i):
    return 0.1 * 0.5 ** (i // 10)

@eqx.filter_jit
def step(model, x, lr):
    return model(x) * lr

for lr in (1e-3, 3e-4, 1e-4):
    step(model, x, jnp.asarray(lr))
for i in range(100):
    step(model, x, jnp.asarray(0.1 / (i + 1)))
    step(model, x, 0.1)  # the same value every time: one compile
for batch in batches:
    jax.jit(step)(model, batch, lr)  # not filter_jit
for i in range(NUM_STEPS):
    step(model, x, jnp.asarray(lr_at(i)))
    step(model, x, schedule(i))  # a library's schedule: an array, traced
    step(model, x, float(NUM_STEPS))  # the same value every time
    lr = lr_at(0)
    step(model, x, lr)
""",
    ),
    "JL103": (
        EQX_HEADER
        + """
class MLP(eqx.Module):
    lin: eqx.nn.Linear
    act: object
    norm: object
    out: object

    def __init__(self, key):
        def squash(z):
            return jnp.tanh(z)
        self.lin = eqx.nn.Linear(3, 3, key=key)
        self.act = lambda z: jax.nn.relu(z)  # <-
        self.norm = functools.partial(jax.nn.leaky_relu, negative_slope=0.1)  # <-
        self.out = squash  # <-
""",
        EQX_HEADER
        + """
def act(z):
    return jax.nn.relu(z)

LEAKY = functools.partial(jax.nn.leaky_relu, negative_slope=0.1)

class MLP(eqx.Module):
    lin: eqx.nn.Linear
    act: object
    norm: object

    def __init__(self, key):
        self.lin = eqx.nn.Linear(3, 3, key=key)
        self.act = act
        self.norm = LEAKY

class Plain:  # not an eqx.Module: no cache key involved
    def __init__(self):
        self.f = lambda z: z
""",
    ),
}
