"""What flowed through the solution's ``nnx.jit`` calls: the grader's evidence beyond the counts.

Counts alone pass a solution that calls its jitted function on a dummy
input and computes the answer eagerly, or that returns a copy of the first
output. So the child records, for each ``nnx.jit`` call of a case: whether
its arguments held the case's ``x`` (the very array, or its values) and
arrays of the model's kernel and bias shapes (their values are the Numbers
criterion's business), whether it ran under
``jax.disable_jit()``, and its outputs; after the case it relates the
returned array to those outputs (the same array, a view of its memory, or
only equal values). The parent judges these facts (``criteria``).

Runs in the child only, layered over the tracker's own ``__call__`` patch of
the nnx wrapper classes; it never changes what a call returns or raises.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

#: Calls recorded per case (a wrapper re-created in a loop makes many).
MAX_CALLS = 256


class CaseEvidence:
    """The calls of one case and the arrays they took and gave."""

    def __init__(self, x: Any, param_shapes: Mapping[str, tuple[int, ...]]) -> None:
        self.x = x
        self.x_values = np.asarray(x)
        self.param_shapes = dict(param_shapes)
        self.calls: list[dict[str, Any]] = []
        self.outputs: list[list[Any]] = []  # strong references: their buffers stay unique
        self.more = 0
        #: id(array made by a reshape) -> (the call whose output it came from, the array).
        self.derived: dict[int, tuple[int, Any]] = {}

    def origin(self, a: Any) -> int | None:
        """The call whose output ``a`` is, or was reshaped from (``None``: none known)."""
        known = self.derived.get(id(a))
        if known is not None and known[1] is a:
            return known[0]
        for i in range(len(self.outputs) - 1, -1, -1):
            if any(leaf is a for leaf in self.outputs[i]):
                return i
        return None

    def reshaped(self, source: Any, result: Any) -> None:
        call = self.origin(source)
        if call is not None:
            self.derived[id(result)] = (call, result)

    def note(self, wrapper: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(self.calls) >= MAX_CALLS:
            self.more += 1
            return {}
        leaves = _arrays((args, kwargs))
        call: dict[str, Any] = {
            "qualname": str(getattr(wrapper, "__qualname__", "")),
            "x": any(leaf is self.x or _equal(leaf, self.x_values) for leaf in leaves),
        }
        for name, shape in self.param_shapes.items():
            call[name] = any(_shape(leaf) == tuple(shape) for leaf in leaves)
        return call

    def done(self, wrapper: Any, call: dict[str, Any], out: Any, disabled: bool) -> None:
        if not call:
            return
        call["disabled"] = disabled
        call["ids"] = _record_ids(wrapper)
        self.calls.append(call)
        self.outputs.append([leaf for leaf in _arrays(out)])

    def returned(self, out: Any) -> dict[str, Any]:
        """How ``out`` relates to the calls' outputs: which call, and how (same/view/equal)."""
        found: dict[str, Any] = {"type": f"{type(out).__module__}.{type(out).__qualname__}"}
        known = self.derived.get(id(out))
        if known is not None and known[1] is out:
            return found | {"call": known[0], "how": "reshaped"}
        pointer = _pointer(out)
        for i in range(len(self.outputs) - 1, -1, -1):
            for leaf in self.outputs[i]:
                if leaf is out:
                    return found | {"call": i, "how": "same"}
                if pointer is not None and _pointer(leaf) == pointer:
                    return found | {"call": i, "how": "view"}
        if self.outputs and self.outputs[-1]:
            last = self.outputs[-1][0]
            with contextlib.suppress(Exception):
                same = np.array_equal(np.asarray(out).reshape(-1), np.asarray(last).reshape(-1))
                found["equal_to_last"] = bool(same)
        found["numpy"] = isinstance(out, np.ndarray)
        return found

    def summary(self, out: Any, returned: bool) -> dict[str, Any]:
        data: dict[str, Any] = {"calls": self.calls, "more_calls": self.more}
        if returned:
            try:
                data["returned"] = self.returned(out)
            except Exception as exc:  # an odd return value: say what, the parent judges
                data["returned"] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        return data


def _shape(leaf: Any) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in leaf.shape)
    except Exception:
        return ()


def _equal(leaf: Any, values: np.ndarray) -> bool:
    if _shape(leaf) != values.shape:
        return False
    try:
        return bool(np.array_equal(np.asarray(leaf), values))
    except Exception:  # a deleted (donated) buffer, a tracer: not the value
        return False


