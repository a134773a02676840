"""jitlens never breaks the program it watches, never passes silently, and never guesses.

It reaches into jitlens on purpose (tests/test_public_api.py lists
why): it breaks jitlens' own pieces, reads how many hooks a guard installed, calls where
jitlens does not look, and pins the boundaries it keeps (the user's files, the self-check's
verdict read as untrusted input, the locals a counted call hands to its trace), and feeds
the explainer equal keys no program can be made to produce on cue, and counts the work it
does on 64 made-up keys of thousands of leaves (issue 44: reasons built for one key only).

Fault injection: each private JAX/Flax piece jitlens reads is removed or
renamed in a child process, and the program must compute the same results
while jitlens either reports the right figures (checked against counters in
the jitted bodies) or says what it cannot measure: a ``JitlensCompatWarning``,
``None`` for the unknown figures, and compile budgets that raise.
"""

from __future__ import annotations

import concurrent.futures
import copy
import dataclasses
import gc
import inspect
import json
import pathlib
import random
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jitlens
from jitlens import JitlensInternalWarning, RecompileError, _compat, max_traces, no_retrace
from jitlens._core import explain, nearest, rank, signature
from jitlens._core.key import Key
from jitlens._core.signature import describe_call
from jitlens._track import calls, registry, selfcheck, state

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
FAULTS = (
    "no_scalar_listener",
    "no_duration_listener",
    "trace_event_renamed",
    "trace_frame_renamed",
    "trace_frame_locals_renamed",
    "no_graphlib",
    "no_jit_wrapper",
    "no_jit_fn",
    "no_trace_to_jaxpr_cache",
    "no_context_names",
    "no_trace_state_clean",
    "no_backend_probe",
)


#: Faults that break counting itself: a budget opened first must not pass over them.
GUARD_FIRST = (
    "none",
    "no_scalar_listener",
    "trace_event_renamed",
    "trace_frame_renamed",
    "trace_frame_locals_renamed",
    "no_jit_fn",
)


@pytest.fixture(scope="module")
def faults(fork_python) -> dict[str, dict[str, Any]]:
    # each fault in a process of its own, forked after `import jax, flax.nnx` (the child
    # applies its fault, then imports jitlens; flax reaches the JAX pieces broken here through
    # their modules, at call time, so importing it before the fault sees what importing it
    # after did, and its import, about 1 CPU s, is paid once, not 19 times)
    jobs = ("none", *FAULTS, *(f"{f}:guard_first" for f in GUARD_FIRST))
    runs = {}
    for i in range(0, len(jobs), 2):  # two at a time, as on two cores
        started = {
            job: fork_python.submit(
                [str(FIXTURES / "fault_child.py"), *job.split(":")],
                timeout=300,
                preload=("jax", "flax.nnx"),
            )
            for job in jobs[i : i + 2]
        }
        for job, handle in started.items():
            proc = fork_python.wait(handle)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            assert proc.returncode == 0 and lines, f"{job}: {proc.stderr[-2000:]}"
            runs[job] = json.loads(lines[0][len("RESULT ") :])
    return runs


@pytest.mark.slow
@pytest.mark.xdist_group("faults")
@pytest.mark.parametrize("fault", GUARD_FIRST)
def test_a_budget_opened_before_any_jax_operation_never_passes_over_a_retrace(
    faults: dict[str, dict[str, Any]], fault: str
) -> None:
    """The self-check waits for JAX's backends; a budget that ends before it ran runs it."""
    run = faults[f"{fault}:guard_first"]
    if fault == "none":  # the retrace is stopped before its body runs
        assert (run["guard"], run["runs"]) == ("RecompileError", 1)
    else:
        assert run["guard"] in ("RecompileError",) or run["guard"].startswith(
            "JitlensError: no_retrace: cannot count traces"
        ), run["guard"]


