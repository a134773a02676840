"""Reading plain JSON into the report's frozen dataclasses: one error per bad field.

A report read from disk is untrusted: each reader checks a field's presence and
type and says where it went wrong (``functions[0].events[2].kind``) with a
:class:`ReportError`, instead of failing deep inside a renderer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .._errors import ReportError


def build_fields(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise ReportError(f"{where}: expected an object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            raise ReportError(f"{where}: missing field {f.name!r}")
        kwargs[f.name] = data[f.name]
    return kwargs


def check_type(value: Any, types: tuple[type, ...], where: str) -> None:
    if isinstance(value, bool) and bool not in types:
        raise ReportError(f"{where}: expected {'/'.join(t.__name__ for t in types)}, got bool")
    if not isinstance(value, types):
        raise ReportError(
            f"{where}: expected {'/'.join(t.__name__ for t in types)}, got {type(value).__name__}"
        )


NUM = (int, float)


def as_list(v: Any, where: str) -> list[Any]:
    if not isinstance(v, (list, tuple)):
        raise ReportError(f"{where}: expected a list, got {type(v).__name__}")
    return list(v)
