"""The grader's child process: limits itself, computes references, runs one solution's cases.

Started by ``_sandbox`` as ``python -m jitlens._exercise.child CONFIG_FD REPORT_FD``.
It reads its configuration (cases, limits, a session token) from ``CONFIG_FD``,
then writes one JSON line per event to the report pipe, each carrying the
token: what the solution prints goes to stdout/stderr, never to the pipe, so
it cannot pass for a verdict. Only facts travel (outputs, raised exceptions,
the tracker's counts); the parent judges them. The reference is computed
before the solution's module is even imported, so the solution cannot touch it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import math
import os
import random
import resource
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from jitlens._core.kinds import EventKind
from jitlens._exercise.cases import ItemKind
from jitlens._exercise.evidence import Recorder

#: Cap on the text of an exception message or traceback sent to the parent.
TEXT_LIMIT = 2000
#: Outputs larger than this many elements are described, never sent.
MAX_VALUES = 1 << 20
#: The valid arguments every bad-input probe starts from (one is then replaced).
PROBE_BASE: dict[str, Any] = {"seed": 1.0, "features": 4.0, "num_calls": 2.0}
PROBE_X_SHAPE = (2, 3)

NO_JIT_FORWARD = (
    "it has no callable {name} (found {found}); "
    "define `def jit_forward(seed, x, features, num_calls):` at the top level of the file"
)


class NoEntryPoint(LookupError):
    """The solution's module has no callable ``jit_forward``."""


class Channel:
    """The report pipe: one JSON line per message, each with the session token."""

    def __init__(self, fd: int, token: str) -> None:
        # Move the pipe away from the low descriptor the parent handed over (to the
        # lowest free one above a random floor) and out of processes the solution spawns.
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        top = min(nofile if nofile > 0 else 1024, 4096)
        floor = random.randint(top // 2, top - 64) if top > 256 else fd
        self._fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
        os.close(fd)
        self._token = token

    def send(self, kind: str, **fields: Any) -> None:
        data = json.dumps({"token": self._token, "type": kind, **fields}, allow_nan=False)
        view = memoryview((data + "\n").encode())
        while view:
            view = view[os.write(self._fd, view) :]


def apply_limits(limits: Mapping[str, Any]) -> None:
    """Cap memory and core dumps; die with the parent (Linux)."""
    memory = limits.get("memory_bytes")
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() != limits.get("parent_pid", os.getppid()):
            os._exit(3)


def set_cpu_budget(seconds: float | None) -> None:
    """Let the process use ``seconds`` more CPU time (SIGXCPU beyond that)."""
    if not seconds:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = math.ceil(used + seconds)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def encode(values: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=np.float64).tobytes()).decode()


def make_x(case: Mapping[str, Any]) -> np.ndarray:
    """The case's input matrix: standard normal float32 ``(n, d_in)``, seeded by ``x_seed``."""
    rng = np.random.default_rng(int(case["x_seed"]))
    return rng.standard_normal((int(case["n"]), int(case["d_in"]))).astype(np.float32)


def reference(case: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """jitlens' own ``jit_forward`` on the case, plus the outputs of common mistakes.

    The mistakes ("zero_kernel", "seed_0") let the parent say *which* mistake
    a wrong output matches, not only that it is wrong. (``use_bias=False``
    cannot be told apart: the default bias initialiser is zeros.)
    """
    import jax.numpy as jnp
    from flax import nnx

    from jitlens._exercise.forward import jit_forward

    x = make_x(case)
    seed, features = int(case["seed"]), int(case["features"])
    out = {"reference": np.asarray(jit_forward(float(seed), jnp.asarray(x), float(features), 1.0))}
    model = nnx.Linear(x.shape[1], features, rngs=nnx.Rngs(seed))
    bias = np.asarray(model.bias[...])
    out["zero_kernel"] = np.broadcast_to(bias, (x.shape[0], features)).reshape(-1)
    if seed != 0:
        seed0 = nnx.Linear(x.shape[1], features, rngs=nnx.Rngs(0))
        out["seed_0"] = (x @ np.asarray(seed0.kernel[...]) + np.asarray(seed0.bias[...])).reshape(
            -1
        )
    return out


def probe_args(probe: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    """The arguments of one bad-input probe: the valid base with one argument replaced."""
    import jax.numpy as jnp

    args: dict[str, Any] = dict(PROBE_BASE)
    args["x"] = jnp.asarray(make_x({"n": 2, "d_in": 3, "x_seed": 0}))
    value = probe["value"]
    if probe["argument"] == "x":
        args["x"] = {
            "1-D": jnp.ones((3,), jnp.float32),
            "3-D": jnp.ones((2, 2, 3), jnp.float32),
            "empty": jnp.zeros((0, 3), jnp.float32),
            "NaN": args["x"].at[0, 1].set(jnp.nan),
        }[value]
    else:
        args[probe["argument"]] = {"True": True, "'2'": "2"}.get(value) or float(value)
    return args["seed"], args["x"], args["features"], args["num_calls"]


def describe_exception(exc: BaseException) -> dict[str, str]:
    """Type, message and traceback of what the solution raised, without the grader's frames."""
    te = traceback.TracebackException.from_exception(exc)
    frames = [
        f for f in te.stack if f.filename != __file__ and not f.filename.startswith("<frozen")
    ]
    te.stack = traceback.StackSummary.from_list(frames)
    tb = "".join(te.format())
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:TEXT_LIMIT],
        "traceback": tb[-TEXT_LIMIT:],
    }


