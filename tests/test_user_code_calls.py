"""jitlens runs a user's pytree code no more often than JAX does.

A user's registered pytree class may flatten at a cost or with a side effect (a
counter, a log line, a lazy load). JAX flattens the arguments of a traced call a
fixed number of times; jitlens describes the trace from what JAX flattened and must
not flatten the user's object again, neither on a trace nor on a cache hit.
"""

from __future__ import annotations

FLATTENS = """
import os, sys
import jax, jax.numpy as jnp

CORE = os.sep.join(("", "jitlens", "_core", ""))

def by_jitlens():  # called from jitlens' key code (not JAX's flattening through its wrapper)
    f = sys._getframe(2)
    while f is not None:
        if CORE in f.f_code.co_filename:
            return True
        f = f.f_back
    return False

calls = {"flatten": 0, "by jitlens": 0, "hash": 0, "repr": 0, "eq": 0}

def counted(what="flatten"):
    if what == "flatten":
        calls["flatten"] += 1
        calls["by jitlens"] += by_jitlens()
    elif by_jitlens():  # the aux data's dunders: only jitlens' own calls are counted
        calls[what] += 1

class Size:  # aux data with the user's own __hash__, __eq__ and __repr__
    def __init__(self, n):
        self.n = n
    def __hash__(self):
        counted("hash")
        return 7
    def __eq__(self, other):
        counted("eq")
        return isinstance(other, Size) and other.n == self.n
    def __repr__(self):
        counted("repr")
        return f"Size({self.n})"

@jax.tree_util.register_pytree_node_class
class Box:  # children by position
    def __init__(self, a, inner, n):
        self.a, self.inner, self.n = a, inner, n
    def tree_flatten(self):
        counted()
        return (self.a, self.inner), self.n
    @classmethod
    def tree_unflatten(cls, n, children):
        return cls(*children, n)

@jax.tree_util.register_pytree_with_keys_class
class Named:  # children by name, nested in a Box
    def __init__(self, w, pair):
        self.w, self.pair = w, pair
    def tree_flatten_with_keys(self):
        counted()
        k = jax.tree_util.GetAttrKey
        return ((k("w"), self.w), (k("pair"), self.pair)), None
    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

def box(n_w, n=1):
    return Box(jnp.ones(2), Named(jnp.ones(n_w), (jnp.ones(1), 2.0)), Size(n))

def run():
    calls.update(flatten=0, hash=0, repr=0, eq=0, **{"by jitlens": 0})
    f = jax.jit(lambda b: b.a.sum() + b.inner.w.sum() + b.inner.pair[0] * b.inner.pair[1])
    seen, outs = [], []
    for b in (box(3), box(3), box(4), box(4, n=2)):  # trace, hit, shape retrace, aux retrace
        outs.append(f(b).tolist())
        seen.append(calls["flatten"])
    return seen, calls["by jitlens"], outs, [calls[k] for k in ("hash", "repr", "eq")]

plain = run()  # before jitlens is imported
import jitlens
with jitlens.track() as t:
    tracked = run()
(fn,) = [f for f in t.report().functions if f.traces]
print(*plain[0]); print(*tracked[0]); print(tracked[1]); print(plain[2] == tracked[2])
print(fn.traces, *(f"{r.kind}:{r.path}" for e in fn.events for r in e.reasons))
print(*tracked[3])
"""


def test_a_users_pytree_flattens_as_often_as_under_plain_jax(tmp_path, fork_python):
    """Flatten calls after each of 4 calls (trace, hit, 2 retraces) equal plain JAX's; jitlens
    itself calls the user's flatten never. The retraces are still named, in the user's names
    (``w``, as the user's ``flatten_with_keys`` named it, read from JAX's debug info).
    Before: one more flatten per node per trace (32 in all where JAX makes 26)."""
    proc = fork_python(["-c", FLATTENS], cwd=tmp_path)  # jitlens imported only by the program
    assert proc.returncode == 0, proc.stderr
    plain, tracked, by_jitlens, same, explained, dunders = proc.stdout.splitlines()
    assert tracked == plain, (plain, tracked)
    assert by_jitlens == "0"
    assert same == "True"
    assert explained.split() == ["3", "shape:b[1].w", "static_value:b.n"], explained
    # the aux data's __hash__, __repr__ and __eq__ never (before: 5, then 3 calls of __eq__):
    # the explanation compares the aux data as the builtins would, else by what it holds
    assert dunders.split() == ["0", "0", "0"], dunders
