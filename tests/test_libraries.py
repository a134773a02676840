"""Jits a library makes around the user's code (Keras 3, numpyro, blackjax), as a user runs them.

Each library's public example runs once under ``jitlens run --json`` in a fresh
process (one subprocess per library: each costs seconds of compiling). The
program counts JAX's own trace events (``tests/libraries/_truth.py``); the
rows must add up to them, retraces must name the user's arguments and a fix in
the library's terms, and the program's second half, with that fix applied on a
model of its own, must not retrace. Skipped where a library is not installed
(the oldest-JAX CI job).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import textwrap

import pytest
from trial_programs.fast_compile import FLAGS

import conftest
from conftest import run_python

PROGRAMS = pathlib.Path(__file__).parent / "libraries"
#: Runs a script as ``python SCRIPT`` with the flags of :data:`FAST_XLA`, in a fork.
FAST_COMPILE = str(pathlib.Path(__file__).parent / "trial_programs" / "fast_compile.py")


def _needs(library: str) -> None:
    """Skip where ``library`` is absent, without importing it here (keras would pick a backend)."""
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")


#: XLA compiles without LLVM's optimisation passes and with its fusion emitters off (less CPU
#: per compile, issue 48; ``trial_programs/fast_compile.py``): the libraries' traces, keys and
#: compiles are JAX's before XLA's backend runs.
FAST_XLA = {
    "XLA_FLAGS": " ".join([os.environ.get("XLA_FLAGS", ""), conftest.FAST_XLA, *FLAGS]).strip()
}


def _run(tmp_path: pathlib.Path, program: str, env: dict[str, str] | None = None) -> tuple:
    out = tmp_path / "report.json"
    proc = run_python(
        ["-m", "jitlens", "run", "--color", "never", "--json", str(out), program],
        cwd=PROGRAMS,
        env={**FAST_XLA, **(env or {})},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    functions = json.loads(out.read_text())["functions"]
    rows = {f["name"]: f for f in functions}
    rows["*"] = functions  # every row, wrappers of one name included
    return proc, truth, rows


def _reasons(row: dict) -> list[dict]:
    return [r for e in row["events"] if e["kind"] == "retrace" for r in e["reasons"]]


def test_keras_mnist_convnet_fit_evaluate_predict(tmp_path: pathlib.Path) -> None:
    _needs("keras")
    _proc, truth, rows = _run(tmp_path, "keras_mnist_convnet.py", {"KERAS_BACKEND": "jax"})
    jax = truth["jax"]
    # rows equal JAX's own trace events of keras' three steps
    for step in ("train", "test", "predict"):
        ours = sum(r["traces"] for r in rows["*"] if r["name"].endswith(f" {step} step"))
        assert ours == jax[f"{step}_step"], (step, ours, jax)
    assert all(r["kind"] == "keras" and not r["internal"] for r in rows["*"])
    # keras' shape inference (compute_output_spec) never runs a step: hidden
    assert len(rows["*"]) == 10

    train = rows["keras: Sequential.fit train step"]
    assert (train["traces"], train["calls"]) == (2, 6)  # 45 samples: 16, 16, then 13
    (x, y) = _reasons(train)
    assert (x["argument"], x["path"], y["path"]) == ("x", "x", "y")
    assert "`x` of `fit`" in x["message"] and "`batch_size` (16)" in x["message"]
    assert "n = len(x) // 16 * 16" in x["fix"]
    test = rows["keras: Sequential.fit test step"]  # validation (5), then evaluate (7)
    assert test["traces"] == 2 and "`x` of `evaluate`" in _reasons(test)[0]["message"]

    on_batch = rows["keras: Sequential.predict_on_batch predict step"]
    assert on_batch["traces"] == 4
    assert all(r["path"] in ("x",) for r in _reasons(on_batch))
    assert "np.pad(x, [(0, B - len(x))]" in _reasons(on_batch)[0]["fix"]
    predict_rows = [r for r in rows["*"] if r["name"] == "keras: Sequential.predict predict step"]
    lengths = next(r for r in predict_rows if r["traces"] == 3)
    assert "pad_sequences(seqs, maxlen=9" in _reasons(lengths)[-1]["fix"]

    # predict's ragged last batch: two models of class Sequential -> two rows of that name
    ragged = next(r for r in predict_rows if r["traces"] == 2)
    assert "np.pad(x, [(0, n)]" in _reasons(ragged)[0]["fix"]

    # the fixes, applied as printed: one trace each
    for name in (
        "keras: Fixed.fit train step",
        "keras: Fixed.fit test step",
        "keras: Fixed.predict_on_batch predict step",
        "keras: Fixed.predict predict step",
        "keras: FixedPredict.predict predict step",
    ):
        assert rows[name]["traces"] == 1, name


def test_numpyro_nuts_and_svi_examples(tmp_path: pathlib.Path) -> None:
    _needs("numpyro")
    _proc, truth, rows = _run(tmp_path, "numpyro_examples.py")
    jax = truth["jax"]
    loop = rows["numpyro: MCMC sample loop (NUTS)"]
    assert loop["traces"] == jax["_fori_collect_loop"] == 1 and loop["kind"] == "numpyro"
    update = rows["numpyro: SVI.update"]  # the user's jax.jit(svi.update), called with y=
    assert (update["calls"], update["traces"]) == (3, jax["update"]) == (3, 1)
    assert rows["epoch_train"]["traces"] == jax["epoch_train"] == 1
    assert not _reasons(loop) and not _reasons(update) and not _reasons(rows["epoch_train"])
    # SVI.run twice: a step jitted per run, said in numpyro's terms with the fix above
    runs = [r for r in rows["*"] if r["name"] == "numpyro: SVI.run step"]
    assert sum(r["traces"] for r in runs) == jax["body_fn"] == 2
    (reason,) = [x for r in runs for x in _reasons(r)]
    assert reason["message"].startswith("`SVI.run` jitted a new step for this run")
    assert "update = jax.jit(svi.update)" in reason["fix"]
    assert len(rows["*"]) == 5


def test_blackjax_quickstart_three_samplers(tmp_path: pathlib.Path, fork_python) -> None:
    _needs("blackjax")
    proc, truth, rows = _run(tmp_path, "blackjax_quickstart.py")
    one_step = [r for r in rows["*"] if r["name"] == "one_step"]
    assert sum(r["traces"] for r in one_step) == truth["body_runs"]["one_step"] == 3
    # three kernels, each compiled once on purpose: expected, nothing lost, no "rebuilt" fix
    for r in one_step:
        for e in r["events"]:
            assert all(reason["expected"] for reason in e["reasons"]), e["reasons"]
            assert not any("Create `one_step` once" in x["fix"] for x in e["reasons"])
    for sampler in ("hmc", "nuts", "mala"):
        kernel = rows[f"blackjax: {sampler}.step_fn"]  # jax.jit(hmc.step), traced in one_step
        assert (kernel["calls"], kernel["traces"]) == (1, 1) and not kernel["internal"]
        assert not _reasons(kernel)
    # a jit blackjax makes around the user's logdensity: shown, named in blackjax's terms
    loop = rows["blackjax: run_inference_algorithm"]
    assert (loop["calls"], loop["traces"]) == (1, truth["jax"]["scan"] - 3) == (1, 1)
    assert len(rows["*"]) == 7  # 3 one_step, 3 kernels, the loop: no helper of blackjax's
    assert "0.00 s lost" in proc.stderr
    # the same program under plain python (a fork of the server that imported JAX, nothing
    # else: its start-up is not what is compared; the same XLA flags): same output
    plain = fork_python([FAST_COMPILE, "blackjax_quickstart.py"], cwd=PROGRAMS, timeout=600)
    assert plain.returncode == 0 and plain.stdout == proc.stdout


# ---------------------------------------------------------------- the pure pieces, no JAX


def _reason(path: str, before: str, after: str) -> object:
    """A shape reason as the explainer makes it: the words and the two keys' entries."""
    from jitlens._core.key import Aval, Entry
    from jitlens._core.kinds import EntryKind
    from jitlens._core.report import Reason

    def entry(text: str) -> Entry:
        dims = tuple(int(d) for d in text[text.index("[") + 1 : -1].split(",") if d)
        return Entry(EntryKind.AVAL, Aval(dims, text[: text.index("[")], False, ""))

    return Reason(
        "shape", "data", path, before, after, "m", "f", entries=(entry(before), entry(after))
    )


