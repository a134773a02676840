"""A key's path as the user writes it in code, for the fixes that assign to it.

A key names ``opt.opt_state.hyperparams.learning_rate`` (nnx flattens a dict's
children like attributes); the user writes ``...hyperparams['learning_rate']``.
The key's own entries say which nodes are dicts (subscripted) and which are
tuples (whose items cannot be assigned: no assignment is printed then).
"""

from __future__ import annotations

from .key import Entry, Path, render_path, short_repr

#: A key's entries by path (``Key.entries``).
Entries = dict[Path, Entry]

#: Node types whose children are keys, written ``node['key']`` by the user.
_MAPPINGS = frozenset({"dict", "FrozenDict", "OrderedDict", "defaultdict", "State"})


def code_path(p: Path, entries: Entries | None) -> str:
    """``p`` as the user writes it in code: a dict's children subscripted
    (``opt.opt_state.hyperparams['learning_rate']``, where the key's path says
    ``.learning_rate``); ``entries`` tell which nodes are dicts."""
    if not p or entries is None:
        return render_path(p)
    out = render_path(p[:1])
    for i in range(1, len(p)):
        kind, name = p[i]
        parent = entries.get(p[:i])
        if parent is not None and _immutable(parent) and i == len(p) - 1:
            return ""  # `state[1] = ...` on a tuple raises: no assignment to print
        mapping = parent is not None and parent.type_name in _MAPPINGS
        if kind == "attr" and isinstance(name, str) and name.isidentifier() and not mapping:
            out += f".{name}"
        else:
            out += f"[{short_repr(name, 60)}]"  # (a dict key's own repr is not called)
    return out


def written_path(p: Path, entries: Entries | None) -> Path:
    """``p`` with a dict's children as keys, as the user subscripts them: rendered
    ``opt.opt_state.hyperparams['learning_rate']`` (a very deep path still abbreviated)."""
    if entries is None:
        return p
    out = list(p)
    for i in range(1, len(p)):
        parent = entries.get(p[:i])
        if p[i][0] == "attr" and parent is not None and parent.type_name in _MAPPINGS:
            out[i] = ("key", p[i][1])
    return tuple(out)


def _immutable(e: Entry) -> bool:
    """A tuple (a NamedTuple too): its items cannot be assigned."""
    cls = e.type_ref() if callable(e.type_ref) else None
    return e.type_name == "tuple" or (isinstance(cls, type) and issubclass(cls, tuple))


def parent_in(path: Path, paths: set[Path]) -> bool:
    """Is a strict ancestor of ``path`` (a shorter prefix) one of ``paths``?"""
    return any(path[:i] in paths for i in range(1, len(path)))


def under(p: Path, roots: set[Path]) -> bool:
    """Is ``p`` one of ``roots`` or below one?"""
    return any(p[: len(r)] == r for r in roots)


def library_node(p: Path, entries: Entries | None) -> tuple[str, str] | None:
    """(library, class) of the outermost node on ``p`` below the argument that a library's
    class made (an optax state inside the user's tuple), or None."""
    from .._compat import framework_packages  # at the first weak-type reason, not at start

    if entries is None:
        return None
    packages = framework_packages()
    for k in range(2, len(p)):
        e = entries.get(p[:k])
        cls = e.type_ref() if e is not None and e.type_ref is not None else None
        owner = getattr(cls, "__module__", "").split(".")[0]
        if cls is not None and owner in packages and owner not in ("builtins", "jax"):
            return owner, cls.__name__
    return None
