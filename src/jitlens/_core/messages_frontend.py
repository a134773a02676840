"""Front-end words (placeholder)."""
from __future__ import annotations
from typing import Any
def frontend_words(kind: str, reasons: list[Any], key: Any) -> list[Any]:
    return reasons
