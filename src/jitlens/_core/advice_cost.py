"""The compile-cost rules of the advisor: what a long compile is made of in, ``Advice`` out.

A slow first compile is usually a program made big by the user's code: a
Python loop the trace unrolled (``unrolled_loop``), a large array captured as
a constant (``captured_constant``); or a compile that its calls never repay
(``compile_bound``). The figures are ``Event.cost`` (``_core/cost.py``, read by
``_track/cost.py`` for compiles of at least :data:`COST_MIN_SECONDS`) and the
event's measured seconds; each predicted saving is checked against the one
measured by applying the fix in ``benchmarks/compile_cost.py``.

See also:
  ``jax_log_compiles`` and ``jax_dump_ir_modes=eqn_count_pprof`` show the same
  program as logs and a profile to read; jitlens names the line or variable,
  the change and what it saves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .kinds import LOOP_FIXES, ROW_KIND_API, STACKED_LAYERS_FIXES, AdviceKind
from .report import Advice, Event, FunctionReport

if TYPE_CHECKING:  # .cost loads with the first long compile, .platforms with a report
    from .cost import CompileCost, LoopCost
    from .platforms import Calibration

#: ``compile_cost``: a program is read (``_track/cost.py``) and advised on only when its
#: trace + lowering + compile took at least this long ("well under a second": nothing).
COST_MIN_SECONDS = 0.5
#: ... and a change is advised only when it saves at least this much per run.
COST_MIN_SAVING_SECONDS = 0.25
#: ... and a loop only when it made at least this share of the program ...
LOOP_MIN_SHARE = 0.2
#: ... and ran at least this many times (rolled, a body costs ~``SCAN_BODY_FACTOR``
#: copies: a short loop gains little, and a small program's compile is mostly fixed
#: costs that the equation count does not see).
LOOP_MIN_ITERATIONS = 8
#: What a ``lax.scan`` / ``fori_loop`` of a body costs XLA, in equations of its
#: body: the body once, plus the loop (a while loop, slicing the stacked inputs,
#: updating the carry). Calibrated: 8-64 layers of a 23-equation MLP block, loop vs
#: scan, predicted saving 0.9-1.1x the measured one; ``benchmarks/compile_cost.py``.
SCAN_BODY_FACTOR = 3.0
#: ... and a program with a rolled loop still costs at least the platform's
#: ``Calibration.scan_floor_seconds`` to trace and compile (the loop, slicing the stacked
#: inputs, nnx.scan's state handling): the scan versions in ``benchmarks/compile_cost.py``
#: took 0.3-1.9 s on a shared 2-core CPU, 0.1-0.3 s on a TPU v5e; without the floor small
#: NNX programs were predicted to save 1.5-2.8x what they did (``_core/platforms.py``).
#: A captured constant's share of a program's compile: the platform's
#: ``Calibration.const_seconds_per_mib`` per MiB (XLA embeds it in the program, hashes
#: and folds it; measured 0.04-0.09 s/MiB for 1-34 MiB tables, matmul and add, jax 0.10.2
#: CPU, loaded; about 0.01 s/MiB on a TPU v5e) against ``EQN_SECONDS`` per equation
#: (2.6-5.8 ms measured for 184-1472 equations, CPU). The seconds come from the measured
#: compile, above the platform's ``const_floor_seconds``, at most
#: ``const_max_factor`` times the per-MiB rate.
EQN_SECONDS = 4e-3
#: What tracing one equation costs at most (measured 0.04-0.25 ms per equation for the
#: programs of ``benchmarks/compile_cost_trial.py``, grads included, loaded 2-core machine):
#: a trace longer than this per equation spent the rest in the user's Python. When an array
#: was built while tracing (no variable holds it), that rest is counted as building it:
#: a 4M-value static tuple turned into an array spent 17 s of a 17.2 s trace on it.
TRACE_SECONDS_PER_EQN = 1e-3
#: What running one equation op by op costs on the host (jax 0.10.2 CPU dispatch,
#: measured 25-55 us for sin / add / matmul of an 8x8 array on a loaded 2-core machine):
#: what jit saves per equation per call, before fusion.
EAGER_OP_SECONDS = 40e-6
UNROLLED_MESSAGE = (
    "the {kind} at {where} was unrolled by the trace: {eqns:,} of the program's "
    "{total:,} equations ({share:.0%}) are {n} repeats of the same ~{each:,}, and "
    "tracing + compiling took {seconds:.2f} s"
)
UNROLLED_SCAN_MESSAGE = (
    "the `jax.lax.scan` / `fori_loop` at {where} is unrolled {unrolled}: {eqns:,} of "
    "the program's {total:,} equations ({share:.0%}) are copies of its body, and "
    "tracing + compiling took {seconds:.2f} s"
)
#: How an unrolled scan was asked for: every iteration (``unroll=True``), some, or unknown.
UNROLLED_ALL = "fully ({n} copies of its body: `unroll=True` or `unroll={n}`)"
UNROLLED_SOME = "{n} times (`unroll={n}` over {length} iterations)"
UNROLLED_SOME_UNKNOWN = "{n} times (`unroll=True` or `unroll={n}`)"
#: The fix of a loop the trace unrolled: JAX's scan, or a smaller unroll; a loop over the layers
#: in a jit of a library that stacks its layers its own way: ``kinds.STACKED_LAYERS_FIXES``.
UNROLLED_FIXES = {
    "jax": (
        "turn the body of the loop at {where} into a function and run it with "
        "`jax.lax.scan` over the stacked per-iteration values (`jax.lax.fori_loop` when "
        "only the index changes; `jax.vmap` when the iterations are independent, e.g. "
        "one per example of a batch): XLA compiles the body once, ~{body:,} equations "
        "instead of {eqns:,}"
    ),
    "unroll": (
        "drop {unroll} (or pass a small one, e.g. `unroll=4`) at {where}: XLA compiles "
        "the body once, ~{body:,} equations instead of {eqns:,}"
    ),
}
CONSTANT_MESSAGE = (
    "{what} ({shape} {dtype}, {size}) is captured from Python and compiled into the "
    "program as a constant: lowering and compiling it cost ~{saving:.2f} s"
)
#: ... several arrays reached through one container (``weights[0][0]``, ``weights[1][0]``).
CONSTANTS_MESSAGE = (
    "`{what}` holds {n} arrays captured from Python ({shapes}; {size} in all), compiled "
    "into the program as constants: lowering and compiling them cost ~{saving:.2f} s"
)
#: ... an array no variable holds, e.g. made from NumPy in the function's body.
CONSTANT_MADE_MESSAGE = (
    "an array read at {where} ({shape} {dtype}, {size}) is compiled into the program as a "
    "constant (no variable the function reaches holds it: it was built while tracing, e.g. "
    "from NumPy in the body or from a static argument): building it while tracing, "
    "lowering and compiling it cost ~{saving:.2f} s"
)
CONSTANT_FIX = (
    "pass `{name}` to {function} as an argument instead of closing over it ({call}mark "
    "nothing static): it becomes an input buffer, not part of the program"
)
#: ... how, when the function has a name to call it by.
CONSTANT_CALL = "add a parameter and call `{function}(..., {arg})`; "
CONSTANT_FIX_UNNAMED = (
    "pass the {shape} array to {function} as an argument instead of closing over it: "
    "it becomes an input buffer, not part of the program"
)
CONSTANT_FIX_MADE = (
    "build the {shape} array read at {where} once, outside {function}, and pass it as an "
    "argument, not static (NumPy computed in a jitted body runs at trace time and is "
    "compiled in): it becomes an input buffer, not part of the program"
)
COMPILE_BOUND_MESSAGE = (
    "compiled {compiles}x for {seconds:.2f} s and served no cache hit in {calls} "
    "call(s): run op by op, its {eqns:,} equations would cost ~{eager} of dispatch "
    "per call; whether jit pays depends on the workload"
)
COMPILE_BOUND_FIX = (
    "call `{name}` many times per compile (same shapes and statics), or run it without "
    "jit where it runs once (e.g. a setup step)"
)


def _callable_name(fn: FunctionReport) -> str:
    """The name a user calls the function by (``step`` of ``Trainer.step``); "" for a lambda."""
    name = fn.name.rpartition(".")[2]
    return name if name.isidentifier() else ""


def _where(file: str, line: int) -> str:
    return f"{file}:{line}"


def loop_saving(
    cost: CompileCost, loop: LoopCost, seconds: float, cal: Calibration | None = None
) -> float:
    """Seconds a rolled loop would save on one compile of this program.

    Compile time grows with the equations XLA sees; rolled, the loop counts
    its body ``SCAN_BODY_FACTOR`` times instead of ``iterations`` times, and
    the program costs at least the platform's ``scan_floor_seconds``.
    """
    if cost.eqns <= 0:
        return 0.0
    floor = (cal or _cpu()).scan_floor_seconds
    after = cost.eqns - loop.eqns + min(loop.eqns, SCAN_BODY_FACTOR * loop.body_eqns)
    return max(0.0, seconds - max(floor, seconds * after / cost.eqns))


def constant_saving(
    nbytes: int, cost: CompileCost, seconds: float, cal: Calibration | None = None
) -> float:
    """Seconds passing a captured constant as an argument would save on one compile.

    The constant's share of the program (its bytes against all constants' and
    the equations, weighed by the platform's ``const_seconds_per_mib`` and
    ``EQN_SECONDS``) of the measured seconds above its ``const_floor_seconds``,
    at most ``const_max_factor`` times its own rate; nothing for an array smaller than
    the platform's ``const_min_mib`` (whose passing saved nothing measurable there).
    """
    cal = cal or _cpu()
    if cal.const_seconds_per_mib <= 0 or nbytes < cal.const_min_mib * 2**20:
        return 0.0
    mine = cal.const_seconds_per_mib * nbytes / 2**20
    everything = cal.const_seconds_per_mib * max(cost.const_bytes, nbytes) / 2**20
    share = mine / (everything + EQN_SECONDS * cost.eqns)
    # the share of a small program is large; its constant still costs no more than the cap
    return min(max(0.0, seconds - cal.const_floor_seconds) * share, cal.const_max_factor * mine)


def built_saving(nbytes: int, cost: CompileCost, trace_seconds: float) -> float:
    """Trace seconds spent building an array no variable holds (made while tracing).

    The trace's time beyond ``TRACE_SECONDS_PER_EQN`` per equation went to the
    user's Python; with unnamed constants in the program, it is counted as
    building them, shared by their bytes. Built once outside, it is not paid per trace.
    """
    unnamed = sum(c.nbytes for c in cost.consts if not c.name and c.line) or nbytes
    excess = trace_seconds - TRACE_SECONDS_PER_EQN * cost.eqns
    return max(0.0, excess) * nbytes / max(unnamed, nbytes)


def _costed(fn: FunctionReport) -> list[tuple[Event, CompileCost]]:
    return [
        (e, e.cost)
        for e in fn.events
        if e.cost is not None and e.compiled and e.seconds >= COST_MIN_SECONDS
    ]


def _unrolled(fn: FunctionReport, cal: Calibration) -> list[Advice]:
    """``unrolled_loop`` advice: one per loop, its saving summed over the compiles it made."""
    found: dict[tuple[str, int], list[Any]] = {}
    for e, cost in _costed(fn):
        for loop in cost.loops:
            if loop.eqns < LOOP_MIN_SHARE * cost.eqns or loop.iterations < LOOP_MIN_ITERATIONS:
                continue
            slot = found.setdefault((loop.file, loop.line), [loop, cost, e, 0.0])
            slot[3] += loop_saving(cost, loop, e.seconds, cal)
    out = []
    if found:
        from .cost import LoopKind
    for (file, line), (loop, cost, e, saving) in found.items():
        if saving < COST_MIN_SAVING_SECONDS:
            continue
        where = _where(file, line) + (f" (in `{loop.via}`)" if loop.via else "")
        fields = dict(
            kind=f"`{loop.kind}` loop" if loop.kind != LoopKind.COMPREHENSION else "comprehension",
            where=where,
            n=loop.iterations,
            eqns=loop.eqns,
            total=cost.eqns,
            share=loop.eqns / cost.eqns,
            seconds=e.seconds,
            body=int(SCAN_BODY_FACTOR * loop.body_eqns),
            each=loop.body_eqns,
        )
        if loop.kind == LoopKind.UNROLLED_SCAN:
            full = loop.length > 0 and loop.iterations >= loop.length
            n = loop.iterations
            fields["unroll"] = (
                f"`unroll={n}`" if loop.length and not full else f"`unroll=True` (or `unroll={n}`)"
            )
            fields["unrolled"] = (
                UNROLLED_ALL if full else UNROLLED_SOME if loop.length else UNROLLED_SOME_UNKNOWN
            ).format(n=loop.iterations, length=loop.length)
            message, fix = UNROLLED_SCAN_MESSAGE.format(**fields), UNROLLED_FIXES["unroll"]
        else:
            message = UNROLLED_MESSAGE.format(**fields)
            fix = _loop_fix(fn, loop)
        out.append(
            Advice(AdviceKind.UNROLLED_LOOP, message, fix.format(**fields), round(saving, 6))
        )
    return out


def _loop_fix(fn: FunctionReport, loop: LoopCost) -> str:
    """The fix of a loop by what it walks over, in the terms of the library its body runs.

    Layers whose body ran no library file take the API of the function's jit (an NNX
    module reading its ``nnx.Param``s with plain JAX); a loop whose walk is unknown (an
    older report) gets the layers fix of the jit's library, else JAX's scan.
    """
    if not loop.walk:
        return STACKED_LAYERS_FIXES.get(fn.kind, UNROLLED_FIXES["jax"])
    api = loop.api or (ROW_KIND_API.get(fn.kind, "") if loop.walk == "layers" else "")
    return LOOP_FIXES.get((str(loop.walk), api)) or LOOP_FIXES[(str(loop.walk), "")]


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 1024:.0f} KiB"


def _root(name: str) -> str:
    """The variable a constant was reached through: ``weights`` of ``weights[2][0]``."""
    return name.partition("[")[0]


def _constants(fn: FunctionReport, cal: Calibration) -> list[Advice]:
    """``captured_constant`` advice: one per variable holding captured arrays, summed over
    the compiles (the arrays of one list or dict are passed together)."""
    found: dict[tuple[Any, ...], list[Any]] = {}
    for e, cost in _costed(fn):
        for c in cost.consts:
            key = (_root(c.name),) if c.name else ("", c.shape, c.dtype, c.file, c.line)
            slot = found.setdefault(key, [{}, 0.0])
            slot[0].setdefault((c.name, c.shape, c.dtype), c)
            built = 0.0
            if not c.name and c.line:  # built while tracing: the trace's excess too
                built = built_saving(c.nbytes, cost, e.trace_seconds)
            slot[1] += built + constant_saving(c.nbytes, cost, e.seconds - built, cal)
    name = _callable_name(fn)
    function = f"`{name}`" if name else "the jitted function"
    out = []
    for key, (arrays, saving) in found.items():
        if saving < COST_MIN_SAVING_SECONDS:
            continue
        cs = list(arrays.values())
        c = cs[0]
        shape = "x".join(map(str, c.shape)) or "scalar"
        size = _size(sum(x.nbytes for x in cs))
        root = key[0]
        if len(cs) > 1:
            from collections import Counter  # this module loads at start; this rarely runs

            kinds = Counter(f"{'x'.join(map(str, x.shape))} {x.dtype}" for x in cs)
            shapes = ", ".join(f"{k}x {what}" if k > 1 else what for what, k in kinds.items())
            message = CONSTANTS_MESSAGE.format(
                what=root, n=len(cs), shapes=shapes, size=size, saving=saving
            )
        elif c.name or not c.line:
            what = f"`{c.name}`" if c.name else "an array"
            message = CONSTANT_MESSAGE.format(
                what=what, shape=shape, dtype=c.dtype, size=size, saving=saving
            )
        else:
            message = CONSTANT_MADE_MESSAGE.format(
                where=_where(c.file, c.line), shape=shape, dtype=c.dtype, size=size, saving=saving
            )
        if root:
            arg = root.rpartition(".")[2]
            call = CONSTANT_CALL.format(function=name, arg=arg) if name else ""
            fix = CONSTANT_FIX.format(name=root, function=function, call=call)
        elif c.line:
            fix = CONSTANT_FIX_MADE.format(
                shape=shape, where=_where(c.file, c.line), function=function
            )
        else:
            fix = CONSTANT_FIX_UNNAMED.format(shape=shape, function=function)
        out.append(Advice(AdviceKind.CAPTURED_CONSTANT, message, fix, round(saving, 6)))
    return out


def _compile_bound(fn: FunctionReport) -> list[Advice]:
    """``compile_bound``: long compiles never reused, of programs cheap to run op by op."""
    costed = _costed(fn)
    if not costed or fn.cache_hits != 0 or not fn.calls:
        return []
    seconds = sum(e.seconds for e, _ in costed)
    eqns = max(c.eqns for _, c in costed)
    eager = eqns * EAGER_OP_SECONDS
    if seconds < 2 * COST_MIN_SECONDS or eager * fn.calls >= seconds:
        return []
    message = COMPILE_BOUND_MESSAGE.format(
        compiles=len(costed),
        seconds=seconds,
        calls=fn.calls,
        eqns=eqns,
        eager=f"{eager * 1e3:.2f} ms",
    )
    fix = COMPILE_BOUND_FIX.format(name=_callable_name(fn) or fn.name)
    return [Advice(AdviceKind.COMPILE_BOUND, message, fix, None)]


def compile_cost(fn: FunctionReport, cal: Calibration | None = None) -> list[Advice]:
    """The compile-cost rules on one function (nothing when it compiled in under
    ``COST_MIN_SECONDS``), with the rates measured on its platform (``cal``; the CPU's
    when None)."""
    cal = cal or _cpu()
    return [*_unrolled(fn, cal), *_constants(fn, cal), *_compile_bound(fn)]


def _cpu() -> Calibration:
    from .platforms import calibration  # with the first report, not at a program's start

    return calibration(None)
