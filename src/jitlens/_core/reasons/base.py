"""What every reason kind's words share: the 240-character cap, making a reason, rewording one.

The templates and builders of each kind are in that kind's module of this package; here are
the helpers they all use: ``_reason`` (a new reason with its words capped), ``with_fix`` (the
same reason with another fix template's words), ``LIMIT`` and ``_cap``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..kinds import Fact, FixKind, SubjectKind
from ..reason import Reason

LIMIT = 240


def with_article(noun: str) -> str:
    """``noun`` with its indefinite article: ``an int``, ``a list``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _cap(s: str) -> str:
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


def _reason(
    kind: str,
    arg: str,
    path: str,
    before: str,
    after: str,
    message: str,
    fix: str,
    *,
    fix_kind: FixKind = FixKind.UNSET,
    subject: SubjectKind = SubjectKind.UNSET,
    facts: tuple[Fact, ...] = (),
) -> Reason:
    """A reason with its words capped; ``fix_kind`` names the template ``fix`` was made from."""
    return Reason(
        kind, arg, path, before, after, _cap(message), _cap(fix),
        subject=subject, fix_kind=fix_kind, facts=facts,
    )  # fmt: skip


def with_fix(r: Reason, fix_kind: FixKind, fix: str, **changes: Any) -> Reason:
    """``r`` with another fix (and any other ``changes``): the words and the template that made
    them travel together."""
    return dataclasses.replace(r, fix=_cap(fix), fix_kind=fix_kind, **changes)


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


def _with_fix(r: Reason, fix_kind: FixKind, fix: str, **changes: Any) -> Reason:
    """``r`` with another fix made from the ``fix_kind`` template (as written: not capped)."""
    return dataclasses.replace(r, fix=fix, fix_kind=fix_kind, **changes)
