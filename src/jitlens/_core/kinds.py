"""The kinds in a report: the enums the code decides on, and what each means in words.

``ReasonKind``, ``EventKind`` and ``AdviceKind`` are the fixed vocabularies of
``Reason.kind``, ``Event.kind`` and ``Advice.kind``. Each is a ``StrEnum``: a
member equals its string (``ReasonKind.SHAPE == "shape"``), so the JSON report and
its readers see the same words (and ``repr``) as before, while the code names members and a
misspelt member fails loudly instead of never matching. Declaration order is the sort
order (most decisive reason first): :func:`reason_order` is the one place that
reads it.

A reason's other typed data is here too: ``SubjectKind`` (what kind of object the value
is) and ``Fact`` (what else is known of the difference), set where the difference is found,
so that ranking, rewording, the audit and the tests decide on data and never read a message
back; ``EntryKind`` (what a cache key holds at one position) and ``NoteKind`` (why the
persistent cache could not help) likewise. Which template made a reason's fix and message
(``FixKind``, ``MessageKind``) is in ``template_kinds``: about 280 members no clean run needs.

The ``*_KIND_DOCS`` tables say what each event and advice kind means to a reader (a reason
kind's words are its module's ``SPEC`` in ``_core/reasons/``). The documentation's reference
pages are generated from them (``docs/_ext/jitlens_reference.py``), and ``tests/test_docs.py``
fails when a kind has no entry, so the two cannot drift apart.
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
    to bucket, cache hits off JAX's fast path, what makes a long compile big, thousands of leaves
    per call. The rules live in ``_core/advice.py``, ``_core/advice_cost.py`` and
    ``_core/advice_leaves.py``."""

    DISPATCH = "dispatch"
    COMPILE_CACHE = "compile_cache"
    ENTRIES = "entries"
    DISABLE_JIT = "disable_jit"
    BUCKETS = "buckets"
    FAST_PATH = "fast_path"
    UNROLLED_LOOP = "unrolled_loop"
    CAPTURED_CONSTANT = "captured_constant"
    COMPILE_BOUND = "compile_bound"
    MANY_LEAVES = "many_leaves"


class SubjectKind(_Kind):
    """What kind of object the value a ``Reason`` is about is (``Reason.subject``), decided where
    the reason is found: the ranking, the rewording and the tests read it instead of the words.
    ``UNSET`` ("") when the reason is not about one value (a config, a signature) or was read
    from a report written before the field existed."""

    UNSET = ""
    #: ``functools.partial`` / ``jax.tree_util.Partial``.
    PARTIAL = "partial"
    #: a class object passed or stored as a static.
    CLASS = "class"
    #: an instance of a class defined again (a class statement run by a factory function).
    CLASS_REDEFINED = "class_redefined"
    BOUND_METHOD = "bound_method"
    LAMBDA = "lambda"
    #: a function defined inside another (``<locals>`` in its qualname).
    CLOSURE = "closure"
    FUNCTION = "function"
    #: a ``jax.jit`` / ``nnx.jit`` object.
    JITTED_FUNCTION = "jitted_function"
    #: an ``optax.GradientTransformation`` (a tuple of closures each ``optax.*`` call makes).
    OPTAX_TRANSFORM = "optax_transform"
    #: an instance of a class that defines no ``__eq__``.
    INSTANCE = "instance"
    #: a float NaN, which never equals itself.
    NAN = "nan"
    #: a Python int or float (not a bool).
    NUMBER = "number"
    #: a bool.
    FLAG = "flag"
    #: a dtype, however it is spelled (``jnp.float32``, ``'float32'``).
    DTYPE = "dtype"
    #: any other static value compared by ``==``.
    VALUE = "value"
    #: an array (its aval: shape, dtype, weak type, placement).
    ARRAY = "array"
    #: an array placed with a ``NamedSharding`` (a mesh and a partition spec) on the new call.
    NAMED_SHARDING = "named_sharding"
    #: a jitted callable (a new wrapper object).
    WRAPPER = "wrapper"