@pytest.mark.slow
@pytest.mark.xdist_group("faults")
@pytest.mark.parametrize("fault", FAULTS)
def test_a_broken_private_piece_never_changes_results_nor_passes_silently(
    faults: dict[str, dict[str, Any]], fault: str
) -> None:
    run, clean = faults[fault], faults["none"]
    assert run["results"] == clean["results"]  # the program is unchanged
    assert run["guard"] != "passed", "a compile budget passed over a real retrace"
    assert run["rows"].count("f") == 1 and run["rows"].count("g") == 1  # one row per function
    for name in ("f", "g"):
        row = run["jitlens"][name]
        if row["traces"] is None:  # unknown: said so, and budgets refuse to pass
            assert run["warnings"] and run["compat_warnings"]
            assert run["guard"].startswith("JitlensError: no_retrace: cannot count traces")
        else:  # counted: then counted right
            assert row["traces"] == run["truth"][name] == 2
    if run["warnings"]:
        assert run["compat_warnings"], "a degraded figure must be announced once"


@pytest.mark.slow
@pytest.mark.xdist_group("faults")
def test_the_clean_run_is_exact(faults: dict[str, dict[str, Any]]) -> None:
    clean = faults["none"]
    assert clean["warnings"] == [] and clean["compat_warnings"] == []
    assert clean["jitlens"]["f"] == {"traces": 2, "calls": 3, "kinds": ["shape"]}
    assert clean["jitlens"]["g"] == {"traces": 2, "calls": 3, "kinds": ["shape"]}
    assert clean["guard"] == "RecompileError"


# -- internal failures step aside -------------------------------------------------------------


