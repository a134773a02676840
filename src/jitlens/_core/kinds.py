"""The kinds in a report: the enums the code decides on, and what each means in words.

``ReasonKind``, ``EventKind`` and ``AdviceKind`` are the fixed vocabularies of
``Reason.kind``, ``Event.kind`` and ``Advice.kind``. Each is a ``StrEnum``: a
member equals its string (``ReasonKind.SHAPE == "shape"``), so the JSON report and
its readers see the same words (and ``repr``) as before, while the code names members and a
misspelt member fails loudly instead of never matching. Declaration order is the sort
order (most decisive reason first): :func:`reason_order` is the one place that
reads it.

The ``*_KIND_DOCS`` tables say what each member means to a reader. The
documentation's reference pages are generated from them
(``docs/_ext/jitlens_reference.py``), and ``tests/test_docs.py`` fails when a kind
has no entry here, so the two cannot drift apart.
"""

from __future__ import annotations

import enum


class _Kind(enum.StrEnum):
    """A kind's repr is its string's, as before kinds were enums: a program printing
    ``[r.kind for r in reasons]`` still shows ``['shape']``."""

    __repr__ = str.__repr__


class ReasonKind(_Kind):
    """What a ``Reason`` found changed between a new cache key and the closest compiled one.

    Members are declared most decisive first: the order the reasons of one retrace are
    shown in. Each equals its string, as written in the JSON report:

    >>> ReasonKind.SHAPE == "shape", ReasonKind("dtype") is ReasonKind.DTYPE
    (True, True)
    """

    NEW_FUNCTION = "new_function"
    CONFIG = "config"
    SIGNATURE = "signature"
    PYTREE_STRUCTURE = "pytree_structure"
    GRAPH_STRUCTURE = "graph_structure"
    STATIC_VALUE = "static_value"
    IDENTITY_STATIC = "identity_static"
    MUTATED_STATIC = "mutated_static"
    STATIC_TYPE = "static_type"
    VARIABLE_METADATA = "variable_metadata"
    SHAPE = "shape"
    DTYPE = "dtype"
    WEAK_TYPE = "weak_type"
    SHARDING = "sharding"
    CACHE_CLEARED = "cache_cleared"
    UNKNOWN = "unknown"


class EventKind(_Kind):
    """What an ``Event`` is: the first trace of a function, a later one (a cache miss that
    re-ran the Python function), or a compile that came with no trace (AOT ``.compile()`` of
    an earlier ``.lower()``, a cleared compile cache); ``stopped`` only in
    ``FunctionReport.stopped``: a trace a compile budget stopped before the body ran."""

    TRACE = "trace"
    RETRACE = "retrace"
    COMPILE = "compile"
    STOPPED = "stopped"


class AdviceKind(_Kind):
    """What ``FunctionReport.advice`` looked at beyond retraces (``Advice.kind``): host time per
    call, compile time a persistent cache would save, too many entries, eager calls, sizes
    to bucket, cache hits off JAX's fast path, what makes a long compile big. The rules live in
    ``_core/advice.py`` and ``_core/advice_cost.py``."""

    DISPATCH = "dispatch"
    COMPILE_CACHE = "compile_cache"
    ENTRIES = "entries"
    DISABLE_JIT = "disable_jit"
    BUCKETS = "buckets"
    FAST_PATH = "fast_path"
    UNROLLED_LOOP = "unrolled_loop"
    CAPTURED_CONSTANT = "captured_constant"
    COMPILE_BOUND = "compile_bound"


_REASON_ORDER: dict[str, int] = {kind: i for i, kind in enumerate(ReasonKind)}


def reason_order(kind: str) -> int:
    """Where ``kind`` sorts among the reasons of one retrace: its declaration order in
    :class:`ReasonKind`; a string that is no kind sorts last.

    >>> sorted(["unknown", "not a kind", "shape", "config"], key=reason_order)
    ['config', 'shape', 'unknown', 'not a kind']
    """
    return _REASON_ORDER.get(kind, len(_REASON_ORDER))


