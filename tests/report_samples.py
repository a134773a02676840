"""Hand-built reports shared by the renderer tests: realistic data, no JAX needed."""

from __future__ import annotations

import dataclasses
import itertools

from jitlens import SCHEMA_VERSION, Event, FunctionReport, Reason, Report, StaleHit

#: A static whose repr would run as script if a renderer forgot to escape it.
XSS = "<script>alert(1)</script>"

_PARTIAL = (
    "functools.partial(<function avg_pool at 0x7f3a2c1b9e40>, window_shape=(2, 2), strides=(2, 2))"
)
_IDENTITY = Reason(
    kind="identity_static",
    argument="model",
    path="model.avg_pool",
    before=_PARTIAL + " at 0x7f3a1d2e8b80",
    after=_PARTIAL + " at 0x7f3a1d2f0f40",
    message=(
        "functools.partial compares by identity; every new model holds a new one, "
        "so its GraphDef never equals the cached one."
    ),
    fix=(
        "call nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2)) in __call__ "
        "instead of storing the partial on the module."
    ),
)


def _shape(path: str, before: str, after: str, message: str = "") -> Reason:
    return Reason(
        kind="shape",
        argument=path.split(".")[0].split("[")[0],
        path=path,
        before=before,
        after=after,
        message=message or "a new shape compiles a new program.",
        fix="pad the batch to a fixed size (drop_remainder=True) or mark the dimension dynamic.",
    )


def _forward() -> FunctionReport:
    events = (
        Event(0, "trace", "case.py:54", "model: Model, x: f32[8,32,32,3]", time=0.10,
              trace_seconds=0.09, lower_seconds=0.02, compile_seconds=0.05, compiled=True),
        Event(1, "retrace", "case.py:54", "model: Model, x: f32[8,32,32,3]", (_IDENTITY,),
              time=0.62, trace_seconds=0.08, lower_seconds=0.02, compile_seconds=0.05,
              compiled=True),
        Event(2, "retrace", "case.py:54", "model: Model, x: f32[8,32,32,3]", (_IDENTITY,),
              time=1.15, trace_seconds=0.09, lower_seconds=0.02, compile_seconds=0.05,
              compiled=True),
    )  # fmt: skip
    return FunctionReport(
        name="forward", qualname="forward", kind="nnx.jit", defined_at="case.py:44",
        first_call_site="case.py:54", calls=3, traces=3, compiles=3, cache_hits=0,
        persistent_cache_hits=0, trace_seconds=0.26, lower_seconds=0.06, compile_seconds=0.15,
        events=events, id=1, call_times=(0.27, 0.78, 1.32), call_entries=(0, 0, 0),
    )  # fmt: skip


def _loss() -> FunctionReport:
    shapes = ("f32[4,4]", "f32[4,4]", "f32[2,4]", "f32[5,4]", "f32[6,4]", "f32[4,4]", "bf16[4,4]")
    entries = (0, 0, 1, 2, 3, 0, 4)
    # When each call started; a tracing call's trace begins just after.
    times = (1.48, 1.52, 1.70, 1.93, 2.15, 2.30, 2.56)
    reasons = {
        2: (_shape("x.shape[0]", "4", "2", "the last batch is ragged: 2 rows instead of 4."),),
        3: (_shape("x.shape[0]", "4", "5"),),
        4: (_shape("x.shape[0]", "5", "6"),),
        6: (
            Reason("dtype", "x", "x", "float32", "bfloat16", "a new dtype compiles a new program.",
                   "cast once where the data is loaded: x.astype(jnp.float32)."),
        ),
    }  # fmt: skip
    # The wrapper had 10 calls before this tracker started: call indices count from its birth.
    events = tuple(
        Event(
            call_index=10 + i, kind="trace" if i == 0 else "retrace", call_site="train.py:88",
            signature=f"x: {shapes[i]}", reasons=reasons.get(i, ()),
            time=round(times[i] + 0.002, 3),
            trace_seconds=0.03, lower_seconds=0.01, compile_seconds=0.04 + 0.01 * i,
            compiled=True, entry=entries[i], thread="MainThread",
        )
        for i in (0, 2, 3, 4, 6)
    )  # fmt: skip
    return FunctionReport(
        name="loss", qualname="Trainer.loss", kind="jax.jit", defined_at="train.py:30",
        first_call_site="train.py:88", calls=7, traces=5, compiles=5, cache_hits=2,
        persistent_cache_hits=0, trace_seconds=sum(e.trace_seconds for e in events),
        lower_seconds=sum(e.lower_seconds for e in events),
        compile_seconds=sum(e.compile_seconds for e in events), events=events, id=2,
        call_times=times, call_entries=entries, first_call_index=10,
    )  # fmt: skip


