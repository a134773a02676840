"""The ``sharding`` reason: an argument's sharding or placement changed (also state a pmap handed
back sharded), or the same placement over a mesh of its devices in another order."""

from __future__ import annotations

import dataclasses

from ..code import placement_code
from ..kinds import ReasonKind, SubjectKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _reason,
)
from .spec import KindSpec

SHARDING_MSG = Template(
    M.SHARDING, "{path} arrived with a different sharding/placement: {before} -> {after}."
)


SHARDING_FIX = Template(
    K.SHARDING,
    "Place `{arg}` one way for every call, once, before the loop, e.g. as this call has it: "
    "`{code}`{note}.{why}",
)


def _placed(target: str, placement: str, variable: str) -> str:
    """The statement that places ``target``: an nnx Variable (``variable``, its path as code) is
    set in place through ``set_value`` (every holder of it sees the change); ``v[...] = ...``
    raises where the new placement changes the array's type (a mesh with explicit axes:
    ``float32[8,4@model]`` is not ``float32[8,4]``)."""
    if variable:
        return f"{variable}.set_value(jax.device_put({variable}.get_value(), {placement}))"
    return f"{target} = jax.device_put({target}, {placement})"


SHARDING_WHY = Template(
    M.SHARDING_WHY,
    " A jitted step that returns it placed otherwise than it came in does this once.",
)


SHARDING_LEAVES_MSG = Template(
    M.SHARDING_LEAVES,
    "{count} leaves of `{arg}` ({leaves}) arrived with a different sharding/placement: "
    "{before} -> {after}.",
)


#: Leaves placed otherwise the same way that are no one argument (an nnx Variable of the model
#: and its optimizer's momentum): one fix places them all, a line of code each; placing one
#: leaves the others to compile again.
SHARDING_GROUP_FIX = Template(
    K.SHARDING_GROUP,
    "Place {paths} one way for every call, once, before the loop, e.g. as this call has "
    "them{note}:\n{code}",
)


#: ``Aval.sharding_type`` of an array placed by a mesh and a partition spec.
NAMED_SHARDING = "NamedSharding"


_PLACED = {NAMED_SHARDING: SubjectKind.NAMED_SHARDING}


def _placement(before: str, after: str) -> tuple[str, str]:
    return placement_code(after) or placement_code(before) or ("jax.devices()[0]", "")


def sharding(
    arg: str,
    path: str,
    before: str,
    after: str,
    after_type: str = "",
    variable: str = "",
    devices: tuple[tuple[int, ...], tuple[int, ...]] = ((), ()),
) -> Reason:
    """``variable``: the placed value is an nnx Variable's, whose path as code this is;
    ``devices``: the ids of the devices of the mesh it was placed on, before and after (one
    placement on the same devices in another order is :func:`mesh_devices`)."""
    if before == after and devices[0] != devices[1]:
        return mesh_devices(arg, path, devices[0], devices[1], after)
    placement, note = _placement(before, after)
    code = _placed(path, placement, variable)
    fix = SHARDING_FIX.words(arg=path, code=code, placement=placement, note=note, why=SHARDING_WHY)
    return _reason(
        ReasonKind.SHARDING, arg, path, before, after,
        SHARDING_MSG.words(path=f"`{path}`", before=before, after=after),
        dataclasses.replace(fix, optional="why"),  # its closing remark if there is room
        fix_kind=K.SHARDING, subject=_PLACED.get(after_type, SubjectKind.ARRAY),
    )  # fmt: skip


MESH_DEVICES_MSG = Template(
    M.MESH_DEVICES,
    "{path} arrived on a mesh of the same devices in another order ({before} -> {after}): "
    "the device assignment is part of the compile's key, so JAX compiled the same trace again.",
)


#: A mesh built anew per batch (or per run) in whatever order the devices came: one mesh,
#: built once, places every batch the same way. ``Mesh(np.array(...))`` keeps the axis types
#: of a mesh built with the constructor (``jax.make_mesh`` makes explicit axes on new JAX).
MESH_DEVICES_FIX = Template(
    K.MESH_DEVICES,
    "Build the mesh once, at module level, in one device order: `mesh = {mesh}` (or "
    "`jax.make_mesh({shape}, {names})`, made once), and place every batch with that one mesh: "
    "`jax.device_put({target}, NamedSharding(mesh, {spec}))`.",
)