#: ``Reason.kind`` -> (what changed, an example of ``before -> after``), in the
#: order of :class:`ReasonKind` (most decisive first).
REASON_KIND_DOCS: dict[ReasonKind, tuple[str, str]] = {
    ReasonKind.NEW_FUNCTION: (
        "the jitted callable is a new object whose code already compiled this key through "
        "another wrapper, or whose earlier wrappers were each used once (jit in a loop, "
        "lambda rebuilt)",
        "2 earlier wrapper(s) -> new wrapper",
    ),
    ReasonKind.CONFIG: (
        "JAX config or context (x64, matmul precision, mesh), or a jit option of a re-created "
        "wrapper (donation)",
        "None -> highest",
    ),
    ReasonKind.SIGNATURE: (
        "an argument passed by keyword instead of position, or added/left out",
        "positional -> keyword",
    ),
    ReasonKind.PYTREE_STRUCTURE: (
        "container keys, lengths, node type, `None` vs array",
        "f32[4] -> None",
    ),
    ReasonKind.GRAPH_STRUCTURE: (
        "NNX graph: attribute, sub-module, Variable or Rngs stream added/removed, node type "
        "changed, a Variable's value structure (`sow`)",
        "absent -> Intermediate",
    ),
    ReasonKind.STATIC_VALUE: (
        "a static with a new, unequal value (`static_argnums`, a Module's plain Python "
        "attribute, pytree aux data)",
        "0 -> 1",
    ),
    ReasonKind.IDENTITY_STATIC: (
        "a static that looks the same but compares by identity: `functools.partial`, "
        "`jax.tree_util.Partial`, lambdas, closures, bound methods, jitted functions, optax "
        "transforms, instances without `__eq__`, a class re-defined in a function",
        "functools.partial(avg_pool, …) at 0x7f.. -> … at 0x7f..",
    ),
    ReasonKind.MUTATED_STATIC: (
        "a static changed in place after its compile (`cfg.k = 5` on a `static_argnums` "
        "object): up to jax 0.10 JAX served the old code to calls passing it since (stale "
        "results); from jax 0.11 the changed object compiles again; an equal new value misses "
        "on both",
        "MutableCfg(k=1) (now MutableCfg(k=5)) -> MutableCfg(k=1)",
    ),
    ReasonKind.STATIC_TYPE: (
        "equal values of different types (`1`, `True`, `1.0`; `np.int64(3)` and `3`): "
        "`jax.jit`'s key includes a static argument's type (jax-ml/jax#9273); nnx attributes "
        "and `eqx.filter_jit` statics compare by `==` and don't retrace",
        "int 1 -> bool True",
    ),
    ReasonKind.VARIABLE_METADATA: (
        "Variable metadata changed (`path` ends with the key)",
        "-1 -> 0",
    ),
    ReasonKind.SHAPE: ("array shape", "f32[4,4] -> f32[2,4]"),
    ReasonKind.DTYPE: ("array dtype", "f32[3] -> i32[3]"),
    ReasonKind.WEAK_TYPE: ("Python scalar vs typed array", "f32[]{weak} -> f32[]"),
    ReasonKind.SHARDING: (
        "input sharding / placement, mesh shape, `in_shardings` of a re-created wrapper",
        "uncommitted (default device) -> committed to cpu:1",
    ),
    ReasonKind.CACHE_CLEARED: (
        "an equal key was compiled before, and jitlens saw why: `clear_cache()` / "
        "`jax.clear_caches()` (seen, not guessed), or JAX's trace cache is full (an eviction)",
        "compiled -> cleared",
    ),
    ReasonKind.UNKNOWN: (
        "last resort, treated as a bug; also an equal key with no evidence of a cause, listing "
        "what was compared",
        "equal key -> retraced",
    ),
}

#: ``Event.kind`` -> what happened.
EVENT_KIND_DOCS: dict[EventKind, str] = {
    EventKind.TRACE: "the first trace of a function (and the compile that followed it)",
    EventKind.RETRACE: "a later trace: a cache miss that ran the Python function again",
    EventKind.COMPILE: "a compile with no trace of its own (JAX reused a trace it had, e.g. a new "
    "placement, or the AOT `.compile()` of an earlier `.lower()`)",
    EventKind.STOPPED: "a trace a compile budget stopped before the function's body ran (listed "
    "in `stopped`, not counted in `traces`)",
}

#: ``Advice.kind`` -> what the advisor looks at (``advice.py`` holds the thresholds).
ADVICE_KIND_DOCS: dict[AdviceKind, str] = {
    AdviceKind.DISPATCH: "a default-mode `nnx.jit` whose host-side time per cache hit is large next to "
    "the compiled program's own time; fix: `nnx.cached_partial`",
    AdviceKind.COMPILE_CACHE: "compile seconds a persistent compilation cache would save on the next run",
    AdviceKind.ENTRIES: "8 or more compiled entries, still added in the second half of the calls",
    AdviceKind.DISABLE_JIT: "`jax_disable_jit` is on and jitted calls ran eagerly",
    AdviceKind.BUCKETS: "one axis took 4 or more sizes, each compiled once: the sizes to pad to",
    AdviceKind.FAST_PATH: "cache hits served by JAX's Python dispatch instead of its C++ fast path, "
    "with the cause",
    AdviceKind.UNROLLED_LOOP: "a Python loop (or `unroll=True`) the trace unrolled into most of a "
    "long compile: its line, the seconds `lax.scan` / `fori_loop` / `vmap` would save",
    AdviceKind.CAPTURED_CONSTANT: "an array of 1 MiB or more captured from Python into a long "
    "compile, by the name it was captured under: pass it as an argument",
    AdviceKind.COMPILE_BOUND: "a compile of a second or more never reused by a cache hit: the "
    "compile may cost more than jit saves on this workload",
}


class RowKind(_Kind):
    """What jitted a row (``FunctionReport.kind``): the front-end whose wrapper the user called.

    Each member equals the string the JSON report has always held. The engine compares
    a record's kind to members (or asks its front-end), never to a library's string; a
    new front-end is one member here, one package in ``_track/frontends/`` and its tests.

    >>> RowKind("eqx.filter_jit") is RowKind.EQX_FILTER_JIT, RowKind.JAX_JIT == "jax.jit"
    (True, True)
    """

    JAX_JIT = "jax.jit"
    NNX_JIT = "nnx.jit"
    NNX_JIT_TREE = "nnx.jit(graph=False)"
    NNX_JIT_SIMPLE = "nnx.jit(graph_updates=False)"
    NNX_JIT_PARTIAL = "nnx.jit_partial"
    NNX_CACHED_PARTIAL = "nnx.cached_partial"
    EQX_FILTER_JIT = "eqx.filter_jit"
    JAX_PMAP = "jax.pmap"
    NNX_PMAP = "nnx.pmap"
    NN_JIT = "nn.jit"
    KERAS = "keras"
    NUMPYRO = "numpyro"

    @property
    def is_nnx(self) -> bool:
        """A kind of flax NNX's (its wrapper objects, its graph in the key)."""
        return self.value.startswith("nnx.")


#: The row kinds of flax NNX's jits and pmap (``kind in NNX_ROW_KINDS`` holds for a plain string too).
NNX_ROW_KINDS: frozenset[RowKind] = frozenset(k for k in RowKind if k.is_nnx)
