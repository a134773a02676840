"""The ``unknown`` reason: the last resort, treated as a bug; or an equal key with no evidence of a cause."""

from __future__ import annotations

from ..kinds import Fact, ReasonKind
from ..reason import Reason
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _reason,
)
from .spec import KindSpec

UNKNOWN_MSG = Template(
    M.UNKNOWN, "{path} differs ({before} -> {after}) in a way jitlens cannot classify."
)


UNKNOWN_FIX = Template(
    K.UNKNOWN,
    "If this retrace is unexpected, please report it to jitlens with the two values; it stops "
    "once {path} is identical between calls.",
)


def unknown(arg: str, path: str, before: str, after: str) -> Reason:
    return _reason(
        ReasonKind.UNKNOWN, arg, path, before, after,
        UNKNOWN_MSG.words(path=f"`{path}`", before=before, after=after),
        UNKNOWN_FIX.words(path=path), fix_kind=K.UNKNOWN,
    )  # fmt: skip


NO_DIFFERENCE_MSG = Template(
    M.NO_DIFFERENCE,
    "An equal key was compiled before: jitlens compared {compared} and found no difference, saw "
    "no clear_cache() / jax.clear_caches(), and JAX's trace cache is not full; the cause is unknown.",
)


NO_DIFFERENCE_FIX = Template(
    K.NO_DIFFERENCE,
    "If it repeats, run once with `jax.config.update('jax_explain_cache_misses', True)` (JAX "
    "prints its own key diff) and report both outputs to jitlens.",
)


def no_difference(compared: str) -> Reason:
    """An equal key retraced with no evidence of a cause: say what was compared, guess nothing."""
    msg = NO_DIFFERENCE_MSG.words(compared=compared)
    return _reason(
        ReasonKind.UNKNOWN, "", "", "equal key", "retraced", msg, NO_DIFFERENCE_FIX,
        fix_kind=K.NO_DIFFERENCE, facts=(Fact.EQUAL_KEY,),
    )  # fmt: skip


SPEC = KindSpec(
    ReasonKind.UNKNOWN,
    what="last resort, treated as a bug; also an equal key with no evidence of a cause, listing "
    "what was compared",
    example="equal key -> retraced",
    fixes={K.UNKNOWN: UNKNOWN_FIX, K.NO_DIFFERENCE: NO_DIFFERENCE_FIX},
    messages=(UNKNOWN_MSG, NO_DIFFERENCE_MSG),
)