def _mesh_parts(shown: str) -> tuple[tuple[str, ...], tuple[int, ...], str]:
    """The axis names, axis sizes and partition spec of a placement as keys show it
    (``NamedSharding(mesh('data': 2), P('data'))``)."""
    import re

    named = re.fullmatch(r"NamedSharding\(mesh\((.*)\), (P\(.*\))\)", shown)
    if named is None:
        return (), (), "P()"
    axes = re.findall(r"'([^']*)': (\d+)", named.group(1))
    return tuple(a for a, _ in axes), tuple(int(n) for _, n in axes), named.group(2)


def mesh_devices(
    arg: str, path: str, before: tuple[int, ...], after: tuple[int, ...], shown: str
) -> Reason:
    """One placement (``shown``) on meshes of the same devices in another order: JAX's key holds
    the device assignment, and its trace cache does not, so it compiled again without a trace."""
    names, sizes, spec = _mesh_parts(shown)
    count = len(after)
    shape = repr(sizes) if sizes else f"({count},)"
    axes = repr(names) if names else "('data',)"
    devices = f"np.array(jax.devices()[:{count}])"
    if len(sizes) > 1:
        devices += f".reshape{shape}"
    fix = MESH_DEVICES_FIX.words(
        mesh=f"Mesh({devices}, {axes})", shape=shape, names=axes, target=path, spec=spec
    )
    return _reason(
        ReasonKind.SHARDING, arg, path, f"devices {before}", f"devices {after}",
        MESH_DEVICES_MSG.words(path=f"`{path}`", before=f"{before}", after=f"{after}"),
        fix, fix_kind=K.MESH_DEVICES, subject=SubjectKind.NAMED_SHARDING,
    )  # fmt: skip


#: Leaves named in a whole argument's reason; the rest are counted.
_LEAVES_SHOWN = 3


def whole_argument(leaves: list[Reason], path: str) -> Reason:
    """One reason for ``leaves`` (sharding reasons of one argument, placed the same way before and
    after): its fix puts the whole argument (``path``) once, as ``jax.device_put`` takes a pytree;
    a fix naming one leaf would leave the others to compile again."""
    first = leaves[0]
    shown = ", ".join(f"`{r.path}`" for r in leaves[:_LEAVES_SHOWN])
    more = len(leaves) - _LEAVES_SHOWN
    shown += f" and {more} more" if more > 0 else ""
    placement, note = _placement(first.before, first.after)
    code = _placed(path, placement, "")
    fix = SHARDING_FIX.words(arg=path, code=code, placement=placement, note=note, why=SHARDING_WHY)
    message = SHARDING_LEAVES_MSG.words(
        count=len(leaves), arg=path, leaves=shown, before=first.before, after=first.after
    )
    return _reason(
        ReasonKind.SHARDING, first.argument, path, first.before, first.after, message,
        dataclasses.replace(fix, optional="why"),
        fix_kind=K.SHARDING, subject=first.subject, facts=first.facts,
    ).replace(where=first.where[:1])  # fmt: skip


def placed_together(leaves: list[Reason]) -> list[Reason]:
    """``leaves`` (sharding reasons of one diff, placed the same way before and after, each
    with ``SHARDING_FIX``) with one fix for all of them: a line of code per leaf. Every leaf keeps
    its own message and values; they share the fix, so that a reader applying it places them all.
    """
    code, note = [], ""
    for r in leaves:
        params = dict(r.said[1].params)
        target = params.get("target", "")
        code.append(  # the statement each leaf's own fix would have shown
            params.get("code") or f"{target} = jax.device_put({target}, {params['placement']})"
        )
        note = note or params.get("note", "")
    names = [f"`{r.path or r.argument}`" for r in leaves]
    paths = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    fix = SHARDING_GROUP_FIX.as_written(paths=paths, note=note, code="\n".join(code))
    return [r.replace(fix=fix, fix_kind=K.SHARDING_GROUP) for r in leaves]


SPEC = KindSpec(
    ReasonKind.SHARDING,
    what="input sharding / placement, mesh shape, the order of a mesh's devices, "
    "`in_shardings` of a re-created wrapper",
    example="uncommitted (default device) -> committed to cpu:1",
    fixes={
        K.SHARDING: SHARDING_FIX,
        K.MESH_DEVICES: MESH_DEVICES_FIX,
        K.SHARDING_GROUP: SHARDING_GROUP_FIX,
    },
    messages=(SHARDING_MSG, SHARDING_WHY, SHARDING_LEAVES_MSG, MESH_DEVICES_MSG),
)