def _step() -> FunctionReport:
    mode = Reason("static_value", "mode", "mode", XSS, "'eval'",
                  "static argument 'mode' changed value.",
                  "pass mode as a traced flag, or compile both once up front.")  # fmt: skip
    batch = tuple(
        _shape(f"batch['{k}']", "f32[32,128]", "f32[17,128]")
        for k in ("tokens", "mask", "labels", "weights", "positions")
    )
    events = (
        Event(None, "trace", "loop.py:12", "mode: static, batch: dict[5]", time=2.6,
              trace_seconds=0.05, compile_seconds=0.10),
        Event(None, "retrace", "loop.py:19", "mode: static, batch: dict[5]", (mode,), time=3.0,
              trace_seconds=0.05, compile_seconds=0.11, entry=1),
        Event(None, "retrace", "loop.py:12", "mode: static, batch: dict[5] (17 rows)", batch,
              time=3.4, trace_seconds=0.06, lower_seconds=0.01, compile_seconds=0.12, entry=2),
    )  # fmt: skip
    return FunctionReport(
        name="step", qualname="step", kind="jax.jit", defined_at="loop.py:5",
        first_call_site="loop.py:12", calls=None, traces=3, compiles=3, cache_hits=None,
        persistent_cache_hits=0, trace_seconds=0.16, lower_seconds=0.01, compile_seconds=0.33,
        events=events, id=3,
    )  # fmt: skip


def _evaluate() -> FunctionReport:
    stale = StaleHit(
        call_index=2, call_site="eval.py:40", argument="model", path="model.dropout.deterministic",
        before="False", after="True",
        message="nnx.cached_partial served a call whose static attribute changed after caching.",
        fix="call nnx.cached_partial(evaluate, model) again after model.eval().",
    )  # fmt: skip
    return FunctionReport(
        name="evaluate", qualname="evaluate", kind="nnx.cached_partial", defined_at="eval.py:31",
        first_call_site="eval.py:40", calls=4, traces=1, compiles=1, cache_hits=3,
        persistent_cache_hits=1, trace_seconds=0.04, lower_seconds=0.01, compile_seconds=0.0,
        events=(Event(0, "trace", "eval.py:40", "model: Model, x: f32[8,32,32,3]", time=3.7,
                      trace_seconds=0.04, lower_seconds=0.01, persistent_cache_hit=True),),
        stale_hits=(stale,), id=4, call_times=(3.76, 3.8, 3.9, 4.0), call_entries=(0, 0, 0, 0),
    )  # fmt: skip


def _internal() -> FunctionReport:
    return FunctionReport(
        name="_split_merge", qualname="nnx.graph._split_merge", kind="jax.jit",
        defined_at="flax/nnx/graph.py:1200", first_call_site="flax/nnx/transforms.py:300",
        calls=6, traces=1, compiles=1, cache_hits=5, persistent_cache_hits=0,
        trace_seconds=0.01, lower_seconds=0.0, compile_seconds=0.02, internal=True, id=5,
        events=(Event(0, "trace", "flax/nnx/transforms.py:300", "x: f32[4]", time=0.05,
                      trace_seconds=0.01, compile_seconds=0.02),),
    )  # fmt: skip


def sample_report() -> Report:
    """A report with folded identity retraces, growing shapes, unknown calls, XSS and a stale hit."""
    return Report(
        schema_version=SCHEMA_VERSION, jitlens_version="0.1.0", jax_version="0.10.2",
        flax_version="0.12.8", backend="cpu", process_index=0, process_count=1, host="devbox",
        started_at=1_764_489_600.0, duration_seconds=4.2,
        functions=(_internal(), _evaluate(), _loss(), _forward(), _step()),
        argv=("train.py", "--steps", "7", "--tag", XSS),
    )  # fmt: skip


def empty_report() -> Report:
    """A report of a program that called no jitted function."""
    return Report(
        schema_version=SCHEMA_VERSION, jitlens_version="0.1.0", jax_version="0.10.2",
        flax_version="0.12.8", backend="cpu", process_index=0, process_count=1, host="devbox",
        started_at=1_764_489_600.0, duration_seconds=0.5, functions=(),
    )  # fmt: skip


def docs_report() -> Report:
    """The sample report without its script-injection probes: the one pictured in the README."""
    report = sample_report()
    functions = []
    for fn in report.functions:
        events = tuple(
            dataclasses.replace(
                e, reasons=tuple(dataclasses.replace(r, before="'train'") for r in e.reasons)
            )
            if any(r.before == XSS for r in e.reasons)
            else e
            for e in fn.events
        )
        functions.append(dataclasses.replace(fn, events=events))
    return dataclasses.replace(
        report, functions=tuple(functions), argv=("train.py", "--steps", "7")
    )


def sized_report(sizes: list[int], seconds: float = 0.5) -> FunctionReport:
    """One ``jax.jit`` row that compiled once per size of ``x``'s axis 0, in this order."""
    events = [
        Event(0, "trace", "a.py:9", f"x: f32[{sizes[0]},4]", compile_seconds=seconds, compiled=True)
    ]
    for i, (a, b) in enumerate(itertools.pairwise(sizes), 1):
        r = Reason("shape", "x", "x", f"f32[{a},4]", f"f32[{b},4]", "x changed shape.", "pad x.")
        events.append(Event(i, "retrace", "a.py:9", f"x: f32[{b},4]", (r,),
                            compile_seconds=seconds, compiled=True))  # fmt: skip
    return FunctionReport("f", "f", "jax.jit", "a.py:1", "a.py:9", len(sizes), len(sizes),
                          len(sizes), 0, 0, 0.0, 0.0, seconds * len(sizes), tuple(events))  # fmt: skip