def _boom(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("injected jitlens failure")


@pytest.mark.parametrize("filters", ["default", "error"])
def test_an_internal_failure_never_reaches_the_users_call(
    monkeypatch: pytest.MonkeyPatch, filters: str
) -> None:
    from jitlens._track import listeners

    monkeypatch.setattr(listeners, "describe_and_explain", _boom)
    monkeypatch.setattr(state, "_WARNED", set())
    ran = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(filters)
        with jitlens.track() as t:

            @jax.jit
            def f(x: Any) -> Any:
                ran.append(1)
                return x + 1

            out = [float(f(jnp.ones(n)).sum()) for n in (2, 3)]
    assert out == [4.0, 6.0] and len(ran) == 2
    assert t.stats(f).traces == 2  # counting goes on; only the explanation stepped aside
    assert any("injected jitlens failure" in w for w in t.report().warnings)
    internal = [w for w in caught if issubclass(w.category, JitlensInternalWarning)]
    assert len(internal) == (1 if filters == "default" else 0)


def test_a_failed_activation_leaves_nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from jitlens._track.frontends import jax_jit

    before = jax.jit
    depth = registry.REGISTRY.depth
    monkeypatch.setattr(state, "_WARNED", set())
    monkeypatch.setattr(jax_jit, "make_eval_shape", _boom)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with jitlens.track():
            if depth == 0:  # this tracker was the one to install: nothing half-installed
                assert jax.jit is before and registry.REGISTRY.depth == 0
            assert float(jax.jit(lambda x: x * 3)(jnp.ones(1))[0]) == 3.0
    assert registry.REGISTRY.depth == depth and jax.jit is before
    monkeypatch.undo()
    with jitlens.track() as t:  # and a later tracker installs the hooks normally
        g = jax.jit(lambda x: x - 1)
        g(jnp.ones(2))
    assert t.stats(g).traces == 1


def test_split_failure_is_reported_with_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(node: Any, ref_index: Any = None) -> None:
        return None

    def split(node: Any) -> None:
        raise ValueError("cannot split this")

    monkeypatch.setattr(_compat, "flatten_node", fail)
    monkeypatch.setattr(nnx, "split", split)
    (f,) = jitlens.audit(lambda: nnx.Linear(2, 2, rngs=nnx.Rngs(0))).findings
    assert (f.severity, f.kind, f.path) == ("error", "graph_structure", "model")
    assert f.message.startswith("`nnx.split(model)` raises ValueError: cannot split this")


# -- no guessed causes: equal keys on made-up evidence (moved from test_evidence.py) ---------

X = jnp.ones(2)


def test_an_equal_key_without_evidence_is_unknown_not_cache_cleared():
    """Two equal keys, no clear seen, JAX's trace cache not full: nothing is guessed."""

    def body(x, flag):
        return x

    key = describe_call(body, (X, 1), {}, static_argnums=(1,))
    (r,) = explain.explain(key, [describe_call(body, (X, 1), {}, static_argnums=(1,))])
    assert (r.kind, r.before, r.after) == ("unknown", "equal key", "retraced")
    assert "compared 2 key position(s) (x: f32[2], flag=1) and the JAX config" in r.message
    assert "no clear_cache() / jax.clear_caches()" in r.message
    assert "jax_explain_cache_misses" in r.fix
    # the two keys differ in type only: named, not unknown
    (t,) = explain.explain(describe_call(body, (X, True), {}, static_argnums=(1,)), [key])
    assert t.kind == "static_type"


def test_a_full_trace_cache_is_evidence_and_a_partly_full_one_is_not():
    def body(x):
        return x + 1

    key = describe_call(body, (X,), {})
    full = explain.explain(key, [key], cache_fill=(2048, 2048))
    assert [(r.kind, r.after) for r in full] == [("cache_cleared", "evicted")]
    assert "2048 of 2048 entries" in full[0].message
    assert [r.kind for r in explain.explain(key, [key], cache_fill=(10, 2048))] == ["unknown"]


# -- what a guard installs, and what it did not see (moved from test_guards.py) ---------------


def _unseen(fn: Callable[..., Any], *args: Any) -> None:
    """Call ``fn`` where jitlens does not look, as if before it was installed."""

    def run() -> None:
        state.tls.busy = True
        fn(*args)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def test_guards_keep_the_hooks_installed_for_their_lifetime_only() -> None:
    def forget_functions() -> None:
        # jitlens' signature cache holds the last functions it described.
        getattr(getattr(signature, "_param_names", None), "cache_clear", lambda: None)()
        gc.collect()

    forget_functions()
    base = registry.REGISTRY.depth
    above = max_traces(1)(jax.jit(lambda x: x + 1))
    assert registry.REGISTRY.depth == base, (
        "above a jit, nothing is installed before the first call"
    )
    above(jnp.ones(2))
    assert registry.REGISTRY.depth == base + 1
    below = jax.jit(max_traces(1)(lambda x: x - 1))
    assert registry.REGISTRY.depth == base + 2, "below a jit, the hooks go in at decoration"
    below(jnp.ones(2))
    del above, below
    forget_functions()
    assert registry.REGISTRY.depth == base


def test_no_retrace_catches_a_compile_it_did_not_see() -> None:
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    runs: list[int] = []

    @nnx.jit
    def forward(m: nnx.Linear, x: jax.Array) -> jax.Array:
        runs.append(1)
        return m(x)

    plain = getattr(jax.jit, "__jitlens_original__", jax.jit)(lambda x: x + 1)  # JAX's own
    _unseen(forward, model, jnp.ones((1, 2)))
    _unseen(plain, jnp.ones(2))
    with no_retrace():
        forward(model, jnp.ones((1, 2)))  # warm: a hit
        for fn, args in ((forward, (model, jnp.ones((3, 2)))), (plain, (jnp.ones(5),))):
            with pytest.raises(RecompileError, match="compiled before jitlens was watching"):
                fn(*args)
    assert len(runs) == 1


# -- where jitlens ends and the user begins (moved from test_invisible.py) --------------------


@pytest.mark.parametrize(
    "folder", ["jitlens/tests", "jitlens-experiments", "jitlens/src/jitlens_extra"]
)
def test_a_users_file_in_a_folder_named_like_jitlens_is_the_users(tmp_path, folder) -> None:
    assert _compat.is_user_file(str(tmp_path / folder / "prog.py"))
    package = pathlib.Path(jitlens.__file__).resolve().parent
    assert not _compat.is_user_file(str(package / "_track" / "tracker.py"))
    assert _compat.is_user_file(str(package / "_exercise" / "demo.py"))  # jitlens' example


def test_a_kept_verdict_is_untrusted_input(tmp_path) -> None:
    """A FIFO, a 10 MB file, escape sequences or a wrong shape where the verdict is kept:
    ignored (never blocks, never printed); a well-formed one is read."""
    import os

    path = tmp_path / "verdict.json"
    os.mkfifo(path)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(selfcheck._read_cached(path)))
    reader.start()
    reader.join(60)  # a hang guard, not a speed limit: a read waiting for a writer never returns
    if reader.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # a writer: let the reader go
        reader.join()
        pytest.fail("the kept verdict's reader waited for a writer on a FIFO")
    assert got == [None]
    path.unlink()
    forged = '{"problems": ["\\u001b[2J\\u001b]0;owned\\u0007' + "x" * (10 << 20) + '"]}'
    for text in (
        forged,
        '{"problems": ["\\u001b[31mred"]}',
        '{"problems": "not a list"}',
        '{"problems": ["ok"' + ', "more"' * 30 + "]}",
        "not json",
    ):
        path.write_text(text)
        assert selfcheck._read_cached(path) is None, text[:60]
    path.write_text('{"problems": ["jax.jit traces miscounted (2 ran, jitlens counted 1)"]}')
    assert selfcheck._read_cached(path) == ("jax.jit traces miscounted (2 ran, jitlens counted 1)",)


