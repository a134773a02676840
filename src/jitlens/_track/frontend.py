"""The front-end interface: what the engine asks of a library's jit, and the registration table.

Every jit jitlens counts comes in through a front-end: ``jax.jit``, flax NNX's
wrappers, ``eqx.filter_jit``, pmap, linen's ``nn.jit``, the steps keras and
numpyro jit around the user's model. Each is one package or module in
``_track/frontends/`` holding a :class:`Frontend`: how it is installed, how its
trace is recognised and unpacked into the user's call, how its differences are
worded, and its piece of the canary. The registration table
(``_track/frontends/__init__.py``'s ``LIBRARIES``) registers each here
(:func:`register`) when the installer (``hooks``) imports it; the engine (registry, listeners, describe, nested, the canary) only
iterates :func:`registered` and calls these methods, so it names no library and
no row kind.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from .._core.kinds import ReasonKind, RowKind
from .._core.words import Words

if TYPE_CHECKING:
    from .._core.key import Key
    from .._core.report import Reason
    from .._core.template_kinds import FixKind
    from .records import Record

#: ``set_attr(owner, name, value)``: patch an attribute, undone by ``uninstall``.
SetAttr = Callable[[Any, str, Any], None]


class Frontend:
    """One library's jit, as the engine sees it. Subclasses override what their library has.

    The defaults describe a front-end with no callable of its own in JAX's traces
    (``jax.jit``, ``nnx.jit``, pmap, keras): it only installs its counting entry
    point and may reword its rows' reasons.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.kinds or not all(isinstance(k, RowKind) for k in cls.kinds):
            raise TypeError(f"{cls.__name__}.kinds: one or more RowKind members")

    #: The row kinds its records carry; the first names it (in warnings, ``installed_kinds``).
    kinds: ClassVar[tuple[RowKind, ...]] = ()
    #: The module whose import means the program uses the library (installed then).
    module: ClassVar[str] = "jax"
    #: Non-array leaves (Python numbers too) are static in its key.
    static_leaves: ClassVar[bool] = False

    @property
    def kind(self) -> RowKind:
        return self.kinds[0]

    def __repr__(self) -> str:
        return f"<jitlens front-end {', '.join(self.kinds)}>"

    def loaded(self) -> bool:
        """Did the program import the library (jitlens never imports it)?"""
        return self.module in sys.modules

    # ---------------------------------------------------------------- installation

    def install(self, set_attr: SetAttr) -> None:
        """Patch the library's per-call entry points through ``set_attr`` (undone on uninstall)."""

    @property
    def patches(self) -> bool:
        """Does it patch anything (else its rows come through ``jax.jit``'s)?"""
        return type(self).install is not Frontend.install

    # ---------------------------------------------------------------- its trace

    def recognises(self, fun: Any) -> bool:
        """Is ``fun`` (what JAX traces) the library's own jitted callable, standing for the user's?"""
        return False

    def user_function(self, jit_args: tuple[Any, ...]) -> Any:
        """JAX's positional arguments of a recognised trace -> the user's callable."""
        return None

    def user_args(
        self, jit_args: tuple[Any, ...], jit_kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        """JAX's ``(args, kwargs)`` -> the user's ``(args, kwargs)``, or None (cannot unpack)."""
        return None

    def cache_key(self, jit_args: tuple[Any, ...]) -> Any:
        """A hashable key, equal for callables the library jits alike."""
        return None

    def jit_options(self, jit_args: tuple[Any, ...]) -> tuple[tuple[str, Any], ...]:
        """The library's options in the compiled key but not in the user's arguments."""
        return ()

    def wrapper_key(self, wrapper: Any) -> Any:
        """:meth:`cache_key` from the library's wrapper object a call goes through."""
        return None

    def wrapper_user_function(self, wrapper: Any) -> Any:
        """The library's wrapper object -> the user's callable."""
        return None

    def users_only(self, fn: Any) -> bool:
        """A callable of the library's own that only a user jits: the user's row all the same."""
        return False

    # ---------------------------------------------------------------- rows made through jax.jit

    def record_for_jit(self, fun: Any, options: dict[str, Any]) -> Record | None:
        """The record of ``jax.jit(fun, **options)`` made while tracking, when ``fun`` is the
        library's (a linen lifted function, a keras step), or None."""
        return None

    def untracked(
        self, fun: Any, info: Any
    ) -> tuple[Record, tuple[Any, ...], dict[str, Any]] | None:
        """``(record, user args, user kwargs)`` of a trace of the library's callable made
        before tracking (no counted call above it), or None."""
        return None

    def adopt(self, rec: Record, fn: Any) -> bool:
        """Make ``rec``, a new internal row of another front-end's wrapper of ``fn`` (keras'
        steps under ``nnx.jit``), the library's user row; True if it did."""
        return False

    # ---------------------------------------------------------------- statics it hashes

    def compiled(self, rec: Record, key: Key, args: tuple[Any, ...]) -> None:
        """A trace of one of its rows filed ``key`` (``args``: the traced call's): keep what
        :meth:`held_statics` compares later, when its library keys on statics the key does
        not hold (a hash of them)."""

    def held_statics(
        self, rec: Record, args: tuple[Any, ...], frame: Any
    ) -> list[tuple[str, str, Any, Any]]:
        """Statics this call (a cache hit of ``rec``) passed that its library keyed by a hash
        computed at the compile: ``(path shown, its root, StaticVal at the compile, value
        now)``; ``frame``: the caller's, for the names it holds them by (``stale``)."""
        return []

    # ---------------------------------------------------------------- its words

    #: The end of a stale hit's fix (``stale``): how a number that changes often is traced in
    #: its terms instead of held static (None: said as for nnx, an array or an nnx.Variable).
    stale_traced: ClassVar[str | None] = None
    #: The remedy for a static too big to check (``Unchecked.remedy``), in this jit's terms.
    unchecked_remedy: ClassVar[str] = "assign a new object instead of changing it"

    def stale_assign(self, shown: str, root: str, new: str) -> str:
        """Code that puts ``new`` at ``shown`` (reached from the call's argument ``root``), as
        this library's objects allow (a stale hit's fix)."""
        return f"{shown} = {new}"

    def reword(self, rec: Record, reasons: list[Reason], key: Key) -> list[Reason]:
        """``reasons`` of a retrace of one of its rows, in the library's terms."""
        return reasons

    def data_fix(self, kind: str, r: Reason, unstatic: Words) -> tuple[FixKind, Words] | None:
        """The fix (its template's kind and the makings of its words) for a static number of a ``kind`` row
        that only enters arithmetic (pass it as an array), if the front-end words one; None
        keeps the reason's own fix. ``unstatic``: how to stop the argument being static, in the
        jit option that made it so (``_core.reasons.unstatic``)."""
        return None

    # ---------------------------------------------------------------- its canary

    #: The installed distribution its canary needs (None: no canary of its own).
    canary_requires: ClassVar[str | None] = None

    def canary(self, np: Any) -> list[str]:
        """Run its tiny jitted function under tracking; the problems found (``jitlens selfcheck``)."""
        return []


#: Every front-end, in the registration table's order.
_REGISTERED: list[Frontend] = []
#: Row kind -> its front-end.
_BY_KIND: dict[str, Frontend] = {}


def register(frontend: Frontend) -> Frontend:
    """Add ``frontend`` to the table the engine iterates (once per object)."""
    if frontend not in _REGISTERED:
        _REGISTERED.append(frontend)
        for kind in frontend.kinds:
            _BY_KIND[kind] = frontend
    return frontend


def registered() -> tuple[Frontend, ...]:
    return tuple(_REGISTERED)


def of_kind(kind: str) -> Frontend | None:
    """The front-end whose rows have ``kind``."""
    return _BY_KIND.get(kind)


def frontend_of(fun: Any) -> Frontend | None:
    """The front-end whose own jitted callable ``fun`` is (None for a user's callable)."""
    if fun is None:
        return None
    for fe in _REGISTERED:
        try:
            if fe.loaded() and fe.recognises(fun):
                return fe
        except Exception:
            continue
    return None


# ------------------------------------------------------------------ canary pieces


def canary_compare(what: str, rec: Any, truth: int, calls: int | None) -> list[str]:
    """What of ``rec``'s figures differ from the ``truth`` counted in the body (``what``: its kind)."""
    if rec is None:
        return [f"{what} traces are not seen ({truth} traces ran, jitlens saw none)"]
    out = []
    if rec.traces != truth:
        out.append(f"{what} traces miscounted ({truth} ran, jitlens counted {rec.traces})")
    if calls is not None and rec.counts_calls and rec.calls != calls:
        out.append(f"{what} calls miscounted ({calls} made, jitlens counted {rec.calls})")
    kinds = [str(r.kind) for e in rec.events for r in e.reasons]
    if truth == 2 and rec.traces == 2 and ReasonKind.SHAPE not in kinds:
        out.append(f"{what} retrace not explained (expected a shape change, got {kinds or 'none'})")
    return out


def canary_row(records: list[Any], name: str) -> Any:
    """The latest of ``records`` (the registry's) named ``name`` (a canary function's)."""
    recs = [r for r in records if r.name == name]
    return recs[-1] if recs else None