def _arrays(tree: Any) -> list[Any]:
    """The array leaves of ``tree``, through nnx Modules and Variables."""
    import jax

    from .._compat import is_graph_node

    out = []
    for leaf in jax.tree.leaves(tree, is_leaf=is_graph_node):
        if is_graph_node(leaf):
            from flax import nnx

            try:
                out += jax.tree.leaves(nnx.state(leaf))
            except Exception:
                with contextlib.suppress(Exception):
                    out.append(leaf[...])
        elif hasattr(leaf, "shape"):
            out.append(leaf)
    return out


def _pointer(a: Any) -> int | None:
    try:
        if isinstance(a, np.ndarray):
            return int(a.__array_interface__["data"][0])
        return int(a.unsafe_buffer_pointer())
    except Exception:
        return None


def _record_ids(wrapper: Any) -> list[int]:
    """The tracker's record ids of ``wrapper`` (``FunctionReport.id``), to match the chosen group."""
    recs = getattr(wrapper, "__dict__", {}).get("_jitlens_records")
    try:
        return [int(r.id) for r in recs if r is not None]
    except Exception:
        return []


#: Why no call can be recorded when flax exposes none of the wrapper classes jitlens knows.
NO_WRAPPERS = "flax.nnx {version} has none of the nnx.jit wrapper classes jitlens records"


class Recorder:
    """Installs the evidence layer over the nnx wrapper classes' ``__call__`` (once).

    jitlens reads flax's wrapper classes only once ``flax.nnx`` is imported
    (``flax_api.load``). The child imports it while computing the references,
    but not when the parent already has them, so the recorder imports it
    itself: the exercise is an ``nnx.jit`` one, and its solutions import flax.
    """

    def __init__(self) -> None:
        self.case: CaseEvidence | None = None
        self.error = ""
        self._install()

    def _install(self) -> None:
        """Layer over the current ``__call__`` of each wrapper class, unless already on top."""
        try:
            import flax.nnx  # noqa: F401  (the tracker's front-end installs on this import)
            import jax

            from .._compat import flax_api

            flax_api.load()
            if not flax_api.NNX_WRAPPERS:
                raise LookupError(NO_WRAPPERS.format(version=flax_api.flax_version()))
            for cls, _kind in flax_api.NNX_WRAPPERS:
                if not getattr(cls.__call__, "__jitlens_evidence__", False):
                    cls.__call__ = self._wrap(cls.__call__, jax)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def _wrap(self, original: Any, jax: Any) -> Any:
        recorder = self

        def __call__(wrapper: Any, *args: Any, **kwargs: Any) -> Any:
            case = recorder.case
            if case is None:
                return original(wrapper, *args, **kwargs)
            try:
                call = case.note(wrapper, args, kwargs)
                disabled = bool(jax.config.jax_disable_jit)
            except Exception:
                call, disabled = {}, False
            out = original(wrapper, *args, **kwargs)
            with contextlib.suppress(Exception):
                case.done(wrapper, call, out, disabled)
            return out

        __call__.__jitlens_evidence__ = True  # type: ignore[attr-defined]
        return __call__

    @contextlib.contextmanager
    def recording(
        self, x: Any, param_shapes: Mapping[str, tuple[int, ...]]
    ) -> Iterator[CaseEvidence]:
        self._install()  # the tracker may have patched the classes since (a lazy front-end)
        self.case = case = CaseEvidence(x, param_shapes)
        undo = _follow_reshapes(case)
        try:
            yield case
        finally:
            self.case = None
            for owner, name, original in undo:
                with contextlib.suppress(Exception):
                    setattr(owner, name, original)


#: The ways a solution flattens its output: ``out.reshape(-1)``, ``jnp.ravel(out)``...
RESHAPES = ("reshape", "ravel", "flatten")


def _follow_reshapes(case: CaseEvidence) -> list[tuple[Any, str, Any]]:
    """While a case runs, note which call's output each reshaped array came from."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        import jax.numpy as jnp

        owners = [(type(jnp.zeros(())), RESHAPES), (jnp, ("reshape", "ravel"))]
    except Exception:
        return undo
    for owner, names in owners:
        for name in names:
            original = getattr(owner, name, None)
            if original is None:
                continue
            with contextlib.suppress(Exception):
                setattr(owner, name, _noting(original, case))
                undo.append((owner, name, original))
    return undo


def _noting(original: Any, case: CaseEvidence) -> Any:
    def reshape(a: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(a, *args, **kwargs)
        with contextlib.suppress(Exception):
            case.reshaped(a, out)
        return out

    return reshape
