"""A program whose objects count every hook Python could run for jitlens (tests/test_program_objects.py).

Its statics (by value, by identity, a frozen dataclass, a tuple, a partial, a NamedTuple,
a dict subclass), its arguments, its models' attributes (nnx, equinox) and an object its
jitted function closes over count each call of ``__getattribute__`` (``__class__`` among
them), ``__getattr__``, ``__repr__``, ``__str__``, ``__format__``, ``__eq__``,
``__hash__``, ``__len__``, ``__iter__``, ``__bool__``, ``__instancecheck__``... and of
their ``shape`` / ``dtype`` properties. ``python spy_program.py both`` runs it without
jitlens, then under ``jitlens.track()`` (reports rendered as text, JSON and HTML);
``JITLENS=1 python spy_program.py env`` under the autostart (its exit report included:
a hook run after the program's end prints ``LATE``). Each run prints one JSON line.

``__eq__`` and ``__hash__`` are JAX's to call: its caches compare statics, a number of
times that varies from run to run (hash tables keyed on addresses). The calls made from
jitlens' own reading code are counted apart (``by jitlens``).
"""

import collections
import dataclasses
import functools
import json
import os
import sys
import typing

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

MODE = sys.argv[1]
COUNTS: collections.Counter[str] = collections.Counter()
ENDED = [False]
SEP = os.sep
#: jitlens' modules that read the program's objects (not the ones that call the jitted
#: function, under which JAX's own calls run).
READERS = tuple(
    SEP.join(("", "jitlens", *p))
    for p in (("_core", ""), ("_compat", ""), ("_render", ""), ("_peek.py",),
              ("_track", "stale.py"), ("_track", "cost.py"), ("_track", "describe.py"))
)  # fmt: skip


def count(what: str) -> None:
    COUNTS[what] += 1
    if ENDED[0]:
        os.write(2, f"LATE {what}\n".encode())
    if what.endswith(("__eq__", "__hash__")):
        f = sys._getframe(2)
        while f is not None and f.f_code.co_filename == __file__:
            f = f.f_back
        if f is not None and any(r in f.f_code.co_filename for r in READERS):
            COUNTS[f"{what} by jitlens"] += 1


class Meta(type):
    def __instancecheck__(cls, inst):
        count(f"{cls.__name__}.__instancecheck__")
        return type.__instancecheck__(cls, inst)

    def __subclasscheck__(cls, sub):
        count(f"{cls.__name__}.__subclasscheck__")
        return type.__subclasscheck__(cls, sub)


class Spy(metaclass=Meta):
    def __init__(self, n):
        object.__setattr__(self, "n", n)

    def __getattribute__(self, name):
        count(f"{type(self).__name__}.__getattribute__({name})")
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        count(f"{type(self).__name__}.__getattr__({name})")
        raise AttributeError(name)

    def __setattr__(self, name, value):
        count(f"{type(self).__name__}.__setattr__")
        object.__setattr__(self, name, value)

    def __repr__(self):
        count(f"{type(self).__name__}.__repr__")
        return "spy"

    def __str__(self):
        count(f"{type(self).__name__}.__str__")
        return "spy"

    def __format__(self, spec):
        count(f"{type(self).__name__}.__format__")
        return "spy"

    def __len__(self):
        count(f"{type(self).__name__}.__len__")
        return 1

    def __iter__(self):
        count(f"{type(self).__name__}.__iter__")
        return iter(())

    def __bool__(self):
        count(f"{type(self).__name__}.__bool__")
        return True

    def __dir__(self):
        count(f"{type(self).__name__}.__dir__")
        return []

    def __reduce_ex__(self, proto):
        count(f"{type(self).__name__}.__reduce_ex__")
        return object.__reduce_ex__(self, proto)

    @property
    def shape(self):  # the program: this property loaded a dataset file
        count(f"{type(self).__name__}.shape")
        return (3,)

    @property
    def dtype(self):
        count(f"{type(self).__name__}.dtype")
        return "float32"


class ByValue(Spy):
    """A static compared by value."""

    def __eq__(self, other):
        count("ByValue.__eq__")
        n = object.__getattribute__
        return type(other) is ByValue and n(self, "n") == n(other, "n")

    def __hash__(self):
        count("ByValue.__hash__")
        return hash(object.__getattribute__(self, "n"))


class ByIdentity(Spy):
    """A static without ``__eq__``: compared by identity."""


class Captured(Spy):
    """An object the jitted function closes over and reads a table from."""


@dataclasses.dataclass(frozen=True)
class Conf:
    k: int
    extra: Spy = None

    def __repr__(self):
        count("Conf.__repr__")
        return "Conf"

    def __eq__(self, other):
        count("Conf.__eq__")
        return type(other) is Conf and self.k == other.k

    def __hash__(self):
        count("Conf.__hash__")
        return hash(self.k)


class Pair(typing.NamedTuple):
    a: object
    b: int


