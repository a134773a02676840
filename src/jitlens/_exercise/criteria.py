"""The five criteria of ``jitlens check``, judged from what the sandboxed child reported.

Each case yields one :class:`CheckFinding` per required criterion (numbers, JIT
used, calls repeated, cache hits), each bad-input probe one finding of the
advisory criterion. A finding's evidence is one sentence in the order of all
jitlens messages: what happened, the evidence, the cause, the fix.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core.kinds import ReasonKind, RowKind
from .._core.reasons import with_article

if TYPE_CHECKING:
    from .cases import BadInput, CheckCase
    from .sandbox import Outcome, SandboxRun

#: ``(key, title, required)`` of every criterion, in report order.
CRITERIA: tuple[tuple[str, str, bool], ...] = (
    ("numbers", "Numbers", True),
    ("jit_used", "JIT used", True),
    ("calls_repeated", "Calls repeated", True),
    ("cache_hits", "Cache hits", True),
    ("data_flow", "Data flow", True),
    ("bad_input", "Bad input", False),
)
RTOL, ATOL = 1e-5, 1e-6
NNX_KINDS = ("nnx.jit", "nnx.jit(graph=False)", "nnx.jit(graph_updates=False)")
CACHED_PARTIAL = "nnx.cached_partial"
FORWARD_FIX = "`@nnx.jit` on `def fwd(model, x): return model(x)`, defined once before the loop"

NUMBERS_OK = "shape {shape} {dtype}, max |error| {err:.1e}"
RAISED = "jit_forward raised {type}: {message}{hint}"
RAISED_HINTS: dict[str, str] = {
    "MemoryError": " (out of memory under the grader's address-space limit, 4 GiB by default)",
    "SystemExit": " (sys.exit() was called: return the output instead)",
}
NOT_ARRAY = "returned {type}, not an array; return the flattened output, out.reshape(-1)"
WRONG_SHAPE = "shape {shape}, expected {expected} = (N * features,)"
RESHAPE_HINT = "; the values are right: flatten with out.reshape(-1)"
WRONG_DTYPE = "dtype {dtype}, expected float32; keep nnx.Linear's default param_dtype/dtype"
NOT_NUMERIC = "the output cannot be read as numbers ({why})"
NOT_FINITE = "{count} of {size} values are NaN or infinite"
WRONG_VALUES = (
    "max |error| {err:.2g} at index {index} (got {got:.6g}, expected {want:.6g}), "
    "beyond rtol {rtol:g} / atol {atol:g}{hint}"
)
HINTS: dict[str, str] = {
    "zero_kernel": (
        "; the output is what a zero kernel gives: keep nnx.Linear's default kernel_init"
    ),
    "seed_0": "; the output is that of seed 0: build the model with nnx.Rngs(int(seed))",
}
NO_REFERENCE = "no reference output: jitlens' own jit_forward failed ({error}); a jitlens bug"
NOT_MEASURED = "not measured: {why}"
NO_JIT = "no jitted function was called{when}: the output was computed eagerly; use " + FORWARD_FIX
BEFORE_RAISING = " before jit_forward raised"
JAX_ONLY = (
    "only jax.jit was used ({name} at {where}, {calls}); the exercise asks for nnx.jit with "
    "the model as an explicit argument: " + FORWARD_FIX
)
JIT_OK = "{kind} {name} at {where}: {calls}"
NO_FUNCTION = "no jitted function was called, so none was called {times} (num_calls = {want})"
CALLS_OK = "{name} called {times} = num_calls"
CALLS_BAD = (
    "{name} called {times}, expected num_calls = {want}: call it int(num_calls) times "
    "with the same model and input, returning the last output"
)
CALLS_UNKNOWN = "{name} was created before tracking began, so its calls were not counted"
HITS_OK = "{traces} in {calls}, {hits}{reuse}"
REUSED = " (compiled by an earlier case and reused)"
WRAPPED = "{traces} in {calls}, {hits}: {name} was wrapped {wrappers} times, once per call"
RETRACED = "{traces} in {calls}, {hits}: traced again ({kind})"
NO_REASON = "{traces} in {calls}, {hits}: traced again; the tracker gave no reason"
NOT_ALL_HITS = (
    "{traces} in {calls}, {hits}: {n} neither traced nor served from the compiled "
    "cache{why}; run every call through the jitted function, outside jax.disable_jit()"
)
UNDER_DISABLE_JIT = " (they ran eagerly under jax.disable_jit())"
FLOW_OK = (
    "every call received x and the model's parameters; {returned}, which changes with x, the "
    "kernel and the bias"
)
RETURNED_SAME = "returned the last call's output itself"
RETURNED_CONVERTED = "returned the last call's output, converted (reshape/ravel/flatten/view/astype/asarray/device_get)"
NOT_RECORDED = "no nnx.jit call was recorded, so none can be shown to have computed the output"
FLOW_UNMEASURED = "the calls' arguments could not be recorded ({why})"
MISSING_INPUT = (
    "{which} {what}: {detail}; the output cannot have come from these calls: call "
    "{name}(model, x) with the model you built and the x you were given"
)
NO_CALL_GOT = "no call of {name} received"
CALL_MISSED = "call {n} of {total} of {name} did not receive"
MISSING_DETAIL: dict[str, str] = {
    "x": "no argument equals the input x (a dummy such as jnp.zeros_like(x)?)",
    "kernel": "no argument holds a kernel of the model's shape",
    "bias": "no argument holds a bias of the model's shape",
}
WHAT: dict[str, str] = {"x": "x", "kernel": "the model's parameters", "bias": "the model's bias"}
RETURNED_EARLIER = (
    "returned the output of call {call} of {total}, not of the last call; return the output of "
    "the last call (the exercise asks for the final output)"
)
RETURNED_OTHER_FUNCTION = (
    "returned the output of another jitted function ({other}), not of the last call of {name}: "
    "return the output of the last call of the function called num_calls times"
)
RETURNED_NOT_DERIVED = (
    "returned {type} that is neither the last output of {name} nor made from it by "
    "reshape/ravel/flatten/view/astype/asarray/device_get ({values}): it was computed outside the "
    "jitted calls (`out * 1`, `jnp.copy(out)`, an eager model(x), NumPy arithmetic...); "
    "return the last output, out.reshape(-1)"
)
#: How the verdict names the type of what was returned.
ARRAY_TYPES: dict[str, str] = {"jaxlib._jax.ArrayImpl": "a JAX array"}
VALUES_EQUAL = "its values are equal, which does not show where they came from"
VALUES_DIFFER = "its values differ too"
EAGER_FORWARD = (
    "the model was applied outside the jitted calls ({what}): an eager forward pass computes "
    "what the exercise asks the jitted function to compute; every forward pass must run inside "
    "{name}"
)
RETURNED_UNKNOWN = "what was returned cannot be related to the calls ({why})"
#: The last call's output, read back from the jaxpr it ran (``dependence``): what it was
#: computed from, never judged by its numbers.
NOT_READ = (
    "the output of the last call of {name} is not computed from {what}: its equations never "
    "read {them} (the values came from another input, e.g. `answer + 0 * x.sum()` with the "
    "model never run); return model(x) computed inside {name}"
)
NOT_MOVED = (
    "the output of the last call of {name} does not change with {what}: run again with other "
    "values of {them}, it gives the same output (they are read, then discarded, e.g. "
    "`model(x) * 0 + answer`); return model(x) itself from {name}"
)
DEPENDENCE_UNKNOWN = (
    "whether the output of the last call of {name} is computed from x and the model's "
    "parameters could not be checked ({why})"
)
ROLE_WORDS: dict[str, str] = {"x": "x", "kernel": "the kernel", "bias": "the bias"}
PROBE_OK = "raised {type}: {message}"
PROBE_ACCEPTED = "returned {what}: {label} is {why}; raise ValueError, {argument} must be {allowed}"
PROBE_EXITED = "raised {type} (not an Exception) instead of ValueError/TypeError: {message}"
PROBE_CRASHED = "{detail}, instead of raising ValueError/TypeError"
PROBE_SIGNATURE = (
    "raised {type} from the call itself, not from checking the input ({message}); "
    "jit_forward must take (seed, x, features, num_calls)"
)
#: Python's own messages for a call that does not fit the signature: not a rejection.
_CALL_MISMATCH = re.compile(
    r"positional arguments? but \d+ (?:was|were) given|missing \d+ required (?:positional|keyword)"
    r"|got an unexpected keyword argument|got multiple values for argument"
)
PROBE_WHY: dict[str, str] = {
    "1.5": "not integer-valued",
    "-1.0": "negative",
    "nan": "not finite",
    "inf": "not finite",
    "True": "a bool, not a number",
    "'2'": "a string, not a number",
    "1-D": "1-D",
    "3-D": "3-D",
    "empty": "empty (N = 0)",
    "NaN": "not finite",
}
PROBE_ALLOWED: dict[str, str] = {
    "seed": "a non-negative integer-valued scalar",
    "features": "a positive integer-valued scalar",
    "num_calls": "a positive integer-valued scalar",
    "x": "a finite float32 matrix (N, D_in) with N, D_in >= 1",
}


@dataclasses.dataclass(frozen=True)
class CheckFinding:
    """One criterion on one case (or probe): pass/fail/warn, the evidence, and its figures.

    ``cause`` and ``fix`` hold the tracker's explanation when there is one (a
    retrace's reason), kept apart so a table can print a repeated one once.
    """

    subject: str
    status: str  # "pass" | "fail" | "warn"
    evidence: str
    measured: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    cause: str = ""
    fix: str = ""

    @property
    def message(self) -> str:
        """Evidence, cause and fix in one text."""
        text = self.evidence + (f". {self.cause}" if self.cause else "")
        return text + (f" Fix: {self.fix}" if self.fix else "")


@dataclasses.dataclass(frozen=True)
class CriterionResult:
    """One criterion over every case (or probe): its status and per-case findings."""

    key: str
    title: str
    required: bool
    status: str  # "pass" | "fail" | "warn" | "skip"
    summary: str
    findings: tuple[CheckFinding, ...]

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _plural(n: int | None, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _decode(text: str | None) -> np.ndarray | None:
    return None if text is None else np.frombuffer(base64.b64decode(text), dtype=np.float64)


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def judge_numbers(
    case: CheckCase, result: Mapping[str, Any], refs: Mapping[str, Any]
) -> CheckFinding:
    """Shape, dtype and values of the output against jitlens' own ``jit_forward``."""
    subject = case_subject(case)
    if "error" in result:
        err = result["error"]
        message, hint = _short(err["message"]), RAISED_HINTS.get(err["type"], "")
        text = RAISED.format(type=err["type"], message=message, hint=hint)
        return CheckFinding(subject, "fail", text)
    out = result["output"]
    shape, dtype = out.get("shape"), out.get("dtype")
    if shape is None:
        return CheckFinding(subject, "fail", NOT_ARRAY.format(type=with_article(out["type"])))
    expected = (case.n * case.features,)
    values, ref = _decode(out.get("values")), _decode(refs.get("reference"))
    if ref is None:
        return CheckFinding(
            subject, "fail", NO_REFERENCE.format(error=refs.get("error", "not run"))
        )
    shape_t = tuple(shape)
    measured: dict[str, Any] = {"shape": list(shape_t), "dtype": dtype}
    if values is not None:
        finite = np.isfinite(values)
        measured["max_abs_error"] = float(np.max(np.abs(values - ref))) if finite.all() else None
    if shape_t != expected:
        hint = RESHAPE_HINT if values is not None and _close(values, ref) else ""
        text = WRONG_SHAPE.format(shape=shape_t, expected=expected) + hint
        return CheckFinding(subject, "fail", text, measured)
    if values is None:
        return CheckFinding(
            subject, "fail", NOT_NUMERIC.format(why=out.get("not_numeric", "?")), measured
        )
    if dtype != "float32":
        return CheckFinding(subject, "fail", WRONG_DTYPE.format(dtype=dtype), measured)
    if not np.isfinite(values).all():
        bad = int(np.sum(~np.isfinite(values)))
        return CheckFinding(
            subject, "fail", NOT_FINITE.format(count=bad, size=values.size), measured
        )
    if not _close(values, ref):
        index = int(np.argmax(np.abs(values - ref) - RTOL * np.abs(ref)))
        hint = next((HINTS[k] for k in HINTS if k in refs and _close(values, _decode(refs[k]))), "")
        text = WRONG_VALUES.format(
            err=measured["max_abs_error"],
            index=index,
            got=values[index],
            want=ref[index],
            rtol=RTOL,
            atol=ATOL,
            hint=hint,
        )
        return CheckFinding(subject, "fail", text, measured)
    text = NUMBERS_OK.format(
        shape=shape_t, dtype=dtype, err=measured["max_abs_error"], rtol=RTOL, atol=ATOL
    )
    return CheckFinding(subject, "pass", text, measured)


