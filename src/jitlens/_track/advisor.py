"""Measuring for the advisor: a few of each function's own cache hits, sampled.

The hit path stays as it was: a call takes the detailed path only while its
index is below ``STATE[1]``, which the advisor raises to at least
:data:`~.state.ADVICE_CALLS` (first calls only, a check the hit path already
makes). Among those, every :data:`SAMPLE_EVERY`-th call of a default-mode
``nnx.jit`` function from :data:`SAMPLE_FROM` on is *sampled*:

1. its inputs are made ready first (``jax.block_until_ready``), so earlier
   queued work is not charged to this call;
2. ``host`` = wrapper entry -> return: flax's traversal of the graph on the
   way in and out, plus JAX's dispatch (with asynchronous dispatch the
   program runs in the background);
3. ``device`` = return -> outputs ready: the compiled program's own time
   that did not overlap the host part;
4. once per function, one ``graphlib.flatten`` of the leading graph-node
   arguments (what ``nnx.cached_partial`` caches) is timed, best of 5.

The least-disturbed figure (the minimum) of each is kept: on a shared
machine a preempted call only ever adds time.

Why not a cost model (``Compiled.cost_analysis()``): on CPU it is not a
time, and no model sees flax's Python overhead. Why not time the inner
``jax.jit`` call: it means swapping an attribute of flax's wrapper per call.
Blocking on a handful of calls changes when the program waits, never what
it computes. The medians go to ``_core.advice``, which decides.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import jax

from .. import _compat
from .._core.advice import DispatchSample, Environment, advise
from .._core.kinds import EntryKind, RowKind
from .._core.report import Advice, FunctionReport
from . import fastpath
from .records import Record
from .state import ADVICE_CALLS, internal_failure, tls

#: Calls below this index are never sampled (the first call compiles, the next warm caches).
SAMPLE_FROM = 4
#: Of the calls below ``ADVICE_CALLS``, every this-many-th one is sampled.
SAMPLE_EVERY = 4
#: Repetitions of the flatten timing (the minimum is kept), once per function.
FLATTEN_REPEATS = 5


def wants_sample(rec: Record, n: int) -> bool:
    """Is call ``n`` of ``rec`` one to sample (default-mode nnx.jit, a sampling index)?"""
    if n < SAMPLE_FROM or n % SAMPLE_EVERY or n >= ADVICE_CALLS[0]:
        return False  # a few samples, even when a timeline keeps more calls detailed
    try:  # (on a call of the program's: nothing of jitlens' may raise into it)
        if fastpath.is_slow(rec):  # its hits run JAX's Python dispatch: what would fixing save?
            return True
        mode = rec.sample_mode
        if mode is None:
            wrapper = rec.wrapper_ref() if rec.wrapper_ref is not None else None
            mode = rec.sample_mode = (
                rec.kind == RowKind.NNX_JIT
                and wrapper is not None
                and _compat.nnx_kind(wrapper) == RowKind.NNX_JIT
            ) or _many_leaves(rec)
    except Exception as exc:  # a lazy import the program's own audit hook refuses, ...
        internal_failure("choosing the calls to sample for advice", exc)
        mode = rec.sample_mode = False
    return bool(mode)


def _many_leaves(rec: Record) -> bool:
    """A ``jax.jit`` whose last key holds enough leaves for ``many_leaves`` advice."""
    if rec.kind != RowKind.JAX_JIT:
        return False
    from .._core.advice_leaves import MANY_LEAVES_MIN  # only a jax.jit called 4 times asks

    return sum(n for _, n in _leaves(rec)) >= MANY_LEAVES_MIN


def _leaves(rec: Record) -> tuple[tuple[str, int], ...]:
    """The arrays of ``rec``'s last key per argument name, in the order of the arguments."""
    with rec.lock:
        key = rec.keys[-1] if rec.keys else None
    counts: dict[str, int] = {}
    for path, entry in key.entries.items() if key is not None else ():
        if path and path[0][0] == "arg" and entry.kind == EntryKind.AVAL:
            name = str(path[0][1])
            counts[name] = counts.get(name, 0) + 1
    return tuple(counts.items())