def test_the_locals_a_counted_call_hands_to_its_trace_are_pinned() -> None:
    """The trace finds its call through declared locals of the counting frames: renaming
    one of them must fail here, not silently misattribute calls."""
    assert calls.CALL_CODES == frozenset(calls.CALL_LOCALS)
    for code, names in calls.CALL_LOCALS.items():
        assert set(names) <= set(code.co_varnames), (code.co_name, names)


# -- a tracked jax.jit looks like jax.jit's own object ------------------------------------------


def _f(x: Any, y: int = 1) -> Any:
    return x + y


class _Holder:
    def __init__(self) -> None:
        self.k = 2

    def scale(self, x: Any) -> Any:
        return x * self.k


def _fwd(m: Any, x: Any) -> Any:
    return m(x)


def test_copies_of_a_called_nnx_jit_and_of_a_guard_behave_as_without_jitlens() -> None:
    """jitlens' state riding on an nnx.jit wrapper is never copied: deepcopy used to raise
    ``TypeError: cannot pickle '_thread.lock'`` once the wrapper had been called."""
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 2))
    with jitlens.track() as t:
        fwd = nnx.jit(_fwd)
        want = fwd(model, x)
        state = {"fwd": fwd, "budgeted": jitlens.max_traces(1)(fwd), "lr": [0.1]}
        clone = copy.deepcopy(state)
        shallow = copy.copy(fwd)
        for f in (clone["fwd"], clone["budgeted"], shallow):
            assert jnp.array_equal(f(model, x), want)
    assert clone["lr"] == [0.1] and clone["budgeted"] is state["budgeted"]
    rows = [r for r in t.report().functions if r.name == "_fwd"]
    assert sum(r.calls for r in rows) == 4 and sum(r.traces for r in rows) == 1


