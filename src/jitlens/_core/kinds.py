"""What each kind in a report means, in words: the one table the documentation is built from.

``report.REASON_KINDS`` (and its neighbours) are the vocabulary the code decides
on; this module says what each member means to a reader. The documentation's
reference pages are generated from these tables (``docs/_ext/jitlens_reference.py``),
and ``tests/test_docs.py`` fails when a kind has no entry here, so the two cannot
drift apart.
"""

from __future__ import annotations

#: ``Reason.kind`` -> (what changed, an example of ``before -> after``), in the
#: order of ``report.REASON_KINDS`` (most decisive first).
REASON_KIND_DOCS: dict[str, tuple[str, str]] = {
    "new_function": (
        "the jitted callable is a new object whose code already compiled this key through "
        "another wrapper, or whose earlier wrappers were each used once (jit in a loop, "
        "lambda rebuilt)",
        "2 earlier wrapper(s) -> new wrapper",
    ),
    "config": (
        "JAX config or context (x64, matmul precision, mesh), or a jit option of a re-created "
        "wrapper (donation)",
        "None -> highest",
    ),
    "signature": (
        "an argument passed by keyword instead of position, or added/left out",
        "positional -> keyword",
    ),
    "pytree_structure": (
        "container keys, lengths, node type, `None` vs array",
        "f32[4] -> None",
    ),
    "graph_structure": (
        "NNX graph: attribute, sub-module, Variable or Rngs stream added/removed, node type "
        "changed, a Variable's value structure (`sow`)",
        "absent -> Intermediate",
    ),
    "static_value": (
        "a static with a new, unequal value (`static_argnums`, a Module's plain Python "
        "attribute, pytree aux data)",
        "0 -> 1",
    ),
    "identity_static": (
        "a static that looks the same but compares by identity: `functools.partial`, "
        "`jax.tree_util.Partial`, lambdas, closures, bound methods, jitted functions, optax "
        "transforms, instances without `__eq__`, a class re-defined in a function",
        "functools.partial(avg_pool, …) at 0x7f.. -> … at 0x7f..",
    ),
    "mutated_static": (
        "a static changed in place after its compile (`cfg.k = 5` on a `static_argnums` "
        "object): up to jax 0.10 JAX served the old code to calls passing it since (stale "
        "results); from jax 0.11 the changed object compiles again; an equal new value misses "
        "on both",
        "MutableCfg(k=1) (now MutableCfg(k=5)) -> MutableCfg(k=1)",
    ),
    "static_type": (
        "equal values of different types (`1`, `True`, `1.0`; `np.int64(3)` and `3`): "
        "`jax.jit`'s key includes a static argument's type (jax-ml/jax#9273); nnx attributes "
        "and `eqx.filter_jit` statics compare by `==` and don't retrace",
        "int 1 -> bool True",
    ),
    "variable_metadata": (
        "Variable metadata changed (`path` ends with the key)",
        "-1 -> 0",
    ),
    "shape": ("array shape", "f32[4,4] -> f32[2,4]"),
    "dtype": ("array dtype", "f32[3] -> i32[3]"),
    "weak_type": ("Python scalar vs typed array", "f32[]{weak} -> f32[]"),
    "sharding": (
        "input sharding / placement, mesh shape, `in_shardings` of a re-created wrapper",
        "uncommitted (default device) -> committed to cpu:1",
    ),
    "cache_cleared": (
        "an equal key was compiled before, and jitlens saw why: `clear_cache()` / "
        "`jax.clear_caches()` (seen, not guessed), or JAX's trace cache is full (an eviction)",
        "compiled -> cleared",
    ),
    "unknown": (
        "last resort, treated as a bug; also an equal key with no evidence of a cause, listing "
        "what was compared",
        "equal key -> retraced",
    ),
}

#: ``Event.kind`` -> what happened.
EVENT_KIND_DOCS: dict[str, str] = {
    "trace": "the first trace of a function (and the compile that followed it)",
    "retrace": "a later trace: a cache miss that ran the Python function again",
    "compile": "a compile with no trace of its own (JAX reused a trace it had, e.g. a new "
    "placement, or the AOT `.compile()` of an earlier `.lower()`)",
}

#: ``Advice.kind`` -> what the advisor looks at (``advice.py`` holds the thresholds).
ADVICE_KIND_DOCS: dict[str, str] = {
    "dispatch": "a default-mode `nnx.jit` whose host-side time per cache hit is large next to "
    "the compiled program's own time; fix: `nnx.cached_partial`",
    "compile_cache": "compile seconds a persistent compilation cache would save on the next run",
    "entries": "8 or more compiled entries, still added in the second half of the calls",
    "disable_jit": "`jax_disable_jit` is on and jitted calls ran eagerly",
    "buckets": "one axis took 4 or more sizes, each compiled once: the sizes to pad to",
    "fast_path": "cache hits served by JAX's Python dispatch instead of its C++ fast path, "
    "with the cause",
}