def _arrays(value: Any, depth: int) -> list[Any]:
    """The JAX arrays in ``value``: in builtin containers and NNX objects (flattened by flax),
    never through a pytree of the program's (its flatten is its code: JAX runs it at the call)."""
    t = type(value)
    if issubclass(t, jax.Array):
        return [value]
    if depth <= 0:
        return []
    if t is tuple or t is list:
        return [a for v in value for a in _arrays(v, depth - 1)]
    if t is dict:
        return [a for v in dict.values(value) for a in _arrays(v, depth - 1)]
    if _compat.is_graph_node(value):
        flat = _compat.flatten_node(value)
        return [a for v in flat[1] for a in _arrays(v, 1)] if flat is not None else []
    return []


def sampled_call(fn: Any, rec: Record, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run one call as the user made it, timing host and device parts (see the module doc)."""
    __tracebackhide__ = True
    try:
        # Under vmap/grad the arguments are tracers: nothing to time, no sample.
        ready = _compat.trace_state_clean()
        if ready:
            jax.block_until_ready(_arrays((args, kwargs), 4))
    except Exception:
        ready = False  # e.g. a donated input: the call itself will say so
    if not ready:
        return fn(*args, **kwargs)
    n0 = tls.nevents
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    t1 = time.perf_counter()
    try:
        if tls.nevents == n0:  # a cache hit: nothing traced or compiled
            jax.block_until_ready(out)
            t2 = time.perf_counter()
            with rec.lock:
                rec.dispatch_samples.append((t1 - t0, t2 - t1))
            if fastpath.is_slow(rec):  # its host callbacks finish after its outputs
                jax.effects_barrier()
                fastpath.add_sample(rec, time.perf_counter() - t0)
            if rec.cached_graph is None:
                rec.cached_graph = _cached_graph(rec, args)
    except Exception as exc:
        internal_failure("sampling a call for the advisor", exc)
    return out


def _cached_graph(
    rec: Record, args: tuple[Any, ...]
) -> tuple[float | None, tuple[str, ...], tuple[str, ...]]:
    """Time one flatten of the leading graph-node arguments; name the arguments."""
    lead = 0
    while lead < len(args) and _compat.is_graph_node(args[lead]):
        lead += 1
    names = _arg_names(rec, len(args))
    if lead == 0:
        return None, (), tuple(names)
    times = []
    for _ in range(FLATTEN_REPEATS):
        refs = _compat.new_ref_map()  # one map for all, as nnx.jit shares references
        t = time.perf_counter()
        for a in args[:lead]:
            if _compat.flatten_node(a, refs) is None:
                return None, (), tuple(names)
        times.append(time.perf_counter() - t)
    return min(times), tuple(names[:lead]), tuple(names[lead:])


def _arg_names(rec: Record, n: int) -> list[str]:
    fn = rec.user_fn()
    try:
        params = list(inspect.signature(fn).parameters.values()) if fn is not None else []
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def note_eager(rec: Record) -> None:
    """A detailed call ran under ``jax_disable_jit`` (read per call in the first calls only)."""
    if jax.config.jax_disable_jit:
        with rec.lock:
            rec.eager_calls += 1


def environment(run_seconds: float) -> Environment:
    """The persistent-cache settings now, from the public ``jax.config``."""
    cfg = jax.config
    return Environment(
        run_seconds=run_seconds,
        cache_dir=getattr(cfg, "jax_compilation_cache_dir", None) or None,
        cache_enabled=bool(getattr(cfg, "jax_enable_compilation_cache", True)),
        min_compile_seconds=float(getattr(cfg, "jax_persistent_cache_min_compile_time_secs", 1.0)),
        platform=_platform(),
    )


def _platform() -> str:
    """The platform the program ran on (its backends exist: the report reads them too)."""
    try:
        return str(jax.default_backend())
    except Exception:
        return ""


def dispatch_sample(rec: Record) -> DispatchSample | None:
    with rec.lock:
        samples = list(rec.dispatch_samples)
        graph = rec.cached_graph
    if not samples or graph is None:
        return None
    return DispatchSample(
        samples=len(samples),
        host_seconds=min(s[0] for s in samples),
        device_seconds=min(s[1] for s in samples),
        cached_graph_seconds=graph[0],
        cached_args=graph[1],
        rest_args=graph[2],
        leaves=_leaves(rec) if rec.kind == RowKind.JAX_JIT else (),
    )


def advice_for(rec: Record, fn: FunctionReport, env: Environment | None) -> tuple[Advice, ...]:
    """The advice for one function of a report; nothing (and a warning) if it fails."""
    if env is None:
        return ()
    try:
        return advise(fn, dispatch_sample(rec), env, rec.eager_calls, fastpath.sample_seconds(rec))
    except Exception as exc:
        internal_failure("advising on a function", exc)
        return ()
