"""The report: plain frozen dataclasses and their one JSON serialisation.

Everything jitlens shows (terminal text, HTML, Perfetto traces, merged
multi-process views, guard failures) is a pure function of these objects.
The tracker builds them; nothing here imports JAX.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import ReportError
from .._record import record
from .fields import NUM as _NUM
from .fields import as_list as _list
from .fields import build_fields as _build
from .fields import check_type as _check_type
from .figures import IMPOSSIBLE, check_figures, not_negative
from .kinds import AdviceKind, EventKind, ReasonKind
from .reason import EXPECTED_FIX, STATIC_FLOWS, Reason, words_when_read
from .runinfo import RunInfo, runinfo_from_dict

if TYPE_CHECKING:  # .cost loads with the first long compile or a report read from JSON
    from .cost import CompileCost

#: The version of the report's JSON layout this jitlens writes (``Report.schema_version``).
SCHEMA_VERSION = 2
#: ``Event.key`` keeps this many paths (a 200-layer model has thousands).
KEY_ENTRIES_MAX = 400
#: ... and only the first event of each of this many distinct signatures keeps its key
#: (a function retracing 10,000 times must not write 10,000 keys).
KEYED_SIGNATURES_MAX = 64
#: Schema versions this jitlens reads (1: before unknown figures, warnings and
#: advice; the fields added since have defaults, so a version-1 file reads as is).
READABLE_SCHEMA_VERSIONS = (1, 2)

#: The fixed vocabularies of ``Reason.kind`` (most decisive first: the order
#: sorts the reasons of one retrace), ``Event.kind`` and ``Advice.kind``, as
#: tuples of enum members (``_core/kinds.py``).
REASON_KINDS: tuple[ReasonKind, ...] = tuple(ReasonKind)
EVENT_KINDS: tuple[EventKind, ...] = tuple(EventKind)
ADVICE_KINDS: tuple[AdviceKind, ...] = tuple(AdviceKind)


@record
class Event:
    """A trace (and the lowering/compilation that followed it) of one function."""

    #: Which call of the function traced, from 0; None for a trace jitlens could not match to a
    #: call.
    call_index: int | None
    kind: EventKind
    #: ``file:line`` of the call in the user's code.
    call_site: str
    #: The call's arguments in short (``model: CNN<graph 3f2a>, x: f32[1,28,28,1]``).
    signature: str
    #: Why a retrace or compile missed the cache, most decisive first; empty for a first trace.
    reasons: tuple[Reason, ...] = ()
    #: When the event started, in seconds since tracking started.
    time: float = 0.0
    #: Seconds spent tracing the Python function.
    trace_seconds: float = 0.0
    #: Seconds spent lowering to StableHLO.
    lower_seconds: float = 0.0
    #: Seconds spent compiling with XLA (0 for a persistent-cache hit).
    compile_seconds: float = 0.0
    #: jitlens' own time describing and explaining this event.
    explain_seconds: float = 0.0
    #: A compile followed the trace.
    compiled: bool = False
    #: The compiled program was read from JAX's persistent compilation cache.
    persistent_cache_hit: bool = False
    #: Which distinct compiled key of the function (0, 1, ...) this event created.
    entry: int = 0
    #: Name of the thread that traced.
    thread: str = ""
    #: What the persistent compilation cache did (``runinfo.PCACHE_OUTCOMES``).
    persistent_cache: str = ""
    #: The call's key as ``(user path, what JAX compared there)`` pairs (capped at
    #: ``KEY_ENTRIES_MAX``), for comparing runs: ``jitlens diff``.
    key: tuple[tuple[str, str], ...] = ()
    #: What the compiled program is made of (``_core/cost.py``), read for long compiles
    #: only; None when not read (a short compile, a report from before issue 34).
    cost: CompileCost | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", EventKind(self.kind))

    @property
    def seconds(self) -> float:
        """Time this event cost the program: tracing, lowering and compiling."""
        return self.trace_seconds + self.lower_seconds + self.compile_seconds

    @property
    def expected(self) -> bool:
        """A retrace every reason of which says it is expected (a mode's first compile)."""
        return bool(self.reasons) and all(r.expected for r in self.reasons)


@words_when_read
@record
class StaleHit:
    """A cached call that ignored a change the cache key should have seen. Its ``message`` and
    ``fix`` are given as the makings of words (``Words``) and made when first read."""

    #: The cached call that ignored the change, from 0.
    call_index: int
    #: ``file:line`` of that call.
    call_site: str
    #: The rest as in ``Reason``.
    argument: str
    path: str
    before: str
    after: str
    message: str
    fix: str


@record
class Unchecked:
    """A static a cache hit passed that jitlens could not check: not known unchanged, nor stale."""

    #: The cached call (from 0), its ``file:line``, the static (as in ``StaleHit``), why (``too_big``:
    #: over ``limit`` values, more than a check reads), the remedy in its jit's terms ("": unkept).
    call_index: int
    call_site: str
    path: str
    why: str
    limit: int | None = None
    remedy: str = ""


@record
class Advice:
    """One change worth making to a function, with the time it would save.

    ``estimated_saving_seconds`` is ``None`` when the saving cannot be
    measured (never 0 for "unknown"): e.g. eager calls under ``jax_disable_jit``.
    """

    kind: AdviceKind
    #: What costs time, with the figures measured.
    message: str
    #: The change to make, with the user's own names.
    fix: str
    #: Seconds the fix would save over this run; None when it cannot be measured.
    estimated_saving_seconds: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", AdviceKind(self.kind))


@record
class FunctionReport:
    """The figures of one jitted callable object (one wrapper = one record)."""

    #: The user's function name (``train_step``).
    name: str
    #: Its qualified name (``Trainer.step``).
    qualname: str
    #: The front-end: ``nnx.jit`` (or ``nnx.jit(graph=False)``, ``nnx.jit(graph_updates=False)``),
    #: ``nnx.cached_partial``, ``jax.jit``, ``eqx.filter_jit``, ``jax.pmap``, ``nnx.pmap``,
    #: ``nn.jit``.
    kind: str
    #: ``file:line`` where the function was defined.
    defined_at: str
    #: ``file:line`` of its first call.
    first_call_site: str
    #: Calls, hits and misses alike; None when jitlens could not count them (a ``jax.jit`` made
    #: before ``track()`` opened).
    calls: int | None
    #: None when jitlens cannot count traces on the installed JAX (see ``Report.warnings``).
    traces: int | None
    #: Real XLA compilations (a persistent-cache load is not one); None when unknown.
    compiles: int | None
    #: Calls served by a compiled entry with no trace; None when unknown.
    cache_hits: int | None
    #: Compiled programs read from JAX's persistent compilation cache.
    persistent_cache_hits: int
    #: Seconds spent tracing, over all events.
    trace_seconds: float
    #: Seconds spent lowering, over all events.
    lower_seconds: float
    #: Seconds spent compiling, over all events.
    compile_seconds: float
    #: Every trace, retrace and compile, in order.
    events: tuple[Event, ...] = ()
    #: ``nnx.cached_partial`` calls that ignored a later change of a static (stale results).
    stale_hits: tuple[StaleHit, ...] = ()
    #: Statics hits passed that jitlens could not check; None in a report from before it said.
    unchecked: tuple[Unchecked, ...] | None = ()
    #: One of JAX's or Flax's own jitted helpers (hidden unless asked for).
    internal: bool = False
    #: A number unique to the jitted object within the report.
    id: int = 0
    #: Start time (seconds since the report started) of each call, hit or
    #: miss, when known; capped (see ``_records.MAX_CALL_TIMES``).
    call_times: tuple[float, ...] = ()
    #: For each entry of ``call_times``: the compiled entry (index into the
    #: distinct signatures, ``Event.entry``) the call went to.
    call_entries: tuple[int, ...] = ()
    #: ``Event.call_index`` of the call at ``call_times[0]`` (calls made
    #: before the tracker opened are not in this report).
    first_call_index: int = 0
    #: What to change, most valuable first (``_core/advice.py``); empty when
    #: nothing is worth changing.
    advice: tuple[Advice, ...] = ()
    #: Cache hits JAX served through its Python dispatch instead of its C++
    #: fast path (``_track/fastpath.py``); None when jitlens cannot tell.
    python_dispatch_calls: int | None = None
    #: Why the fast path refused them (``host_callback``, ``ordered_effect``,
    #: ``ref_effect``, ``non_array_output``, ``unknown``); "" when none did.
    python_dispatch_cause: str = ""
    #: Traces a compile budget (``max_traces``, ``no_retrace``, the pytest marker)
    #: stopped before the body ran: not in ``traces`` or ``events`` (JAX compiled
    #: nothing), kept with their reasons so that reports show what went over budget.
    stopped: tuple[Event, ...] = ()
    #: Wrapper objects of the same code this row folds (``_core/fold.py``), and
    #: their own qualname (``qualname`` then says "N wrappers of ... at ...").
    wrappers: int = 1
    wrapped_qualname: str = ""

    @property
    def retraces(self) -> int:
        return sum(1 for e in self.events if e.kind is EventKind.RETRACE)

    @property
    def recompiles(self) -> int:
        """Compiles of a new key from a trace JAX already had (a new sharding or placement,
        new jit options): explained like retraces, but the function did not trace again."""
        return sum(1 for e in self.events if e.kind is EventKind.COMPILE and e.reasons)

    @property
    def seconds_lost(self) -> float:
        """Seconds spent on avoidable retraces and recompiles: compilations beyond the first,
        except a train/eval mode's own first compile (``Event.expected``) and the entries of a
        deliberate bucket set (``_core/buckets.py``: 16, 32, 48, each compiled once)."""
        if self.bucketed:
            return 0.0
        return sum(
            e.seconds
            for e in self.events
            if (e.kind is EventKind.RETRACE or (e.kind is EventKind.COMPILE and e.reasons))
            and not e.expected
        )

    @functools.cached_property  # read per row, per line and per sum of a report's text
    def bucketed(self) -> bool:
        """Every retrace is a shape of a deliberate bucket set, each compiled once, or of a
        few shapes the program needs, each passed from a line of its own and reused (a
        training set and a test set: ``buckets.reused_shapes``)."""
        if not any(e.reasons for e in self.events):
            return False  # no retrace reasons, no sizes (and buckets' module stays unloaded)
        from . import buckets

        return bool(buckets.bucketed(self.events) or buckets.reused_shapes(self))

    @property
    def hit_rate(self) -> float | None:
        if not self.calls or self.cache_hits is None:
            return None
        return self.cache_hits / self.calls


@record
class Report:
    """All functions seen by one tracker in one process."""

    #: The version of this JSON layout (``SCHEMA_VERSION``).
    schema_version: int
    #: The versions of jitlens, JAX and Flax that wrote the report.
    jitlens_version: str
    #: The installed JAX.
    jax_version: str
    #: The installed Flax ("" when it is not installed).
    flax_version: str
    #: JAX's default backend (``cpu``, ``gpu``, ``tpu``).
    backend: str
    #: This process's index in a multi-process job (0 alone).
    process_index: int
    #: The number of processes of the job (1 alone).
    process_count: int
    #: The machine's host name.
    host: str
    #: Wall-clock time (``time.time()``) when tracking began.
    started_at: float
    #: Seconds from when tracking began to this report: under ``jitlens run`` and
    #: ``JITLENS=1`` from jax's import (the program's start-up before it is not
    #: included), under the pytest plugin from the session's start, under
    #: ``jitlens.track()`` from the block's start. A shell's ``time`` reads more.
    duration_seconds: float
    #: Every jitted function seen.
    functions: tuple[FunctionReport, ...]
    #: The program's command line.
    argv: tuple[str, ...] = ()
    #: What jitlens could not measure or did not manage (self-check, internal failures).
    warnings: tuple[str, ...] = ()
    #: What the persistent-cache key depends on and what the cache did (``jitlens diff``).
    run: RunInfo | None = None

    def function(self, name: str) -> FunctionReport:
        """The one function called ``name`` (qualname or name); error if ambiguous."""
        found = [f for f in self.functions if name in (f.name, f.qualname)]
        if len(found) != 1:
            names = sorted({f.qualname for f in self.functions})
            raise KeyError(f"{len(found)} functions named {name!r}; known: {names}")
        return found[0]

    def user_functions(self) -> tuple[FunctionReport, ...]:
        return tuple(f for f in self.functions if not f.internal)

    def to_dict(self) -> dict[str, Any]:
        return _to_jsonable(self)

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """The report of ``json.loads(report.to_json())``; ``ReportError`` if it is not one."""
        return report_from_dict(data)

    def to_text(
        self,
        *,
        width: int | None = None,
        color: bool | None = False,
        include_internal: bool = False,
        max_lines: int | None = None,
    ) -> str:
        """The report as ``jitlens run`` prints it: the functions by seconds lost, then every
        retrace explained with its fix. ``str(report)`` is ``report.to_text()``. Never raises:
        if rendering fails, it logs and returns the raw data.

        Args:
            width: wrap at this many characters; ``None``: the terminal's (100 without one).
            color: ANSI colours; ``None`` follows the terminal (off if not a TTY or NO_COLOR).
            include_internal: also list JAX's and Flax's own jitted helpers.
            max_lines: at most this many lines, with a line saying what was left out.

        Example:
            >>> import jitlens
            >>> r = jitlens.Report(2, "0.1", "0.10", "", "cpu", 0, 1, "box", 0.0, 1.0, ())
            >>> print(r.to_text(width=80))
            jitlens: no jitted function was called (cpu on box, 1.0 s tracked).
            <BLANKLINE>
        """
        from .._render.text import render_text

        return render_text(
            self, color=color, width=width, include_internal=include_internal, max_lines=max_lines
        )

    def to_html(self) -> str:
        """The HTML page ``jitlens report --html`` writes (never raises, as ``to_text``)."""
        from .._render.html import render_html

        return render_html(self)

    def to_trace_events(self) -> dict[str, Any]:
        """The Chrome/Perfetto trace events ``jitlens report --trace`` writes (never raises)."""
        from .._render.perfetto import render_trace_events

        return render_trace_events(self)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        from .._render.html import render_html_frame

        return render_html_frame(self)


# --------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------


def json_fields(cls_or_obj: Any) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a report dataclass written to its JSON (``Reason.where`` is not)."""
    return tuple(f for f in dataclasses.fields(cls_or_obj) if f.metadata.get("json", True))


def _to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_jsonable(getattr(obj, f.name)) for f in json_fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [_to_jsonable(x) for x in obj]
    if isinstance(obj, float):
        return round(obj, 9)
    return obj


def _reason(d: Any, where: str) -> Reason:
    kw = _build(Reason, d, where)
    for live_only in ("where", "entries"):  # never written: the live run's evidence
        kw.pop(live_only, None)
    if "facts" in kw:
        kw["facts"] = tuple(_list(kw["facts"], f"{where}.facts"))
        for i, fact in enumerate(kw["facts"]):
            _check_type(fact, (str,), f"{where}.facts[{i}]")
    for k, v in kw.items():
        if k != "facts":
            _check_type(v, (bool,) if k == "expected" else (str,), f"{where}.{k}")
    if kw.get("flow", "") not in STATIC_FLOWS:
        raise ReportError(f"{where}.flow: expected one of {STATIC_FLOWS}, got {kw['flow']!r}")
    if "expected" not in kw:  # a report from before the flag: its fix said so
        kw["expected"] = kw["fix"].startswith(EXPECTED_FIX)
    return Reason(**kw)


def _event(d: Any, where: str) -> Event:
    kw = _build(Event, d, where)
    kw["reasons"] = tuple(
        _reason(r, f"{where}.reasons[{i}]")
        for i, r in enumerate(_list(kw.get("reasons", ()), where))
    )
    if kw.get("kind") not in EVENT_KINDS:
        raise ReportError(f"{where}.kind: {kw.get('kind')!r} is not one of {EVENT_KINDS}")
    for k in ("trace_seconds", "lower_seconds", "compile_seconds", "explain_seconds", "time"):
        if k in kw:
            _check_type(kw[k], _NUM, f"{where}.{k}")
    if "key" in kw:
        kw["key"] = tuple((str(p), str(t)) for p, t in _list(kw["key"], f"{where}.key"))
    if kw.get("cost") is not None:
        from .cost import cost_from_dict

        kw["cost"] = cost_from_dict(kw["cost"], f"{where}.cost")
    return Event(**kw)


def _advice(d: Any, where: str) -> Advice:
    kw = _build(Advice, d, where)
    if kw.get("kind") not in ADVICE_KINDS:
        raise ReportError(f"{where}.kind: {kw.get('kind')!r} is not one of {ADVICE_KINDS}")
    for k in ("message", "fix"):
        _check_type(kw[k], (str,), f"{where}.{k}")
    if kw.get("estimated_saving_seconds") is not None:
        _check_type(kw["estimated_saving_seconds"], _NUM, f"{where}.estimated_saving_seconds")
    return Advice(**kw)


def _function(d: Any, where: str) -> FunctionReport:
    kw = _build(FunctionReport, d, where)
    kw["events"] = tuple(
        _event(e, f"{where}.events[{i}]") for i, e in enumerate(_list(kw.get("events", ()), where))
    )
    kw["stopped"] = tuple(
        _event(e, f"{where}.stopped[{i}]")
        for i, e in enumerate(_list(kw.get("stopped", ()), where))
    )
    kw["stale_hits"] = tuple(
        StaleHit(**_build(StaleHit, s, f"{where}.stale_hits[{i}]"))
        for i, s in enumerate(_list(kw.get("stale_hits", ()), where))
    )
    if kw.get("unchecked") is not None:  # absent or null: not known (a report from before)
        kw["unchecked"] = tuple(
            Unchecked(**_build(Unchecked, u, f"{where}.unchecked[{i}]"))
            for i, u in enumerate(_list(kw["unchecked"], where))
        )
    kw.setdefault("unchecked", None)
    kw["advice"] = tuple(
        _advice(a, f"{where}.advice[{i}]") for i, a in enumerate(_list(kw.get("advice", ()), where))
    )
    for k in ("call_times", "call_entries"):
        if k in kw:
            kw[k] = tuple(_list(kw[k], f"{where}.{k}"))
    _check_type(kw["persistent_cache_hits"], (int,), f"{where}.persistent_cache_hits")
    for k in ("calls", "cache_hits", "traces", "compiles", "python_dispatch_calls"):
        if kw.get(k) is not None:
            _check_type(kw[k], (int,), f"{where}.{k}")
    for k in ("name", "qualname", "kind", "defined_at", "first_call_site"):
        _check_type(kw[k], (str,), f"{where}.{k}")
    for k in ("trace_seconds", "lower_seconds", "compile_seconds"):
        _check_type(kw[k], _NUM, f"{where}.{k}")
    for k in ("first_call_index", "id"):
        if k in kw:
            _check_type(kw[k], (int,), f"{where}.{k}")
    fn = FunctionReport(**kw)
    check_figures(fn, f"{where} (`{fn.qualname}`)")
    return fn


def report_from_dict(data: Any) -> Report:
    """Rebuild a :class:`Report` from its JSON form, validating as it goes."""
    if not isinstance(data, Mapping):
        raise ReportError(f"a report is a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS:
        raise ReportError(
            f"schema_version {version!r} is not supported "
            f"(this jitlens reads {', '.join(map(str, READABLE_SCHEMA_VERSIONS))})"
        )
    kw = _build(Report, data, "report")
    kw["functions"] = tuple(
        _function(f, f"functions[{i}]") for i, f in enumerate(_list(kw["functions"], "functions"))
    )
    kw["argv"] = tuple(kw.get("argv", ()))
    kw["warnings"] = tuple(str(w) for w in _list(kw.get("warnings", ()), "warnings"))
    if kw.get("run") is not None:
        kw["run"] = runinfo_from_dict(kw["run"])
    kw["schema_version"] = SCHEMA_VERSION
    for k in ("process_index", "process_count"):
        _check_type(kw[k], (int,), f"report.{k}")
    _check_type(kw["duration_seconds"], _NUM, "report.duration_seconds")
    not_negative(kw["duration_seconds"], "report.duration_seconds")
    if not 0 <= kw["process_index"] < kw["process_count"]:
        what = f"process_index {kw['process_index']} of process_count {kw['process_count']}"
        raise ReportError(IMPOSSIBLE.format(where="report", what=what))
    if kw["process_count"] > MAX_PROCESSES:  # `jitlens merge` lists the processes missing
        what = f"process_count {kw['process_count']:,}, above the {MAX_PROCESSES:,} of any job"
        raise ReportError(IMPOSSIBLE.format(where="report", what=what))
    return Report(**kw)


#: The most processes a report's job may have (the largest multi-host jobs run thousands).
MAX_PROCESSES = 1_000_000


#: The largest report file read (``jitlens report`` / ``merge``): a real one is a few MiB.
MAX_REPORT_BYTES = 128 << 20
#: The most functions a report read back may hold (a real one has tens to thousands).
MAX_FUNCTIONS = 100_000
TOO_DEEP = "{path}: not a jitlens report (JSON nested deeper than Python can read)"
TOO_MANY_FUNCTIONS = (
    "{path}: {n} functions, above the limit of {limit} a report may hold; "
    "a jitlens report of a real program has far fewer (was it generated?)"
)


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read and validate a report file; errors name the file and the problem.

    Only regular files up to :data:`MAX_REPORT_BYTES` holding at most
    :data:`MAX_FUNCTIONS` functions are read: a FIFO, a device or a hostile
    file is refused with one line, never hangs or exhausts memory.
    """
    from .files import loads_inert, read_regular

    try:
        # utf-8-sig: a report saved again by an editor that marks UTF-8 (Notepad, PowerShell)
        text = read_regular(path, MAX_REPORT_BYTES, "a report").decode("utf-8-sig")
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ReportError(
            f"{path}: not a jitlens report (not UTF-8 text: byte {exc.start})"
        ) from None
    try:
        data = loads_inert(text)
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{path}: not valid JSON (truncated or edited?): {exc.msg} at line {exc.lineno}"
        ) from None
    except RecursionError:
        raise ReportError(TOO_DEEP.format(path=path)) from None
    functions = data.get("functions") if isinstance(data, dict) else None
    if isinstance(functions, list) and len(functions) > MAX_FUNCTIONS:
        raise ReportError(
            TOO_MANY_FUNCTIONS.format(
                path=path, n=f"{len(functions):,}", limit=f"{MAX_FUNCTIONS:,}"
            )
        )
    try:
        return report_from_dict(data)
    except ReportError as exc:
        raise ReportError(f"{path}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ReportError(f"{path}: malformed report: {exc}") from None
    except RecursionError:
        raise ReportError(TOO_DEEP.format(path=path)) from None


def total_traces(functions: Iterable[FunctionReport]) -> str:
    """The sum of ``traces`` as text: ``?`` when any of them is unknown."""
    counts = [f.traces for f in functions]
    return "?" if any(c is None for c in counts) else str(sum(c for c in counts if c is not None))


def fold_reasons(events: Iterable[Event]) -> list[tuple[Reason, int, Event]]:
    """Identical reasons over many retraces folded into (reason, count, first event).

    Two reasons are identical when their :meth:`Reason.fold_key` agree.
    """
    folded: dict[tuple[str, str, str, str], list[Any]] = {}
    for e in events:
        for r in e.reasons:
            key = r.fold_key()
            if key in folded:
                folded[key][1] += 1
            else:
                folded[key] = [r, 1, e]
    return [(r, n, e) for r, n, e in folded.values()]