def test_the_tracked_jit_is_transparent() -> None:
    plain = jax.jit(_f)
    with jitlens.track():
        tracked = jax.jit(_f)
        assert repr(tracked) == repr(plain)
        assert tracked.__wrapped__ is _f and tracked.__name__ == "_f"
        assert inspect.signature(tracked) == inspect.signature(plain)
        with pytest.raises(TypeError):
            jax.jit(fun=_f)
        for attr in ("lower", "trace", "eval_shape", "clear_cache"):
            assert callable(getattr(tracked, attr))
        method = jax.jit(_Holder.scale, static_argnums=0)
        h = _Holder()
        bound = method.__get__(h, _Holder)
        assert bound.__self__ is h and float(bound(jnp.ones(1))[0]) == 2.0


def _copies(jitted: Any) -> list[tuple[Any, ...]]:
    """What copying ``jitted`` makes, as a program sees it: identity, equality, names, results."""
    out = []
    for make in (copy.copy, copy.deepcopy, lambda j: copy.deepcopy({"step": j})["step"]):
        c = make(jitted)
        out.append((
            type(c).__name__, c is jitted, c == jitted, hash(c) == hash(jitted),
            hasattr(c, "__wrapped__"), hasattr(c, "__name__"), repr(c).split(" of ")[0],
            c(jnp.ones(2)).tolist(),
        ))  # fmt: skip
    return out


def test_copies_of_a_tracked_jit_are_what_copies_of_the_jax_jit_object_are() -> None:
    """``copy.copy`` / ``copy.deepcopy`` of a tracked ``jax.jit`` object (and of an object
    holding it) used to return the very object: ``copy.copy(f) is f`` where plain JAX makes a
    new object, equal only to itself and without the original's ``__wrapped__``. Now the
    copies are what plain JAX's are, and their calls are counted in the function's row."""

    def added(x: Any) -> Any:  # a function of its own: JAX's trace cache is per function
        return x + 1

    plain = jax.jit(_f)
    plain(jnp.ones(2))
    want = _copies(plain)
    with jitlens.track() as t:
        tracked = jax.jit(added)
        tracked(jnp.ones(2))
        got = _copies(tracked)
    assert got == want
    assert want[0][1:6] == (False, False, False, False, False)  # (the ground truth, as read)
    (row,) = [f for f in t.report().functions if f.name == "added"]
    assert (row.calls, row.traces) == (4, 1)


def test_concurrent_first_calls_share_one_row() -> None:
    class Tiny(nnx.Module):
        def __init__(self) -> None:
            self.w = nnx.Param(jnp.ones((2,)))

    runs: list[int] = []

    @nnx.jit
    def step(m: Tiny, x: Any) -> Any:
        runs.append(1)
        return m.w * x

    model = Tiny()
    barrier = threading.Barrier(4)

    def call() -> float:
        barrier.wait()
        return float(step(model, jnp.ones(2)).sum())

    with jitlens.track() as t:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(lambda _: call(), range(4)))
    assert outs == [2.0] * 4
    rows = [f for f in t.report().functions if f.name == "step"]
    assert len(rows) == 1 and rows[0].calls == 4
    assert rows[0].traces == len(runs) and rows[0].cache_hits == 4 - len(runs)


class _Noisy:
    """A static with its own ``__repr__`` and ``__getattr__`` (both count their calls)."""

    calls: dict[str, int] = {"repr": 0, "getattr": 0}

    def __init__(self, k: int) -> None:
        self.k = k

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Noisy) and other.k == self.k

    def __hash__(self) -> int:
        return hash(self.k)

    def __repr__(self) -> str:
        _Noisy.calls["repr"] += 1
        return f"_Noisy(k={self.k})"

    def __getattr__(self, name: str) -> Any:
        _Noisy.calls["getattr"] += 1
        raise AttributeError(name)


