"""The ids of every fix and message template: ``FixKind`` (``Reason.fix_kind``), ``REWORDED``
and ``MessageKind``, about 280 members.

Kinds like ``_core.kinds``' (the same ``StrEnum`` base), in a module of their own so that a
tracked program's start does not build them (issue 35: their classes were 1.7 ms of jitlens'
start): the modules that load at start import them inside the functions that make a reason
or a fix, and they load with the first one, as the words themselves do.
"""

from __future__ import annotations

from .kinds import ReasonKind, _Kind


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
    MESH_DEVICES = "mesh_devices"
    SHARDING_GROUP = "sharding_group"
    STATIC_GRAPH = "static_graph"
    STATIC_ARG = "static_arg"
    STATIC_AUX = "static_aux"
    CLASS = "class"
    SOW = "sow"
    OWN_VARIABLE = "own_variable"
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
    NO_EQ_TRACED = "no_eq_traced"
    NO_EQ_VALUES = "no_eq_values"
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
    # eqx.filter_jit's front-end words (``EQX_`` + the template's name)
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
    KERAS_RAGGED_EVALUATE = "keras_ragged_evaluate"
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
    # _track/owned.py (a library's code or object built per call: the user's line that builds it)
    LIBRARY_OWNED_JIT = "library_owned_jit"
    LIBRARY_OWNED_OBJECT = "library_owned_object"
    LIBRARY_REBUILT = "library_rebuilt"
    # _track/frontends/numpyro.py (sequential chains; a step closed over the model's arguments)
    NUMPYRO_SEQUENTIAL = "numpyro_sequential"
    NUMPYRO_MODEL_ARGS = "numpyro_model_args"
    NUMPYRO_STATE_TYPE = "numpyro_state_type"
    NUMPYRO_NEW_DATA = "numpyro_new_data"
    # _track/frontends/keras.py (a step run by predict and predict_on_batch; idem)
    KERAS_MIXED = "keras_mixed"
    # _track/frontends/keras.py (a step jitted anew after `compile` ran again; a dict `x`; idem)
    KERAS_RECOMPILE = "keras_recompile"
    KERAS_RAGGED_DICT = "keras_ragged_dict"
    KERAS_RAGGED_PREDICT_DICT = "keras_ragged_predict_dict"


#: Fixes by what they edit, for ``_track/owned.py`` (a target in a library's file moves to the
#: user's line that builds it): the jitted function's definition, the object holding a changed
#: attribute, the class of a static value.
EDITS_DEFINITION = frozenset(
    {FixKind.NEW_FUNCTION, FixKind.CLOSURE, FixKind.NEW_LAMBDA, FixKind.METHOD}
    | {FixKind.NESTED_NEW_FUNCTION, FixKind.EQX_NEW_FUNCTION}
)
EDITS_OWNER = frozenset(
    {FixKind.FUNCTION, FixKind.BOUND_METHOD, FixKind.PARTIAL_GRAPH, FixKind.PARTIAL_DATA}
    | {FixKind.NAN_FIELD, FixKind.EQX_MODULE_FUNCTION, FixKind.EQX_MODULE_PARTIAL}
)
EDITS_VALUE = frozenset(
    {FixKind.NO_EQ, FixKind.NO_EQ_VALUES, FixKind.NO_EQ_TRACED, FixKind.ARRAYS_PYTREE}
    | {FixKind.CLASS}
)


#: The fix kinds a library's own words give a reason, by the kind of that reason: their
#: templates live with that library's words (its front-end's ``words.py``,
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
    FixKind.LIBRARY_OWNED_JIT: ReasonKind.NEW_FUNCTION,
    FixKind.LIBRARY_OWNED_OBJECT: ReasonKind.IDENTITY_STATIC,
    FixKind.LIBRARY_REBUILT: ReasonKind.NEW_FUNCTION,
    FixKind.NUMPYRO_SEQUENTIAL: ReasonKind.NEW_FUNCTION,
    FixKind.NUMPYRO_MODEL_ARGS: ReasonKind.NEW_FUNCTION,
    FixKind.NUMPYRO_STATE_TYPE: ReasonKind.WEAK_TYPE,
    FixKind.NUMPYRO_NEW_DATA: ReasonKind.NEW_FUNCTION,
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
    REUSED_SHAPES = "reused_shapes"
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
    MESH_DEVICES = "mesh_devices"
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
    BUILT_AT = "built_at"
    BUILT_SOMEWHERE = "built_somewhere"
    JITTED_ANEW = "jitted_anew"
    LIBRARY_REBUILT = "library_rebuilt"
    NUMPYRO_SEQUENTIAL = "numpyro_sequential"
    NUMPYRO_MODEL_ARGS = "numpyro_model_args"
    NUMPYRO_STATE_TYPE = "numpyro_state_type"
    NUMPYRO_NEW_DATA = "numpyro_new_data"
    KERAS_MIXED = "keras_mixed"
    KERAS_RECOMPILE = "keras_recompile"
    # eqx.filter_jit's front-end words (``EQX_`` + the template's name)
    EQX_NEW_FUNCTION = "eqx_new_function"
    EQX_SCALAR = "eqx_scalar"
    EQX_STATIC = "eqx_static"
    EQX_FIELD = "eqx_field"
    EQX_MODULE_IDENTITY = "eqx_module_identity"
    EQX_MODE = "eqx_mode"
    EQX_MODE_ARGUMENT = "eqx_mode_argument"
    EQX_OPTAX = "eqx_optax"
