"""What every reason kind's words share: making a reason, rewording one, the 240-character cap.

The templates and builders of each kind are in that kind's module of this package. A builder
makes no words: it gives the reason the makings of them (``Template.words(**params)``: a
template and its parameters), and ``_core.words.words`` makes them when the reason is printed.
Here are the helpers every kind uses: ``_reason`` (a new reason), ``with_fix`` (the same reason
with another fix template and its parameters), and the cap (``LIMIT``, ``_cap``).

The cap shortens a message only: a fix is printed whole, however long (a fix cut mid-sentence,
"... does what `nuts.step` does (blackjax/base.py:203) with them …", cannot be applied); a
template that offers a shorter form where a long one would not read well still says so
(``Words.optional``, the checks against ``LIMIT``), and the terminal wraps what is left.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..._peek import is_a
from ..kinds import Fact, SubjectKind
from ..reason import Reason
from ..template_kinds import FixKind
from ..words import LIMIT, Template, Words, as_words
from ..words import cap as _cap

__all__ = ["LIMIT", "Template", "Words", "_cap"]


def with_article(noun: str) -> str:
    """``noun`` with its indefinite article: ``an int``, ``a list``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _reason(
    kind: str,
    arg: str,
    path: str,
    before: str,
    after: str,
    message: Words | str,
    fix: Words | str,
    *,
    fix_kind: FixKind = FixKind.UNSET,
    subject: SubjectKind = SubjectKind.UNSET,
    facts: tuple[Fact, ...] = (),
) -> Reason:
    """A reason with the makings of its words (the message capped when made, a string is words
    as given, capped too; the fix whole); ``fix_kind`` names the template ``fix`` is made from."""
    return Reason(
        kind, arg, path, before, after, as_words(message), _whole(fix),
        subject=subject, fix_kind=fix_kind, facts=facts,
    )  # fmt: skip


def with_fix(r: Reason, fix_kind: FixKind, fix: Words | str, **changes: Any) -> Reason:
    """``r`` with another fix: the template ``fix_kind`` and its parameters (``fix``), and any
    other ``changes`` (a new ``message`` likewise): the makings and the template travel together."""
    if "message" in changes:
        changes["message"] = as_words(changes["message"])
    return r.replace(fix=_whole(fix), fix_kind=fix_kind, **changes)


def _arg_or_path(arg: str, path: str) -> str:
    return path or arg


_DTYPES = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
    "i8": "int8",
    "u8": "uint8",
    "u32": "uint32",
    "bool": "bool_",
    "i16": "int16",
}


def _jnp_dtype(short: str) -> str:
    return _DTYPES.get(short, short)


def _wider(a: str, b: str) -> str:
    """The dtype both values fit in (``int32`` and ``float32`` -> ``float32``)."""
    try:
        import jax.numpy as jnp

        return str(jnp.promote_types(_jnp_dtype(a).rstrip("_"), _jnp_dtype(b).rstrip("_")))
    except Exception:
        return _jnp_dtype(b)


def _equal(equal: bool) -> str:
    return " this very key" if equal else ""


def _free(free: tuple[str, ...]) -> str:
    return f" ({', '.join(f'`{v}`' for v in free[:4])})" if free else ""


def _with_fix(r: Reason, fix_kind: FixKind, fix: Words | str, **changes: Any) -> Reason:
    """As :func:`with_fix`, the words printed whole however long (a library's fix)."""
    if "message" in changes:
        changes["message"] = _whole(changes["message"])
    return r.replace(fix=_whole(fix), fix_kind=fix_kind, **changes)


def _whole(said: Words | str) -> Words:
    return dataclasses.replace(as_words(said), capped=False)


def is_nan(value: Any) -> bool:
    """Is ``value`` a float NaN (Python or NumPy scalar, real or complex)?"""
    import numpy as np

    if not is_a(value, (float, complex, np.floating, np.complexfloating)):
        return False  # NaT (a datetime) is not NaN
    try:
        return bool(value != value)
    except Exception:
        return False
