"""``record`` shares ``__repr__``/``__eq__``/``__hash__`` instead of generating them per class
(start-up cost): every jitlens class made with it must behave as ``dataclasses`` would have made it."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import math
import pickle
import pkgutil
import textwrap

import pytest

import jitlens
from jitlens import _record
from tests.conftest import run_python


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
        (
            f.name,
            f.type,
            dataclasses.field(
                default=f.default,
                default_factory=f.default_factory,
                repr=f.repr,
                compare=f.compare,
                hash=f.hash,
            ),
        )
        for f in dataclasses.fields(cls)
    ]
    ref = dataclasses.make_dataclass(cls.__name__, fields, frozen=params.frozen)
    ref.__qualname__ = cls.__qualname__
    return ref


def _required(cls: type) -> list[dataclasses.Field[object]]:
    return [
        f
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


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


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_record_init_is_its_dataclass_init(cls: type) -> None:
    """The signature (before and after ``__init__`` is made) and what a call sets."""
    ref = _reference(cls)
    assert str(inspect.signature(cls)) == str(inspect.signature(ref))
    assert str(inspect.signature(cls.__init__)) == str(inspect.signature(ref.__init__))
    assert inspect.isfunction(cls.__dict__["__init__"])  # made by the look at the signature
    if hasattr(cls, "__post_init__"):
        return  # its own checks refuse made-up values; its tests build real ones
    values = [(i, f"v{i}") for i in range(len(_required(cls)))]
    a, ra = cls(*values), ref(*values)
    assert repr(a) == repr(ra)
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:  # a new object per instance
            assert getattr(a, f.name) is not getattr(cls(*values), f.name)


def test_init_is_made_at_the_first_instance_as_dataclasses_makes_it() -> None:
    @_record.record
    class Point:
        """A point."""

        x: int
        y: list[int] = dataclasses.field(default_factory=list)
        z: str = "z"

        def __post_init__(self) -> None:
            object.__setattr__(self, "z", self.z * 2)

    @dataclasses.dataclass(frozen=True)
    class Ref:
        x: int
        y: list[int] = dataclasses.field(default_factory=list)
        z: str = "z"

        def __post_init__(self) -> None:
            object.__setattr__(self, "z", self.z * 2)

    assert isinstance(Point.__dict__["__init__"], _record._LazyInit)  # nothing compiled yet
    p = Point(1)
    assert inspect.isfunction(Point.__dict__["__init__"])
    assert Point.__init__.__qualname__ == f"{Point.__qualname__}.__init__"
    assert Point.__init__.__module__ == __name__
    assert (p.x, p.y, p.z) == (1, [], "zz") == (Ref(1).x, Ref(1).y, Ref(1).z)
    assert Point(1).y is not p.y and Point(2, [3], "a") == Point(2, [3], "a")
    assert str(inspect.signature(Point)) == str(inspect.signature(Ref))
    with pytest.raises(TypeError) as ours:
        Point()
    with pytest.raises(TypeError) as theirs:
        Ref()
    assert str(ours.value) == str(theirs.value).replace("Ref", "Point")
    assert copy.copy(p) == p and copy.deepcopy(p) == p
    assert dataclasses.replace(p, x=5).x == 5
    assert Point.__match_args__ == Ref.__match_args__ == ("x", "y", "z")


@_record.record
class Pickled:
    """A frozen record at module level, which pickle can find."""

    a: int
    b: tuple[int, ...] = ()


def test_a_frozen_record_pickles() -> None:
    for obj in (Pickled(1), Pickled(2, (3,))):
        assert pickle.loads(pickle.dumps(obj)) == obj
        assert copy.deepcopy(obj) == obj


def test_a_frozen_record_refuses_what_a_frozen_dataclass_refuses() -> None:
    @_record.record
    class Frozen:
        """Frozen."""

        a: int

    @dataclasses.dataclass(frozen=True)
    class Ref:
        a: int

    class Sub(Frozen):
        pass

    class RefSub(Ref):
        pass

    def outcome(action: object) -> str:
        try:
            action()  # type: ignore[operator]
        except dataclasses.FrozenInstanceError as error:
            return f"refused: {error}"
        return "allowed"

    for make_ours, make_ref in ((Frozen, Ref), (Sub, RefSub)):
        ours, ref = make_ours(1), make_ref(1)
        for name in ("a", "other"):
            assert outcome(lambda o=ours, n=name: setattr(o, n, 2)) == outcome(
                lambda o=ref, n=name: setattr(o, n, 2)
            )
            assert outcome(lambda o=ours, n=name: delattr(o, n)) == outcome(
                lambda o=ref, n=name: delattr(o, n)
            )
    assert Frozen.__setattr__.__qualname__.endswith("Frozen.__setattr__")
    assert Frozen.__dataclass_params__.frozen and Frozen.__dataclass_params__.init


def test_a_record_without_a_docstring_gets_dataclasses_doc() -> None:
    @_record.record(frozen=False)
    class Plain:
        a: int
        self: str = "s"  # a field named self: __init__'s own first parameter is renamed

    @dataclasses.dataclass
    class Ref:
        a: int
        self: str = "s"

    assert (
        Plain.__doc__ == "Plain(a: 'int', self: 'str' = 's')" == Ref.__doc__.replace("Ref", "Plain")
    )
    assert Plain(1, "t").self == "t"


def test_record_refuses_fields_it_does_not_make() -> None:
    with pytest.raises(TypeError, match="keyword-only"):

        @_record.record
        class KwOnly:
            """Keyword-only."""

            a: int = dataclasses.field(kw_only=True)


def test_a_tracked_start_compiles_no_record_method() -> None:
    """``dataclasses`` compiles each generated method; jitlens' start (a fresh process that
    imports JAX under tracking) compiles none of a record's: only ``slots=True`` classes'."""
    code = textwrap.dedent(
        """
        import dataclasses, sys
        import jax
        made = []
        create = dataclasses._create_fn
        def counted(name, *args, **kwargs):
            made.append(name)
            return create(name, *args, **kwargs)
        dataclasses._create_fn = counted
        import jitlens._track.tracker
        from jitlens import _record
        print(len(made), sorted(set(made)))
        """
    )
    if not hasattr(dataclasses, "_create_fn"):
        pytest.skip("this Python's dataclasses compiles through another function")
    result = run_python(["-c", code], env={"JITLENS": ""})
    assert result.returncode == 0, result.stderr
    count = int(result.stdout.split()[0])
    slotted = sum(
        1 for c in RECORDS if "__slots__" in c.__dict__ and c.__module__.startswith("jitlens._")
    )
    assert count <= 3 * slotted, result.stdout  # before: 71 compiles, 10 ms