class Fact(_Kind):
    """What else is known about a ``Reason`` (``Reason.facts``), decided where it is found.
    ``Reason.expected`` stays its own field (the report's JSON has had it)."""

    #: Two keys compared equal: the retrace has no difference to show (an eviction, a clear,
    #: or an unknown cause).
    EQUAL_KEY = "equal_key"
    #: The structure that changed is state optax builds (an optimizer's ``opt_state``).
    OPTAX_MADE = "optax_made"
    #: The structure that changed is made by a library layer from its arguments.
    LIBRARY_MADE = "library_made"
    #: The value is part of an NNX graph (a Module's attribute), not a plain argument.
    IN_GRAPH = "in_graph"
    #: The shape is ``jax.vmap``'s batched one.
    BATCHED = "batched"
    #: The trace ran inside another transformation (``lax.scan``, ``jax.vmap``, ``jax.grad``),
    #: and the message says which.
    NESTED = "nested"
    #: Both sides hold one value: a finding about one build's value, not a change
    #: (``jitlens audit``'s warnings and infos).
    SAME_VALUE = "same_value"
    #: Both sides hold the very same object, compared by identity: it hits today, and misses
    #: once it is built per instance (``jitlens audit``).
    SHARED_OBJECT = "shared_object"


class EntryKind(_Kind):
    """What JAX compares at one position of a cache key (``_core.key.Entry.kind``)."""

    #: an array: shape, dtype, weak type, placement.
    AVAL = "aval"
    #: a static value (``==`` / hash, or identity).
    STATIC = "static"
    NONE = "none"
    #: a pytree node or NNX graph node (its type and its aux data).
    NODE = "node"
    #: an NNX Variable (its type and metadata).
    VAR = "var"
    #: a second reference to a graph node seen earlier.
    REF = "ref"
    #: how an argument was passed (by position or keyword).
    PASSED = "passed"
    #: anything jitlens does not look into.
    OPAQUE = "opaque"


class NoteKind(_Kind):
    """Why the persistent compilation cache could not help a run (``CacheNote.kind``); the
    conditions, their words and fixes are ``_core/pcache.py``'s."""

    DISABLED = "disabled"
    BACKEND = "backend"
    TOO_LATE = "too_late"
    READ_ONLY = "read_only"
    NOT_PROCESS_0 = "not_process_0"
    MIN_COMPILE_TIME = "min_compile_time"
    MIN_ENTRY_SIZE = "min_entry_size"
    NOT_WRITTEN = "not_written"
    REJECTED = "rejected"
    UNREADABLE = "unreadable"
    NO_HITS = "no_hits"


class WordsKind(_Kind):
    """Which template made the words of what is not a retrace's reason (``Template.id``): a
    stale cache hit (``_track/stale.py``) and the audit's own findings (``_audit/checks.py``,
    ``_audit/equinox.py``), each made when first printed as a reason's are."""

    # _track/stale.py
    STALE = "stale"
    STALE_FIX = "stale_fix"
    STALE_IN_PLACE = "stale_in_place"
    STALE_IN_PLACE_FIX = "stale_in_place_fix"
    STALE_REUSED = "stale_reused"
    # _audit/checks.py
    AUDIT_HOLDING = "audit_holding"
    AUDIT_SHARED = "audit_shared"
    AUDIT_NUMBER = "audit_number"
    AUDIT_VAR_NUMBER = "audit_var_number"
    AUDIT_UNHASHABLE = "audit_unhashable"
    AUDIT_UNHASHABLE_FIX = "audit_unhashable_fix"
    AUDIT_COMPARE = "audit_compare"
    AUDIT_COMPARE_FIX = "audit_compare_fix"
    AUDIT_HIDDEN = "audit_hidden"
    AUDIT_HIDDEN_TOP = "audit_hidden_top"
    AUDIT_HIDDEN_ARRAY_FIX = "audit_hidden_array_fix"
    AUDIT_HIDDEN_NODE_FIX = "audit_hidden_node_fix"
    AUDIT_NOT_ARRAY = "audit_not_array"
    AUDIT_NOT_ARRAY_FIX = "audit_not_array_fix"
    AUDIT_FLAX_ARG_FIX = "audit_flax_arg_fix"
    AUDIT_LIBRARY_CLOSURE_FIX = "audit_library_closure_fix"
    # _audit/audit.py, _audit/equinox.py
    AUDIT_SPLIT = "audit_split"
    AUDIT_SPLIT_FIX = "audit_split_fix"
    AUDIT_EQX_NUMBER = "audit_eqx_number"
    AUDIT_EQX_NUMBER_FIX = "audit_eqx_number_fix"


