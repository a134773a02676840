"""Describe a call: its arguments, NNX graphs and statics flattened into a :class:`Key`.

Walks what JAX would put in the cache key (avals of array leaves, static
arguments, pytree structure, nnx GraphDefs) and files each under the path the
user would write. The data types live in ``jitlens._core.key``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax

from .. import _compat
from .._peek import is_a, static_attr
from .key import (
    _ADDR,
    Aval,
    Entry,
    Key,
    Path,
    StaticVal,
    _entry_text,
    _key_text,
    _type_name,
    render_path,
    short_repr,
    signature_text,
)
from .kinds import EntryKind
from .tree_nodes import (
    declared_static_fields,
    is_graphdef,
    key_part,
    meta_fields,
    node_data,
    state_leaves,
    weak_ref,
)

if TYPE_CHECKING:
    from .jax_flat import Shape

# --------------------------------------------------------------------------
# Describing values
# --------------------------------------------------------------------------


#: Where the array and scalar types whose aval JAX computes live (``jax.typeof``).
_ARRAY_MODULES = frozenset({"numpy", "jax", "jaxlib", "ml_dtypes"})
_SCALARS = (bool, int, float, complex)


def aval_of(x: Any) -> Aval | None:
    """``x`` as the key describes an array there: shape, dtype, weak type, placement (None when
    it is no array)."""
    t = type(x)
    tracer = issubclass(t, jax.core.Tracer)
    batched = _compat.batched_value(x) if tracer else None
    if batched is not None:  # under vmap: the batch size is part of the compiled key
        inner = aval_of(batched[0])
        return None if inner is None else dataclasses.replace(inner, batch_axis=batched[1])
    if tracer:
        a = x.aval
    elif t in _SCALARS or t.__module__.partition(".")[0] in _ARRAY_MODULES:
        try:
            a = jax.typeof(x)
        except Exception:
            return None
    else:
        return None  # an object of the program's: JAX's typeof would run its code
    shape = tuple(int(d) if isinstance(d, int) else d for d in getattr(a, "shape", ()))
    try:
        dtype = a.str_short(short_dtypes=True).split("[")[0]
    except Exception:
        dtype = str(getattr(a, "dtype", "?"))
    sharding = _sharding_of(x)
    placed = type(getattr(x, "sharding", None)).__name__ if sharding else ""
    devices = _mesh_devices(x) if sharding else ()
    weak = bool(getattr(a, "weak_type", False))
    return Aval(shape, dtype, weak, sharding, sharding_type=placed, devices=devices)


def _mesh_devices(x: Any) -> tuple[int, ...]:
    """The ids of the devices of the mesh ``x`` is placed on, in the mesh's order (JAX keys a
    compile on this device assignment), or () when it is placed on no mesh."""
    mesh = getattr(getattr(x, "sharding", None), "mesh", None)
    devices = getattr(mesh, "devices", None)  # an AbstractMesh has none
    try:
        return tuple(int(d.id) for d in devices.flat) if devices is not None else ()
    except Exception:
        return ()


def _sharding_of(x: Any) -> str:
    """Where an input lives, in the words of the sharding part of the key."""
    if is_a(x, jax.core.Tracer) or type(x) in _SCALARS:
        return ""
    sh = getattr(x, "sharding", None)
    if sh is None:
        return ""
    committed = bool(getattr(x, "committed", getattr(x, "_committed", False)))
    name = type(sh).__name__
    try:
        if name == "SingleDeviceSharding":
            if not committed:
                return ""
            dev = next(iter(sh.device_set))
            return f"committed to {dev.platform}:{dev.id}"
        if name == "NamedSharding":
            mesh = sh.mesh
            axes = ", ".join(
                f"'{n}': {s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes, strict=False)
            )
            # trailing Nones say nothing (P(None, None) places as P() does, and JAX serves both
            # from one compile): dropped, so that they are not shown as a new placement
            parts = list(sh.spec)
            while parts and parts[-1] is None:
                parts.pop()
            spec = "P(" + ", ".join(repr(p) for p in parts) + ")"
            return f"NamedSharding(mesh({axes}), {spec})"
        return short_repr(sh, 100)
    except Exception:
        return name


def _is_array_like(x: Any) -> bool:
    return is_a(x, (jax.Array, jax.core.Tracer, bool, int, float, complex)) or (
        hasattr(type(x), "__array__") and hasattr(type(x), "dtype")
    )


def _leaf_value(v: Any) -> Any:
    if is_a(v, (jax.Array, jax.core.Tracer)) or not _compat.is_graph_node(v):
        return v  # (a value of the program's: no method of its class is called)
    for getter in ("get_raw_value", "get_value"):
        g = getattr(v, getter, None)
        if callable(g):
            try:
                return g()
            except Exception:
                pass
    return v


def _node_entry(nodedef: Any, in_graph: bool) -> Entry:
    t = getattr(nodedef, "type", None)
    meta = getattr(nodedef, "metadata", None)
    metas: tuple[tuple[str, StaticVal], ...] = ()
    if meta is not None and meta is not t:
        metas = (("metadata", StaticVal(meta)),)
    try:
        ref = weakref.ref(t) if t is not None else None
    except TypeError:
        ref = None
    tn = getattr(t, "__qualname__", str(t))
    return Entry(EntryKind.NODE, type_name=tn, type_ref=ref, meta=metas, in_graph=in_graph)


def _var_entry(vardef: Any) -> Entry:
    t = vardef.type
    md = getattr(vardef, "metadata", None) or {}
    try:
        items = sorted(dict(md).items())
    except Exception:
        items = []
    metas = tuple((str(k), StaticVal(v)) for k, v in items)
    return Entry(
        EntryKind.VAR,
        type_name=getattr(t, "__qualname__", str(t)),
        type_ref=weakref.ref(t),
        meta=metas,
        in_graph=True,
    )


_MAPPING_NODES = ("Dict",)


def _is_flax_type(t: Any) -> bool:
    """Flax's own node classes: their private attributes (``nnx.List._length``) are not the user's."""
    return (getattr(t, "__module__", "") or "").startswith("flax.")


_SEQUENCE_NODES = ("List",)


def walk_graphdef(gd: Any, leaves: list[Any], root: Path, out: dict[Path, Entry]) -> None:
    """Flatten a GraphDef into ``out`` in the pre-order nnx unflattens it."""
    nodes = iter(gd.nodes)
    attrs = iter(gd.attributes)
    leaf_it = iter(leaves)
    index_path: dict[Any, Path] = {}

    def leaf_entry(path: Path) -> None:
        v = _leaf_value(next(leaf_it, None))
        if v is None:
            out[path] = Entry(EntryKind.OPAQUE, target="", in_graph=True)
            return
        a = aval_of(v) if _is_array_like(v) else None
        if a is not None:
            out[path] = Entry(EntryKind.AVAL, aval=a, in_graph=True)
        else:
            # a Variable holding a pytree (e.g. the tuple ``Module.sow`` appends to)
            describe_value(v, path, out, None)

    def visit(nd: Any, path: Path) -> None:
        kind = type(nd).__name__
        if kind == "NodeRef":
            out[path] = Entry(
                EntryKind.REF, target=render_path(index_path.get(nd.index, ())), in_graph=True
            )
            return
        if kind == "VariableDef":
            out[path] = _var_entry(nd)
            index_path[nd.index] = path
            ard = getattr(nd, "array_refdef", None)
            if ard is not None and type(ard).__name__ == "NodeRef":
                return
            leaf_entry((*path, ("attr", "value")))
            return
        if kind == "ArrayRefDef":
            leaf_entry(path)
            return
        out[path] = _node_entry(nd, in_graph=True)
        if getattr(nd, "index", None) is not None:
            index_path[nd.index] = path
        tname = getattr(nd.type, "__name__", "")
        item = tname in _MAPPING_NODES or tname in _SEQUENCE_NODES
        for _ in range(nd.num_attributes):
            k, v = next(attrs)
            if type(k) is str and (
                k.startswith("_pytree__") or (k.startswith("_") and _is_flax_type(nd.type))
            ):
                # nnx bookkeeping: its changes show up as the attribute they describe.
                if type(v).__name__ == "NodeAttr":
                    _skip(next(nodes))
                continue
            child = (*path, ("item" if item or type(k) is not str else "attr", k))
            vk = type(v).__name__
            if vk == "Static":
                out[child] = Entry(EntryKind.STATIC, static=StaticVal(v.value), in_graph=True)
            elif vk == "LeafAttr":
                leaf_entry(child)
            elif vk == "NodeAttr":
                visit(next(nodes), child)
            elif vk == "NodeRef":
                out[child] = Entry(
                    EntryKind.REF, target=render_path(index_path.get(v.index, ())), in_graph=True
                )
            else:
                out[child] = Entry(EntryKind.OPAQUE, target=vk, in_graph=True)

    def _skip(nd: Any) -> None:
        # A bookkeeping node (``_pytree__state``): consume its attributes and children.
        if type(nd).__name__ != "NodeDef":
            return
        for _ in range(nd.num_attributes):
            _k, v = next(attrs)
            if type(v).__name__ == "NodeAttr":
                _skip(next(nodes))
            elif type(v).__name__ == "LeafAttr":
                next(leaf_it, None)

    visit(next(nodes), root)


#: A child of a node whose flatten is the user's: JAX holds its leaves, not the object.
_UNSEEN = object()


def describe_value(
    x: Any,
    path: Path,
    out: dict[Path, Entry],
    ref_index: Any,
    static_leaves: bool = False,
    shape: Shape | None = None,
) -> None:
    """Flatten one argument (pytree, graph node, array, None) into ``out``, parents first.

    Iterative (an explicit stack), so that a tree of any depth is described
    exactly: a leaf 70 levels down is filed under its full path.
    ``static_leaves``: Python numbers are statics, not weakly typed arrays
    (``eqx.filter_jit`` keys every non-array leaf by value).
    ``shape``: ``x`` as JAX flattened it for this trace; a node whose flatten is the
    user's own code is then read from it, not flattened again (a user's flatten may be
    costly or count its calls: jitlens runs it no more often than JAX does).
    """
    stack: list[tuple[Any, Path, Shape | None]] = [(x, path, shape)]
    while stack:
        value, p, sh = stack.pop()
        children = _describe_one(value, p, out, ref_index, static_leaves, sh)
        if children:
            stack.extend(reversed(children))


def _describe_one(
    x: Any,
    path: Path,
    out: dict[Path, Entry],
    ref_index: Any,
    static_leaves: bool = False,
    shape: Shape | None = None,
) -> list[tuple[Any, Path, Shape | None]]:
    """File ``x`` itself under ``path``; return its pytree children (to describe next)."""
    if x is _UNSEEN:
        from .jax_flat import is_leaf as _is_leaf_shape

        if shape is None:
            out[path] = Entry(EntryKind.OPAQUE, target="?")
            return []
        if not _is_leaf_shape(shape):
            node_type, aux = node_data(shape[0])
            if node_type is type(None):  # as a None seen is described
                out[path] = Entry(EntryKind.NONE)
                return []
            return _describe_node(None, path, out, node_type, aux, shape, None)
        x = shape[1][0]
    if x is None:
        out[path] = Entry(EntryKind.NONE)
        return []
    if _compat.NODE_STATES is not None and is_a(x, _compat.NODE_STATES):
        leaves = [leaf for st in x.states for leaf in state_leaves(st)]
        walk_graphdef(x._graphdef, leaves, path, out)
        return []
    if is_graphdef(x):  # the functional API's graphdef: name the attribute that changed
        walk_graphdef(x, [], path, out)
        return []
    if _compat.is_graph_node(x):
        flat = _compat.flatten_node(x, ref_index)
        if flat is not None:
            walk_graphdef(flat[0], flat[1], path, out)
            return []
    if is_a(x, (jax.Array, jax.core.Tracer)) or (
        hasattr(type(x), "__array__") and hasattr(type(x), "dtype")
    ):
        a = aval_of(x)
        out[path] = (
            Entry(EntryKind.AVAL, aval=a) if a else Entry(EntryKind.OPAQUE, target=_type_name(x))
        )
        return []
    if is_a(x, _SCALARS):
        if static_leaves:
            out[path] = Entry(EntryKind.STATIC, static=StaticVal(x))
            return []
        a = aval_of(x)
        out[path] = (
            Entry(EntryKind.AVAL, aval=a) if a else Entry(EntryKind.OPAQUE, target=_type_name(x))
        )
        return []
    if shape is not None:
        from .._compat.jax_api import flattens_in_user_code
        from .jax_flat import is_leaf as _is_leaf_shape

    if shape is not None and not _is_leaf_shape(shape):
        node_type, aux = node_data(shape[0])
        if node_type is type(x) and flattens_in_user_code(node_type):
            return _describe_node(x, path, out, node_type, aux, shape, None)
    try:
        children, treedef = jax.tree_util.tree_flatten_with_path(x, is_leaf=lambda y: y is not x)
    except Exception:
        out[path] = Entry(EntryKind.OPAQUE, target=_type_name(x))
        return []
    if treedef.num_nodes == 1 and treedef.num_leaves == 1 and not children[0][0]:
        a = aval_of(x)
        out[path] = (
            Entry(EntryKind.AVAL, aval=a) if a else Entry(EntryKind.STATIC, static=StaticVal(x))
        )
        return []
    node_type, aux = node_data(treedef)
    return _describe_node(x, path, out, node_type, aux, shape, children)


def _describe_node(
    x: Any,
    path: Path,
    out: dict[Path, Entry],
    node_type: Any,
    aux: Any,
    shape: Shape | None,
    children: list[tuple[Any, Any]] | None,
) -> list[tuple[Any, Path, Shape | None]]:
    """File a pytree node; its children come from ``children`` (flattened here, with their
    keys) or, when ``None``, from JAX's ``shape`` (keyed by position: naming them would take
    the user's flatten)."""
    seen = x is not None
    static_fields = (declared_static_fields(x) or meta_fields(x, aux)) if seen else ()
    out[path] = Entry(
        EntryKind.NODE,
        type_name=getattr(node_type, "__qualname__", str(node_type)),
        type_ref=weak_ref(node_type),
        meta=(),
    )
    if static_fields:
        # a dataclass pytree (flax.struct, equinox): name each static field
        for name in static_fields:
            out[(*path, ("attr", name))] = Entry(
                EntryKind.STATIC, static=StaticVal(static_attr(x, name))
            )
    elif aux is not None and not (
        is_a(x, (dict, list, tuple))
        if seen
        else isinstance(node_type, type) and issubclass(node_type, (dict, list, tuple))
    ):
        out[path] = dataclasses.replace(out[path], meta=(("aux", StaticVal(aux)),))
    from . import jax_flat

    shapes = jax_flat.children(shape) if shape is not None else None
    if children is None:
        assert shapes is not None
        head = jax_flat.head_text(path)
        keys = [
            jax_flat.named_key(head, sh[2]) or k
            for k, sh in zip(jax_flat.tree_keys(node_type, aux, len(shapes)), shapes, strict=True)
        ]
        return [(_UNSEEN, (*path, k), sh) for k, sh in zip(keys, shapes, strict=True)]
    if shapes is None or len(shapes) != len(children):
        shapes = [None] * len(children)
    return [
        (child, (*path, *(key_part(k) for k in kp)), sh)
        for (kp, child), sh in zip(children, shapes, strict=True)
    ]


