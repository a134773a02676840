"""What each event and advice kind means, for the generated reference pages.

``docs/_ext/jitlens_reference.py`` writes them into the documentation, and
``tests/test_docs.py`` checks that every kind has its line.
"""

from __future__ import annotations

from .kinds import AdviceKind, EventKind

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
    AdviceKind.MANY_LEAVES: "a `jax.jit` whose cache hits carry 256 or more pytree leaves and "
    "spend most of their time on the host handling them; fix: one array (`ravel_pytree`) or "
    "stacked leaves",
}
