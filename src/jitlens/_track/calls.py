"""The per-call path: what runs on every call of a tracked function.

A cache hit costs one flag read and one counter increment. Misses are not
detected here: the trace-start listener walks up from JAX's trace frame to the
frame of the tracked call (its code is in :data:`CALL_CODES`) and reads the
call's record, index and arguments from its locals. Nothing is hashed,
flattened or published per call.
"""

from __future__ import annotations

import sys
import time
import weakref
from typing import Any

from .. import _compat
from .._compat.frames import working_dir
from .._record import record
from . import advisor, ties
from .records import SETTLED_CALLS, Record
from .state import (
    ADVICE_CALLS,
    EVENTS,
    LEAN_WINDOW,
    TRACING,
    WINDOW,
    PassThrough,
    internal_failure,
    tls,
    weak,
)

#: file -> (working folder, the file's path as shown from there): the first call of
#: each new wrapper (a wrapper made per epoch, per step) names its line without
#: working out the relative path again (``os.path.relpath``: ~10 us).
_SHOWN_PATHS: dict[str, tuple[str, str]] = {}


def _first_call(rec: Record) -> None:
    # _first_call <- call_detailed <- the wrapper's __call__ <- the user's call
    f = _compat.user_frame(_compat.caller(3))
    if f is None:
        rec.first_call_site = "?"
        return
    filename, cwd = f.f_code.co_filename, working_dir()
    known = _SHOWN_PATHS.get(filename)
    if known is None or known[0] != cwd:
        if len(_SHOWN_PATHS) > 1000:
            _SHOWN_PATHS.clear()
        known = _SHOWN_PATHS[filename] = (cwd, _compat.short_path(filename))
    rec.first_call_site = f"{known[1]}:{f.f_lineno}"


_ARRAYISH: dict[type, bool] = {}
#: Types whose objects a light signature names by identity: NNX graph nodes (a
#: Module, an Optimizer), whose static structure it cannot see but which stay one
#: object from call to call; a new model built per epoch is then a new signature.
_BY_IDENTITY: dict[type, bool] = {}
#: Where the array types read by shape and dtype live.
_ARRAY_MODULES = frozenset({"numpy", "jax", "jaxlib"})
#: Python values a static argument compares by: part of the light signature.
_SCALARS = frozenset({bool, int, float, complex, str, type(None)})
#: At most this many container items enter one call's light signature; a bigger
#: container is filed by its type and length (two entries then share a light
#: signature, and its calls show an unknown entry, never a wrong one).
LIGHT_ITEMS = 32


def _light(rec: Record, args: tuple[Any, ...], kwargs: dict[str, Any], objs: list[Any]) -> Any:
    """A cheap per-call signature to file hits under entries: shapes and dtypes of the
    arrays in the arguments and their tuples, lists and dicts (keyword arguments too),
    the values of static Python scalars, NNX objects by identity (collected in
    ``objs``), else types."""
    budget = [LIGHT_ITEMS]
    every = rec.frontend is not None  # eqx.filter_jit: every non-array is static
    nums, names = rec.static_argnums, rec.static_argnames
    out = [_light_value(a, every or i in nums, budget, objs) for i, a in enumerate(args)]
    if kwargs:
        out.append(
            tuple(
                (k, _light_value(v, every or k in names, budget, objs)) for k, v in kwargs.items()
            )
        )
    return tuple(out)


def _light_value(a: Any, static: bool, budget: list[int], objs: list[Any]) -> Any:
    t = type(a)
    arrayish = _ARRAYISH.get(t)
    if arrayish is None:
        # JAX's and NumPy's arrays only: a class of the program's may compute its shape
        arrayish = _ARRAYISH[t] = (
            t.__module__.partition(".")[0] in _ARRAY_MODULES
            and hasattr(t, "shape")
            and hasattr(t, "dtype")
        )
    if arrayish:
        return (a.shape, a.dtype)
    if t is tuple or t is list or t is dict:
        if len(a) > budget[0]:
            return (t, len(a))
        budget[0] -= len(a)
        if t is dict:
            return (t, tuple((k, _light_value(v, static, budget, objs)) for k, v in a.items()))
        return (t, tuple(_light_value(v, static, budget, objs) for v in a))
    if static and t in _SCALARS:
        return (t, a)
    by_identity = _BY_IDENTITY.get(t)
    if by_identity is None:
        by_identity = _BY_IDENTITY[t] = _compat.is_graph_node(a) and weak(a) is not None
    if by_identity:
        objs.append(a)
        return (t, id(a))
    return t


