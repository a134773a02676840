"""The kinds in a report: the enums the code decides on, and what each means in words.

``ReasonKind``, ``EventKind`` and ``AdviceKind`` are the fixed vocabularies of
``Reason.kind``, ``Event.kind`` and ``Advice.kind``. Each is a ``StrEnum``: a
member equals its string (``ReasonKind.SHAPE == "shape"``), so the JSON report and
its readers see the same words (and ``repr``) as before, while the code names members and a
misspelt member fails loudly instead of never matching. Declaration order is the sort
order (most decisive reason first): :func:`reason_order` is the one place that
reads it.

A reason's other typed data is here too: ``SubjectKind`` (what kind of object the value
is), ``Fact`` (what else is known of the difference) and ``FixKind`` (which template made
its fix), set where the difference is found, so that ranking, rewording, the audit and the
tests decide on data and never read a message back; ``EntryKind`` (what a cache key holds at
one position) and ``NoteKind`` (why the persistent cache could not help) likewise.

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


class FixKind(_Kind):
    """Which fix template made ``Reason.fix`` (``Reason.fix_kind``): one member per ``*_FIX``
    template of a kind's module in ``_core/reasons/`` (that kind's ``SPEC.fixes``), named as the
    template without ``_FIX``. The tests that
    apply every fix (``tests/test_fixes.py``) learn which template printed a fix from it, and a
    test checks that templates and members match one to one. ``UNSET`` ("") for a reason read
    from a report written before the field existed."""

    UNSET = ""
    NEW_FUNCTION = "new_function"
    METHOD = "method"
    CLOSURE = "closure"
    NEW_LAMBDA = "new_lambda"
    SHAPE = "shape"
    DTYPE = "dtype"
    WEAK = "weak"
    WEAK_VALUE = "weak_value"
    WEAK_LIBRARY = "weak_library"
    VAR_WEAK = "var_weak"
    VAR_ASSIGN = "var_assign"
    SHARDING = "sharding"
    STATIC_GRAPH = "static_graph"
    STATIC_ARG = "static_arg"
    STATIC_AUX = "static_aux"
    CLASS = "class"
    SOW = "sow"
    GRAPH = "graph"
    GRAPH_KIND = "graph_kind"
    VAR_REPLACED = "var_replaced"
    PYTREE_KEY = "pytree_key"
    LENGTH = "length"
    NONE = "none"
    PYTREE_KIND = "pytree_kind"
    DIFF_STRUCTURE = "diff_structure"
    VAR_META = "var_meta"
    ARG = "arg"
    SIGNATURE = "signature"
    CONFIG = "config"
    CLEARED = "cleared"
    UNKNOWN = "unknown"
    NEW_PARTIAL = "new_partial"
    NEW_PARTIAL_STATIC = "new_partial_static"
    PARAM_SHAPE = "param_shape"
    GROWING = "growing"
    LAYER = "layer"
    KEY = "key"
    OPTAX_STATE = "optax_state"
    OPTAX_KIND = "optax_kind"
    LIBRARY_MADE = "library_made"
    NODE_TYPE = "node_type"
    JIT_OPTION = "jit_option"
    MESH = "mesh"
    MODE = "mode"
    STATIC_FIELD = "static_field"
    STATIC_ROLE = "static_role"
    COUNTER = "counter"
    SIZE = "size"
    STATIC_ARG_UNSURE = "static_arg_unsure"
    STATIC_SHAPE = "static_shape"
    STATIC_RULE = "static_rule"
    STATIC_CHOICE = "static_choice"
    STATIC_DATACLASS = "static_dataclass"
    DIFF_STATIC = "diff_static"
    DTYPE_SPELLING = "dtype_spelling"
    MUTATED = "mutated"
    NAN = "nan"
    PARTIAL_GRAPH = "partial_graph"
    PARTIAL_DATA = "partial_data"
    PARTIAL_ARG = "partial_arg"
    BOUND_METHOD = "bound_method"
    BOUND_METHOD_ARG = "bound_method_arg"
    FUNCTION = "function"
    JITTED = "jitted"
    OPTAX = "optax"
    OPTAX_REBUILT = "optax_rebuilt"
    NO_EQ = "no_eq"
    ARRAYS_PYTREE = "arrays_pytree"
    STATIC_TYPE = "static_type"
    NAN_FIELD = "nan_field"
    EVICTED = "evicted"
    NO_DIFFERENCE = "no_difference"
    PMAP_CALL = "pmap_call"
    PMAP_NEW_FUNCTION = "pmap_new_function"
    PMAP_STATIC = "pmap_static"
    PMAP_SHARDING = "pmap_sharding"
    LINEN_NEW_CLASS = "linen_new_class"
    LINEN_MUTABLE = "linen_mutable"
    LINEN_RNGS = "linen_rngs"
    NESTED_CONTEXT = "nested_context"
    LINEN_FIELD = "linen_field"
    LINEN_FIELDS = "linen_fields"
    NESTED_NEW_FUNCTION = "nested_new_function"
    # _track/frontends/equinox/words.py (eqx.filter_jit's words: ``EQX_`` + the template's name)
    EQX_NEW_FUNCTION = "eqx_new_function"
    EQX_SCALAR = "eqx_scalar"
    EQX_SCALAR_FIELD = "eqx_scalar_field"
    EQX_SCALAR_DATACLASS = "eqx_scalar_dataclass"
    EQX_STATIC = "eqx_static"
    EQX_FIELD_NUMBER = "eqx_field_number"
    EQX_FIELD = "eqx_field"
    EQX_MODULE_FUNCTION = "eqx_module_function"
    EQX_MODULE_LIBRARY_FUNCTION = "eqx_module_library_function"
    EQX_MODULE_PARTIAL = "eqx_module_partial"
    EQX_MODE = "eqx_mode"
    EQX_MODE_ARGUMENT = "eqx_mode_argument"
    EQX_OPTAX = "eqx_optax"
    KERAS_RAGGED = "keras_ragged"
    KERAS_RAGGED_PREDICT = "keras_ragged_predict"
    KERAS_VALIDATION = "keras_validation"
    KERAS_SMALL = "keras_small"
    KERAS_ON_BATCH = "keras_on_batch"
    KERAS_LENGTH = "keras_length"
    NUMPYRO_REBUILT = "numpyro_rebuilt"
    NUMPYRO_SVI_RUN = "numpyro_svi_run"
    DIFFERENT_FUNCTION = "different_function"
    # _track/nested.py (a control-flow primitive run outside jit; to move to _core/reasons/)
    EAGER_PRIMITIVE = "eager_primitive"
    EAGER_PRIMITIVE_STATIC = "eager_primitive_static"
    LIBRARY_EAGER = "library_eager"
    # _track/frontends/library_rows.py (a library's function built per call; idem)
    LIBRARY_KERNEL = "library_kernel"
    LIBRARY_BUILD = "library_build"
    LIBRARY_STATIC = "library_static"
    LIBRARY_CALL = "library_call"
    # _track/frontends/numpyro.py (sequential chains; a step closed over the model's arguments)
    NUMPYRO_SEQUENTIAL = "numpyro_sequential"
    NUMPYRO_MODEL_ARGS = "numpyro_model_args"
    NUMPYRO_STATE_TYPE = "numpyro_state_type"
    # _track/frontends/keras.py (a step run by predict and predict_on_batch; idem)
    KERAS_MIXED = "keras_mixed"
    # _track/frontends/keras.py (a step jitted anew after `compile` ran again; a dict `x`; idem)
    KERAS_RECOMPILE = "keras_recompile"
    KERAS_RAGGED_DICT = "keras_ragged_dict"
    KERAS_RAGGED_PREDICT_DICT = "keras_ragged_predict_dict"


#: The fix kinds a library's own words give a reason, by the kind of that reason: their
#: templates live with that library's words (``_track/frontends/equinox/words.py``,
#: ``_core/reasons/pmap.py``, ``_core/reasons/linen.py``), so that the modules of the kinds name
#: no library. Every other fix kind is one template of its kind's module (``KindSpec.fixes``).
REWORDED: dict[FixKind, ReasonKind] = {
    FixKind.EQX_NEW_FUNCTION: ReasonKind.NEW_FUNCTION,
    FixKind.EQX_SCALAR: ReasonKind.STATIC_VALUE,
    FixKind.EQX_SCALAR_FIELD: ReasonKind.STATIC_VALUE,
    FixKind.EQX_SCALAR_DATACLASS: ReasonKind.STATIC_VALUE,
    FixKind.EQX_STATIC: ReasonKind.STATIC_VALUE,
    FixKind.EQX_FIELD_NUMBER: ReasonKind.STATIC_VALUE,
    FixKind.EQX_FIELD: ReasonKind.STATIC_VALUE,
    FixKind.EQX_MODE: ReasonKind.STATIC_VALUE,
    FixKind.EQX_MODE_ARGUMENT: ReasonKind.STATIC_VALUE,
    FixKind.EQX_MODULE_FUNCTION: ReasonKind.IDENTITY_STATIC,
    FixKind.EQX_MODULE_LIBRARY_FUNCTION: ReasonKind.IDENTITY_STATIC,
    FixKind.EQX_MODULE_PARTIAL: ReasonKind.IDENTITY_STATIC,
    FixKind.EQX_OPTAX: ReasonKind.IDENTITY_STATIC,
    FixKind.PMAP_CALL: ReasonKind.NEW_FUNCTION,
    FixKind.PMAP_NEW_FUNCTION: ReasonKind.NEW_FUNCTION,
    FixKind.PMAP_STATIC: ReasonKind.STATIC_VALUE,
    FixKind.PMAP_SHARDING: ReasonKind.SHARDING,
    FixKind.LINEN_NEW_CLASS: ReasonKind.NEW_FUNCTION,
    FixKind.LINEN_MUTABLE: ReasonKind.STATIC_VALUE,
    FixKind.LINEN_RNGS: ReasonKind.STATIC_VALUE,
    FixKind.LINEN_FIELD: ReasonKind.STATIC_VALUE,
    FixKind.LINEN_FIELDS: ReasonKind.STATIC_VALUE,
    FixKind.EAGER_PRIMITIVE: ReasonKind.NEW_FUNCTION,
    FixKind.EAGER_PRIMITIVE_STATIC: ReasonKind.NEW_FUNCTION,
    FixKind.LIBRARY_EAGER: ReasonKind.NEW_FUNCTION,
    FixKind.LIBRARY_KERNEL: ReasonKind.NEW_FUNCTION,
    FixKind.LIBRARY_BUILD: ReasonKind.NEW_FUNCTION,
    FixKind.LIBRARY_STATIC: ReasonKind.IDENTITY_STATIC,
    FixKind.LIBRARY_CALL: ReasonKind.NEW_FUNCTION,
    FixKind.NUMPYRO_SEQUENTIAL: ReasonKind.NEW_FUNCTION,
    FixKind.NUMPYRO_MODEL_ARGS: ReasonKind.NEW_FUNCTION,
    FixKind.NUMPYRO_STATE_TYPE: ReasonKind.WEAK_TYPE,
    FixKind.KERAS_MIXED: ReasonKind.PYTREE_STRUCTURE,
    FixKind.KERAS_RECOMPILE: ReasonKind.NEW_FUNCTION,
    FixKind.KERAS_RAGGED_DICT: ReasonKind.SHAPE,
    FixKind.KERAS_RAGGED_PREDICT_DICT: ReasonKind.SHAPE,
}


class MessageKind(_Kind):
    """Which template a ``Reason``'s message is made from: one member per ``*_MSG`` template of a
    kind's module in ``_core/reasons/`` (named as the template without ``_MSG``), and per part a
    message or fix is assembled from (``*_WHY``, ``*_SUFFIX``, ``STATIC_OPTION_*``,
    ``ARRAYS_PYTREE_*``, ``OPTAX_BUILD_*``). It travels with the reason's words' makings
    (``Reason.said``), not in the JSON."""

    # reasons/new_function.py
    NEW_FUNCTION = "new_function"
    NEW_PARTIAL = "new_partial"
    NESTED_NEW_FUNCTION = "nested_new_function"
    NUMPYRO_REBUILT = "numpyro_rebuilt"
    NUMPYRO_SVI_RUN = "numpyro_svi_run"
    DIFFERENT_FUNCTION = "different_function"
    # reasons/config.py
    CONFIG = "config"
    JIT_OPTION = "jit_option"
    NESTED_SHAPE_SUFFIX = "nested_shape_suffix"
    NESTED_CONTEXT = "nested_context"
    # reasons/signature.py
    ARG = "arg"
    SIGNATURE = "signature"
    # reasons/pytree_structure.py
    PYTREE_KEY = "pytree_key"
    LENGTH = "length"
    PYTREE_KIND = "pytree_kind"
    DIFF_STRUCTURE = "diff_structure"
    # reasons/graph_structure.py
    GRAPH_ADDED = "graph_added"
    GRAPH_KIND = "graph_kind"
    VAR_REPLACED = "var_replaced"
    NODE_TYPE = "node_type"
    VAR_VALUE = "var_value"
    # reasons/static_value.py
    STATIC = "static"
    LAYER = "layer"
    MODE = "mode"
    COUNTER = "counter"
    DTYPE_SPELLING = "dtype_spelling"
    DIFF_STATIC = "diff_static"
    STATIC_OPTION_DROP = "static_option_drop"
    STATIC_OPTION_NARROW = "static_option_narrow"
    STATIC_OPTION_BOTH = "static_option_both"
    STATIC_OPTION_ANY = "static_option_any"
    # reasons/identity_static.py
    IDENTITY = "identity"
    CLASS = "class"
    NAN = "nan"
    NAN_FIELD = "nan_field"
    ARRAYS_PYTREE_DECORATOR = "arrays_pytree_decorator"
    ARRAYS_PYTREE_CALL = "arrays_pytree_call"
    ARRAYS_PYTREE_METHODS = "arrays_pytree_methods"
    OPTAX_BUILD_NAMED = "optax_build_named"
    OPTAX_BUILD_ANY = "optax_build_any"
    # reasons/mutated_static.py
    MUTATED = "mutated"
    MUTATED_MISS = "mutated_miss"
    # reasons/static_type.py
    STATIC_TYPE = "static_type"
    # reasons/variable_metadata.py
    VAR_META = "var_meta"
    # reasons/shape.py
    SHAPE = "shape"
    BUCKETED = "bucketed"
    VMAP_SHAPE = "vmap_shape"
    KERAS_RAGGED = "keras_ragged"
    KERAS_RAGGED_WHY = "keras_ragged_why"
    KERAS_SMALL_WHY = "keras_small_why"
    KERAS_VALIDATION_TOO = "keras_validation_too"
    DTYPE_LITERAL = "dtype_literal"
    KERAS_ON_BATCH = "keras_on_batch"
    KERAS_LENGTH = "keras_length"
    # reasons/dtype.py
    DTYPE = "dtype"
    # reasons/weak_type.py
    WEAK = "weak"
    # reasons/sharding.py
    SHARDING = "sharding"
    SHARDING_WHY = "sharding_why"
    SHARDING_LEAVES = "sharding_leaves"
    # reasons/cache_cleared.py
    CLEARED = "cleared"
    EVICTED = "evicted"
    # reasons/unknown.py
    UNKNOWN = "unknown"
    NO_DIFFERENCE = "no_difference"
    # reasons/pmap.py, reasons/linen.py
    PMAP_NEW_FUNCTION = "pmap_new_function"
    PMAP_SHARDING = "pmap_sharding"
    LINEN_NEW_CLASS = "linen_new_class"
    LINEN_MUTABLE = "linen_mutable"
    LINEN_RNGS = "linen_rngs"
    LINEN_FIELD = "linen_field"
    LINEN_FIELDS = "linen_fields"
    # reasons/library.py
    EAGER_CLOSURE = "eager_closure"
    EAGER_REWRAPPED = "eager_rewrapped"
    LIBRARY_EAGER = "library_eager"
    LIBRARY_CLOSURE = "library_closure"
    LIBRARY_STATIC = "library_static"
    LIBRARY_CALL = "library_call"
    NUMPYRO_SEQUENTIAL = "numpyro_sequential"
    NUMPYRO_MODEL_ARGS = "numpyro_model_args"
    NUMPYRO_STATE_TYPE = "numpyro_state_type"
    KERAS_MIXED = "keras_mixed"
    KERAS_RECOMPILE = "keras_recompile"
    # _track/frontends/equinox/words.py (eqx.filter_jit's words: ``EQX_`` + the template's name)
    EQX_NEW_FUNCTION = "eqx_new_function"
    EQX_SCALAR = "eqx_scalar"
    EQX_STATIC = "eqx_static"
    EQX_FIELD = "eqx_field"
    EQX_MODULE_IDENTITY = "eqx_module_identity"
    EQX_MODE = "eqx_mode"
    EQX_MODE_ARGUMENT = "eqx_mode_argument"
    EQX_OPTAX = "eqx_optax"


class WordsKind(_Kind):
    """Which template made the words of what is not a retrace's reason (``Template.id``): a
    stale cache hit (``_track/stale.py``) and the audit's own findings (``_audit/checks.py``,
    ``_audit/equinox.py``), each made when first printed as a reason's are."""

    # _track/stale.py
    STALE = "stale"
    STALE_FIX = "stale_fix"
    STALE_IN_PLACE = "stale_in_place"
    STALE_IN_PLACE_FIX = "stale_in_place_fix"
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
#: How the users of a row kind's library keep its layers stacked and scan over them, instead
#: of a Python loop over a list of layers that the trace unrolled: the fix of such an
#: ``unrolled_loop`` (``_core/advice_cost``) in a function of that kind. Other kinds: JAX's scan.
STACKED_LAYERS_FIXES: dict[RowKind, str] = {
    **dict.fromkeys(sorted(NNX_ROW_KINDS), _NNX_STACKED_LAYERS),
    RowKind.EQX_FILTER_JIT: (
        "build the {n} layers stacked with `eqx.filter_vmap` and apply them with "
        "`jax.lax.scan` over `eqx.partition`ed arrays in place of the loop at {where}; "
        "XLA compiles one layer, ~{body:,} equations instead of {eqns:,}"
    ),
}


#: Reason kinds whose fix quotes the new value (``jax.device_put(x, NamedSharding(mesh,
#: P('model')))``): retraces of such a kind fold by the fix's template, showing the first fix.
FIX_QUOTES_VALUE: frozenset[ReasonKind] = frozenset({ReasonKind.SHARDING})
