"""The ``config`` reason: JAX's configuration or context changed, or a re-created wrapper's jit option.

Also where a trace inside another transformation is said (``nested_context``): the
transformation's own context (pmap's axis environment and mesh) is an expected ``config``
reason, and any other reason of such a trace names the transformation once.
"""

from __future__ import annotations

import dataclasses

from ..kinds import Fact, ReasonKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _reason,
    with_fix,
)
from .spec import KindSpec

CONFIG_MSG = Template(
    M.CONFIG,
    "JAX configuration `{name}` changed {before} -> {after}; the config is part of every cache key.",
)


CONFIG_FIX = Template(
    K.CONFIG, "Set `{name}` once at start-up (or keep the same context manager around every call)."
)


JIT_OPTION_MSG = Template(
    M.JIT_OPTION,
    "The jit wrapper's `{name}` differs from the earlier wrapper's: {before} -> {after}; each wrapper's options are part of its cache.",
)


JIT_OPTION_FIX = Template(
    K.JIT_OPTION,
    "Create one jitted function with the `{name}` you need and reuse it, instead of re-wrapping with different options.",
)


def jit_option(name: str, before: str, after: str) -> Reason:
    placement = "sharding" in name or name in ("device", "backend")
    return _reason(
        ReasonKind.SHARDING if placement else ReasonKind.CONFIG, "", f"jit({name}=...)", before,
        after, JIT_OPTION_MSG.words(name=name, before=before, after=after),
        JIT_OPTION_FIX.words(name=name), fix_kind=K.JIT_OPTION,
    )  # fmt: skip


MESH_FIX = Template(
    K.MESH,
    "Enter the mesh once around the whole loop (`with jax.set_mesh(mesh):`) so every call sees the same one.",
)


def config(name: str, before: str, after: str) -> Reason:
    fk, fix = (K.MESH, MESH_FIX) if "mesh" in name else (K.CONFIG, CONFIG_FIX.words(name=name))
    return _reason(
        ReasonKind.CONFIG, "", name, before, after,
        CONFIG_MSG.words(name=name, before=before, after=after), fix, fix_kind=fk,
    )  # fmt: skip


NESTED_SHAPE_SUFFIX = Template(
    M.NESTED_SHAPE_SUFFIX, " (traced inside {outer}: {outer} traced its body again)"
)


#: JAX state a transformation sets for its body (pmap's axis environment and mesh): part of
#: the key of every jit traced inside, and nothing the user set.
TRANSFORM_CONTEXT = frozenset({"axis_env_state", "abstract_mesh_context_manager"})


NESTED_CONTEXT_MSG = Template(
    M.NESTED_CONTEXT,
    "traced inside {outer}: {outer} sets JAX's `{path}` for its body and a jit's key holds it, "
    "so a jit called both outside and inside {outer} compiles once for each",
)


NESTED_CONTEXT_FIX = Template(
    K.NESTED_CONTEXT,
    "Expected once per context, each compile then reused; to compile once, call it only "
    "inside {outer} (or only outside).",
)


#: The ``outer`` of a trace inside ``jax.vmap`` (``_compat.transforms_api``): a batched shape's
#: message (``messages.VMAP_SHAPE_MSG``) names it already.
VMAP = "jax.vmap"


def nested_context(r: Reason, outer: str) -> Reason:
    """Any other reason of a trace inside ``outer``: say where it happened (once)."""
    if Fact.NESTED in r.facts or (Fact.BATCHED in r.facts and outer == VMAP):
        return r
    if r.kind is ReasonKind.CONFIG and r.path in TRANSFORM_CONTEXT:  # the transformation's own
        msg = NESTED_CONTEXT_MSG.words(outer=outer, path=r.path)
        fix = NESTED_CONTEXT_FIX.words(outer=outer)
        r = with_fix(r, K.NESTED_CONTEXT, fix, message=msg, expected=True)
        return r.with_facts(Fact.NESTED)
    # the message made so far, its closing period after the suffix
    message = dataclasses.replace(NESTED_SHAPE_SUFFIX.words(outer=outer), base=r.said[0])
    return r.replace(message=message).with_facts(Fact.NESTED)


SPEC = KindSpec(
    ReasonKind.CONFIG,
    what="JAX config or context (x64, matmul precision, mesh), or a jit option of a re-created "
    "wrapper (donation)",
    example="None -> highest",
    fixes={
        K.CONFIG: CONFIG_FIX,
        K.MESH: MESH_FIX,
        K.JIT_OPTION: JIT_OPTION_FIX,
        K.NESTED_CONTEXT: NESTED_CONTEXT_FIX,
    },
    messages=(CONFIG_MSG, JIT_OPTION_MSG, NESTED_CONTEXT_MSG, NESTED_SHAPE_SUFFIX),
)