def call_detailed(
    fn: Any,
    rec: Record,
    n: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    executables: Any = None,
) -> Any:
    """A call within the timeline window (or inside another trace): timed and filed.

    ``executables``: the jit object's count of the executables its cache holds
    (``_compat.executable_counter``), when it has one.
    """
    __tracebackhide__ = True
    if n == 0:
        try:
            _first_call(rec)
        except Exception as exc:
            internal_failure("finding the first call site", exc)
    local = tls
    if local.busy:
        return fn(*args, **kwargs)
    inside = local.depth > 0
    n0 = local.nevents
    sample = not inside and advisor.wants_sample(rec, n)
    t = time.perf_counter()
    try:
        out = advisor.sampled_call(fn, rec, args, kwargs) if sample else fn(*args, **kwargs)
    except BaseException:
        if not isinstance(sys.exc_info()[1], PassThrough):
            failed_call(rec, n)
        _after_detailed(rec, n, args, kwargs, t, inside, local.nevents != n0, None)
        raise
    _after_detailed(rec, n, args, kwargs, t, inside, local.nevents != n0, executables)
    return out


def _after_detailed(
    rec: Record,
    n: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    t: float,
    inside: bool,
    missed: bool,
    executables: Any,
) -> None:
    try:
        if inside:  # called while another function traces: JAX inlines it
            with rec.lock:
                rec.inlined_calls += 1
            if n < WINDOW[0] and n < rec.timed_until:
                rec.add_call_time(t, -1)
            return
        advisor.note_eager(rec)
        if n < WINDOW[0] and n < rec.timed_until:
            _file_timed(rec, n, args, kwargs, t, missed, executables)
    except Exception as exc:
        internal_failure("timing a call", exc)


def timed_after(
    rec: Record,
    n: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    t: float,
    missed: bool,
    executables: Any,
) -> None:
    """File a call of the window the counting wrapper timed itself: its time and entry
    (:func:`_file_timed`)."""
    try:
        _file_timed(rec, n, args, kwargs, t, missed, executables)
    except Exception as exc:
        internal_failure("timing a call", exc)


def _file_timed(
    rec: Record,
    n: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    t: float,
    missed: bool,
    executables: Any,
) -> None:
    """File a timed call (not inside a trace) under the entry it went to.

    A miss goes to the entry its trace made. A cache hit of a jit whose own cache
    holds one executable (``executables()``) went to the one entry jitlens saw
    compiled, with no signature built; a hit of a record with no compile seen goes
    to no known entry (-1); otherwise its light signature decides.

    The first two kinds of hit also arm the window's lean path
    (``TrackedJit.__call__``): until the next trace, lower or compile anywhere
    (``state.EVENTS``), or tracking starts or stops, every hit goes to that entry, and the lean path records only
    the call's start time. Among the advisor's first calls (``ADVICE_CALLS``) they arm
    ``early_seq`` instead: the wrapper then still notes each call for the advisor
    (``jax_disable_jit``, the calls it samples) but keeps only its start time too. An executable enters a jit's cache only by a compile
    (JAX reports its lowering even when the persistent cache serves it) and a
    lost one is a miss on the next call, so no executable can appear or vanish
    unseen while ``EVENTS`` stands still.
    """
    serial = EVENTS[0]  # read before the checks: an event after them disarms what they find
    entry = -1
    sole = False
    if missed:
        rec.timed_until = sys.maxsize  # a miss in the window: not settled (yet)
        entry = _entry_of(rec, args, kwargs, True)
    else:
        by_light = rec.entry_by_light
        if not by_light:  # no compile seen (made before tracking, or a shared cache): unknown
            sole = True  # until a miss files a light signature
        elif len(by_light) == 1 and executables is not None and executables() == 1:
            entry, refs = next(iter(by_light.values()))
            if refs:  # objects named by identity: their signature decides
                entry = _entry_of(rec, args, kwargs, False)
            else:
                sole = True
        elif by_light:
            entry = _entry_of(rec, args, kwargs, False)
    rec.add_call_time(t, entry)
    if sole and LEAN_WINDOW[0] and not TRACING[0]:
        # no trace in progress in any thread (a call inside one is inlined, not a hit)
        rec.window_entry = entry
        if n + 1 >= ADVICE_CALLS[0]:  # the next call is past the advisor's first calls
            rec.window_seq = serial
            if rec.timed_until == sys.maxsize:  # settled: a few more calls, then no more
                rec.timed_until = n + 1 + SETTLED_CALLS
        else:  # the wrapper still notes them for the advisor, but files none of them
            rec.early_seq = serial


def timed_failure(
    rec: Record, n: int, args: tuple[Any, ...], kwargs: dict[str, Any], t: float, missed: bool
) -> None:
    """A call the counting wrapper timed itself raised: counted as failed, and filed.

    jitlens' own failure here never replaces the program's exception.
    """
    try:
        if not isinstance(sys.exc_info()[1], PassThrough):
            failed_call(rec, n)
        _after_detailed(rec, n, args, kwargs, t, False, missed, None)
    except Exception as exc:
        internal_failure("timing a call", exc)


