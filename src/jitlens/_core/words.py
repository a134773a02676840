"""A reason's words, made once, where they are printed: templates, their parameters, one function.

A :class:`~jitlens._core.reason.Reason` carries the makings of its words as data: a
:class:`Words` for its message and one for its fix, each a :class:`Template` (whose ``id`` is
the template's ``MessageKind`` / ``FixKind``) and the parameters to fill it with. Nothing is
formatted while a retrace is explained; :func:`words` makes the message and the fix the first
time a reason is printed (the live log, a budget's error, a report's text or JSON) and the
reason keeps them. Words read back from a report are kept as they were written
(``Words.given``): an old report renders as it did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .._record import record
from .code import words_unless_code

if TYPE_CHECKING:
    from .kinds import WordsKind
    from .template_kinds import FixKind, MessageKind

#: A message or a fix is at most this many characters.
LIMIT = 240


class Template(str):
    """The text of a message or fix template, with ``{name}`` fields, and its ``id``: the
    ``MessageKind`` / ``FixKind`` member it is. It is a ``str``: ``template.format(...)`` still
    makes words at once, for the front-ends that say their own."""

    id: MessageKind | FixKind | WordsKind

    def __new__(cls, id: MessageKind | FixKind | WordsKind, text: str) -> Template:
        self = super().__new__(cls, text)
        self.id = id
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickled with its id
        return (self.id, str(self))

    def words(self, **params: Any) -> Words:
        """The makings of this template's words with ``params``: made when printed."""
        return Words(self, tuple(params.items()))

    def as_written(self, **params: Any) -> Words:
        """As :meth:`words`, printed whole however long (a library's fix that must not be cut)."""
        return Words(self, tuple(params.items()), capped=False)


@record
class Words:
    """What a message or a fix is made of: a template and its parameters, or text as given.

    ``params`` may hold :class:`Words` (a part made from its own template). ``optional`` names a
    parameter left empty when the words would pass ``LIMIT`` (a fix's closing remark), and
    ``base`` words this one continues (a message made longer: "... (traced inside lax.scan)").
    """

    #: ``None``: ``text`` as given (a string a front-end made, or one read from a report).
    template: Template | None
    params: tuple[tuple[str, Any], ...] = ()
    text: str = ""
    capped: bool = True
    optional: str = ""
    base: Words | None = None

    @classmethod
    def given(cls, text: str, *, capped: bool = False) -> Words:
        """Words as they were given: kept as they are unless ``capped``."""
        return cls(None, text=text, capped=capped)

    @property
    def id(self) -> MessageKind | FixKind | WordsKind | None:
        """The template's id (``None`` for words as given)."""
        return None if self.template is None else self.template.id

    def make(self) -> str:
        """The words, on one line, capped at ``LIMIT`` characters unless made to be whole."""
        if self.template is None:
            text = self.text
        else:
            fields = {k: v.make() if isinstance(v, Words) else v for k, v in self.params}
            # a template with no parameters is printed as written (its braces are text)
            text = self.template.format(**fields) if fields else str(self.template)
            if self.optional and len(text) > LIMIT:
                text = self.template.format(**{**fields, self.optional: ""})
        if self.base is not None:
            text = self.base.make().rstrip(".") + text + "."
        return cap(text) if self.capped else text


def as_words(said: Words | str, *, capped: bool = True) -> Words:
    """``said`` as :class:`Words`: a template's makings as they are, a string as given."""
    if isinstance(said, Words):
        return said
    if isinstance(said, Template):
        return Words(said, capped=capped)
    return Words.given(said, capped=capped)


class Said(Protocol):
    """What has the makings of a message and a fix (a ``Reason``)."""

    @property
    def said(self) -> tuple[Words, Words]: ...


def words(reason: Said) -> tuple[str, str]:
    """The message and the fix of ``reason``, made from its makings (``Reason.said``): the one
    place a reason's words are made. A fix's code that does not parse is printed as words."""
    message, fix = reason.said
    return message.make(), words_unless_code(fix.make())


def cap(s: str) -> str:
    """``s`` on one line, at most ``LIMIT`` characters: cut after the last whole sentence or
    clause that fits, outside code (backticks), so that a fix is not cut mid-code."""
    s = " ".join(s.split())
    if len(s) <= LIMIT:
        return s
    ends = [
        i
        for i, c in enumerate(s[: LIMIT - 2])
        if c in ".;," and s[i + 1 : i + 2] == " " and s[:i].count("`") % 2 == 0
    ]
    if ends and ends[-1] > LIMIT // 2:
        return s[: ends[-1]] + (" …" if s[ends[-1]] != "." else ".")
    cut = LIMIT - 1
    if s[:cut].count("`") % 2:  # inside code: stop before it
        cut = max(s.rindex("`", 0, cut), LIMIT // 3)
    return s[:cut].rstrip() + "…"