_REASON_ORDER: dict[str, int] = {kind: i for i, kind in enumerate(ReasonKind)}


def reason_order(kind: str) -> int:
    """Where ``kind`` sorts among the reasons of one retrace: its declaration order in
    :class:`ReasonKind`; a string that is no kind sorts last.

    >>> sorted(["unknown", "not a kind", "shape", "config"], key=reason_order)
    ['config', 'shape', 'unknown', 'not a kind']
    """
    return _REASON_ORDER.get(kind, len(_REASON_ORDER))


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
    #: a body traced by ``lax.map`` / ``lax.scan`` / ``lax.cond`` / ``lax.while_loop`` outside jit.
    LAX = "lax"

    @property
    def is_nnx(self) -> bool:
        """A kind of flax NNX's (its wrapper objects, its graph in the key)."""
        return self.value.startswith("nnx.")


#: The row kinds of flax NNX's jits and pmap (``kind in NNX_ROW_KINDS`` holds for a plain string too).
NNX_ROW_KINDS: frozenset[RowKind] = frozenset(k for k in RowKind if k.is_nnx)

_NNX_STACKED_LAYERS = (
    "keep the {n} blocks stacked instead of in a list (Flax's scan over layers): "
    "create them with `@nnx.vmap(in_axes=0, out_axes=0)` over split rngs and apply "
    "them with `@nnx.scan` in place of the loop at {where} (plain arrays: "
    "`jax.lax.scan`); XLA compiles one block, ~{body:,} equations instead of {eqns:,}"
)
_EQX_STACKED_LAYERS = (
    "build the {n} layers stacked with `eqx.filter_vmap` and apply them with "
    "`jax.lax.scan` over `eqx.partition`ed arrays in place of the loop at {where}; "
    "XLA compiles one layer, ~{body:,} equations instead of {eqns:,}"
)
_ONE_STEP = "XLA compiles one step, ~{body:,} equations instead of {eqns:,}"
_CARRY = "the state it carries from one step to the next as the carry"
#: The fix of a Python loop the trace unrolled, by what the loop walks over (``LoopWalk``'s
#: value) and the model API whose modules run in its body (``Library.model_apis``; "" for
#: plain JAX, also the default of every walk): ``_core/advice_cost`` fills it with the loop.
LOOP_FIXES: dict[tuple[str, str], str] = {
    ("layers", ""): (
        "stack the {n} layers' parameters once, outside the jitted function (`jax.vmap` of "
        "the init over `jax.random.split(key, {n})`, or `jax.tree.map(lambda *p: "
        "jnp.stack(p), *layers)`) and apply them with `jax.lax.scan(lambda x, p: "
        "(layer(x, p), None), x, stacked)` in place of the loop at {where}; XLA compiles "
        "one layer, ~{body:,} equations instead of {eqns:,}"
    ),
    ("layers", "nnx"): _NNX_STACKED_LAYERS,
    ("layers", "eqx"): _EQX_STACKED_LAYERS,
    ("layers", "linen"): (
        "apply the {n} blocks as one `nn.scan(Block, variable_axes={{'params': 0}}, "
        "split_rngs={{'params': True}}, length={n})` (its `__call__` returning `(x, None)`) "
        "in place of the loop at {where}: Flax creates their parameters stacked; XLA "
        "compiles one block, ~{body:,} equations instead of {eqns:,}"
    ),
    ("layers", "haiku"): (
        "apply the {n} blocks as `hk.layer_stack({n})(lambda x: Block()(x))(x)` in place of "
        "the loop at {where}: Haiku creates their parameters stacked and scans over them; "
        "XLA compiles one block, ~{body:,} equations instead of {eqns:,}"
    ),
    ("stacked", ""): (
        "turn the body of the loop at {where} into a function and run it with "
        "`jax.lax.scan` over the stacked arrays it slices (`ws[i]` becomes the scanned "
        "element), what one iteration passes to the next as the carry: XLA compiles the "
        "body once, ~{body:,} equations instead of {eqns:,}"
    ),
    ("steps", ""): (
        "run the steps of the loop at {where} with `jax.lax.scan`, " + _CARRY + " and the "
        "per-step inputs it slices as `xs` (their step axis first); " + _ONE_STEP
    ),
    ("steps", "nnx"): (
        "run the steps of the loop at {where} with `nnx.scan` (`in_axes=(nnx.Carry, 1)` "
        "over the per-step inputs), " + _CARRY + "; for a recurrent cell `nnx.RNN(cell)` "
        "runs it over the time axis; " + _ONE_STEP
    ),
    ("steps", "linen"): (
        "run the steps of the loop at {where} with `nn.scan` (for a recurrent cell, "
        "`nn.RNN(cell)`), " + _CARRY + "; " + _ONE_STEP
    ),
    ("steps", "haiku"): (
        "run the steps of the loop at {where} with `hk.scan` (for a recurrent core, "
        "`hk.dynamic_unroll(core, xs, state)`), " + _CARRY + "; " + _ONE_STEP
    ),
    ("carry", ""): (
        "run the {n} steps of the loop at {where} as `jax.lax.fori_loop(0, {n}, step, "
        "state)`, " + _CARRY + " (`jax.lax.scan(..., length={n})` to keep per-step "
        "outputs); " + _ONE_STEP
    ),
    ("carry", "nnx"): (
        "run the {n} steps of the loop at {where} as `nnx.fori_loop(0, {n}, step, state)` "
        "(its step may call your modules), " + _CARRY + "; " + _ONE_STEP
    ),
    ("carry", "linen"): (
        "run the {n} steps of the loop at {where} with `nn.scan(..., length={n})`, "
        + _CARRY
        + "; "
        + _ONE_STEP
    ),
    ("carry", "haiku"): (
        "run the {n} steps of the loop at {where} as `hk.fori_loop(0, {n}, step, state)`, "
        + _CARRY
        + "; "
        + _ONE_STEP
    ),
    ("independent", ""): (
        "compute one iteration of the loop at {where} as a function and map it over the "
        "{n} iterations with `jax.vmap` (no iteration reads another's result; then sum or "
        "stack the results as the loop did): XLA compiles one iteration, ~{body:,} "
        "equations instead of {eqns:,}"
    ),
    ("independent", "nnx"): (
        "compute one iteration of the loop at {where} as a function and map it over the "
        "{n} iterations with `nnx.vmap` (`jax.vmap` if it calls no module; no iteration "
        "reads another's result): XLA compiles one iteration, ~{body:,} equations instead "
        "of {eqns:,}"
    ),
    ("independent", "eqx"): (
        "compute one iteration of the loop at {where} as a function and map it over the "
        "{n} iterations with `eqx.filter_vmap` (no iteration reads another's result): XLA "
        "compiles one iteration, ~{body:,} equations instead of {eqns:,}"
    ),
    ("independent", "linen"): (
        "compute one iteration of the loop at {where} in a module and map it over the {n} "
        "iterations with `nn.vmap` (no iteration reads another's result): XLA compiles one "
        "iteration, ~{body:,} equations instead of {eqns:,}"
    ),
    ("independent", "haiku"): (
        "compute one iteration of the loop at {where} as a function and map it over the "
        "{n} iterations with `hk.vmap(..., split_rng=False)` (no iteration reads another's "
        "result): XLA compiles one iteration, ~{body:,} equations instead of {eqns:,}"
    ),
}
#: How the users of a row kind's library keep its layers stacked, for a loop whose walk is
#: unknown (a report of an older jitlens, or no data flow read): the jit's library is then
#: the best guess. Other kinds: JAX's scan.
STACKED_LAYERS_FIXES: dict[RowKind, str] = {
    **dict.fromkeys(sorted(NNX_ROW_KINDS), _NNX_STACKED_LAYERS),
    RowKind.EQX_FILTER_JIT: _EQX_STACKED_LAYERS,
}
#: The model API of a row kind's library: the API of a loop over layers whose body ran
#: none of a library's files (an NNX module reading its ``nnx.Param``s with plain JAX).
ROW_KIND_API: dict[RowKind, str] = {
    **dict.fromkeys(sorted(NNX_ROW_KINDS), "nnx"),
    RowKind.EQX_FILTER_JIT: "eqx",
    RowKind.NN_JIT: "linen",
}


#: Reason kinds whose fix quotes the new value (``jax.device_put(x, NamedSharding(mesh,
#: P('model')))``): retraces of such a kind fold by the fix's template, showing the first fix.
FIX_QUOTES_VALUE: frozenset[ReasonKind] = frozenset({ReasonKind.SHARDING})