# --------------------------------------------------------------------------
# Keys of calls
# --------------------------------------------------------------------------


_PARAM_NAMES: weakref.WeakKeyDictionary[Any, tuple[str, ...] | None] = weakref.WeakKeyDictionary()


def _param_names(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    """Positional parameter names of ``fn``, cached without keeping ``fn`` alive."""
    try:
        return _PARAM_NAMES[fn]
    except (KeyError, TypeError):
        pass
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        names = None
    else:
        params = sig.parameters.values()
        names = tuple(
            p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        )
        names += tuple(p.name for p in params if p.kind == p.VAR_POSITIONAL)
    try:
        _PARAM_NAMES[fn] = names
    except TypeError:
        pass
    return names


def arg_names(user_fn: Any, nargs: int) -> list[str]:
    names = None
    try:
        names = _param_names(user_fn)
    except TypeError:  # unhashable callable
        names = None
    out = []
    npos, varargs = len(names or ()), None
    fn = user_fn
    try:
        params = inspect.signature(fn).parameters.values()
        varargs = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
        if varargs is not None and names:
            npos = len(names) - 1  # _param_names appends the *args name last
    except (TypeError, ValueError):
        pass
    for i in range(nargs):
        if names and i < npos:
            out.append(names[i])
        elif varargs is not None:
            out.append(f"{varargs}[{i - npos}]")
        else:
            out.append(f"args[{i}]")
    return out


def describe_call(
    user_fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    static_argnums: tuple[int, ...] = (),
    static_argnames: tuple[str, ...] = (),
    config: tuple[tuple[str, Any], ...] | None = None,
    options: tuple[tuple[str, Any], ...] = (),
    static_leaves: bool = False,
    flat: Shape | None = None,
) -> Key:
    """The key of a call from the user's arguments (or nnx's pure arguments).

    ``options`` are the jit wrapper's own settings (``in_shardings``,
    ``donate_argnums``, ...): fixed per wrapper, they matter when a new
    wrapper of the same function is compared with an earlier one.
    ``static_leaves``: Python numbers are keyed by value (``eqx.filter_jit``).
    ``flat``: ``((args, kwargs), {})`` as JAX flattened them for this trace
    (:func:`describe_value`'s ``shape``).
    """
    out: dict[Path, Entry] = {}
    from . import jax_flat  # JAX's flattening of this trace's arguments

    arg_shapes, kwarg_shapes = jax_flat.split_flat(flat, len(args), kwargs)
    for name, value in options:
        out[(("jit", name),)] = Entry(EntryKind.STATIC, static=StaticVal(value))
    names = arg_names(user_fn, len(args))
    ref_index = _compat.new_ref_map()
    nstatic = {i if i >= 0 else len(args) + i for i in static_argnums}
    for i, (name, a) in enumerate(zip(names, args, strict=True)):
        p: Path = (("arg", name),)
        out[(*p, ("passed", ""))] = Entry(EntryKind.PASSED, target="positional")
        if i in nstatic and not is_graphdef(a):
            out[p] = Entry(EntryKind.STATIC, static=StaticVal(a), typed=True)
        else:
            describe_value(a, p, out, ref_index, static_leaves, arg_shapes[i])
    for name in sorted(kwargs):
        p = (("arg", name),)
        out[(*p, ("passed", ""))] = Entry(EntryKind.PASSED, target="keyword")
        if name in static_argnames and not is_graphdef(kwargs[name]):
            out[p] = Entry(EntryKind.STATIC, static=StaticVal(kwargs[name]), typed=True)
        else:
            describe_value(kwargs[name], p, out, ref_index, static_leaves, kwarg_shapes.get(name))
    cfg = tuple((str(k), short_repr(v, 80)) for k, v in (config or ()))
    sig = signature_text(out, names + sorted(kwargs))
    # Entries are in walk order (deterministic), so no sorting is needed.
    fp = hashlib.blake2b(
        _ADDR.sub(
            "", sig + "|".join(f"{_key_text(p)}={_entry_text(e)}" for p, e in out.items())
        ).encode(),
        digest_size=4,
    ).hexdigest()
    return Key(entries=out, config=cfg, signature=sig, fingerprint=fp)