def test_describing_statics_calls_no_user_code() -> None:
    """JAX calls a static's ``__hash__``/``__eq__`` only; describing a key must do no more."""
    with jitlens.track() as t:
        f = jax.jit(lambda x, c: x * c.k, static_argnums=1)
        f(jnp.ones(2), _Noisy(1))
        f(jnp.ones(2), _Noisy(1))
        assert _Noisy.calls == {"repr": 0, "getattr": 0}
        f(jnp.ones(2), _Noisy(2))  # a retrace: explained by the field that differs
    (reason,) = t.stats(f).events[1].reasons
    assert (reason.kind, reason.before, reason.after) == ("static_value", "1", "2")
    assert _Noisy.calls["getattr"] == 0 and _Noisy.calls["repr"] <= 2


def test_statics_the_trace_frame_does_not_hold_are_the_jits_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A JAX whose trace frame keeps no jit info: the jit's own statics explain the retrace
    (an empty default would take the static for a traced argument: an ``unknown`` reason)."""
    from types import SimpleNamespace

    from jitlens._compat import jax_api

    monkeypatch.setattr(jax_api, "_jit_field", lambda ji, name: None)
    with jitlens.track() as t:
        f = jax.jit(lambda x, n: x * n, static_argnums=1)
        g = jax.jit(lambda x, n: x * n, static_argnames="n")
        for n in (2, 3):
            f(jnp.ones(2), n)
            g(jnp.ones(2), n=n)
    for fn in (f, g):
        (reason,) = t.stats(fn).events[1].reasons
        assert (reason.kind, reason.before, reason.after) == ("static_value", "2", "3")
    unreadable = SimpleNamespace(f_locals={"fun": f, "args": 5, "kwargs": {}})  # args not a tuple
    assert jax_api.trace_frame_info(unreadable) is None  # type: ignore[arg-type]


def test_calls_under_disable_jit_are_not_cache_hits() -> None:
    runs = []
    with jitlens.track() as t:

        @jax.jit
        def f(x: Any) -> Any:
            runs.append(1)
            return x * 2

        f(jnp.ones(2))
        with jax.disable_jit():
            f(jnp.ones(2))  # eager, op by op: the body runs, no cache is consulted
        f(jnp.ones(2))
    stats = t.stats(f)
    assert len(runs) == 2 and (stats.calls, stats.traces, stats.cache_hits) == (3, 1, 1)


def test_a_pytree_of_thousands_of_leaves_changing_structure_is_explained_in_one_pass(monkeypatch):
    """A retrace of a list of 3,000 leaves that grew by one made 6,000 reasons, and each one
    scanned both keys for optax nodes: 41 s of a 52 s explanation (quadratic). 500 leaves
    show it as well: once per reason would read 500 x 1,000 leaves, not about 2,000."""
    n, seen = 500, [0]
    module_of = rank.module_of

    def counting(e):
        seen[0] += 1
        return module_of(e)

    monkeypatch.setattr(rank, "module_of", counting)
    count = [0]

    @jax.jit
    def tree(t):
        count[0] += 1
        return t

    leaves = [jnp.zeros(())] * n
    with jitlens.track() as t:
        tree(leaves)
        tree([leaves])  # every leaf moved one level down: one reason per leaf
    stats = t.stats(tree)
    assert stats.traces == count[0] == 2
    assert stats.events[1].reasons  # explained
    assert seen[0] <= 4 * (n + 10), seen[0]  # each key read once, not once per reason


def test_an_internal_failure_is_in_the_report_of_its_own_window_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A report's warnings are the failures of its window: one in an earlier ``track()``
    block (another test's injected fault, under xdist) made a later clean report say
    "jitlens stepped aside"; the same cause again in a later window is in that report, in
    that occurrence's words, though its warning is not repeated."""
    from jitlens._track import listeners

    def other(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("an earlier failure's words")

    monkeypatch.setattr(state, "_WARNED", set())
    reports, said = [], []
    for broken in (other, None, _boom):
        with monkeypatch.context() as m:
            if broken is not None:
                m.setattr(listeners, "describe_and_explain", broken)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with jitlens.track() as t:
                    jax.jit(lambda x: x + 1)(jnp.ones(2))
            said.append(sum(issubclass(w.category, JitlensInternalWarning) for w in caught))
            reports.append(t.report())
    words = [[w.split("(", 1)[1].split(")")[0] for w in r.warnings] for r in reports]
    assert words == [
        ["RuntimeError: an earlier failure's words"],
        [],
        ["RuntimeError: injected jitlens failure"],
    ]
    assert said == [1, 0, 0]  # warned once per cause and process


# ---------------------------------------------------------------- the explainer's work (issue 44)


def _fn(d: Any, s: Any = None) -> None:
    """The function whose keys are described (its parameter names name the paths)."""


def _key(d: Any, s: Any = None) -> Key:
    return describe_call(_fn, (d, s), {}, static_argnums=(1,))


def _leaves(n: int, size: int, first: int | None = None) -> dict[str, np.ndarray]:
    d = {f"k{i}": np.ones((size,), np.float32) for i in range(n)}
    if first is not None:
        d["k0"] = np.ones((first,), np.float32)
    return d


def _old_rule(new: Key, previous: Sequence[Key]) -> Key | None:
    """The choice before issue 44, the oracle: every key's full diff, the fewest weighted
    reasons (a signature 3, a static changed in place since its compile 0), ties the newest."""
    weight = {"signature": 3, "mutated_static": 0}
    best: tuple[int, int] | None = None
    chosen = None
    for i, k in enumerate(previous):
        score = (sum(weight.get(r.kind, 1) for r in explain.diff_keys(k, new)), -i)
        if best is None or score < best:
            best, chosen = score, k
    return chosen


def test_a_retrace_builds_reasons_for_the_closest_key_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: every live key's full diff (64 x 500 reasons for a 500-leaf dict whose every
    shape changed, 1.7 s). Now: one diff, the closest key's, and the others only walked."""
    keys = [_key(_leaves(300, r + 1)) for r in range(64)]
    new = _key(_leaves(300, 65))
    diffs: list[Key] = []
    reasons: list[int] = []
    real_diff, real_entry = explain.diff_keys, explain._entry_reasons

    def diff(old: Key, n: Key) -> Any:
        diffs.append(old)
        return real_diff(old, n)

    def entry(*args: Any) -> Any:
        reasons.append(1)
        return real_entry(*args)

    monkeypatch.setattr(explain, "diff_keys", diff)
    monkeypatch.setattr(explain, "_entry_reasons", entry)
    found = explain.explain(new, keys)
    assert diffs == [keys[-1]]  # the newest of 64 equally far keys, as before
    assert len(reasons) == 300 and len(found) == 300
    assert {r.kind for r in found} == {"shape"}


