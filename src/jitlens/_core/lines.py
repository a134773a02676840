"""One line of an explanation: its indent, its words and what it is, never how it looks.

The explanations (a retrace, a stale hit, an advice, a divergence of a merged
view) are built as :class:`Line` s by the layers that know what they say; the
renderers decide what each :class:`Role` looks like, in one table
(``_render.text.STYLES``), as rich's ``Segment`` keeps text apart from its
style. A log record or an error message prints the same lines without any
style; a test can ask a line what it is (``line.role is Role.FIX``) instead of
which colour it got.
"""

from __future__ import annotations

from enum import StrEnum

from .._record import record


class Role(StrEnum):
    """What a line of an explanation is, for the renderer to show it as such."""

    #: A headline: a function's summary (``f  retraced 2x, 0.31 s lost``), a verdict or a
    #: section that asks for attention.
    HEADLINE = "headline"
    #: A verdict that all is well (a merged view whose processes agree).
    HEADLINE_OK = "headline_ok"
    #: A headline of something wrong to act on: a stale cache hit, a divergence.
    ALERT = "alert"
    #: The title of a section of the report (advice, compile cost).
    SECTION = "section"
    #: The header of one event: where a retrace happened, which one, its seconds and call.
    EVENT = "event"
    #: What a block is about: the argument path that changed, the function an advice is
    #: for, the processes that took one branch.
    SUBJECT = "subject"
    #: What was seen: values before -> after, measured figures.
    EVIDENCE = "evidence"
    #: Why it happened: a reason's message.
    CAUSE = "cause"
    #: What to do: a ``fix:`` line.
    FIX = "fix"
    #: A line of code a fix ends with, to copy as it is: never wrapped (a broken line of code
    #: is no code; a terminal narrower than it wraps it, and the copy stays whole).
    CODE = "code"
    #: Something that is expected and fine (a bounded set of buckets, no retraces).
    OK = "ok"
    #: A warning about what jitlens or the run could not see.
    WARNING = "warning"
    #: A secondary remark: what was left out, what else there is, a note on the whole.
    NOTE = "note"
    #: Text with no role of its own (a blank separator).
    TEXT = "text"


@record(slots=True)
class Line:
    """One logical line: wrapped and styled by the renderer, printed as is in a log.

    Example:
        >>> Line(2, "fix: pass `n` as an array", Role.FIX).indented(2)
        Line(indent=4, text='fix: pass `n` as an array', role=<Role.FIX: 'fix'>)
    """

    #: Spaces before the text (and before each of its wrapped continuation lines).
    indent: int
    text: str
    role: Role

    def indented(self, by: int) -> Line:
        """The same line ``by`` more spaces to the right (a block nested in another)."""
        return Line(self.indent + by, self.text, self.role)