class FrozenMap(dict):
    def __hash__(self):
        count("FrozenMap.__hash__")
        return 1

    def __eq__(self, other):
        count("FrozenMap.__eq__")
        return dict.__eq__(self, other)

    def __getitem__(self, k):
        count("FrozenMap.__getitem__")
        return dict.__getitem__(self, k)

    def __iter__(self):
        count("FrozenMap.__iter__")
        return dict.__iter__(self)

    def __len__(self):
        count("FrozenMap.__len__")
        return dict.__len__(self)

    def items(self):
        count("FrozenMap.items")
        return dict.items(self)

    def __repr__(self):
        count("FrozenMap.__repr__")
        return "FrozenMap"


class Net(nnx.Module):
    def __init__(self, tag):
        self.w = nnx.Param(jnp.ones((3,)))
        self.tag = tag  # a static attribute of the graph, compared by value
        self.act = ByIdentity(0)  # compared by identity

    @property
    def shape(self):
        count("Net.shape")
        return (3,)

    def __call__(self, x):
        return x * self.w


class EqxNet(eqx.Module):
    w: jax.Array
    tag: object

    def __call__(self, x):
        return x * self.w


def run() -> tuple[list[object], dict[str, int]]:
    outs: list[object] = []
    traces: collections.Counter[str] = collections.Counter()
    get = object.__getattribute__

    def f(x, cfg):
        traces["f"] += 1
        return x * get(cfg, "n")

    jf = jax.jit(f, static_argnums=1)
    a, b = ByValue(2), ByValue(3)
    for cfg in (a, a, a, a, a, b, b):  # hits (stale checks at calls 2, 3, 5), a retrace
        outs.append(jf(jnp.ones(3), cfg))
    object.__setattr__(b, "n", 5)  # changed in place: a stale hit
    outs.append(jf(jnp.ones(3), b))
    outs.append(jf(jnp.ones(3), b))

    def g(x, opaque):
        traces["g"] += 1
        return x + 1

    jg = jax.jit(g, static_argnames="opaque")
    keep = [ByIdentity(i) for i in range(3)]
    for o in keep:  # a fresh object per call: retraces
        outs.append(jg(jnp.ones(3), opaque=o))

    def h(x, conf):
        traces["h"] += 1
        return x * conf.k

    jh = jax.jit(h, static_argnums=1)
    for conf in (Conf(1, Spy(0)), Conf(1, Spy(0)), Conf(2, Spy(1)), Conf(2, Spy(1))):
        outs.append(jh(jnp.ones(3), conf))

    def mixed(x, t, p, nt, fm):
        traces["mixed"] += 1
        return x + t[1] + p.args[0] + nt.b + dict.__getitem__(fm, "k")

    jm = jax.jit(mixed, static_argnums=(1, 2, 3, 4))
    s1, s2 = ByValue(1), ByValue(2)
    for i in (0, 0, 1, 1, 2):
        t, p = (s1 if i < 2 else s2, i), functools.partial(print, i, s1)
        outs.append(jm(jnp.ones(3), t, p, Pair(s2, i), FrozenMap(k=i, s=s1)))

    holder = Captured(0)
    object.__setattr__(holder, "table", np.arange(300_000, dtype=np.float32))  # 1.2 MB
    # (the compile-cost reading of it, on compiles this short, in test_advice.py)

    def k(x):
        traces["k"] += 1
        return x + jnp.asarray(get(holder, "table"))[:3].sum()

    jk = jax.jit(k)
    for _ in range(3):
        outs.append(jk(jnp.ones(3)))

    @nnx.jit
    def step(net, x):
        traces["step"] += 1
        return net(x)

    net = Net(ByValue(7))
    for i in range(6):
        if i == 3:
            net.tag = ByValue(8)
        if i == 5:
            net.act = ByIdentity(9)
        outs.append(step(net, jnp.ones(3)))

    @eqx.filter_jit
    def estep(m, x):
        traces["estep"] += 1
        return m(x)

    for tag in (ByValue(4), ByValue(4), ByValue(5)):
        outs.append(estep(EqxNet(jnp.ones(3), tag), jnp.ones(3)))
    return [np.asarray(o).tolist() for o in outs], dict(traces)


def result(outs: list[object], traces: dict[str, int], report: object = None) -> dict:
    got: dict = {"outs": outs, "traces": traces, "counts": dict(sorted(COUNTS.items()))}
    if report is not None:
        got["reasons"] = sorted(
            f"{f.name}:{r.kind}:{r.path}"
            for f in report.functions
            for e in f.events
            for r in e.reasons
        )
        got["stale"] = sorted(f"{f.name}:{s.path}" for f in report.functions for s in f.stale_hits)
    return got


if MODE == "both":
    plain = result(*run())
    COUNTS.clear()
    import jitlens

    with jitlens.track() as tracker:
        outs, traces = run()
    report = tracker.report()
    str(report), report.to_json(), report.to_html()
    print(json.dumps({"plain": plain, "track": result(outs, traces, report)}))
else:  # under JITLENS=1: its report is written at exit
    print(json.dumps({"env": result(*run())}))
ENDED[0] = True