def _step(entry: str, role: str, batch_size: int | None) -> object:
    from jitlens._compat import keras_api
    from jitlens._compat.library_jits import LibraryJit

    facts = (("batch_size", batch_size),) if batch_size else ()
    return LibraryJit("keras", "k", entry, role, keras_api.DATA_PATHS, facts)


def test_keras_words_name_the_users_argument_and_fix() -> None:
    from jitlens._core.reasons import library_reason

    r = library_reason(_step("fit", "train", 16), _reason("data[0]", "f32[16,6]", "f32[13,6]"))
    assert (r.argument, r.path) == ("x", "x")
    assert r.message.startswith("The batch keras cut from `x` of `fit` changed shape")
    assert "n = len(x) // 16 * 16" in r.fix
    y = library_reason(_step("fit", "train", 16), _reason("data[1]['a']", "f32[16]", "f32[13]"))
    assert y.path == "y['a']"
    small = library_reason(_step("evaluate", "test", 32), _reason("data[0]", "f32[5]", "f32[7]"))
    assert "smaller than `batch_size` (32)" in small.message and "one size" in small.fix
    on_batch = library_reason(
        _step("predict_on_batch", "predict", None), _reason("data", "f32[1,4]", "f32[3,4]")
    )
    assert on_batch.path == "x" and "predict(x, batch_size=B)" in on_batch.fix
    length = library_reason(
        _step("predict", "predict", 32), _reason("data", "f32[2,5]", "f32[2,9]")
    )
    assert "pad_sequences(seqs, maxlen=9" in length.fix
    other = _reason("state[0][1]", "f32[3]", "f32[4]")  # keras' own state: left as it is
    assert library_reason(_step("fit", "train", 16), other) == other


