"""What flowed through the solution's ``nnx.jit`` calls: the grader's evidence beyond the counts.

Counts alone pass a solution that calls its jitted function on a dummy
input and computes the answer eagerly, or that returns a copy of the first
output. So the child records, for each ``nnx.jit`` call of a case: whether
its arguments held the case's ``x`` (the very array, or its values) and
arrays of the model's kernel and bias shapes (their values are the Numbers
criterion's business), whether it ran under
``jax.disable_jit()``, and its outputs.

Whether the returned array *is* the last call's output is decided by
provenance, never by equal values (``first * 1``, ``jnp.copy(first)`` and an
eager ``model(x)`` all have the last output's values): the returned object
must be one of a call's outputs, or made from one only by the conversions the
exercise allows, each noted as it happens (``provenance.CONVERSIONS``: reshape,
ravel, flatten, a same-dtype view, a lossless ``astype``, ``np.asarray`` / ``np.array`` /
``jnp.asarray``, ``jax.device_get``); a NumPy view is followed through its
``base`` to the JAX array whose buffer it exports, and a NumPy method's copy
(``np.asarray(y).flatten()``) is seen by a profile hook on that method. Any
other operation makes an array of unknown origin. The model applied outside
any jitted call (a Module's ``__call__`` on concrete arrays) is noted as an
eager forward pass. Whether the call's output is *computed from* x, the kernel and the
bias is read from the jaxpr the call ran (``dependence``): ``model(x) * 0 + answer`` is
the call's own output too. The parent judges these facts (``criteria``).

Runs in the child only, layered over the tracker's own ``__call__`` patch of
the nnx wrapper classes; it never changes what a call returns or raises.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from . import dependence, provenance

#: Calls recorded per case (a wrapper re-created in a loop makes many).
MAX_CALLS = 256
#: Links of ``base`` followed from a NumPy array back to the buffer it views.
MAX_BASES = 64
#: Eager forward passes recorded per case (the rest are counted).
MAX_EAGER = 8


class CaseEvidence:
    """The calls of one case and the arrays they took and gave."""

    def __init__(self, x: Any, param_shapes: Mapping[str, tuple[int, ...]]) -> None:
        self.x = x
        self.x_values = np.asarray(x)
        self.param_shapes = dict(param_shapes)
        self.calls: list[dict[str, Any]] = []
        self.outputs: list[list[Any]] = []  # strong references: their buffers stay unique
        #: What each call handed ``jax.jit`` and got back (``dependence.capture``), or None.
        self.inner: list[dependence.InnerCall | None] = []
        self.more = 0
        #: id(array made by a conversion) -> (the call whose output it came from, the array).
        self.derived: dict[int, tuple[int, Any]] = {}
        #: NumPy method copies of arrays of known origin: (call, source array), in order.
        self.copied: list[tuple[int, Any]] = []
        #: Modules applied outside any jitted call: (class name, where), capped.
        self.eager: list[tuple[str, str]] = []
        self.eager_more = 0
        #: Depth of recorded jitted calls running now (a forward pass inside one is not eager).
        self.inside = 0

    def origin(self, a: Any) -> int | None:
        """The call whose output ``a`` is, or was converted from (``None``: none known).

        A NumPy array's ``base`` chain is followed: a view of a view of the buffer
        ``np.asarray`` exported from a call's output comes from that call.
        """
        for _ in range(MAX_BASES):
            known = self.derived.get(id(a))
            if known is not None and known[1] is a:
                return known[0]
            for i in range(len(self.outputs) - 1, -1, -1):
                if any(leaf is a for leaf in self.outputs[i]):
                    return i
            base = getattr(a, "obj", None) if isinstance(a, memoryview) else None
            if base is None and isinstance(a, np.ndarray):
                base = a.base
            if base is None:
                return None
            a = base
        return None

    def converted(self, source: Any, result: Any) -> None:
        if result is source:
            return
        call = self.origin(source)
        if call is not None:
            self.derived[id(result)] = (call, result)

    def numpy_copy(self, source: Any) -> None:
        """A NumPy method (``flatten``...) ran on ``source``: its copy may be returned."""
        call = self.origin(source)
        if call is not None and len(self.copied) < MAX_CALLS:
            self.copied.append((call, source))

    def copy_origin(self, out: Any) -> int | None:
        """The call whose output a NumPy method copied into ``out`` (the same values in order)."""
        if not isinstance(out, np.ndarray) or out.base is not None:
            return None
        for call, source in reversed(self.copied):
            with contextlib.suppress(Exception):
                if source.size == out.size and provenance.lossless(source, out):
                    if np.array_equal(np.ravel(source), np.ravel(out)):
                        return call
        return None

    def eager_forward(self, module: Any, where: str) -> None:
        if len(self.eager) < MAX_EAGER:
            self.eager.append((type(module).__qualname__, where))
        else:
            self.eager_more += 1

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

    def done(
        self,
        wrapper: Any,
        call: dict[str, Any],
        out: Any,
        disabled: bool,
        inner: list[dependence.InnerCall],
    ) -> None:
        if not call:
            return
        call["disabled"] = disabled
        call["ids"] = _record_ids(wrapper)
        self.calls.append(call)
        self.outputs.append([leaf for leaf in _arrays(out)])
        self.inner.append(inner[0] if inner else None)

    def returned(self, out: Any) -> dict[str, Any]:
        """How ``out`` relates to the calls' outputs: which call, and how (same/converted).

        Equal values are reported (``equal_to_last``) to word the verdict, never
        to pass it: only identity and the noted conversions relate ``out`` to a call.
        """
        found: dict[str, Any] = {"type": f"{type(out).__module__}.{type(out).__qualname__}"}
        for i in range(len(self.outputs) - 1, -1, -1):
            if any(leaf is out for leaf in self.outputs[i]):
                return found | {"call": i, "how": "same", "depends": self.depends(i, [out])}
        call = self.origin(out)
        if call is None:
            call = self.copy_origin(out)
        if call is not None:
            size = int(np.size(out))
            made_from = [leaf for leaf in self.outputs[call] if int(np.size(leaf)) == size]
            return found | {
                "call": call,
                "how": "converted",
                "depends": self.depends(call, made_from),
            }
        if self.outputs and self.outputs[-1]:
            last = self.outputs[-1][0]
            with contextlib.suppress(Exception):
                same = np.array_equal(np.asarray(out).reshape(-1), np.asarray(last).reshape(-1))
                found["equal_to_last"] = bool(same)
        found["numpy"] = isinstance(out, np.ndarray)
        return found

    def depends(self, call: int, made_from: list[Any]) -> dict[str, Any]:
        """Whether the outputs ``made_from`` of call ``call`` depend on x, the kernel and the
        bias (``dependence.depends``), or why that is not known."""
        inner = self.inner[call] if call < len(self.inner) else None
        if inner is None:
            return {"error": "what the call handed jax.jit was not recorded"}
        try:
            return dependence.depends(inner, made_from, self.x_values, self.param_shapes)
        except Exception as exc:  # an odd program: say what, the parent judges
            return {"error": f"{type(exc).__name__}: {exc}"[:200]}

    def summary(self, out: Any, returned: bool) -> dict[str, Any]:
        data: dict[str, Any] = {"calls": self.calls, "more_calls": self.more}
        if self.eager:
            data["eager_forward"] = [list(e) for e in self.eager]
            data["eager_forward_more"] = self.eager_more
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
            case.inside += 1
            try:
                with dependence.capture(wrapper) as inner:
                    out = original(wrapper, *args, **kwargs)
            finally:
                case.inside -= 1
            with contextlib.suppress(Exception):
                case.done(wrapper, call, out, disabled, inner)
            return out

        __call__.__jitlens_evidence__ = True  # type: ignore[attr-defined]
        return __call__

    @contextlib.contextmanager
    def recording(
        self, x: Any, param_shapes: Mapping[str, tuple[int, ...]]
    ) -> Iterator[CaseEvidence]:
        self._install()  # the tracker may have patched the classes since (a lazy front-end)
        self.case = case = CaseEvidence(x, param_shapes)
        undo = provenance.follow_conversions(case) + provenance.watch_modules(case)
        previous = sys.getprofile()
        sys.setprofile(provenance.numpy_copies(case, previous))
        try:
            yield case
        finally:
            sys.setprofile(previous)
            self.case = None
            for owner, name, original in reversed(undo):
                with contextlib.suppress(Exception):
                    setattr(owner, name, original)
