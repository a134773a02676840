"""Trial O (issue 46: the code the user Owns): fixes in the code the user owns, the devices of a mesh, and only the jits
around user code counted, on held-out reports' patterns (``tests/trial_programs/o_*``: dm-haiku,
diffrax, optimistix, blackjax, numpyro, Keras, meshes, NNX sharding; and ``jl_fakelib``, a
package of the tests' own under ``tests/fixtures/site-packages``, so that the library rule is
tested where none of those libraries is installed).

Every program counts its own traces (the truth) and returns its outputs; ``trial_c_driver.py``
runs the programs as written in one process (a fork of the suite's server) and with jitlens'
printed fix applied in another, both with 2 host CPU devices (the mesh programs need them; the
others do not mind).
A program whose library is missing is left out (``LIBRARIES``), never the whole set.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import pathlib

import pytest

from conftest import check_trial_counts

PROGRAMS = pathlib.Path(__file__).parent / "trial_programs"
NAMES = sorted(p.stem for p in PROGRAMS.glob("o_*.py"))

#: One worker runs the module: its drivers run once.
pytestmark = pytest.mark.xdist_group("trial_o")


def _libraries(name: str) -> tuple[str, ...]:
    """A program's ``LIBRARIES``, read from its source (importing it would load them)."""
    tree = ast.parse((PROGRAMS / f"{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "LIBRARIES":
            return tuple(ast.literal_eval(node.value))
    return ()


def _installed(name: str) -> bool:
    return all(importlib.util.find_spec(lib) is not None for lib in _libraries(name))


@pytest.fixture(scope="module")
def trial(fork_python) -> dict:
    names = [n for n in NAMES if _installed(n)]
    out = {}
    for scenario in ("before", "after"):
        # a fork of the suite's server, given 2 host devices (and XLA's cheapest compile)
        # by fast_compile.py before JAX starts its backend, as device_env gives a fresh one
        driver = [str(PROGRAMS / "fast_compile.py"), "--devices", "2", "trial_c_driver.py"]
        proc = fork_python(
            [*driver, scenario, *names], cwd=PROGRAMS, env={"KERAS_BACKEND": "jax"}, timeout=600
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[scenario] = json.loads(proc.stdout.split("TRUTH ", 1)[1].splitlines()[0])
    for name in names:  # a program with nothing to fix ran once (``NO_FIX``)
        out["after"].setdefault(name, out["before"][name])
    return out


def _run(trial: dict, program: str) -> tuple[dict, dict]:
    if program not in trial["before"]:
        pytest.skip(f"{program}: {', '.join(_libraries(program))} not installed")
    return trial["before"][program], trial["after"][program]


def _reason(run: dict, fn: str) -> dict:
    reasons = run["rows"][fn]["reasons"]
    assert reasons, run["text"]
    return reasons[0]


def _flat(text: str) -> str:
    return " ".join(text.split())


#: Programs whose retrace is a compile of the one trace (a device order): their function's one
#: trace has a reason before the fix.
COMPILE_ONLY = ("o_mesh_device_order",)


@pytest.mark.parametrize("program", NAMES)
def test_counts_equal_the_programs_own_and_the_fix_keeps_its_outputs(
    trial: dict, program: str
) -> None:
    _run(trial, program)
    check_trial_counts(trial, program, clean_after=program not in COMPILE_ONLY)
    for row in trial["after"][program]["rows"].values():  # applied, no reason is left
        assert row["reasons"] == [] and row["lost"] == 0.0, row


# ---------------------------------------------------------------- 1. fixes in the user's code


@pytest.mark.parametrize(
    ("program", "built"),
    [
        ("o_fakelib_transform_per_call", "f = jl_fakelib.transform(forward)"),
        ("o_haiku_transform_per_call", "f = hk.transform(forward)"),
    ],
)
def test_a_library_transform_jitted_per_call_moves_the_users_lines_not_the_librarys(
    trial: dict, program: str, built: str
) -> None:
    # once "Define `f.apply` once at module level with `f` as parameters": apply_fn is the
    # library's. Applied (both lines at module level): one trace, the same outputs
    before, after = _run(trial, program)
    r = _reason(before, "apply")
    assert (r["kind"], r["fix_kind"]) == ("new_function", "library_owned_jit"), r
    fix = _flat(r["fix"])
    assert f"builds it anew on every call of `predict`: `{built}`" in fix, fix
    assert f"`{built}` and `apply_jit = jax.jit(f.apply)`" in fix, fix
    assert "as parameters" not in fix and "def apply_fn" not in fix, fix
    assert after["truth"] == {"apply": 1} and after["rows"]["apply"]["traces"] == 1


@pytest.mark.parametrize(
    ("program", "fn", "built"),
    [
        ("o_fakelib_event_per_call", "_step", "event = jl_fakelib.Event(cond_fn)"),
        ("o_diffrax_event_per_call", "_solve", "event = diffrax.Event(cond_fn)"),
        (
            "o_optimistix_solver_per_call",
            "solve",
            "solver = optx.Newton(rtol=1e-6, atol=1e-6, norm=lambda x: jnp.max(jnp.abs(x)))",
        ),
    ],
)
def test_a_library_object_rebuilt_per_call_is_built_once_by_the_users_line(
    trial: dict, program: str, fn: str, built: str
) -> None:
    # once "set `self.cond_fn` in `__init__`" (diffrax.Event's): the user's line moves instead
    before, after = _run(trial, program)
    r = _reason(before, fn)
    assert (r["kind"], r["fix_kind"]) == ("identity_static", "library_owned_object"), r
    fix = _flat(r["fix"])
    assert f": `{built}`" in fix and f"move `{built}` there" in fix, fix
    assert "__init__" not in fix and "self." not in fix, fix
    assert after["truth"] == {fn: 1}


def test_a_library_class_built_in_the_call_is_built_once_not_made_a_dataclass(
    trial: dict,
) -> None:
    # once "Make `Solver` (or `NUTS`) a frozen dataclass": the library's class
    for program, fn, call in (
        ("o_fakelib_solver_static", "descend", "jl_fakelib.Solver(0.1)"),
        ("o_numpyro_kernel_static", "potential", "NUTS(model)"),
    ):
        if program not in trial["before"]:
            continue
        r = _reason(trial["before"][program], fn)
        assert r["fix_kind"] == "library_owned_object", r
        fix = _flat(r["fix"])
        assert "dataclass" not in fix, fix
        assert f"`{r['path']} = {call}` there, passed where you wrote `{call}`" in fix, fix
        assert trial["after"][program]["truth"] == {fn: 1}


# ---------------------------------------------------------------- 2. devices of a mesh


def test_a_mesh_of_the_same_devices_in_another_order_is_named_with_its_fix(trial: dict) -> None:
    before, after = _run(trial, "o_mesh_device_order")
    row = before["rows"]["total"]
    assert (row["traces"], row["compiles"], before["extra"]["compiles"]) == (1, 2, 2), row
    r = _reason(before, "total")
    assert (r["kind"], r["path"], r["before"], r["after"]) == (
        "sharding",
        "x",
        "devices (0, 1)",
        "devices (1, 0)",
    ), r
    assert r["fix_kind"] == "mesh_devices" and "equal key" not in before["text"], r
    fix = _flat(r["fix"])
    assert "`mesh = Mesh(np.array(jax.devices()[:2]), ('data',))`" in fix, fix
    assert "`jax.device_put(x, NamedSharding(mesh, P('data')))`" in fix, fix
    # applied: the same batches on the one mesh compile once
    assert after["rows"]["total"]["compiles"] == after["extra"]["compiles"] == 1


# ---------------------------------------------------------------- 3. only the user's jits


def test_a_library_jit_inside_the_users_jit_is_part_of_its_trace(trial: dict) -> None:
    before, _ = _run(trial, "o_numpyro_mcmc_in_jit")
    assert before["truth"] == {"run_chain": 1}
    assert before["user_traces"] == 1, before["text"]  # it read 2 for 1
    assert "1 jitted function, 1 trace" in _flat(before["text"]), before["text"]
    assert not [n for n in before["functions"] if n.startswith("numpyro")], before["functions"]


def test_a_library_step_that_runs_none_of_the_users_code_is_not_the_users_row(
    trial: dict,
) -> None:
    before, _ = _run(trial, "o_keras_custom_train_evaluate")
    assert before["truth"] == {"fit train step": 1}
    assert before["user_traces"] == 1, before["text"]  # evaluate's test step was counted
    assert before["functions"] == ["keras: CustomModel.fit train step"], before["functions"]


# ---------------------------------------------------------------- 4. a library kernel rebuilt


def test_a_kernel_rebuilt_with_new_values_names_them_and_the_librarys_builder(
    trial: dict,
) -> None:
    # once "Create `one_step` once, outside the function that runs lax.scan": it would freeze
    # the first kernel. Applied as printed: one trace for both step sizes, the same samples
    before, after = _run(trial, "o_blackjax_adapted_kernel_scan")
    r = _reason(before, "one_step")
    assert r["fix_kind"] == "library_rebuilt", r
    message, fix = _flat(r["message"]), _flat(r["fix"])
    assert "`one_step` calls `kernel`, which is `nuts.step`" in message, message
    assert "(here `step_size`, `imm`)" in message, message
    assert "`kernel = blackjax.mcmc.nuts.build_kernel()` once at module level" in fix, fix
    assert "jit `inference_loop` once" in fix and "static_argnames=('num_samples',)" in fix, fix
    assert "`kernel(rng_key, state, logdensity, step_size, imm)`" in fix, fix
    assert after["truth"] == {"one_step": 1}


# ---------------------------------------------------------------- 5. an NNX parameter resharded


def test_an_nnx_parameter_resharded_gets_a_fix_that_works_when_its_type_changes(
    trial: dict,
) -> None:
    before, after = _run(trial, "o_nnx_sharding_explicit")
    r = _reason(before, "forward")
    assert (r["kind"], r["path"]) == ("sharding", "m.w"), r
    code = "m.w.set_value(jax.device_put(m.w.get_value(), NamedSharding(mesh, P(None, 'model'))))"
    assert f"`{code}`" in _flat(r["fix"]), r["fix"]
    # the form once printed raises where the placement changes the type (explicit axes)
    extra = before["extra"]
    assert extra["old_fix"] != "ok" or not extra["explicit"], extra
    assert after["truth"] == {"forward": 1} and after["rows"]["forward"]["reasons"] == []