def describe_output(out: Any, expected_size: int | None) -> dict[str, Any]:
    """Type, shape, dtype and (when the size is right) the values of what was returned."""
    info: dict[str, Any] = {"type": f"{type(out).__module__}.{type(out).__qualname__}"}
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    try:
        info["shape"] = [int(d) for d in shape] if shape is not None else None
    except (TypeError, ValueError):
        info["shape"] = None
    info["dtype"] = str(dtype) if dtype is not None else None
    if expected_size is None:
        return info
    try:
        arr = np.asarray(out)
        if arr.size == expected_size and arr.size <= MAX_VALUES:
            info["values"] = encode(arr.astype(np.float64).reshape(-1))
    except Exception as exc:  # an object NumPy cannot read: the parent reports the type
        info["not_numeric"] = f"{type(exc).__name__}: {exc}"[:TEXT_LIMIT]
    return info


class Measure:
    """``jitlens.track()`` windows around each case, reduced to the facts the parent judges.

    An outer tracker stays open from before the solution is imported, so that
    ``jax.jit`` functions it creates at import time are counted too (the
    tracker counts the calls of ``jax.jit`` only for wrappers made while it is
    open). Each case then opens its own window.
    """

    def __init__(self) -> None:
        self.solution_file = ""
        try:
            from jitlens._track.tracker import track

            track().start()
        except Exception as exc:
            self.track: Callable[..., Any] | None = None
            self.error = f"jitlens' tracker is not available ({type(exc).__name__}: {exc})"
        else:
            self.track, self.error = track, ""

    def _mine(self, f: Any) -> bool:
        """The solution's own functions: the tracker's user functions, or defined in its file."""
        if not f.internal:
            return True
        path = f.defined_at.rpartition(":")[0]
        return bool(path) and os.path.abspath(path) == self.solution_file

    @contextlib.contextmanager
    def case(self, sink: dict[str, Any]) -> Iterator[None]:
        if self.track is None:
            sink["tracker_error"] = self.error
            yield
            return
        with self.track(include_internal=True) as t:
            yield
        try:
            report = t.report()
            sink["functions"] = [summarize(f) for f in report.functions if self._mine(f)]
        except Exception as exc:
            sink["tracker_error"] = f"jitlens' tracker failed: {type(exc).__name__}: {exc}"


def summarize(f: Any) -> dict[str, Any]:
    """The parts of one ``FunctionReport`` the criteria need."""
    traces = [e for e in f.events if e.kind in (EventKind.TRACE, EventKind.RETRACE)]
    reasons = [
        {"kind": r.kind, "message": r.message, "fix": r.fix, "trace": i}
        for i, e in enumerate(traces)
        if e.kind == EventKind.RETRACE
        for r in e.reasons
    ]
    return {
        "id": f.id,
        "name": f.name,
        "qualname": f.qualname,
        "kind": f.kind,
        "defined_at": f.defined_at,
        "calls": f.calls,
        "traces": f.traces,
        "cache_hits": f.cache_hits,
        "reasons": reasons[:20],
    }


def run_case(
    fn: Callable[..., Any],
    case: Mapping[str, Any],
    measure: Measure,
    recorder: Recorder,
) -> dict[str, Any]:
    import jax.numpy as jnp

    x = jnp.asarray(make_x(case))
    result: dict[str, Any] = {}
    args = (float(case["seed"]), x, float(case["features"]), float(case["num_calls"]))
    start = time.perf_counter()
    out: Any = None
    shapes = {
        "kernel": (int(case["d_in"]), int(case["features"])),
        "bias": (int(case["features"]),),
    }
    with measure.case(result), recorder.recording(x, shapes) as evidence:
        try:
            out = fn(*args)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt are failures too
            result["error"] = describe_exception(exc)
    result["seconds"] = time.perf_counter() - start
    if recorder.error:
        result["evidence_error"] = recorder.error
    else:
        result["evidence"] = evidence.summary(out, "error" not in result)
    if "error" not in result:
        result["output"] = describe_output(out, int(case["n"]) * int(case["features"]))
    return result


