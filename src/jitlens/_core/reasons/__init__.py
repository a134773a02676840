"""Every reason kind's words and what else is known of it: one module per ``ReasonKind``.

``new_function.py`` ... ``unknown.py`` each hold one kind's message and fix templates, the
builders that make its :class:`~jitlens._core.reason.Reason`s, and its ``SPEC``
(:class:`~jitlens._core.reasons.spec.KindSpec`: the fix kinds it can carry, whether ranking
treats it as a change of structure, its row in the documentation's reason table). ``SPECS``
lists them in ``ReasonKind``'s order. A new kind is one module here, one ``ReasonKind``
member, one case in ``explain`` and one golden text in the tests.

The package is also the one namespace the rest of jitlens reads words from: every template
and builder is re-exported here under its own name, so ``reasons.shape`` is the builder of a
shape reason (the module of that name is ``sys.modules["jitlens._core.reasons.shape"]``, or
``SPECS[ReasonKind.SHAPE]`` for what it declares).

The kind modules are imported when first read, each alone: a retrace of a shape imports the
words of shapes (and ``base``), not those of the 15 other kinds; ``SPECS`` imports them all.
A kind module bound to the package by the import system (``import .shape`` sets the
package's ``shape``) binds its names instead, so that ``reasons.shape`` stays the builder
whichever way the module was first imported.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ..kinds import ReasonKind

if TYPE_CHECKING:
    from .spec import KindSpec

#: The names the package re-exports, by the module that defines them (relative to here).
_NAMES: dict[str, tuple[str, ...]] = {
    "..words": tuple("Template Words words".split()),
    ".base": tuple("LIMIT _cap _reason is_nan with_article with_fix".split()),
    ".cache_cleared": tuple(
        "CLEARED_FIX CLEARED_MSG EVICTED_FIX EVICTED_MSG cache_cleared cache_evicted".split()
    ),
    ".config": tuple(
        (
            "CONFIG_FIX CONFIG_MSG JIT_OPTION_FIX JIT_OPTION_MSG MESH_FIX NESTED_CONTEXT_FIX "
            "NESTED_CONTEXT_MSG NESTED_SHAPE_SUFFIX TRANSFORM_CONTEXT VMAP config jit_option "
            "nested_context"
        ).split()
    ),
    ".dtype": tuple("DTYPE_FIX DTYPE_MSG KEY_FIX dtype".split()),
    ".graph_structure": tuple(
        (
            "GRAPH_ADDED_MSG GRAPH_FIX GRAPH_KIND_FIX GRAPH_KIND_MSG LIBRARY_MADE_FIX "
            "NODE_TYPE_FIX NODE_TYPE_MSG OPTAX_STATE_FIX SOW_FIX VAR_REPLACED_FIX "
            "VAR_REPLACED_MSG VAR_VALUE_MSG graph_attribute graph_kind_change library_made "
            "node_type_change optax_state variable_replaced variable_value_structure"
        ).split()
    ),
    ".identity_static": tuple(
        (
            "ARRAYS_PYTREE_FIX BOUND_METHOD_ARG_FIX BOUND_METHOD_FIX CLASS_FIX CLASS_MSG "
            "FUNCTION_FIX IDENTITY_MSG JITTED_FIX NAN_FIELD_FIX NAN_FIELD_MSG NAN_FIX NAN_MSG "
            "NO_EQ_FIX NO_EQ_TRACED_FIX NO_EQ_VALUES_FIX OPTAX_FIX OPTAX_KIND_FIX "
            "OPTAX_REBUILT_FIX PARTIAL_ARG_FIX PARTIAL_DATA_FIX PARTIAL_GRAPH_FIX IdentityFix "
            "_identity_fix _qualified class_redefined identity_static nan_field "
            "nan_static optax_kind"
        ).split()
    ),
    ".mutated_static": tuple(
        "MUTATED_FIX MUTATED_MISS_MSG MUTATED_MSG mutated_static mutated_static_miss".split()
    ),
    ".new_function": tuple(
        (
            "CLOSURE_FIX DIFFERENT_FUNCTION_FIX DIFFERENT_FUNCTION_MSG METHOD_FIX "
            "NESTED_NEW_FUNCTION_FIX NESTED_NEW_FUNCTION_MSG NEW_FUNCTION_FIX "
            "NEW_FUNCTION_MSG NEW_LAMBDA_FIX NEW_PARTIAL_FIX NEW_PARTIAL_MSG "
            "NUMPYRO_REBUILT_FIX NUMPYRO_REBUILT_MSG NUMPYRO_SVI_RUN_FIX NUMPYRO_SVI_RUN_MSG "
            "different_function nested_new_function new_function new_partial numpyro_reasons"
        ).split()
    ),
    ".pytree_structure": tuple(
        (
            "DIFF_STRUCTURE_FIX DIFF_STRUCTURE_MSG LENGTH_FIX LENGTH_MSG NONE_FIX "
            "PYTREE_KEY_FIX PYTREE_KEY_MSG PYTREE_KIND_FIX PYTREE_KIND_MSG SEQUENCES "
            "diff_structure pytree_key pytree_kind_change sequence_length"
        ).split()
    ),
    ".shape": tuple(
        (
            "BUCKETED_MSG KERAS_LENGTH_FIX KERAS_LENGTH_MSG KERAS_ON_BATCH_FIX "
            "KERAS_ON_BATCH_MSG KERAS_RAGGED_FIX KERAS_RAGGED_MSG KERAS_RAGGED_PREDICT_FIX "
            "KERAS_RAGGED_WHY KERAS_SMALL_FIX KERAS_SMALL_WHY KERAS_VALIDATION_FIX "
            "PARAM_SHAPE_FIX SHAPE_FIX SHAPE_MSG VMAP_SHAPE_MSG bucketed library_reason "
            "reused_shapes shape user_path"
        ).split()
    ),
    ".sharding": tuple(
        (
            "MESH_DEVICES_FIX MESH_DEVICES_MSG NAMED_SHARDING SHARDING_FIX SHARDING_GROUP_FIX "
            "SHARDING_LEAVES_MSG SHARDING_MSG SHARDING_WHY mesh_devices placed_together "
            "sharding whole_argument"
        ).split()
    ),
    ".signature": tuple(
        "ARG_FIX ARG_MSG SIGNATURE_FIX SIGNATURE_MSG argument_added_removed signature".split()
    ),
    ".spec": tuple("KindSpec".split()),
    ".static_type": tuple("STATIC_TYPE_FIX STATIC_TYPE_MSG static_type".split()),
    ".static_value": tuple(
        (
            "COUNTER_FIX COUNTER_MSG COUNTER_NAMES DIFF_STATIC_FIX DIFF_STATIC_MSG "
            "DTYPE_SPELLING_FIX DTYPE_SPELLING_MSG LAYER_FIX LAYER_MSG MODE_FIX MODE_FLAGS "
            "MODE_MSG SIZE_FIX STATIC_ARG_FIX STATIC_ARG_UNSURE_FIX STATIC_AUX_FIX "
            "STATIC_CHOICE_FIX STATIC_DATACLASS_FIX STATIC_FIELD_FIX STATIC_GRAPH_FIX "
            "STATIC_MSG STATIC_OPTION_ANY STATIC_OPTION_BOTH STATIC_OPTION_DROP "
            "STATIC_OPTION_NARROW STATIC_ROLE_FIX STATIC_RULE_FIX STATIC_SHAPE_FIX as_dtype "
            "counter_static data_fields diff_static dtype_spelling is_number layer_config "
            "number_role static_dataclass_field static_flow static_value unstatic"
        ).split()
    ),
    ".unknown": tuple(
        (
            "NO_DIFFERENCE_FIX NO_DIFFERENCE_MSG UNKNOWN_FIX UNKNOWN_MSG no_difference unknown"
        ).split()
    ),
    ".variable_metadata": tuple("VAR_META_FIX VAR_META_MSG variable_metadata".split()),
    ".weak_type": tuple(
        "VAR_ASSIGN_FIX VAR_WEAK_FIX WEAK_FIX WEAK_MSG WEAK_VALUE_FIX weak_type".split()
    ),
}
_FROM: dict[str, str] = {name: module for module, names in _NAMES.items() for name in names}


def kind_spec(kind: ReasonKind) -> KindSpec:
    """What reason kind ``kind`` declares (its module's ``SPEC``), importing that module only."""
    return importlib.import_module(f".{ReasonKind(kind).value}", __name__).SPEC  # type: ignore[no-any-return]


def _bind(module: types.ModuleType, relative: str) -> None:
    here = sys.modules[__name__].__dict__
    for name in _NAMES.get(relative, ()):
        here[name] = getattr(module, name)


def __getattr__(name: str) -> Any:
    if name == "SPECS":  # one spec per reason kind, in ``ReasonKind``'s order
        specs = sorted((kind_spec(kind) for kind in ReasonKind), key=lambda s: s.order)
        found: Any = {s.kind: s for s in specs}
    elif name in _FROM:
        relative = _FROM[name]
        _bind(importlib.import_module(relative, __name__), relative)
        found = sys.modules[__name__].__dict__[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    sys.modules[__name__].__dict__[name] = found
    return found


def __dir__() -> list[str]:
    return sorted({*globals(), *_FROM, "SPECS"})


class _Package(types.ModuleType):
    """The package, whose kind modules bind their names when the import system binds them."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{name}":
            super().__setattr__(name, value)
            _bind(value, f".{name}")  # ``shape`` the builder, not the module
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "ARG_FIX",
    "ARG_MSG",
    "ARRAYS_PYTREE_FIX",
    "BOUND_METHOD_ARG_FIX",
    "BOUND_METHOD_FIX",
    "BUCKETED_MSG",
    "CLASS_FIX",
    "CLASS_MSG",
    "CLEARED_FIX",
    "CLEARED_MSG",
    "CLOSURE_FIX",
    "CONFIG_FIX",
    "CONFIG_MSG",
    "COUNTER_FIX",
    "COUNTER_MSG",
    "COUNTER_NAMES",
    "DIFFERENT_FUNCTION_FIX",
    "DIFFERENT_FUNCTION_MSG",
    "DIFF_STATIC_FIX",
    "DIFF_STATIC_MSG",
    "DIFF_STRUCTURE_FIX",
    "DIFF_STRUCTURE_MSG",
    "DTYPE_FIX",
    "DTYPE_MSG",
    "DTYPE_SPELLING_FIX",
    "DTYPE_SPELLING_MSG",
    "EVICTED_FIX",
    "EVICTED_MSG",
    "FUNCTION_FIX",
    "GRAPH_ADDED_MSG",
    "GRAPH_FIX",
    "GRAPH_KIND_FIX",
    "GRAPH_KIND_MSG",
    "IDENTITY_MSG",
    "JITTED_FIX",
    "JIT_OPTION_FIX",
    "JIT_OPTION_MSG",
    "KERAS_LENGTH_FIX",
    "KERAS_LENGTH_MSG",
    "KERAS_ON_BATCH_FIX",
    "KERAS_ON_BATCH_MSG",
    "KERAS_RAGGED_FIX",
    "KERAS_RAGGED_MSG",
    "KERAS_RAGGED_PREDICT_FIX",
    "KERAS_RAGGED_WHY",
    "KERAS_SMALL_FIX",
    "KERAS_SMALL_WHY",
    "KERAS_VALIDATION_FIX",
    "KEY_FIX",
    "LAYER_FIX",
    "LAYER_MSG",
    "LENGTH_FIX",
    "LENGTH_MSG",
    "LIBRARY_MADE_FIX",
    "LIMIT",
    "MESH_DEVICES_FIX",
    "MESH_DEVICES_MSG",
    "MESH_FIX",
    "METHOD_FIX",
    "MODE_FIX",
    "MODE_FLAGS",
    "MODE_MSG",
    "MUTATED_FIX",
    "MUTATED_MISS_MSG",
    "MUTATED_MSG",
    "NAMED_SHARDING",
    "NAN_FIELD_FIX",
    "NAN_FIELD_MSG",
    "NAN_FIX",
    "NAN_MSG",
    "NESTED_CONTEXT_FIX",
    "NESTED_CONTEXT_MSG",
    "NESTED_NEW_FUNCTION_FIX",
    "NESTED_NEW_FUNCTION_MSG",
    "NESTED_SHAPE_SUFFIX",
    "NEW_FUNCTION_FIX",
    "NEW_FUNCTION_MSG",
    "NEW_LAMBDA_FIX",
    "NEW_PARTIAL_FIX",
    "NEW_PARTIAL_MSG",
    "NODE_TYPE_FIX",
    "NODE_TYPE_MSG",
    "NONE_FIX",
    "NO_DIFFERENCE_FIX",
    "NO_DIFFERENCE_MSG",
    "NO_EQ_FIX",
    "NO_EQ_TRACED_FIX",
    "NO_EQ_VALUES_FIX",
    "NUMPYRO_REBUILT_FIX",
    "NUMPYRO_REBUILT_MSG",
    "NUMPYRO_SVI_RUN_FIX",
    "NUMPYRO_SVI_RUN_MSG",
    "OPTAX_FIX",
    "OPTAX_KIND_FIX",
    "OPTAX_REBUILT_FIX",
    "OPTAX_STATE_FIX",
    "PARAM_SHAPE_FIX",
    "PARTIAL_ARG_FIX",
    "PARTIAL_DATA_FIX",
    "PARTIAL_GRAPH_FIX",
    "PYTREE_KEY_FIX",
    "PYTREE_KEY_MSG",
    "PYTREE_KIND_FIX",
    "PYTREE_KIND_MSG",
    "SEQUENCES",
    "SHAPE_FIX",
    "SHAPE_MSG",
    "SHARDING_FIX",
    "SHARDING_GROUP_FIX",
    "SHARDING_LEAVES_MSG",
    "SHARDING_MSG",
    "SHARDING_WHY",
    "SIGNATURE_FIX",
    "SIGNATURE_MSG",
    "SIZE_FIX",
    "SOW_FIX",
    "SPECS",
    "STATIC_ARG_FIX",
    "STATIC_ARG_UNSURE_FIX",
    "STATIC_AUX_FIX",
    "STATIC_CHOICE_FIX",
    "STATIC_DATACLASS_FIX",
    "STATIC_FIELD_FIX",
    "STATIC_GRAPH_FIX",
    "STATIC_MSG",
    "STATIC_OPTION_ANY",
    "STATIC_OPTION_BOTH",
    "STATIC_OPTION_DROP",
    "STATIC_OPTION_NARROW",
    "STATIC_ROLE_FIX",
    "STATIC_RULE_FIX",
    "STATIC_SHAPE_FIX",
    "STATIC_TYPE_FIX",
    "STATIC_TYPE_MSG",
    "TRANSFORM_CONTEXT",
    "UNKNOWN_FIX",
    "UNKNOWN_MSG",
    "VAR_ASSIGN_FIX",
    "VAR_META_FIX",
    "VAR_META_MSG",
    "VAR_REPLACED_FIX",
    "VAR_REPLACED_MSG",
    "VAR_VALUE_MSG",
    "VAR_WEAK_FIX",
    "VMAP",
    "VMAP_SHAPE_MSG",
    "WEAK_FIX",
    "WEAK_MSG",
    "WEAK_VALUE_FIX",
    "IdentityFix",
    "KindSpec",
    "Template",
    "Words",
    "_cap",
    "_identity_fix",
    "_qualified",
    "_reason",
    "argument_added_removed",
    "as_dtype",
    "bucketed",
    "cache_cleared",
    "cache_evicted",
    "class_redefined",
    "config",
    "counter_static",
    "data_fields",
    "diff_static",
    "diff_structure",
    "different_function",
    "dtype",
    "dtype_spelling",
    "graph_attribute",
    "graph_kind_change",
    "identity_static",
    "is_nan",
    "is_number",
    "jit_option",
    "layer_config",
    "library_made",
    "library_reason",
    "mesh_devices",
    "mutated_static",
    "mutated_static_miss",
    "nan_field",
    "nan_static",
    "nested_context",
    "nested_new_function",
    "new_function",
    "new_partial",
    "no_difference",
    "node_type_change",
    "number_role",
    "numpyro_reasons",
    "optax_kind",
    "optax_state",
    "placed_together",
    "pytree_key",
    "pytree_kind_change",
    "reused_shapes",
    "sequence_length",
    "shape",
    "sharding",
    "signature",
    "static_dataclass_field",
    "static_flow",
    "static_type",
    "static_value",
    "unknown",
    "unstatic",
    "user_path",
    "variable_metadata",
    "variable_replaced",
    "variable_value_structure",
    "weak_type",
    "whole_argument",
    "with_article",
    "with_fix",
    "words",
]
