"""Every private JAX/Flax/Equinox access jitlens makes, probed once, each piece optional.

Nothing outside this package touches ``jax._src``, flax's ``graphlib``/``extract``/
``transforms``, JAX's trace frames or ``sys._getframe``. Each accessor degrades
to ``None`` (or an empty result) instead of raising, so that a JAX/Flax upgrade
makes jitlens report "unknown", never breaks the user's program.

Modules:
  * :mod:`.jax_api` -- monitoring events, the ``_trace_for_jit`` frame, config, caches;
  * :mod:`.flax_api` -- nnx jit wrappers, graph flattening, ``cached_partial``;
  * :mod:`.frames` -- which frames and files are the user's;
  * :mod:`.callables` -- the one walk over a chain of wrapped callables;
  * one ``*_api`` module per library whose jit jitlens reads (its front-end's private
    access, imported by its package in ``_track/frontends/``, never re-exported here),
    which declares what jitlens knows of the library (:mod:`.libraries`).
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from .cache_keys import trace_cache_fill as trace_cache_fill
from .callables import bound_method as bound_method
from .callables import closure_callees as closure_callees
from .callables import code_key as code_key
from .callables import definition_site as definition_site
from .callables import transform_names as transform_names
from .callables import unwrap as unwrap
from .callables import unwrap_chain as unwrap_chain
from .callables import user_function as user_function
from .flax_api import NNX_INNER_FNS as NNX_INNER_FNS
from .flax_api import NNX_SPLIT_FN as NNX_SPLIT_FN
from .flax_api import NNX_WRAPPER_TYPES as NNX_WRAPPER_TYPES
from .flax_api import NNX_WRAPPERS as NNX_WRAPPERS
from .flax_api import NODE_STATES as NODE_STATES
from .flax_api import TREE_STATE as TREE_STATE
from .flax_api import cached_partial_owners as cached_partial_owners
from .flax_api import flatten_node as flatten_node
from .flax_api import flax_version as flax_version
from .flax_api import graph_context as graph_context
from .flax_api import is_flax_inner_fn as is_flax_inner_fn
from .flax_api import is_graph_node as is_graph_node
from .flax_api import is_nnx_wrapper as is_nnx_wrapper
from .flax_api import new_ref_map as new_ref_map
from .flax_api import nnx_kind as nnx_kind
from .flax_api import nnx_wrapper_of_traced as nnx_wrapper_of_traced
from .flax_api import nnx_wrapper_types as nnx_wrapper_types
from .frames import PACKAGE_DIR as PACKAGE_DIR
from .frames import TraceFrame as TraceFrame
from .frames import caller as caller
from .frames import find_locals as find_locals
from .frames import framework_packages as framework_packages
from .frames import holds_user_code as holds_user_code
from .frames import is_model_library_file as is_model_library_file
from .frames import is_user_file as is_user_file
from .frames import model_api as model_api
from .frames import name_in_frame as name_in_frame
from .frames import short_path as short_path
from .frames import user_call_site as user_call_site
from .frames import user_frame as user_frame
from .frames import user_stacklevel as user_stacklevel
from .jax_api import COMPILE_EVENT as COMPILE_EVENT
from .jax_api import LOWER_EVENT as LOWER_EVENT
from .jax_api import PCACHE_HIT_EVENT as PCACHE_HIT_EVENT
from .jax_api import TRACE_EVENT as TRACE_EVENT
from .jax_api import TRACE_FRAME_NAME as TRACE_FRAME_NAME
from .jax_api import backends_initialized as backends_initialized
from .jax_api import batched_value as batched_value
from .jax_api import distributed_client as distributed_client
from .jax_api import distributed_state as distributed_state
from .jax_api import executable_counter as executable_counter
from .jax_api import exit_hooks as exit_hooks
from .jax_api import find_trace_frame as find_trace_frame
from .jax_api import hide_from_tracebacks as hide_from_tracebacks
from .jax_api import is_pjit_function as is_pjit_function
from .jax_api import jax_version as jax_version
from .jax_api import listen_again as listen_again
from .jax_api import listener_clearers as listener_clearers
from .jax_api import partial_eval as partial_eval
from .jax_api import register_listeners as register_listeners
from .jax_api import src_info as src_info
from .jax_api import trace_cache_keys as trace_cache_keys
from .jax_api import trace_context as trace_context
from .jax_api import trace_frame_info as trace_frame_info
from .jax_api import trace_state_clean as trace_state_clean
from .jax_api import trace_to_jaxpr_patchable as trace_to_jaxpr_patchable
from .jax_api import without_hidden_frames as without_hidden_frames
from .libraries import JIT_LIBRARIES
from .probe import has_trace_frame as has_trace_frame
from .programs import nondiff_checker as nondiff_checker
from .programs import program_fingerprint as program_fingerprint
from .programs import shape_only_trace as shape_only_trace

if TYPE_CHECKING:
    from .library_jits import LibraryClosure as LibraryClosure
    from .library_jits import LibraryEntry as LibraryEntry
    from .library_jits import LibraryJit as LibraryJit
    from .library_jits import library_call_above as library_call_above
    from .library_jits import library_closure as library_closure

#: What :mod:`.library_jits` gives, loaded when a program has imported one of
#: ``JIT_LIBRARIES`` (its dataclasses cost every tracked program's start otherwise).
_LIBRARY_JITS = (
    "LibraryClosure",
    "LibraryEntry",
    "LibraryJit",
    "library_call_above",
    "library_closure",
)


def __getattr__(name: str) -> Any:
    if name in _LIBRARY_JITS:
        from . import library_jits

        return getattr(library_jits, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _jit_library_loaded() -> bool:
    return any(name in sys.modules for name in JIT_LIBRARIES)


def library_name(fn: Any) -> str | None:
    """:func:`.library_jits.library_name`: None while no library of ``JIT_LIBRARIES`` is imported."""
    if not _jit_library_loaded():
        return None
    from .library_jits import library_name as named

    return named(fn)


def built_by_library(fn: Any, made_at: FrameType | None) -> str | None:
    """:func:`.library_jits.built_by_library`: None while no such library is imported."""
    if not _jit_library_loaded():
        return None
    from .library_jits import built_by_library as built

    return built(fn, made_at)


def library_entry(frame: FrameType | None, limit: int = 40) -> LibraryEntry | None:
    """:func:`.library_jits.library_entry`: None while no such library is imported."""
    if not _jit_library_loaded():
        return None
    from .library_jits import library_entry as entry

    return entry(frame, limit)
