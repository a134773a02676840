"""The process-wide registry of jitted functions: one :class:`Record` per jitted callable.

Records are found from what each hook sees: an nnx wrapper object, the
function handed to ``jax.jit``, or only the name JAX reports at trace time.
Lookups and insertions happen under one lock, so two threads making the first
call of one function share one record. Trackers are windows over these records.
"""

from __future__ import annotations

import itertools
import threading
import time
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import _compat
from .._core.kinds import RowKind
from . import journal
from .frontend import Frontend, registered
from .records import MAX_SIBLINGS, EventBuilder, Record
from .state import finalize, weak

#: Front-end keys remembered for callables other than plain functions (each
#: holds its static part strongly, as equinox's lru cache does); older ones
#: get a new record if they come back.
MAX_FRONTEND_KEYS = 128

#: jit options that change what a wrapper compiles (and so its cache).
KEY_OPTIONS = (
    "in_shardings",
    "out_shardings",
    "static_argnums",
    "static_argnames",
    "donate_argnums",
    "donate_argnames",
    "device",
    "backend",
    "keep_unused",
    "inline",
    "compiler_options",
)


def options_of(options: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The cache-relevant jit options that differ from JAX's defaults."""
    out = []
    for k in KEY_OPTIONS:
        v = options.get(k)
        if v is None or v == () or v is False or type(v).__name__ == "UnspecifiedValue":
            continue
        if isinstance(v, list):
            v = tuple(v)
        out.append((k, v))
    return tuple(out)


def _is_user_code(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    if code is None or not hasattr(code, "co_filename"):
        return True
    return _compat.is_user_file(code.co_filename)


class Registry:
    """Process-wide state: records and their indexes, callbacks, activation depth."""

    def __init__(self) -> None:
        self.active = False
        self.lock = threading.RLock()
        self.records: list[Record] = []
        self.by_wrapper: dict[int, tuple[Any, Record]] = {}
        self.by_fun: dict[int, tuple[Any, Record]] = {}
        self.by_code: dict[Any, list[Record]] = {}
        #: library object (a keras model, an MCMC) -> a number of its own (``rename``).
        self._owner_tokens: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._owner_count = itertools.count(1)
        self.t0 = time.perf_counter()
        #: Open trackers and guards (hooks are installed while it is positive).
        self.depth = 0
        self.include_internal_keys = False
        self.on_trace: list[Callable[[Record, EventBuilder], None]] = []
        #: Compile budgets, called at each compile's start (``compiling.compile_start``);
        #: empty unless one is open, so that a compile costs nothing more.
        self.on_compile: list[Callable[[Record, EventBuilder], None]] = []
        self.on_stale: list[Callable[[Record, Any], None]] = []
        #: Front-end records by :func:`_frontend_index`, latest last.
        self.by_frontend: OrderedDict[tuple[str, str, Any], Record] = OrderedDict()
        self.timelines = 0
        #: Kinds of the front-ends whose per-call entry points are counted now.
        self.installed_kinds: set[str] = set()

    # ------------------------------------------------------------ the one factory

    def new_record(
        self,
        kind: str,
        site_of: Any,
        *,
        user_fn: Any,
        inner_fun: Any = None,
        wrapper: Any = None,
        jax_name: str = "",
        counts_calls: bool = True,
        where: tuple[str, str, bool] | None = None,
    ) -> Record:
        """Create, index and register the record of one jitted callable.

        ``site_of`` is the callable whose definition names the row; ``where``
        overrides it with ``(name, 'file:line', internal)`` when only JAX's
        debug info is known.
        """
        if where is not None:
            name, defined_at, internal = where
            qualname = getattr(user_fn, "__qualname__", None) or name
        else:
            name, qualname, defined_at = _compat.definition_site(site_of)
            internal = not _is_user_code(_compat.unwrap(site_of))
        jax_name = jax_name or name
        transforms = _compat.transform_names(site_of) if site_of is not None else []
        for t in reversed(transforms):  # jax.jit(jax.grad(loss)) is the row grad(loss)
            name, qualname = f"{t}({name})", f"{t}({qualname})"
        rec = Record(
            kind=kind,
            name=name,
            qualname=qualname,
            defined_at=defined_at,
            internal=internal,
            code_key=_compat.code_key(site_of) if site_of is not None else ("name", jax_name),
            wrapper=wrapper,
            user_fn=user_fn,
            inner_fun=inner_fun,
            counts_calls=counts_calls,
            jax_name=jax_name or name,
        )
        if inner_fun is not None:
            self._index_fun(inner_fun, rec)
        with self.lock:
            self.records.append(rec)
            siblings = self.by_code.setdefault(rec.code_key, [])
            siblings.append(rec)
            # a jit re-created in a long loop: compare new wrappers with the
            # latest few only, so each new one costs O(1), not O(loop length)
            if len(siblings) > MAX_SIBLINGS:
                del siblings[0]
        return rec

    def earlier_wrappers(self, rec: Record) -> int:
        """Earlier wrappers of the same code and kind that compiled something."""
        siblings = self.by_code.get(rec.code_key, ())
        return sum(1 for r in siblings if r is not rec and r.kind == rec.kind and r.keys)

    def resolve_untracked(self, fun: Any, info: Any) -> Any:
        """``(record, user args, user kwargs)`` of a trace a front-end recognises though no
        counted call made it (its callable was made before tracking), or None."""
        for fe in registered():
            found = fe.untracked(fun, info)
            if found is not None:
                return found
        return None

    def jit_record_for(self, fun: Any, options: dict[str, Any], made_at: Any = None) -> Record:
        """The record of a ``jax.jit(fun, **options)`` made while tracking: a front-end's
        (a linen ``nn.jit``'s, named after its module; a keras step) or a plain one.

        ``made_at``: the frame that called ``jax.jit``. From the user's code, the
        row is the user's even when ``fun`` lives in a library (``jax.jit(svi.update)``);
        from a library's function around the user's code, it is shown, named after
        that function (``blackjax: run_inference_algorithm``).
        """
        for fe in registered():
            rec = fe.record_for_jit(fun, options)
            if rec is not None:
                return rec
        rec = self.record_for_jax_jit(fun, options)
        if rec.internal and made_at is not None:
            if _compat.is_user_file(made_at.f_code.co_filename):
                # a library's callable the user jitted (`jax.jit(opt.update)`, `jax.jit(jnp.sin)`)
                # is the user's function: their line made the jit, their loop calls it
                from .._compat.frames import users_spelling

                name = _compat.library_name(fun) or users_spelling(fun, made_at)
                rec.internal = False
            else:
                name = _compat.built_by_library(fun, made_at)
                rec.library_made = name is not None
            if name is not None:
                rec.internal = False
                self.rename(rec, name)
        return rec

    def _owner_token(self, owner: Any) -> int:
        """A number for ``owner`` that no later object gets (``id`` is reused once it is gone)."""
        if owner is None:
            return 0
        try:
            token = self._owner_tokens.get(owner)
            if token is None:
                token = self._owner_tokens[owner] = next(self._owner_count)
            return token
        except TypeError:  # not weakly referenceable or not hashable
            return id(owner)

    def rename(self, rec: Record, name: str, owner: Any = None) -> None:
        """Name ``rec`` in a library's terms; only rows of that name are its siblings.

        blackjax builds every sampler's ``step_fn`` from one closure: an hmc and a
        mala step are different functions, not a wrapper rebuilt. ``owner``: the
        library object the jit serves (a keras model), whose rows are its own.
        """
        with self.lock:
            siblings = self.by_code.get(rec.code_key, [])
            if rec in siblings:
                siblings.remove(rec)
            rec.name = rec.qualname = name
            rec.code_key = ("library", name, rec.code_key, self._owner_token(owner))
            self.by_code.setdefault(rec.code_key, []).append(rec)

    def _index_fun(self, fun: Any, rec: Record) -> None:
        """Find ``rec`` from the callable JAX traces (weakly: dropped with ``fun``)."""
        ref = weak(fun)
        if ref is not None:
            with self.lock:
                self.by_fun[id(fun)] = (ref, rec)
            finalize(fun, self.by_fun.pop, id(fun))

    def find_by_fun(self, fun: Any) -> Record | None:
        hit = self.by_fun.get(id(fun))
        return hit[1] if hit is not None and hit[0]() is fun else None

    # ------------------------------------------------------------ front-ends

    def record_for_wrapper(self, wrapper: Any, kind: str | None, cached: bool) -> Record:
        """The record of an nnx wrapper (``cached``: called through ``nnx.cached_partial``)."""
        key = id(wrapper) * 2 + cached
        hit = self.by_wrapper.get(key)
        if hit is not None and hit[0]() is wrapper:
            return hit[1]
        with self.lock:  # two threads' first calls: one record
            hit = self.by_wrapper.get(key)
            if hit is not None and hit[0]() is wrapper:
                return hit[1]
            jitted = getattr(wrapper, "jitted_fn", None)
            rec = self.new_record(
                RowKind.NNX_CACHED_PARTIAL
                if cached
                else RowKind(kind or _compat.nnx_kind(wrapper)),
                wrapper,
                user_fn=_compat.user_function(wrapper),
                inner_fun=getattr(jitted, "__wrapped__", None),
                wrapper=wrapper,
            )
            rec.options = options_of(
                {
                    k: getattr(wrapper, k, None)
                    for k in ("in_shardings", "out_shardings", "static_argnums")
                }
            )
            ref = weak(wrapper)
            if ref is not None:
                self.by_wrapper[key] = (ref, rec)
                finalize(wrapper, self.by_wrapper.pop, key)
                finalize(wrapper, rec.forget_keys, 1)
        return rec

    def record_for_jax_jit(self, fun: Any, options: dict[str, Any]) -> Record:
        """The record of a ``jax.jit(fun, **options)`` created while tracking."""
        rec = self.new_record(
            RowKind.JAX_JIT, fun, user_fn=fun, inner_fun=fun, jax_name=getattr(fun, "__name__", "")
        )
        sa = options.get("static_argnums")
        rec.static_argnums = (sa,) if isinstance(sa, int) else tuple(sa or ())
        sn = options.get("static_argnames")
        rec.static_argnames = (sn,) if isinstance(sn, str) else tuple(sn or ())
        rec.options = options_of(options)
        return rec

    def record_for_frontend(
        self, frontend: Frontend, key: Any, user_fn: Any, counts_calls: bool
    ) -> Record:
        """The record of a library front-end's jit of ``user_fn`` (e.g. ``eqx.filter_jit(f)``).

        One record per user callable as the library keys it: three
        ``eqx.filter_jit(f)`` of one ``f`` share one compiled cache, so one row.
        """
        index = _frontend_index(frontend, key, user_fn)
        with self.lock:
            rec = self.by_frontend.get(index)
            if rec is not None and (index[1] != "fn" or rec.user_fn() is user_fn):
                self.by_frontend.move_to_end(index)
                return rec
            where = None
            if frontend.users_only(user_fn):
                name, _qualname, defined_at = _compat.definition_site(user_fn)
                where = (name, defined_at, False)
            rec = self.new_record(
                frontend.kind, user_fn, user_fn=user_fn, counts_calls=counts_calls, where=where
            )
            rec.inner_fun_ref = weak(user_fn)  # for guards; not indexed as a jax.jit function
            rec.frontend = frontend
            self.by_frontend[index] = rec
            if index[1] == "fn":  # dropped with the function, as equinox's own cache does
                finalize(user_fn, self.by_frontend.pop, index)
            if len(self.by_frontend) > MAX_FRONTEND_KEYS:
                self.by_frontend.popitem(last=False)
            return rec

    def frontend_record_of(self, wrapper: Any) -> Record | None:
        """The record of a front-end's wrapper object (``eqx.filter_jit(f)``), if jitlens saw it."""
        for fe in registered():
            if not fe.loaded():
                continue
            try:
                key = fe.wrapper_key(wrapper)
                if key is None:
                    continue
                user_fn = fe.wrapper_user_function(wrapper)
                index = _frontend_index(fe, key, user_fn)
                rec = self.by_frontend.get(index)
            except Exception:  # not this front-end's wrapper
                continue
            if rec is not None and (index[1] != "fn" or rec.user_fn() is user_fn):
                return rec
        return None

    def record_for_untracked(self, fun: Any, fun_name: str, dbg: Any) -> Record:
        """A jit seen only through monitoring: created before tracking, or internal."""
        if fun is not None:
            found = self.find_by_fun(fun)
            if found is not None:
                return found
            owner = _compat.nnx_wrapper_of_traced(fun)
            if owner is not None:
                return self.record_for_wrapper(owner, None, False)
        with self.lock:
            if fun is not None:
                found = self.find_by_fun(fun)
                if found is not None:
                    return found
            info = _compat.src_info(dbg)
            if info is not None:
                name, where_abs = info
                file, _, line = where_abs.rpartition(":")
                where = (name, f"{_compat.short_path(file)}:{line}", not _compat.is_user_file(file))
            else:
                where = (fun_name, "?", True)
            # a partial is kept, as `record_for_jax_jit` keeps it: the fix of one rebuilt per
            # call names what it binds (`jit(partial(gram, kernel))` jitted before tracking
            # was once told `gram_jit = jax.jit(gram)`, which drops `kernel`)
            import functools

            user_fn = (
                fun
                if isinstance(fun, functools.partial)
                else _compat.user_function(fun)
                if fun is not None
                else None
            )
            return self.new_record(
                RowKind.JAX_JIT,
                user_fn,
                user_fn=user_fn,
                inner_fun=fun,
                counts_calls=False,
                jax_name=fun_name,
                where=where,
            )


def _frontend_index(frontend: Frontend, key: Any, user_fn: Any) -> tuple[str, str, Any]:
    """Where a front-end's record is filed: by a plain function's id (held weakly), else by key.

    Other callables (partials, Modules) come back as new objects from the
    library's key, so they are filed under the key itself (held strongly,
    bounded by :data:`MAX_FRONTEND_KEYS`, like equinox's own lru cache).
    """
    if isinstance(user_fn, types.FunctionType):
        return (frontend.kind, "fn", id(user_fn))
    try:
        hash(key)
    except TypeError:  # an unhashable static: equinox could not jit it either
        return (frontend.kind, "id", id(user_fn))
    return (frontend.kind, "key", key)


REGISTRY = Registry()


def _all_records() -> list[Record]:
    with REGISTRY.lock:
        return list(REGISTRY.records)


def _journal_stale(rec: Record | None, hits: Any) -> None:
    if rec is not None:
        journal.note(rec)  # a stale hit, when it happens


journal.RECORDS[0] = _all_records
REGISTRY.on_stale.append(_journal_stale)