def _entry_of(rec: Record, args: tuple[Any, ...], kwargs: dict[str, Any], missed: bool) -> int:
    """The compiled entry a call went to: its own trace's, or the one its light signature
    was filed under; -1 (unknown) once two entries were made with one light signature."""
    objs: list[Any] = []
    light = _light(rec, args, kwargs, objs)
    known = rec.entry_by_light.get(light)
    # an object named by identity died and another took its address: not the same signature
    reused = known is not None and any(ref() is None for ref in known[1])
    if not missed:
        if known is not None and not reused and known[0] < 0:  # shared by two entries
            return ties.tied_entry(rec, light, args, kwargs)
        return -1 if known is None or reused else known[0]
    b = tls.last_built
    entry = b.entry if b is not None and b.record is rec else -1
    if known is None or reused or known[0] == entry:
        rec.entry_by_light[light] = (entry, tuple(weakref.ref(o) for o in objs))
    elif entry >= 0 and (known[0] >= 0 or rec.ties.get(light) is not None):
        # a new entry of the same light signature: what tells them apart (``ties``)
        ties.note_shared(rec, light, known[0], b)
        rec.entry_by_light[light] = (-1, ())
    else:
        rec.entry_by_light[light] = (-1, ())
        rec.ties[light] = None
    return entry


#: The locals through which a counting frame hands its call to a trace below it,
#: for each counting function's code: (record, call index, args, kwargs). A
#: record local that is not a :class:`Record` is a counting wrapper holding one
#: as ``_record`` (``TrackedJit``). Front-end adapters add their counting
#: frames with :func:`register_counting_frame`; ``tests/test_robustness.py``
#: pins every name against the code objects.
CALL_LOCALS: dict[Any, tuple[str, str, str, str]] = {
    call_detailed.__code__: ("rec", "n", "args", "kwargs"),
}
CALL_CODES = frozenset(CALL_LOCALS)
#: Types of the counting wrappers adapters hand out (a jit of one is transparent).
COUNTING_TYPES: tuple[type, ...] = ()


def register_counting_frame(code: Any, names: tuple[str, str, str, str]) -> None:
    """An adapter's counting function: its frames carry a counted call in these locals."""
    global CALL_CODES
    CALL_LOCALS[code] = names
    CALL_CODES = frozenset(CALL_LOCALS)


def register_counting_type(cls: type) -> None:
    """An adapter's counting wrapper type (what the user holds instead of JAX's object)."""
    global COUNTING_TYPES
    COUNTING_TYPES = (*COUNTING_TYPES, cls)


#: Run after a counted call raised while a trace start was left open (the listeners'
#: ``settle_open_trace``, set by them: they import this module).
ON_FAILED_CALL: list[Any] = []


def failed_call(rec: Record, n: int) -> None:
    """A call raised: it was no cache hit, and a key its trace added was never compiled."""
    try:
        if tls.open_trace is not None:  # interrupted between its trace start and its body
            for settle in ON_FAILED_CALL:
                settle()
        with rec.lock:
            rec.failed_calls += 1
            if rec.last_miss_frame is not None and rec.last_miss_frame[1] == n:
                rec.failed_misses += 1  # already counted as a miss: don't subtract twice
        forget_failed_trace(rec, n)
    except Exception as exc:
        internal_failure("recording a failed call", exc)


def forget_failed_trace(rec: Record, n: int | None) -> None:
    """A call raised: a key its trace added was never compiled, so forget it.

    Otherwise the retry would be explained against a key JAX never cached.
    """
    b = tls.last_built
    if b is None or b.record is not rec or b.compiled or (n is not None and b.call_index != n):
        return
    with rec.lock:
        if b.key is not None and b.key in rec.keys and b.entry == rec.n_entries - 1:
            rec.keys.remove(b.key)
            rec.n_entries -= 1
    tls.last_built = None


@record
class CountedCall:
    """A counted call in progress, as a trace that belongs to it finds it."""

    record: Record
    #: The call's index among the record's calls (0 for the first).
    index: int
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    #: Unique per call (frame ids are reused): one call is one miss however many events.
    frame_id: Any


def find_call(frame: Any) -> CountedCall | None:
    """The counted call a trace belongs to, found by walking up from the trace frame."""
    found = _compat.find_locals(frame, CALL_CODES, 40)
    if found is None:
        return None
    frame_id, loc, code = found
    rec_name, index_name, args_name, kwargs_name = CALL_LOCALS[code]
    rec = loc.get(rec_name)
    if not isinstance(rec, Record):
        rec = getattr(rec, "_record", None)
    if not isinstance(rec, Record):
        return None
    n = loc.get(index_name, 0)
    return CountedCall(rec, n, loc.get(args_name, ()), loc.get(kwargs_name, {}), (frame_id, n))


def take_back_miss(rec: Record, call_index: int | None) -> Any:
    """Take back the miss counted for call ``call_index`` (record's lock held): JAX announced
    a trace and served it from its trace cache (a static whose hash changed but that compares
    equal, jax#28418). Returns the call's frame id (None: no miss counted for it)."""
    miss = rec.last_miss_frame
    if miss is None or call_index is None or miss[1] != call_index:
        return None
    rec.miss_calls = max(0, rec.miss_calls - 1)
    rec.last_miss_frame = None
    return miss


def note_miss(rec: Record, frame_id: Any) -> None:
    """Count one call as a miss, however many trace/compile events it had."""
    with rec.lock:
        if rec.last_miss_frame != frame_id:
            rec.last_miss_frame = frame_id
            rec.miss_calls += 1
