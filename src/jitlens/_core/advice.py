"""The performance advisor's rules: measured figures in, :class:`~.report.Advice` out.

Retraces are one way a jitted program loses time; this module looks at the
others users ask about most, each as one rule that is a pure function of
plain data (no JAX here, so every rule is tested with made-up figures):

* ``dispatch``: host-side time per cache hit (flax's graph traversal before
  and after the compiled call) large next to the compiled program's own time,
  adding up to a share of the run worth fixing (jax#5485: "Flax increases jit
  dispatch cost by x4").
* ``compile_cache``: compile time a persistent compilation cache would save
  on the next run: the cache is off, or compiles are below
  ``jax_persistent_cache_min_compile_time_secs`` and so never written.
* ``entries``: a function still adding compiled entries late in the run
  (flax#5548: recreating an optimizer each epoch grew memory until OOM).
* ``disable_jit``: ``jax_disable_jit`` is on, jitted functions run op by op
  (jax#19654).
* ``buckets``: many sizes of one axis, each compiled once: the buckets the
  recorded sizes call for (``buckets.propose``).
* ``many_leaves``: cache hits whose host time goes to thousands of pytree leaves
  (``advice_leaves.py``): one array (``ravel_pytree``) or stacked leaves instead.
* ``fast_path``: cache hits served by JAX's Python dispatch instead of its
  C++ fast path (a host callback in the function, jax#31319): hundreds of
  us per call instead of a few.
* ``unrolled_loop``, ``captured_constant``, ``compile_bound`` (``compile_cost``):
  a long compile of a program made big by a Python loop the trace unrolled,
  or by a large array captured as a constant; a compile that costs more than
  the function's calls could save (jax#29809, JAX's guide "Debugging slow
  JAX tracing and XLA compilation"). Figures: ``Event.cost`` (``_core/cost.py``);
  the rules live in ``advice_cost.py``.

The figures come from ``_track/advisor.py``, which samples a few of the
function's own cache hits. Every threshold below is a documented module
constant: no advice is given when the saving is below it ("nothing worth
changing" is the common, correct answer).

See also:
  ``jax.profiler`` / Perfetto show where time goes on one trace, for one run;
  jitlens' advice names the change and estimates its saving from counts of the
  whole run. Prefer the profiler to inspect one step in depth.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._record import record
from .advice_cost import compile_cost
from .kinds import AdviceKind
from .report import Advice, Event, FunctionReport
from .runinfo import PersistentCache

#: ``dispatch``: advise only when the estimated saving of the whole run is at
#: least this many seconds ...
DISPATCH_MIN_SECONDS = 0.05
#: ... and this share of the run's duration ...
DISPATCH_MIN_RUN_SHARE = 0.02
#: ... and this share of each call's time (a function doing real work per
#: call, where the host overhead hides behind the computation, gets none).
DISPATCH_MIN_CALL_SHARE = 0.10
#: What ``nnx.cached_partial`` saves per call, as a multiple of one
#: ``graphlib.flatten`` of the cached arguments: nnx.jit flattens them on the
#: way in and walks them again to write the updates back on the way out;
#: cached_partial replaces both with a cached GraphDef. Calibrated: the
#: measured saving was 1.5-1.8x one flatten on Linear(3, 4) to 16-layer MLPs
#: (interleaved loops, min and median); ``benchmarks/advisor.py`` checks it.
CACHED_PARTIAL_FACTOR = 1.7
#: What an advice kind's saving is, where "saves ~N s" alone would be read as this
#: run's: compile_cache saves XLA compile time (not tracing or lowering) in the next run.
SAVING_SCOPE = {"compile_cache": " of compiling in the next run"}
#: Advice that makes the compiled program smaller: ranked before ``compile_cache``,
#: whose saving is the same compile seconds counted once more (``advise``).
COMPILE_SIZE_KINDS = frozenset({AdviceKind.UNROLLED_LOOP, AdviceKind.CAPTURED_CONSTANT})
#: ``compile_cache``: advise when the next run would save at least this much compile time.
COMPILE_CACHE_MIN_SECONDS = 0.5
#: Where the advised cache goes (the user may pick any writable directory).
CACHE_DIR_HINT = 'os.path.expanduser("~/.cache/jax")'
#: ``entries``: warn from this many compiled entries ...
ENTRIES_WARN = 8
#: ... when at least this many of them were added in the second half of the function's calls.
ENTRIES_LATE = 2

DISPATCH_MESSAGE = (
    "{host} on the host per cache hit vs {device} for the compiled program "
    "(best of {samples} sampled hits); over {hits} hits, {share:.0%} of the run"
)
DISPATCH_FIX = (
    "`{name}_cached = nnx.cached_partial({name}, {cached})`, then `{name}_cached({rest})` "
    "in the loop; more: `nnx.jit(graph=False)` if the graph is static, `nnx.split({first})` "
    "once + `jax.jit` for the hottest loop"
)
COMPILE_CACHE_OFF = (
    "compiled {n}x{of} for {seconds:.2f} s with the persistent compilation cache off: "
    "the next run compiles all of it again"
)
COMPILE_CACHE_BELOW = (
    "compiled {n}x{of} for {seconds:.2f} s in compiles shorter than "
    "jax_persistent_cache_min_compile_time_secs={threshold:g}: none of it was cached"
)
#: Which functions a run's compile-cache hint covers.
COMPILE_CACHE_OF = " ({functions})"
#: Functions named in a run's compile-cache hint; the rest are counted.
RUN_NAMES = 3
#: The minimum compile time to cache that the fix sets: the same for every run of a program
#: (half the shortest compile, rounded, was 0.5 one run and 0.2 the next on a loaded machine).
#: A compile this short reads back from disk about as fast as it compiles.
CACHE_MIN_COMPILE_HINT = 0.1
COMPILE_CACHE_FIX_OFF = (
    'jax.config.update("jax_compilation_cache_dir", {dir}) at the start of the program '
    "(or JAX_COMPILATION_CACHE_DIR=...){threshold}"
)
COMPILE_CACHE_FIX_THRESHOLD = (
    'jax.config.update("jax_persistent_cache_min_compile_time_secs", {value:g})'
)
ENTRIES_MESSAGE = (
    "{n} compiled entries, {late} of them added in the second half of its calls: "
    "each keeps an executable alive until the function is deleted or its cache cleared, "
    "and memory grows with them (flax#5548)"
)
ENTRIES_FIX_DEFAULT = (
    "build the jitted function and the objects it receives (model, optimizer) once, "
    "outside the loop; or call `{name}.clear_cache()` where an epoch ends"
)
BUCKETS_MESSAGE = (
    "`{path}` took {n} sizes on axis {axis} ({sizes}), each compiled once, and more may come"
)
BUCKETS_FIX = (
    "pad axis {axis} of `{path}` up to one of {buckets} (and mask the padding): {k} compiles "
    "instead of {n}, ~{padding:.0%} padding over the sizes seen"
)
DISABLE_JIT_MESSAGE = (
    "jax_disable_jit is on: {n} sampled calls ran eagerly, op by op, not as one compiled program"
)
DISABLE_JIT_FIX = (
    'remove `jax.config.update("jax_disable_jit", True)`, JAX_DISABLE_JIT=1 or the '
    "`with jax.disable_jit():` block around these calls"
)

#: ``fast_path``: advise when fixing it saves at least this many seconds of the run ...
FAST_PATH_MIN_SECONDS = 0.01
#: ... or, when none of those calls was timed, when at least this many took the Python path.
FAST_PATH_MIN_CALLS = 10
#: What one call costs on JAX's C++ fast path, subtracted from a timed Python-dispatched
#: call (5-6 us measured on CPU, jax 0.10.2; ``benchmarks/fastpath.py`` checks the estimate).
FAST_PATH_CALL_SECONDS = 6e-6
FAST_PATH_MESSAGE = (
    "{n} of its cache hits ran JAX's Python dispatch, not its C++ fast path: {cause}{cost}"
)
FAST_PATH_COST = "; {cost} per call (best of {samples} timed) vs ~{fast} on the fast path"
FAST_PATH_CAUSES = {
    "host_callback": "it contains a host callback (jax.debug.callback / jax.debug.print), "
    "an effect that keeps every call off the fast path",
    "ordered_effect": "it has an ordered effect (io_callback(..., ordered=True), "
    "jax.debug.print(..., ordered=True)), which keeps every call off the fast path",
    "ref_effect": "it has a reference (state) effect, which keeps every call off the fast path",
    "non_array_output": "it returns values that are not jax.Arrays, which the fast path "
    "cannot build",
    "unknown": "JAX refused the fast path for a reason jitlens cannot name",
}
FAST_PATH_FIXES = {
    "host_callback": "keep jax.debug.print / jax.debug.callback out of the hot `{name}`: "
    "return the values and print them on the host every N steps, or debug a separate "
    "jitted copy of it",
    "ordered_effect": "move the io_callback out of `{name}` (return its inputs and call the "
    "host function after it), or pass ordered=False if the order does not matter",
}
FAST_PATH_FIX_OTHER = "profile a few calls of `{name}` (jax.profiler) to see its Python dispatch"


@record
class DispatchSample:
    """A function's own cache hits, sampled (``_track/advisor.py`` says how).

    Each figure is the least disturbed (minimum) of the samples.
    ``host_seconds``: wrapper entry -> return (what the Python loop waits for).
    ``device_seconds``: return -> outputs ready, inputs made ready first (the
    compiled program's own time that did not overlap the host part).
    ``cached_graph_seconds``: one ``graphlib.flatten`` of the leading graph-node
    arguments, the part ``nnx.cached_partial`` would cache; None when none lead.
    """

    samples: int
    host_seconds: float
    device_seconds: float
    cached_graph_seconds: float | None
    cached_args: tuple[str, ...]
    rest_args: tuple[str, ...]
    #: Leaves of the call's key per argument name, for ``many_leaves`` (``advice_leaves``).
    leaves: tuple[tuple[str, int], ...] = ()


@record
class Environment:
    """The JAX settings and run figures the rules need, read once per report."""

    run_seconds: float
    cache_dir: str | None
    cache_enabled: bool
    min_compile_seconds: float
    #: ``jax.default_backend()``: whose measured rates the predictions use (``platforms``).
    platform: str = ""


def _duration(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} us"


def cached_partial_saving(sample: DispatchSample, latency: float = 0.0) -> float:
    """Seconds per call that ``nnx.cached_partial`` saves, given host/device overlap.

    With asynchronous dispatch a loop runs at ``max(host, device)`` per call;
    removing ``s`` of host time saves ``max(h, d) - max(h - s, d)``: nothing
    when the compiled program is the slower part. ``latency``: the platform's
    ``Calibration.ready_latency_seconds``, the part of the sampled device time that is
    the accelerator reporting back (a loop dispatches the next call meanwhile).
    """
    if sample.cached_graph_seconds is None:
        return 0.0
    h, d = sample.host_seconds, max(0.0, sample.device_seconds - latency)
    s = min(CACHED_PARTIAL_FACTOR * sample.cached_graph_seconds, h)
    return max(h, d) - max(h - s, d)


def dispatch(fn: FunctionReport, sample: DispatchSample | None, env: Environment) -> Advice | None:
    """``dispatch`` advice for a default-mode ``nnx.jit`` function, or None."""
    if sample is None or sample.samples == 0 or not fn.cache_hits or not sample.cached_args:
        return None
    from .platforms import calibration  # with the first report, not at a program's start

    latency = calibration(env.platform).ready_latency_seconds
    per_call = cached_partial_saving(sample, latency)
    total = per_call * fn.cache_hits
    call_time = max(sample.host_seconds, sample.device_seconds - latency)
    if (
        total < DISPATCH_MIN_SECONDS
        or total < DISPATCH_MIN_RUN_SHARE * env.run_seconds
        or per_call < DISPATCH_MIN_CALL_SHARE * call_time
    ):
        return None
    share = total / env.run_seconds if env.run_seconds > 0 else 1.0
    message = DISPATCH_MESSAGE.format(
        host=_duration(sample.host_seconds),
        device=_duration(sample.device_seconds),
        samples=sample.samples,
        hits=fn.cache_hits,
        share=min(1.0, share),
    )
    fix = DISPATCH_FIX.format(
        name=fn.name,
        cached=", ".join(sample.cached_args),
        rest=", ".join(sample.rest_args),
        first=sample.cached_args[0],
    )
    return Advice("dispatch", message, fix, round(total, 6))


def compile_cache(fn: FunctionReport, env: Environment) -> Advice | None:
    """``compile_cache`` advice: compile seconds the next run could read from disk."""
    return _compile_cache([fn], env, COMPILE_CACHE_MIN_SECONDS)


def _missed(fn: FunctionReport, env: Environment) -> list[Event]:
    """The compiles of ``fn`` the persistent cache did not keep for the next run."""
    compiled = [e for e in fn.events if e.compiled and not e.persistent_cache_hit]
    if env.cache_enabled and bool(env.cache_dir):
        return [e for e in compiled if e.compile_seconds < env.min_compile_seconds]
    return compiled


def _compile_cache(
    functions: Sequence[FunctionReport], env: Environment, least: float
) -> Advice | None:
    """What the persistent cache would save the next run on ``functions`` (one function's, or
    the whole run's), at least ``least`` seconds; its setting is the same for every run of a
    program (:data:`CACHE_MIN_COMPILE_HINT`): one that followed this run's compile times
    changed from run to run on a loaded machine."""
    missed = {fn.qualname: _missed(fn, env) for fn in functions}
    events = [e for es in missed.values() for e in es]
    seconds = sum(e.compile_seconds for e in events)
    if not events or seconds < least:
        return None
    hint = CACHE_MIN_COMPILE_HINT if env.min_compile_seconds > CACHE_MIN_COMPILE_HINT else 0.0
    setting = COMPILE_CACHE_FIX_THRESHOLD.format(value=hint)
    names = [name for name, es in missed.items() if es]
    of = "" if len(functions) == 1 else COMPILE_CACHE_OF.format(functions=_names(names))
    if env.cache_enabled and bool(env.cache_dir):
        message = COMPILE_CACHE_BELOW.format(
            n=len(events), of=of, seconds=seconds, threshold=env.min_compile_seconds
        )
        fix = setting
    else:
        message = COMPILE_CACHE_OFF.format(n=len(events), of=of, seconds=seconds)
        fix = COMPILE_CACHE_FIX_OFF.format(dir=CACHE_DIR_HINT, threshold=f" and {setting}")
    return Advice("compile_cache", message, fix, round(seconds, 6))


def _names(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``3 functions (a, b, c)`` (at most :data:`RUN_NAMES` named)."""
    if len(names) <= 2:
        return " and ".join(names)
    shown = ", ".join(names[:RUN_NAMES]) + (", …" if len(names) > RUN_NAMES else "")
    return f"{len(names)} functions ({shown})"


def run_advice(
    functions: Sequence[FunctionReport], cache: PersistentCache | None
) -> tuple[Advice, tuple[str, ...]] | None:
    """The run's one compile-cache hint, and the functions whose compiles it counts: every
    function's compiles the persistent cache would keep, summed (one setting serves them all;
    said once per function it was the same fix over and over), none when some function has no
    ``compile_cache`` advice of its own to give. ``cache``: the run's cache settings
    (``Report.run.persistent_cache``); unknown (an older report), the functions' own
    ``compile_cache`` advice is summed as it was written."""
    own = [(fn, a) for fn in functions for a in fn.advice if a.kind is AdviceKind.COMPILE_CACHE]
    if not own:
        return None
    names = tuple(fn.qualname for fn, _ in own)
    if cache is None or cache.enabled is None:
        top = max(own, key=lambda p: p[1].estimated_saving_seconds or 0.0)[1]
        total = sum(a.estimated_saving_seconds or 0.0 for _, a in own)
        return Advice(top.kind, top.message, top.fix, round(total, 6)), names
    env = Environment(0.0, cache.dir, cache.enabled, cache.min_compile_time_secs or 1.0)
    found = _compile_cache(functions, env, COMPILE_CACHE_MIN_SECONDS)
    names = tuple(fn.qualname for fn in functions if _missed(fn, env))
    return (found, names) if found is not None else None


def entries(fn: FunctionReport) -> Advice | None:
    """``entries`` advice: compiled entries still piling up late in the run."""
    compiled = [e for e in fn.events if e.compiled]
    if len(compiled) < ENTRIES_WARN or not fn.calls:
        return None
    half = fn.first_call_index + fn.calls / 2
    late = [e for e in compiled if e.call_index is not None and e.call_index >= half]
    if len(late) < ENTRIES_LATE:
        return None
    fixes = [r.fix for e in late for r in e.reasons if r.fix]
    fix = fixes[0] if fixes else ENTRIES_FIX_DEFAULT.format(name=fn.name)
    lost = sum(e.seconds for e in late)
    return Advice(
        "entries",
        ENTRIES_MESSAGE.format(n=len(compiled), late=len(late)),
        fix,
        round(lost, 6),
    )


def bucketing(fn: FunctionReport) -> Advice | None:
    """``buckets`` advice: many sizes of one axis, and the buckets the recorded sizes call for."""
    if not any(e.reasons for e in fn.events):
        return None  # no retrace reasons: no sizes to bucket
    compiled = [e for e in fn.events if e.compiled]
    from . import buckets  # at a retrace: only events have sizes

    for size_set in buckets.size_sets(fn.events):
        proposal = buckets.propose(size_set)
        if proposal is None:
            continue
        n, k = proposal.compiles_before, len(proposal.buckets)
        shown = list(size_set.distinct)
        sizes = ", ".join(map(str, shown[:6])) + (", …" if len(shown) > 6 else "")
        each = sum(e.seconds for e in compiled) / len(compiled) if compiled else 0.0
        return Advice(
            "buckets",
            BUCKETS_MESSAGE.format(path=size_set.path, n=n, axis=size_set.axis, sizes=sizes),
            BUCKETS_FIX.format(
                axis=size_set.axis,
                path=size_set.path,
                buckets=", ".join(map(str, proposal.buckets)),
                k=k,
                n=n,
                padding=proposal.padding,
            ),
            round(each * (n - k), 6),
        )
    return None


def disable_jit(eager_calls: int) -> Advice | None:
    """``disable_jit`` advice when sampled calls ran with ``jax_disable_jit`` on."""
    if eager_calls <= 0:
        return None
    return Advice("disable_jit", DISABLE_JIT_MESSAGE.format(n=eager_calls), DISABLE_JIT_FIX, None)


def fast_path(fn: FunctionReport, timed: tuple[int, float] | None) -> Advice | None:
    """``fast_path`` advice: cache hits that ran JAX's Python dispatch.

    ``timed`` is ``(samples, seconds)``: the least-disturbed of a few such
    calls, from entry to outputs ready and host callbacks done. The saving
    is what each would cost less on the fast path, times the calls counted.
    """
    n = fn.python_dispatch_calls
    if not n:
        return None
    cause = fn.python_dispatch_cause or "unknown"
    saving = None
    cost = ""
    if timed is not None:
        samples, seconds = timed
        saving = round(max(0.0, seconds - FAST_PATH_CALL_SECONDS) * n, 6)
        cost = FAST_PATH_COST.format(
            cost=_duration(seconds), samples=samples, fast=_duration(FAST_PATH_CALL_SECONDS)
        )
        if saving < FAST_PATH_MIN_SECONDS:
            return None
    elif n < FAST_PATH_MIN_CALLS:
        return None
    message = FAST_PATH_MESSAGE.format(
        n=n, cause=FAST_PATH_CAUSES.get(cause, FAST_PATH_CAUSES["unknown"]), cost=cost
    )
    fix = FAST_PATH_FIXES.get(cause, FAST_PATH_FIX_OTHER).format(name=fn.name)
    return Advice("fast_path", message, fix, saving)


def advise(
    fn: FunctionReport,
    sample: DispatchSample | None,
    env: Environment,
    eager_calls: int = 0,
    fast_path_timed: tuple[int, float] | None = None,
) -> tuple[Advice, ...]:
    """Every rule on one function, most valuable first.

    ``disable_jit`` leads (it outweighs everything else, though its saving
    cannot be measured); the others follow by estimated saving, ``compile_cache``
    by what it would still save once the program is made smaller
    (``unrolled_loop``, ``captured_constant``: they save the same seconds).

    Example:
      >>> from jitlens._core.report import FunctionReport
      >>> fn = FunctionReport("f", "f", "nnx.jit", "m.py:1", "m.py:9", 10, 1, 1, 9, 0, 0, 0, 0)
      >>> advise(fn, None, Environment(1.0, None, True, 1.0))
      ()
    """
    from .advice_leaves import many_leaves  # loaded when a report is advised on, not at start
    from .platforms import calibration

    found = [
        disable_jit(eager_calls),
        dispatch(fn, sample, env),
        compile_cache(fn, env),
        entries(fn),
        bucketing(fn),
        fast_path(fn, fast_path_timed),  # issue 24
        *compile_cost(fn, calibration(env.platform)),  # issues 34, 45
        many_leaves(fn, sample, env),
    ]
    chosen = [a for a in found if a is not None]
    # The compile cache and a smaller program save the same compile seconds; the program
    # fixed, the cache saves only what is left: ranked by that, the cause comes first.
    shrunk = sum(a.estimated_saving_seconds or 0.0 for a in chosen if a.kind in COMPILE_SIZE_KINDS)

    def rank(a: Advice) -> float:
        saving = a.estimated_saving_seconds or 0.0
        return max(0.0, saving - shrunk) if a.kind is AdviceKind.COMPILE_CACHE else saving

    return tuple(sorted(chosen, key=lambda a: (a.kind is not AdviceKind.DISABLE_JIT, -rank(a))))