def _chosen(functions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The wrappers of the forward function: the most-called group of same-named jits.

    A wrapper re-created in a loop is many records with one qualname; nnx.jit
    kinds win over ``cached_partial`` (which wraps one), which win over jax.jit.
    """
    called = [f for f in functions if (f["calls"] or 0) > 0 or (f["traces"] or 0) > 0]
    for kinds in (NNX_KINDS, (CACHED_PARTIAL,), ("jax.jit",)):
        groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for f in called:
            if f["kind"] in kinds:
                groups.setdefault((f["kind"], f["qualname"]), []).append(f)
        if groups:
            return max(groups.values(), key=lambda g: sum(f["calls"] or 0 for f in g))
    return []


def judge_method(
    case: CheckCase, result: Mapping[str, Any]
) -> tuple[CheckFinding, CheckFinding, CheckFinding]:
    """JIT used, calls repeated and cache hits, from the tracker's figures of the case."""
    subject = case_subject(case)
    if "tracker_error" in result:
        f = CheckFinding(subject, "fail", NOT_MEASURED.format(why=result["tracker_error"]))
        return f, f, f
    group = _chosen(result.get("functions", ()))
    if not group:
        when = BEFORE_RAISING if "error" in result else ""
        missing = CheckFinding(
            subject,
            "fail",
            NO_FUNCTION.format(times=_times(int(case.num_calls)), want=case.num_calls),
        )
        return CheckFinding(subject, "fail", NO_JIT.format(when=when)), missing, missing
    first = group[0]
    name, kind = f"`{first['name']}`", first["kind"]
    where = os.path.basename(first["defined_at"]) or first["defined_at"]
    counted = all(f["calls"] is not None for f in group)
    calls = sum(f["calls"] or 0 for f in group)
    traced = [f["traces"] for f in group]
    # unknown (the self-check could not vouch for the counts) is not 0: Cache hits is not measured
    traces = None if any(t is None for t in traced) else sum(traced)
    hits = sum(f["cache_hits"] or 0 for f in group) if counted else None
    figures = {"calls": calls if counted else None, "traces": traces, "cache_hits": hits}
    figures |= {"wrappers": len(group), "kind": kind, "function": first["qualname"]}
    calls_text = _plural(calls, "call") if counted else "calls not counted"
    if kind == "jax.jit":
        jit = CheckFinding(
            subject, "fail", JAX_ONLY.format(name=name, where=where, calls=calls_text)
        )
    else:
        jit = CheckFinding(
            subject, "pass", JIT_OK.format(kind=kind, name=name, where=where, calls=calls_text)
        )
    if not counted:
        repeated = CheckFinding(subject, "fail", CALLS_UNKNOWN.format(name=name), figures)
    elif calls == case.num_calls:
        repeated = CheckFinding(
            subject, "pass", CALLS_OK.format(name=name, times=_times(calls)), figures
        )
    else:
        text = CALLS_BAD.format(name=name, times=_times(calls), want=case.num_calls)
        repeated = CheckFinding(subject, "fail", text, figures)
    words = {
        "traces": _plural(traces, "trace")
        if traces is not None
        else "the trace count is unknown: jitlens could not vouch for its counts on these JAX "
        "versions (the report's warnings say why; `jitlens selfcheck` checks them)",
        "calls": calls_text,
        "hits": _plural(hits, "cache hit") if hits is not None else "cache hits not counted",
    }
    reasons = [r for f in group for r in f["reasons"]]
    neither = (calls - traces - hits) if counted and None not in (hits, traces) else None
    if traces is None:
        hit = CheckFinding(subject, "fail", NOT_MEASURED.format(why=words["traces"]), figures)
    elif traces <= 1 and neither:
        disabled = sum(c.get("disabled", False) for _, c in _group_calls(result, group))
        why = UNDER_DISABLE_JIT if disabled else ""
        n = f"{_plural(neither, 'call')} {'was' if neither == 1 else 'were'}"
        text = NOT_ALL_HITS.format(n=n, why=why, **words)
        hit = CheckFinding(subject, "fail", text, figures)
    elif traces <= 1 and hits is None:
        hit = CheckFinding(subject, "fail", NOT_MEASURED.format(why=words["hits"]), figures)
    elif traces <= 1:
        reuse = REUSED if traces == 0 else ""
        hit = CheckFinding(subject, "pass", HITS_OK.format(reuse=reuse, **words), figures)
    elif len(group) > 1:
        new = next((r for r in reasons if r["kind"] == ReasonKind.NEW_FUNCTION), None)
        message = new["message"] if new else f"Each of the {len(group)} wrappers compiled anew."
        fix = new["fix"] if new else "create the jitted function once, before the loop."
        text = WRAPPED.format(name=name, wrappers=len(group), **words)
        hit = CheckFinding(subject, "fail", text, figures, message, fix)
    elif [r for r in reasons if r["trace"] > 0]:
        # A wrapper's first trace may cite earlier wrappers (an earlier jit_forward
        # call); the retraces of this one wrapper come after it.
        r = next(r for r in reasons if r["trace"] > 0)
        text = RETRACED.format(kind=r["kind"], **words)
        hit = CheckFinding(subject, "fail", text, figures, r["message"], r["fix"])
    else:
        hit = CheckFinding(subject, "fail", NO_REASON.format(**words), figures)
    return jit, repeated, hit


def _group_calls(result: Mapping[str, Any], group: Sequence[Mapping[str, Any]]) -> list[Any]:
    """``(index among all recorded calls, call)`` of the wrappers in ``group``, in call order."""
    ids = {f["id"] for f in group}
    names = {f["qualname"] for f in group}
    calls = result.get("evidence", {}).get("calls", ())
    return [
        (i, c)
        for i, c in enumerate(calls)
        if (ids & set(c.get("ids", ()))) or (not c.get("ids") and c.get("qualname") in names)
    ]


def judge_data_flow(case: CheckCase, result: Mapping[str, Any]) -> CheckFinding:
    """Did the jitted calls take x and the model, and is the returned array the last output?"""
    subject = case_subject(case)
    if "evidence_error" in result or "tracker_error" in result:
        why = result.get("evidence_error") or result.get("tracker_error")
        return CheckFinding(subject, "fail", FLOW_UNMEASURED.format(why=why))
    group = [f for f in _chosen(result.get("functions", ())) if f["kind"] != RowKind.JAX_JIT]
    indexed = _group_calls(result, group)
    calls = [c for _, c in indexed]
    if not calls:
        return CheckFinding(subject, "fail", NOT_RECORDED)
    name = f"`{group[0]['name']}`"
    for what in ("x", "kernel", "bias"):
        # A parameter counts by value (the exercise's model) or by shape (a model built
        # otherwise, which Numbers already judges): its absence is what gives a cheat away.
        missing = [i for i, c in enumerate(calls, 1) if not c.get(what)]
        if missing:
            which = (
                NO_CALL_GOT.format(name=name)
                if len(missing) == len(calls)
                else CALL_MISSED.format(n=missing[0], total=len(calls), name=name)
            )
            text = MISSING_INPUT.format(
                which=which, name=name, what=WHAT[what], detail=MISSING_DETAIL[what]
            )
            return CheckFinding(subject, "fail", text)
    if "error" in result:
        return CheckFinding(subject, "fail", RETURNED_UNKNOWN.format(why="jit_forward raised"))
    returned = result["evidence"].get("returned", {})
    positions = {index: n for n, (index, _) in enumerate(indexed, 1)}
    if "error" in returned:
        return CheckFinding(subject, "fail", RETURNED_UNKNOWN.format(why=returned["error"]))
    eager = result["evidence"].get("eager_forward", ())
    if eager:
        more = result["evidence"].get("eager_forward_more", 0)
        shown = ", ".join(f"{cls}.__call__ at {where}" for cls, where in eager[:3])
        extra = len(eager) - 3 + more
        what = shown + (f" and {extra} more" if extra > 0 else "")
        return CheckFinding(subject, "fail", EAGER_FORWARD.format(what=what, name=name))
    if "call" in returned:
        if returned["call"] not in positions:
            every = result["evidence"].get("calls", ())
            other = every[returned["call"]] if returned["call"] < len(every) else {}
            text = RETURNED_OTHER_FUNCTION.format(
                other=f"`{other.get('qualname') or '?'}`", name=name
            )
            return CheckFinding(subject, "fail", text)
        if returned["call"] != indexed[-1][0]:
            text = RETURNED_EARLIER.format(call=positions[returned["call"]], total=len(calls))
            return CheckFinding(subject, "fail", text)
        unsound = _not_computed_from(returned.get("depends"), name)
        if unsound is not None:
            return CheckFinding(subject, "fail", unsound)
        how = RETURNED_SAME if returned["how"] == "same" else RETURNED_CONVERTED
        return CheckFinding(subject, "pass", FLOW_OK.format(returned=how))
    values = VALUES_EQUAL if returned.get("equal_to_last") else VALUES_DIFFER
    kind = returned.get("type", "?")
    kind = "a NumPy array" if returned.get("numpy") else ARRAY_TYPES.get(kind, with_article(kind))
    text = RETURNED_NOT_DERIVED.format(type=kind, name=name, values=values)
    return CheckFinding(subject, "fail", text)


def _not_computed_from(facts: Any, name: str) -> str | None:
    """Why the last call's output is not computed from x, the kernel and the bias (the
    child's ``dependence`` facts), or None when it is."""
    if not isinstance(facts, Mapping) or "error" in facts:
        why = facts.get("error") if isinstance(facts, Mapping) else "not recorded"
        return DEPENDENCE_UNKNOWN.format(name=name, why=why)
    roles = ("x", "kernel", "bias")
    unread = [r for r in roles if not facts.get(r, {}).get("read")]
    unmoved = [r for r in roles if not facts.get(r, {}).get("moves")]
    for found, template in ((unread, NOT_READ), (unmoved, NOT_MOVED)):
        if found:
            words = [ROLE_WORDS[r] for r in found]
            return template.format(name=name, what=_listed(words, "and"), them=_listed(words, "or"))
    return None


def _listed(words: list[str], conjunction: str) -> str:
    """``x, the kernel and the bias``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def judge_probe(probe: BadInput, outcome: Outcome | None) -> CheckFinding:
    """Pass when the bad input made jit_forward raise an Exception; warn otherwise."""
    if outcome is None or outcome.status != "ok":
        detail = outcome.detail if outcome is not None else "not run"
        return CheckFinding(probe.label, "warn", PROBE_CRASHED.format(detail=detail))
    r = outcome.result
    if "raised" in r and _CALL_MISMATCH.search(r["raised"]["message"]):
        message = _short(r["raised"]["message"], 90)
        text = PROBE_SIGNATURE.format(type=r["raised"]["type"], message=message)
        return CheckFinding(probe.label, "warn", text)
    if "raised" in r:
        text = PROBE_OK.format(type=r["raised"]["type"], message=_short(r["raised"]["message"], 90))
        return CheckFinding(probe.label, "pass", text)
    if "exited" in r:
        e = r["exited"]
        return CheckFinding(
            probe.label,
            "warn",
            PROBE_EXITED.format(type=e["type"], message=_short(e["message"], 90)),
        )
    if "internal_error" in r:
        e = r["internal_error"]
        return CheckFinding(probe.label, "warn", f"jitlens failed: {e['type']}: {e['message']}")
    out = r["output"]
    what = (
        f"shape {tuple(out['shape'])} {out['dtype']}"
        if out.get("shape") is not None
        else with_article(out["type"])
    )
    text = PROBE_ACCEPTED.format(
        what=what,
        label=probe.value if probe.argument != "x" else "x",
        why=PROBE_WHY.get(probe.value, "outside the contract"),
        allowed=PROBE_ALLOWED[probe.argument],
        argument=probe.argument,
    )
    return CheckFinding(probe.label, "warn", text)


def case_subject(case: CheckCase) -> str:
    return f"{case.label} seed={case.seed} num_calls={case.num_calls}"


def judge(
    cases: Sequence[CheckCase], probes: Sequence[BadInput], run: SandboxRun
) -> tuple[CriterionResult, ...]:
    """Every criterion over every case and probe of one sandboxed run."""
    per_key: dict[str, list[CheckFinding]] = {key: [] for key, _, _ in CRITERIA}
    for i, case in enumerate(cases):
        outcome = run.outcomes.get(i)
        subject = case_subject(case)
        if outcome is None or outcome.status != "ok" or "internal_error" in outcome.result:
            if outcome is None:
                why = "not run"
            elif "internal_error" in outcome.result:
                e = outcome.result["internal_error"]
                why = f"jitlens failed: {e['type']}: {e['message']}"
            else:
                why = outcome.detail
            per_key["numbers"].append(CheckFinding(subject, "fail", why))
            for key in ("jit_used", "calls_repeated", "cache_hits", "data_flow"):
                per_key[key].append(CheckFinding(subject, "fail", NOT_MEASURED.format(why=why)))
            continue
        per_key["numbers"].append(judge_numbers(case, outcome.result, run.references.get(i, {})))
        for key, finding in zip(
            ("jit_used", "calls_repeated", "cache_hits"),
            judge_method(case, outcome.result),
            strict=True,
        ):
            per_key[key].append(finding)
        per_key["data_flow"].append(judge_data_flow(case, outcome.result))
    for i, probe in enumerate(probes):
        per_key["bad_input"].append(judge_probe(probe, run.outcomes.get(len(cases) + i)))
    return tuple(
        _criterion(key, title, required, per_key[key]) for key, title, required in CRITERIA
    )


def _criterion(
    key: str, title: str, required: bool, findings: list[CheckFinding]
) -> CriterionResult:
    if not findings:
        return CriterionResult(key, title, required, "skip", "not run", ())
    good = sum(f.status == "pass" for f in findings)
    unit = "cases pass" if required else "rejected"
    status = "pass" if good == len(findings) else "fail" if required else "warn"
    return CriterionResult(
        key, title, required, status, f"{good}/{len(findings)} {unit}", tuple(findings)
    )
