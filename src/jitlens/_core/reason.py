"""One reason of a retrace: typed data (what, where, what kind of object, which fix), then words.

A :class:`Reason` is made where a difference between two cache keys is found
(``explain``, the builders of ``_core/reasons/``). Everything that decides (ranking,
rewording, folding, the audit, the tests) reads its typed fields: ``kind``,
``subject``, ``fix_kind``, ``facts``, ``expected``, ``flow`` and, while the
program runs, ``where`` and ``entries``. ``message`` and ``fix`` are words for
a reader, printed by the renderers and never read back to decide anything
(``tests/test_typed_reasons.py``): the reason carries their makings (``said``: a
template and its parameters each, ``_core.words.Words``) and they are made the
first time they are read (``_core.words.words``). ``report`` re-exports it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .._record import record
from .kinds import FIX_QUOTES_VALUE, Fact, ReasonKind, SubjectKind
from .words import Words, as_words, words

if TYPE_CHECKING:
    from .template_kinds import FixKind

REASON_BY_NAME: dict[str, ReasonKind] = {str(k): k for k in ReasonKind}


#: ``Reason.flow`` of a static number: "unchecked" (the program's evidence has not come yet),
#: "data" (the programs compiled for two values differ only in literal constants: it can be
#: traced), "shape" (their shapes or operations differ: it sets a shape, a slice, a loop count
#: or a branch, and must stay static), "params" (an operation's static parameter differs:
#: unsure, said in words), "rule" (it reached a custom_vjp's nondiff_argnums, which JAX
#: rejects a tracer in).
STATIC_FLOWS: tuple[str, ...] = ("", "unchecked", "data", "shape", "params", "rule")


#: How a fix begins when the retrace was expected, not avoidable: the first
#: compile of a train/eval mode (``_core.reasons.static_value.MODE_FIX``). The data
#: says so in ``Reason.expected``; the prefix is read only from reports written
#: before that field existed.
EXPECTED_FIX = "Expected once per mode."


@record
class Reason:
    """One difference between a new cache key and the closest compiled one."""

    # A string naming no member stays a string: a kind added by a newer jitlens, read from
    # its report, is shown as it is and sorts last.
    kind: ReasonKind | str
    #: The argument, by its name in the function's signature (``model``, ``x``).
    argument: str
    #: Where inside the argument: attribute / key / index access (``model.layers[3].avg_pool``).
    path: str
    #: What the closest compiled key held there (``f32[4,4]``).
    before: str
    #: What the new call holds there (``f32[2,4]``).
    after: str
    #: What changed and why it misses the cache, in words (at most 240 characters). Given as
    #: ``Words`` (a template and its parameters), made when first read; a string is kept as is.
    message: str
    #: One concrete change to the user's code that removes the retrace (at most 240
    #: characters); given as ``message`` is.
    fix: str
    #: The retrace it explains was expected, not avoidable (a train/eval mode's,
    #: an init/apply mode's first compile): no time lost, nothing to fix.
    expected: bool = False
    #: Where a static number flowed in the traced program (``STATIC_FLOWS``): decides
    #: whether it can become a traced argument. "" when not a static number's reason.
    flow: str = ""
    #: What kind of object the value is (``kinds.SubjectKind``: a partial, a lambda, an optax
    #: transform, an array ...); "" when the reason is about no one value.
    subject: SubjectKind | str = SubjectKind.UNSET
    #: Which fix template made ``fix`` (``kinds.FixKind``); "" (``FixKind.UNSET``) in a report
    #: from before it. The default is the string: the fix kinds load with the first reason.
    fix_kind: FixKind | str = ""
    #: What else is known of the difference (``kinds.Fact``: an equal key, state a library
    #: makes, a trace inside another transformation ...), in the enum's order.
    facts: tuple[Fact | str, ...] = ()
    #: Where, as the key's structured path (``_core.key.Path``: ``(("arg", "model"),
    #: ("attr", "layers"), ("item", 3))``); ``path`` is its rendering. Decisions read this, not
    #: ``path``. Not in the JSON (a key may be any hashable): () in a report read back.
    where: tuple[tuple[str, Any], ...] = dataclasses.field(
        default=(), compare=False, repr=False, metadata={"json": False}
    )
    #: The compiled key's and the new key's ``_core.key.Entry`` at ``where`` (``None`` where
    #: absent): the evidence as data (an aval's shape, a static's value). Not in the JSON.
    entries: tuple[Any, Any] = dataclasses.field(
        default=(None, None), compare=False, repr=False, metadata={"json": False}
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", REASON_BY_NAME.get(self.kind, self.kind))
        # a value naming no member (written by a newer jitlens) stays a string, as kinds do
        object.__setattr__(self, "subject", _member(SubjectKind, self.subject))
        from .template_kinds import FixKind

        object.__setattr__(self, "fix_kind", _member(FixKind, self.fix_kind))
        facts = {_member(Fact, f) for f in self.facts}
        order = sorted(facts, key=lambda f: (_FACT_ORDER.get(f, len(_FACT_ORDER)), str(f)))
        object.__setattr__(self, "facts", tuple(order))

    def __getstate__(self) -> dict[str, Any]:
        """A pickled (or deep-copied) reason is plain data: the live entries stay behind (they
        hold weak references to the program's classes)."""
        return {**self.__dict__, "entries": (None, None)}

    @property
    def said(self) -> tuple[Words, Words]:
        """The makings of the message and of the fix (``Words``): templates and their
        parameters, or words as given (a front-end's, a report's)."""
        return self.__dict__["_said_message"], self.__dict__["_said_fix"]

    def replace(self, **changes: Any) -> Reason:
        """This reason with ``changes``, its words still unmade (``dataclasses.replace`` would
        read them, and make them, to copy them)."""
        message, fix = self.said
        return dataclasses.replace(self, **{"message": message, "fix": fix, **changes})

    def with_facts(self, *facts: Fact) -> Reason:
        """This reason with ``facts`` added."""
        return self.replace(facts=(*self.facts, *facts))

    def fold_key(self) -> tuple[str, str, str, str]:
        """What makes two reasons the same when many retraces are folded into one line: kind,
        argument, path and fix (``before``/``after`` may differ: a counter 3 -> 4, then 4 -> 5);
        the fix's template where the fix quotes the new value (a placement)."""
        quotes = self.kind in FIX_QUOTES_VALUE and self.fix_kind != ""  # FixKind.UNSET
        return (self.kind, self.argument, self.path, self.fix_kind if quotes else self.fix)


class _Said:
    """``Reason.message`` / ``Reason.fix``: set as ``Words`` or a string (kept as given), read
    as the words :func:`~jitlens._core.words.words` makes, once per reason."""

    def __init__(self, index: int, name: str) -> None:
        self.index, self.key = index, f"_said_{name}"

    def __get__(self, obj: Reason | None, owner: Any = None) -> Any:
        if obj is None:
            return self
        made = obj.__dict__.get("_made")
        if made is None:
            made = obj.__dict__["_made"] = words(obj)
        return made[self.index]

    def __set__(self, obj: Reason, value: Words | str) -> None:
        obj.__dict__[self.key] = as_words(value, capped=False)
        obj.__dict__.pop("_made", None)


Reason.message = _Said(0, "message")  # type: ignore[assignment]
Reason.fix = _Said(1, "fix")  # type: ignore[assignment]


def _said(self: Any) -> tuple[Words, Words]:
    return self.__dict__["_said_message"], self.__dict__["_said_fix"]


def words_when_read(cls: Any) -> Any:
    """``cls`` (a frozen dataclass with ``message`` and ``fix`` fields: a stale cache hit, an
    audit finding) keeping the makings of its words as a ``Reason`` does: given as ``Words``
    (or a string, kept as given), made once, the first time they are read (``said``: the
    makings)."""
    cls.said = property(_said)
    cls.message = _Said(0, "message")
    cls.fix = _Said(1, "fix")
    return cls


def _member(enum_cls: Any, value: Any) -> Any:
    try:
        return enum_cls(value)
    except ValueError:
        return value


_FACT_ORDER: dict[Any, int] = {f: i for i, f in enumerate(Fact)}
