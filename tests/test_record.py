"""``record`` shares ``__repr__``/``__eq__``/``__hash__`` instead of generating them per class
(start-up cost): every jitlens class made with it must behave as ``dataclasses`` would have made it."""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil

import pytest

import jitlens
from jitlens import _record


def _record_classes() -> list[type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(jitlens.__path__, "jitlens."):
        if info.name.endswith(("sitecustomize", "__main__")):
            continue  # the bootstrap hook activates jitlens; __main__ runs the CLI
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__dict__.get("__repr__") is _record._repr:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


RECORDS = _record_classes()


def _reference(cls: type) -> type:
    """The class ``dataclasses.dataclass`` would have made of the same fields."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    fields = [
        (f.name, f.type, dataclasses.field(repr=f.repr, compare=f.compare, hash=f.hash))
        for f in dataclasses.fields(cls)
    ]
    ref = dataclasses.make_dataclass(cls.__name__, fields, frozen=params.frozen)
    ref.__qualname__ = cls.__qualname__
    return ref


def _instance(cls: type, values: list[object]) -> object:
    obj = object.__new__(cls)  # no __post_init__ checks: any value per field
    for f, value in zip(dataclasses.fields(cls), values, strict=True):
        object.__setattr__(obj, f.name, value)
    return obj


def test_the_start_path_classes_are_records() -> None:
    names = {c.__qualname__ for c in RECORDS}
    assert {"Report", "FunctionReport", "Event", "Reason", "Counts", "Key", "TraceFrame"} <= names


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_record_behaves_as_its_dataclass(cls: type) -> None:
    ref = _reference(cls)
    n = len(dataclasses.fields(cls))
    values = [(i, f"v{i}") for i in range(n)]
    a, ra = _instance(cls, values), _instance(ref, values)
    assert repr(a) == repr(ra)
    assert (a == _instance(cls, list(values))) is True
    for i in range(n):  # each field changed alone: equal exactly when the dataclass says so
        other = [*values[:i], ("changed",), *values[i + 1 :]]
        assert (a == _instance(cls, other)) == (ra == _instance(ref, other))
    nan = [math.nan, *values[1:]]  # one NaN object in two instances: equal up to Python 3.12
    assert (_instance(cls, nan) == _instance(cls, nan)) == (
        _instance(ref, nan) == _instance(ref, nan)
    )
    assert a.__eq__(object()) is NotImplemented
    assert a.__eq__(ra) is NotImplemented  # another class with the same fields
    if ref.__hash__ is None:
        with pytest.raises(TypeError):
            hash(a)
    else:
        assert hash(a) == hash(ra)
    if cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        with pytest.raises(dataclasses.FrozenInstanceError):
            object.__getattribute__(a, "__setattr__")(dataclasses.fields(cls)[0].name, 1)


def test_a_record_that_contains_itself_shows_an_ellipsis() -> None:
    @_record.record(frozen=False)
    class Node:
        child: object = None

    node = Node()
    node.child = node
    assert (
        repr(node)
        == "test_a_record_that_contains_itself_shows_an_ellipsis.<locals>.Node(child=...)"
    )