def test_finding_the_closest_key_walks_only_what_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1,000-leaf dict with one leaf's shape changing per key: each key's walk compares that
    leaf alone (the others' hashes agree), and each key's digest is made once. (Describing a
    key of 1,000 leaves costs 0.15 CPU s: 8 keys show it as 16 of 3,000 leaves did.)"""
    keys = [_key(_leaves(1_000, 2, first=r + 1)) for r in range(8)]
    compared: list[int] = []
    digests: list[int] = []
    real_weight, real_digest = nearest._aval_weight, nearest.Digest.__init__

    def weight(a: Any, b: Any) -> int:
        compared.append(1)
        return real_weight(a, b)

    def made(self: nearest.Digest, entries: Any) -> None:
        digests.append(len(entries))
        real_digest(self, entries)

    monkeypatch.setattr(nearest, "_aval_weight", weight)
    monkeypatch.setattr(nearest.Digest, "__init__", made)
    for r in (8, 9):
        new = _key(_leaves(1_000, 2, first=r + 1))
        assert explain.closest(new, keys)[0] is keys[-1]
        keys.append(new)
    assert len(compared) == 8 + 9  # one leaf per key walked, not 1,000
    assert len(digests) == 8 + 2  # each key's digest once, however often it is compared


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.25:
        return {f"a{i}": _random_value(rng, depth + 1) for i in rng.sample(range(5), 3)}
    if depth < 2 and roll < 0.4:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(1, 3))]
    if roll < 0.5:
        return None
    if roll < 0.6:
        return rng.choice((1.0, 2.0))  # a weak-typed scalar
    dtype = rng.choice((np.float32, np.int32, np.float16))
    return np.ones(rng.choice(((2,), (3,), (2, 2))), dtype)


def _random_static(rng: random.Random) -> Any:
    return rng.choice((1, 2, True, 1.0, "a", ("a", 1), None, float("nan"), np.float32))


def test_the_closest_key_is_the_one_the_full_diffs_chose() -> None:
    """The digests' distance picks the key every full diff picked (fewest weighted reasons,
    ties the newest) on random keys: nested dicts and lists, None, weak scalars, dtypes,
    shapes, statics of every plain kind and a NaN."""
    rng = random.Random(44)
    for _ in range(60):
        pool = [(_random_value(rng), _random_static(rng)) for _ in range(4)]
        keys = [_key(*rng.choice(pool)) for _ in range(rng.randint(1, 6))]
        new = _key(*rng.choice(pool))
        assert nearest.nearest(new, keys) is _old_rule(new, keys)


def _placed(key: Key, devices: tuple[int, ...]) -> Key:
    """``key`` with its arrays on a mesh of ``devices`` (no program needs 2 devices for it)."""
    entries = {
        p: e if e.aval is None else dataclasses.replace(
            e, aval=dataclasses.replace(e.aval, devices=devices)
        )
        for p, e in key.entries.items()
    }  # fmt: skip
    return dataclasses.replace(key, entries=entries)


class _Cfg:
    """A static compared by the value it holds (its own ``__eq__``), held weakly by a key."""

    def __eq__(self, other: object) -> bool:
        return type(other) is _Cfg

    def __hash__(self) -> int:
        return 1


def test_the_closest_key_tells_what_a_key_keeps_now() -> None:
    """What a key holds since it holds no program object alive and keys a mesh's devices: an
    array on other devices of its mesh differs (a placement), and a static whose object was
    collected equals nothing, not a None static; both as the full diffs choose."""
    a = _placed(_key(_leaves(3, 2)), (0, 1))
    b = _placed(_key(_leaves(3, 2)), (1, 0))
    new = _placed(_key(_leaves(3, 2)), (0, 1))
    assert nearest.distance(b, new) == len(explain.diff_keys(b, new)) == 3  # a leaf each
    assert nearest.nearest(new, [a, b]) is a is _old_rule(new, [a, b])
    cfg = _Cfg()
    gone = _key(_leaves(3, 2), cfg)
    del cfg
    gc.collect()
    static = gone.entries[(("arg", "s"),)].static
    assert static is not None and not static.alive() and not static.identity
    other = _key(_leaves(3, 2, first=3), None)
    new = _key(_leaves(3, 2), None)
    assert nearest.nearest(new, [gone, other]) is other is _old_rule(new, [gone, other])


def test_the_reasons_package_names_its_builders_however_its_modules_load() -> None:
    """``reasons.shape`` is the builder of a shape reason whichever way its module was loaded
    first (the import system binds a package's submodule under its name); ``SPECS`` holds
    every kind in order."""
    import importlib

    from jitlens._core import reasons
    from jitlens._core.kinds import ReasonKind

    for kind in ReasonKind:
        importlib.import_module(f"jitlens._core.reasons.{kind.value}")
        if kind.value in reasons.__all__:  # a builder named as its module (``shape``)
            assert callable(getattr(reasons, kind.value)), kind
    assert list(reasons.SPECS) == sorted(ReasonKind, key=lambda k: reasons.SPECS[k].order)
    assert set(reasons.SPECS) == set(ReasonKind)
    assert all(hasattr(reasons, name) for name in reasons.__all__)