def run_probe(fn: Callable[..., Any], probe: Mapping[str, Any]) -> dict[str, Any]:
    try:
        out = fn(*probe_args(probe))
    except Exception as exc:
        return {"raised": describe_exception(exc)}
    except BaseException as exc:
        return {"exited": describe_exception(exc)}
    return {"output": describe_output(out, None)}


def load(solution: Mapping[str, Any]) -> tuple[Callable[..., Any], str]:
    """Import the solution's module (never as ``__main__``): its ``jit_forward`` and file."""
    import importlib
    import importlib.util

    if "path" in solution:
        path = os.path.abspath(solution["path"])
        sys.path.insert(0, os.path.dirname(path))
        sys.argv = [path]
        name = "_jitlens_solution_" + "".join(
            c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0]
        )
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(solution["module"])
    obj: Any = module
    qualname = solution.get("qualname", "jit_forward")
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not callable(obj):
        kind = type(obj).__name__
        found = "nothing" if obj is None else f"{'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind}"
        raise NoEntryPoint(NO_JIT_FORWARD.format(name=qualname, found=found))
    return obj, os.path.abspath(getattr(module, "__file__", None) or "")


def import_flax() -> None:
    """Import ``flax.nnx`` with IPython hidden: the answers flax keeps are the same, IPython's
    import (0.3-0.6 CPU s of every grading) is saved.

    flax asks IPython at its own import whether it runs in a notebook (to colour its reprs,
    to ``display``); the grader's child never does, so IPython would answer no, as its absence
    does (flax works without it: it is not one of flax's dependencies). It is hidden only while
    flax imports: the solution imports IPython as usual.
    """
    hide = "IPython" not in sys.modules
    if hide:
        sys.modules["IPython"] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        import flax.nnx  # noqa: F401
    finally:
        if hide and "IPython" in sys.modules and sys.modules["IPython"] is None:
            del sys.modules["IPython"]


def main(argv: list[str]) -> None:
    cfg_fd, report_fd = int(argv[0]), int(argv[1])
    with os.fdopen(cfg_fd, "rb") as fh:
        config = json.loads(fh.read())
    apply_limits(config["limits"])
    channel = Channel(report_fd, config.pop("token"))
    sys.path[:] = [p for p in config["sys_path"] if p != ""] or sys.path
    items: list[dict[str, Any]] = config["items"]
    set_cpu_budget(config["limits"].get("load_cpu_seconds"))
    import jax

    channel.send("ready", pid=os.getpid(), jax=jax.__version__)
    import_flax()
    have = set(config.get("have_references", ()))
    computed: dict[tuple[int, ...], dict[str, str]] = {}  # a repeated case's, computed once
    for item in items:
        if item["kind"] == ItemKind.CASE and item["index"] not in have:
            key = tuple(int(item[k]) for k in ("n", "d_in", "features", "seed", "x_seed"))
            if key not in computed:
                try:
                    computed[key] = {k: encode(v) for k, v in reference(item).items()}
                except Exception as exc:  # the parent reports it on that case
                    computed[key] = {"error": f"{type(exc).__name__}: {exc}"[:TEXT_LIMIT]}
            channel.send("reference", index=item["index"], **computed[key])
    measure = Measure()  # flax imported: the tracker patches nnx.jit now, the recorder over it
    recorder = Recorder()  # over the tracker's own patch, which Measure just installed
    try:
        fn, measure.solution_file = load(config["solution"])
    except NoEntryPoint as exc:
        channel.send("load_error", error={"type": "", "message": str(exc), "traceback": ""})
        os._exit(0)
    except BaseException as exc:
        channel.send("load_error", error=describe_exception(exc))
        os._exit(0)
    channel.send("loaded")
    for item in items:
        set_cpu_budget(item.get("cpu_seconds"))
        channel.send("start", index=item["index"])
        try:
            if item["kind"] == ItemKind.CASE:
                result = run_case(fn, item, measure, recorder)
            else:
                result = run_probe(fn, item)
        except Exception as exc:  # jitlens' own failure, reported as such
            result = {"internal_error": describe_exception(exc)}
        try:
            channel.send("result", index=item["index"], **result)
        except (TypeError, ValueError) as exc:  # not JSON: say so rather than die
            channel.send("result", index=item["index"], internal_error=describe_exception(exc))
    channel.send("done")
    os._exit(0)  # skip the solution's atexit hooks and lingering threads


if __name__ == "__main__":
    main(sys.argv[1:])