def test_different_functions_through_a_closure_are_expected() -> None:
    from jitlens._compat import closure_callees
    from jitlens._core.callees import different_function

    def hmc(x):
        return x

    def mala(x):
        return x

    def loop(kernel):
        def one_step(s):
            return kernel(s)

        return one_step

    first, second, again = (closure_callees(loop(k)) for k in (hmc, mala, hmc))
    name, before, after = different_function(second, [first])
    assert name == "kernel" and before.endswith(".hmc") and after.endswith(".mala")
    assert different_function(again, [first, second]) is None  # hmc's again: rebuilt


def test_a_library_jit_reaching_user_code() -> None:
    import functools
    import site

    from jitlens._compat.library_jits import reaches_user

    def logdensity(x):  # the user's, in this test file
        return x

    # the sampler and its one_step in a library's file: only the closures lead to the user
    library = textwrap.dedent(
        """
        def sampler(fn):
            def step(s):
                return fn(s)
            return (step, None)

        def make_one_step(fn):
            algorithm = sampler(fn)
            def one_step(s):
                return algorithm[0](s)
            return one_step
        """
    )
    path = os.path.join(site.getsitepackages()[0], "blackjax", "fake_util.py")
    ns: dict = {}
    exec(compile(library, path, "exec"), ns)
    assert reaches_user(functools.partial(len, ns["make_one_step"](logdensity)))
    assert not reaches_user(functools.partial(len, ns["make_one_step"](abs)))  # a builtin
    assert not reaches_user(functools.partial(len, 3))


def test_an_internal_jit_traced_inside_a_users_jit_counts_under_include_internal() -> None:
    """blackjax's ``hmc_kernel`` inside ``one_step`` showed 0 traces and 1 hit: a nested trace."""
    import jax
    import jax.numpy as jnp

    import jitlens

    with jitlens.track(include_internal=True) as t:
        sin = jax.jit(jnp.sin)  # a JAX function: internal, shown with include_internal
        runs = []

        @jax.jit
        def outer(x):
            runs.append(1)
            return sin(x) + 1

        outer(jnp.ones(3))
    rows = {f.name: f for f in t.report().functions}
    assert runs == [1] and rows["outer"].traces == 1
    inner = rows["sin"]
    assert (inner.calls, inner.traces, inner.cache_hits) == (1, 1, 0)


def test_every_row_kind_has_one_registered_front_end() -> None:
    """The registration table: one front-end per row kind, each a typed ``Frontend``."""
    from jitlens._core.kinds import RowKind
    from jitlens._track import frontend
    from jitlens._track.frontends import LIBRARIES

    owners = {k: [fe for fe in LIBRARIES if k in fe.kinds] for k in RowKind}
    assert all(len(v) == 1 for v in owners.values()), owners
    assert set(frontend.registered()) == set(LIBRARIES)
    assert all(frontend.of_kind(k) is owners[k][0] for k in RowKind)
    with pytest.raises(TypeError):

        class NoKinds(frontend.Frontend):  # a front-end must name its row kinds
            pass
