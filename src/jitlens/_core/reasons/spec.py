"""What one reason kind is, as one typed record: its words, its place in ranking, its doc row.

Each module of this package is one :class:`~jitlens._core.kinds.ReasonKind`: it holds the
kind's message and fix templates, the builders that make its reasons, and at its end its
``SPEC``, a :class:`KindSpec`. The package's ``SPECS`` lists them in the enum's order; the
ranking reads ``structure`` from it, the documentation's reason table reads ``what`` and
``example`` (``docs/_ext/jitlens_reference.py``), and ``tests/test_fixes.py`` checks that every
kind has one spec and every ``FixKind`` belongs to exactly one kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..kinds import ReasonKind, reason_order
from ..template_kinds import REWORDED, FixKind


@dataclasses.dataclass(frozen=True)
class KindSpec:
    """One reason kind: its templates, what ranking reads of it, and its documentation row."""

    kind: ReasonKind
    #: What changed, in words: the reference page's "what changed" cell.
    what: str
    #: An example of ``before -> after`` (the reference page's third cell).
    example: str
    #: The fix templates of this kind's reasons, by the ``FixKind`` each one is.
    fixes: Mapping[FixKind, str]
    #: The message templates (and the parts a message is assembled from).
    messages: tuple[str, ...]
    #: A change of structure (a pytree's, an NNX graph's): a library may have made it (an
    #: optax optimizer's state, a layer's arguments), and then it leads the ranking.
    structure: bool = False

    @property
    def order(self) -> int:
        """Where this kind's reasons sort among one retrace's: most decisive first (the
        declaration order of ``ReasonKind``, read by ``kinds.reason_order``)."""
        return reason_order(self.kind)

    @property
    def reworded(self) -> frozenset[FixKind]:
        """The fix kinds a library's words give reasons of this kind (``kinds.REWORDED``: an
        ``eqx.filter_jit`` static, a pmap's function rebuilt per epoch ...)."""
        return frozenset(k for k, kind in REWORDED.items() if kind is self.kind)

    @property
    def fix_kinds(self) -> frozenset[FixKind]:
        """Every fix kind a reason of this kind can carry."""
        return frozenset(self.fixes) | self.reworded
