"""Tests of ``jitlens lint``: every rule on a positive and a negative snippet, the shared cases, the CLI."""

from __future__ import annotations

import contextlib
import io
import json
import re
import textwrap
import warnings
from pathlib import Path

import pytest

import jitlens
from jitlens import LintFinding, LintSkipWarning, lint_paths, lint_source
from lint_eqx_examples import EQX_RULE_EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
MARK = "# <-"  # marks each line a snippet expects a finding on


CASES_DIR = ROOT / "tests" / "cases"


def _lint_cli(argv: list[str]) -> int:
    """``jitlens lint ARGV`` as a user runs it, in this process."""
    return jitlens.main(["lint", *argv])


def _rules() -> list[str]:
    """The codes of every rule jitlens has, as ``jitlens lint --help`` lists them."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _lint_cli(["--help"]) == 0
    return re.findall(r"^  (JL\d{3})  \S", out.getvalue(), re.M)


def _lint(source: str) -> list[LintFinding]:
    return lint_source(textwrap.dedent(source), "snippet.py")


def _marked(source: str) -> list[int]:
    lines = textwrap.dedent(source).splitlines()
    return [i for i, line in enumerate(lines, 1) if MARK in line]


HEADER = """\
import functools
from functools import partial
import jax
import jax.numpy as jnp
from flax import nnx
"""

#: code -> (source with findings on the marked lines, source with no finding)
RULE_EXAMPLES: dict[str, tuple[str, str]] = {
    "JL001": (
        HEADER
        + """
def train_step(model, batch):
    return model(batch)

def evaluate(model, x):
    @nnx.jit  # <-
    def forward(m, v):
        return m(v)
    return forward(model, x)

for batch in loader:
    nnx.jit(train_step)(model, batch)  # <-
    jax.jit(lambda x: x * 2)(batch)  # <-
    jax.jit(partial(train_step, model))(batch)  # <-
    evaluate(model, batch)
""",
        HEADER
        + """
def train_step(model, batch):
    return model(batch)

@nnx.jit
def forward(m, v):
    return m(v)

train_step_jit = nnx.jit(train_step)
double = jax.jit(lambda x: x * 2)

class Trainer:
    def __init__(self):
        self.step = jax.jit(self._step)

    def _step(self, x):
        return x

@jax.jit
def outer(x):
    return jax.jit(lambda v: v + 1)(x)  # traced once per compile of outer

for batch in loader:
    train_step_jit(model, batch)
    double(batch)
    jax.jit(train_step)(model, batch)  # same function object: jax's cache hits
    forward(model, batch)
jitted = {name: jax.jit(partial(train_step, name)) for name in names}  # built once each
for n in (1, 2, 4):  # a deliberate sweep over three variants
    jax.jit(partial(train_step, n))(batch)
""",
    ),
    "JL002": (
        HEADER
        + """
class CNN(nnx.Module):
    def __init__(self, rngs):
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2))  # <-
        self.act = lambda x: nnx.relu(x)  # <-
        self.pool = jax.tree_util.Partial(nnx.max_pool, window_shape=(2, 2))  # <-

class Deeper(CNN):
    def __init__(self, rngs):
        super().__init__(rngs)
        def gelu(x):
            return x
        self.act = gelu  # <-
""",
        HEADER
        + """
POOL = partial(nnx.avg_pool, window_shape=(2, 2))

class CNN(nnx.Module):
    def __init__(self, rngs):
        self.pool = POOL
        self.act = nnx.relu
        self.max_pool = nnx.data(jax.tree_util.Partial(nnx.max_pool, window_shape=(2, 2)))

    def __call__(self, x):
        return nnx.avg_pool(self.act(x), window_shape=(2, 2))

class Loader:  # not a Module: attributes are not part of any cache key
    def __init__(self):
        self.collate = partial(jnp.stack, axis=0)
""",
    ),
    "JL003": (
        HEADER
        + """
class Model(nnx.Module):
    def __init__(self, rngs):
        self.step = 0
        self.scale = 1.0

    def __call__(self, x):
        self.step += 1  # <-
        return x * self.scale

model = Model(nnx.Rngs(0))
for lr in schedule:
    model.scale = lr  # <-
""",
        HEADER
        + """
class Model(nnx.Module):
    def __init__(self, rngs):
        self.step = nnx.Variable(jnp.array(0))
        self.scale = 1.0
        self.calls = 0

    def __call__(self, x):
        self.step[...] += 1
        return x * self.scale

    def reset(self):
        self.calls = 0

class Counter:  # not a Module
    def __init__(self):
        self.n = 0

    def tick(self):
        self.n += 1

class Stack(nnx.Module):  # as flax's own nnx.List: the length `__len__` must return
    def __init__(self):
        self._length: int = 0

    def __len__(self):
        return self._length

    def append(self, value):
        setattr(self, str(self._length), value)
        self._length += 1
""",
    ),
    "JL004": (
        HEADER
        + """
def make_model(hidden, seed):
    class MLP(nnx.Module):  # <-
        def __init__(self, rngs):
            self.l1 = nnx.Linear(3, hidden, rngs=rngs)
    return MLP(nnx.Rngs(seed))
""",
        HEADER
        + """
class MLP(nnx.Module):
    def __init__(self, hidden, rngs):
        self.l1 = nnx.Linear(3, hidden, rngs=rngs)

def make_config(hidden):
    class Config:  # not a Module
        size = hidden
    return Config

def test_tiny_module():
    class Tiny(nnx.Module):  # a test runs once
        pass
""",
    ),
    "JL005": (
        HEADER
        + """
@functools.partial(jax.jit, static_argnames="temperature")
def softmax_t(logits, temperature):
    return jax.nn.softmax(logits / temperature)

@partial(jax.jit, static_argnums=(1,))
def apply(x, config):
    return x

class Config:
    pass

for step in range(4):
    softmax_t(x, temperature=1.0 / (step + 1))  # <-
apply(x, Config())  # <-
apply(x, jnp.array([1, 2]))  # <-
""",
        HEADER
        + """
import dataclasses

@functools.partial(jax.jit, static_argnames="temperature")
def softmax_t(logits, temperature):
    return jax.nn.softmax(logits / temperature)

@partial(jax.jit, static_argnums=(1,))
def apply(x, config):
    return x

@dataclasses.dataclass(frozen=True)
class Config:
    size: int = 3

for step in range(4):
    softmax_t(x, temperature=0.5)
    apply(step * x, Config())
    apply(batch, batch.shape[0])
for t in (0.5, 1.0, 2.0):  # a deliberate sweep over three values
    softmax_t(x, temperature=t)
""",
    ),
    "JL006": (
        HEADER
        + """
@nnx.jit
def step(model, x):
    return model(x)

for i in range(4):
    model.w.set_metadata(last_update=i)  # <-
    step(model, x)
""",
        HEADER
        + """
@nnx.jit
def step(model, x):
    return model(x)

for path, variable in nnx.iter_graph(model):  # one-time setup, a different Variable each time
    variable.set_metadata(sharding=rules[path])
for i in range(4):
    step(model, x)
""",
    ),
    "JL007": (
        HEADER
        + """
import optax

@nnx.jit
def train_step(model, optimizer, x):
    return model(x)

for epoch in range(3):  # google/flax#5548: a fresh model and optimizer each epoch
    model = Net(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)  # <-
    train_step(model, optimizer, x)
for epoch in range(3):
    tx = optax.sgd(0.1)  # <-
    train_step(model, nnx.Optimizer(model, tx), x)

@eqx.filter_jit
def eqx_step(model, opt_state, opt):
    return model

for trial in range(2):  # patrick-kidger/equinox#686: filter_jit keeps `opt` static
    opt = optax.adam(1e-2)  # <-
    eqx_step(model, opt.init(model), opt)

@jax.jit
def linen_step(state, x):
    return state

for epoch in range(3):  # a linen TrainState rebuilt per epoch: `tx` is a static field
    state = TrainState.create(apply_fn=apply, params=params, tx=optax.adam(1e-3))  # <-
    linen_step(state, x)
""",
        HEADER
        + """
import optax

@nnx.jit
def train_step(model, optimizer, x):
    return model(x)

tx = optax.adam(1e-3)
for epoch in range(3):
    model = Net(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    train_step(model, optimizer, x)
for lr in (0.1, 0.01):  # a deliberate sweep over two values
    train_step(model, nnx.Optimizer(model, optax.sgd(lr)), x)
optimizer = nnx.Optimizer(model, optax.adam(1e-3))  # once, outside any loop

@eqx.filter_jit
def eqx_step(model, opt_state, opt):
    return model

opt = optax.adam(1e-2)
for trial in range(2):
    eqx_step(model, opt.init(model), opt)

@jax.jit
def linen_step(state, x):
    return state

for epoch in range(3):
    state = TrainState.create(apply_fn=apply, params=params, tx=tx)
    linen_step(state, x)
""",
    ),
    "JL008": (
        HEADER
        + """
from jax import lax

def sample_forward(scale):  # markean/aimz#275
    def one(k):
        return jnp.sin(k) * scale
    return jax.lax.map(one, xs)  # <-

for i in range(3):
    sample_forward(1.0 + i)
    lax.fori_loop(0, 3, lambda j, c: c + i, 0.0)  # <-
""",
        HEADER
        + """
from jax import lax

@jax.jit
def sample_forward(scale):
    def one(k):
        return jnp.sin(k) * scale
    return jax.lax.map(one, xs)

def body(j, c):
    return c + 1.0

for i in range(3):
    sample_forward(1.0 + i)
    lax.fori_loop(0, 3, body, 0.0)
ys = lax.map(lambda k: k * 2, xs)  # once, at module level

@partial(eqx.filter_jit, donate="all")
def eqx_step(model, xs):
    def one(k):
        return model(k)
    return lax.map(one, xs)  # traced by filter_jit: compiled with it, once

for i in range(3):
    eqx_step(model, xs)
""",
    ),
}


RULE_EXAMPLES.update(EQX_RULE_EXAMPLES)  # the Equinox rules keep their snippets apart
CODES = tuple(sorted(RULE_EXAMPLES))


def test_every_rule_has_an_example() -> None:
    assert _rules() == list(CODES)


@pytest.mark.parametrize("code", CODES)
def test_rule_flags_the_marked_lines(code: str) -> None:
    bad, _ = RULE_EXAMPLES[code]
    findings = _lint(bad)
    assert [(f.line, f.code) for f in findings] == [(n, code) for n in _marked(bad)]
    assert all(f.fix for f in findings)


@pytest.mark.parametrize("code", CODES)
def test_rule_is_silent_on_the_fixed_code(code: str) -> None:
    _, good = RULE_EXAMPLES[code]
    assert _lint(good) == []


#: case file prefix -> the (line, code) findings it must produce, nothing more
CASES = {
    "01": [(13, "JL002"), (24, "JL002")],
    "06": [(15, "JL003")],
    "09": [],
    "11": [(33, "JL006")],
    "13": [(10, "JL004")],
    "14": [],
    "15": [],
    "17": [],
    "18": [],
    "19": [(31, "JL005")],
    "21": [(26, "JL001")],
    "24": [],
    "27": [],
    "30": [(27, "JL001")],
    "31": [],
    "32": [],
    "33": [],
}


def test_every_case_has_its_expected_findings() -> None:
    assert sorted(p.name[:2] for p in CASES_DIR.glob("[0-9][0-9]_*.py")) == sorted(CASES)


@pytest.mark.parametrize("prefix", sorted(CASES))
def test_shared_cases_flag_exactly_the_buggy_lines(prefix: str) -> None:
    (path,) = CASES_DIR.glob(f"{prefix}_*.py")
    assert [(f.line, f.code) for f in lint_paths([path])] == CASES[prefix]


def test_messages_name_the_users_code() -> None:
    (path,) = CASES_DIR.glob("01_*.py")
    first = lint_paths([path])[0]
    assert first.message == (
        "`Buggy.avg_pool` is assigned a new `functools.partial(nnx.avg_pool, ...)` in "
        "`__init__`; NNX keeps it as a static attribute compared by identity, so every new "
        "`Buggy` is a new cache key and jitted calls with it trace and compile again"
    )
    assert first.fix == (
        "call `nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))` in `__call__`, or store "
        "one module-level partial, or wrap with `nnx.data(jax.tree_util.Partial(...))`"
    )
    (path,) = CASES_DIR.glob("30_*.py")
    assert lint_paths([path])[0].fix == (
        "wrap once, outside the loop: `train_step_jit = nnx.jit(train_step)` (or decorate "
        "`def train_step` with `@nnx.jit`), and call `train_step_jit(...)` there"
    )


@pytest.mark.parametrize(
    "source",
    [
        "import jax as J\nfor i in r:\n    J.jit(lambda x: x)(i)\n",
        "from jax import jit\nfor i in r:\n    jit(lambda x: x)(i)\n",
        "import flax.nnx\nfor i in r:\n    flax.nnx.jit(f)(i)\n",
        "from flax.nnx import jit as njit\nfor i in r:\n    njit(f)(i)\n",
        "import functools, jax\nfor i in r:\n    functools.partial(jax.jit, donate_argnums=0)(lambda x: x)(i)\n",
        "from flax import nnx\ndef g(x):\n    return nnx.cached_partial(lambda m: m, x)()\nfor i in r:\n    g(i)\n",
    ],
)
def test_jit_is_recognised_through_aliases(source: str) -> None:
    assert [f.code for f in lint_source(source)] == ["JL001"]


QUIET = {
    "factory named like a step": """
        from flax import nnx
        def make_train_step(model):
            @nnx.jit
            def train_step(m, x):
                return m(x)
            return train_step
        for cfg in configs:
            make_train_step(cfg)
    """,
    "cached factory": """
        import functools, jax
        @functools.lru_cache
        def compiled(n):
            return jax.jit(lambda x: x * n)
        for i in range(3):
            compiled(2)(i)
    """,
    "linen module": """
        import functools
        import flax.linen as nn
        class M(nn.Module):
            def setup(self):
                self.pool = functools.partial(nn.avg_pool, window_shape=(2, 2))
                self.count = 0
            def __call__(self, x):
                self.count += 1
                return x
    """,
    "class attribute in a classmethod": """
        from flax import nnx
        class M(nnx.Module):
            @classmethod
            def configure(cls):
                cls.act = lambda x: x
    """,
    "same name on a plain class in a loop": """
        from flax import nnx
        class M(nnx.Module):
            def __init__(self):
                self.step = 0
        class Trainer:
            def __init__(self):
                self.step = 0
            def fit(self, data):
                for batch in data:
                    self.step += 1
    """,
    "boolean and remainder statics": """
        import functools, jax
        @functools.partial(jax.jit, static_argnames=("training", "phase"))
        def f(x, training, phase):
            return x
        for i in range(100):
            f(i, training=i % 10 == 0, phase=i % 3)
    """,
    "jit on a function parameter": """
        import jax
        def bench(fn, x):
            return jax.jit(fn)(x)
        for i in range(3):
            bench(g, i)
    """,
}


@pytest.mark.parametrize("name", sorted(QUIET))
def test_no_finding_on_common_correct_code(name: str) -> None:
    assert _lint(QUIET[name]) == []


def test_a_self_incrementing_name_changes_every_iteration() -> None:
    source = """
        import functools, jax
        @functools.partial(jax.jit, static_argnums=1)
        def f(x, n):
            return x
        n = 0
        while n < 10:
            n = n + 1
            f(1.0, n)
    """
    (finding,) = _lint(source)
    assert finding.code == "JL005"
    assert "the `while` loop at line 7" in finding.message


def test_a_local_name_shadowing_jit_is_not_jax() -> None:
    source = "def jit(f):\n    return f\nfor i in r:\n    jit(lambda x: x)(i)\n"
    assert lint_source(source) == []


def test_step_functions_count_as_repeated() -> None:
    source = "import jax\ndef train_step(x):\n    return jax.jit(lambda v: v)(x)\n"
    (finding,) = lint_source(source)
    assert "on every call of `train_step` (a step function, by its name)" in finding.message


def test_noqa_suppresses_the_named_code_or_everything() -> None:
    source = "import jax\nfor i in r:\n    jax.jit(lambda x: x)(i){}\n"
    assert lint_source(source.format("  # noqa: JL001")) == []
    assert lint_source(source.format("  # noqa")) == []
    assert lint_source(source.format("  # NOQA:JL005,JL001")) == []
    assert len(lint_source(source.format("  # noqa: E501"))) == 1


def test_a_clean_result_says_how_many_findings_noqa_silenced(tmp_path: Path) -> None:
    """Issue 47: "No recompile traps found" over a file whose trap a `# noqa` silenced."""
    from conftest import run_python

    source = "import jax\nfor i in r:\n    jax.jit(lambda x: x)(i){}\n"
    (tmp_path / "quiet.py").write_text(source.format("  # noqa: JL001"))
    (tmp_path / "loud.py").write_text(source.format(""))
    proc = run_python(["-m", "jitlens", "lint", "quiet.py"], cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        "No recompile traps found in 1 file.",
        "1 finding silenced by `# noqa` (JL001: quiet.py:3).",
    ]
    proc = run_python(
        ["-m", "jitlens", "lint", "--ignore", "JL001", "quiet.py", "loud.py"], cwd=tmp_path
    )
    assert proc.stdout.splitlines() == ["No recompile traps found in 2 files."]  # none selected


def test_columns_are_one_based_characters() -> None:
    source = 'import jax\nfor i in r:\n    s = "é"; jax.jit(lambda x: x)(i)\n'
    (finding,) = lint_source(source)
    assert (finding.line, finding.col) == (3, 14)


def test_lint_source_raises_on_bad_syntax() -> None:
    with pytest.raises(SyntaxError):
        lint_source("def (:\n")


def test_lint_paths_walks_directories_and_skips_hidden_and_venvs(tmp_path: Path) -> None:
    bad = "import jax\nfor i in r:\n    jax.jit(lambda x: x)(i)\n"
    for rel in (
        "pkg/a.py",
        ".hidden/b.py",
        "__pycache__/c.py",
        "venv/d.py",
        "env2/e.py",
        "pkg/f.txt",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(bad)
    (tmp_path / "env2" / "pyvenv.cfg").write_text("home = /usr\n")
    assert [Path(f.path).relative_to(tmp_path).as_posix() for f in lint_paths([tmp_path])] == [
        "pkg/a.py"
    ]
    assert lint_paths(str(tmp_path)) == lint_paths([tmp_path])  # one path needs no list


def test_lint_paths_warns_and_goes_on_after_a_syntax_error(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def (:\n")
    (tmp_path / "ok.py").write_text("x = 1\n")
    with pytest.warns(LintSkipWarning, match=r"broken\.py:1:5: error: cannot parse"):
        assert lint_paths([tmp_path]) == []


def test_lint_paths_rejects_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="path not found"):
        lint_paths([tmp_path / "nope.py"])


def test_jitlens_own_source_is_clean() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        findings = lint_paths([ROOT / "src" / "jitlens"])
    # jitlens demo shows the seed discussion's partial-on-a-Module trap on purpose
    deliberate = [f for f in findings if Path(f.path).name == "_demo.py" and f.code == "JL002"]
    assert len(deliberate) <= 1
    assert [f for f in findings if f not in deliberate] == []


# -- command line -------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "bad.py").write_text("import jax\nfor i in r:\n    jax.jit(lambda x: x)(i)\n")
    (tmp_path / "good.py").write_text("import jax\nf = jax.jit(lambda x: x)\n")
    return tmp_path


def test_cli_text_output_and_exit_status(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _lint_cli([str(project)]) == 1
    out = capsys.readouterr().out.replace(str(project), "P").splitlines()
    assert out == [
        "P/bad.py:3:5: JL001 `jax.jit(lambda ...)` runs on every iteration of the loop at line 2 "
        "and wraps a lambda, a new function object each time; jit caches compiled code per "
        "function object, so every run traces and compiles again",
        "    fix: define the function once at module level and apply `jax.jit` to it once, "
        "outside the loop; pass changing values as arguments instead of closing over them",
        "Found 1 recompile trap in 1 file.",
    ]
    assert _lint_cli([str(project / "good.py")]) == 0
    assert capsys.readouterr().out == "No recompile traps found in 1 file.\n"


def test_cli_json_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _lint_cli(["--format", "json", str(project)]) == 1
    (item,) = json.loads(capsys.readouterr().out)
    assert sorted(item) == ["code", "col", "fix", "line", "message", "path"]
    assert (item["code"], item["line"], item["col"]) == ("JL001", 3, 5)
    assert _lint_cli(["--format", "json", str(project / "good.py")]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_cli_select_and_ignore(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _lint_cli(["--select", "JL002,JL003", str(project)]) == 0
    assert _lint_cli(["--ignore", "jl001", str(project)]) == 0
    assert _lint_cli(["--select", "JL001", str(project)]) == 1
    capsys.readouterr()
    assert _lint_cli(["--select", "JL999", str(project)]) == 2
    assert "unknown rule code 'JL999'; valid codes: JL001" in capsys.readouterr().err


def test_cli_missing_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _lint_cli([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: jitlens lint")
    assert f"jitlens lint: error: path not found: {tmp_path / 'nope'}" in err
    assert _lint_cli([]) == 2


def test_cli_syntax_error_is_an_error_and_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ruff does: a file that cannot be parsed is reported and the exit status is non-zero."""
    (tmp_path / "broken.py").write_text("x = (\n")
    assert _lint_cli([str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"{tmp_path / 'broken.py'}:1:")
    assert "error: cannot parse" in captured.err
    assert captured.out == (
        "No recompile traps found in 0 files.\n1 file could not be linted (see the errors above).\n"
    )


def test_cli_a_non_python_file_is_noted_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`jitlens lint README.md` says it is not Python (not "cannot parse: invalid character")."""
    readme = tmp_path / "README.md"
    readme.write_text("# Title \u2014 with a dash\n\nfor i in range(3): jax.jit(f)\n")
    script = tmp_path / "train"
    script.write_text(
        "#!/usr/bin/env python3\nimport jax\nfor i in range(3):\n    jax.jit(lambda x: x)(i)\n"
    )
    assert _lint_cli([str(readme)]) == 0
    captured = capsys.readouterr()
    assert (
        captured.err
        == f"{readme}: not a Python file (no .py suffix, no python #! line); not linted\n"
    )
    assert "cannot parse" not in captured.out + captured.err
    assert _lint_cli([str(readme), str(script)]) == 1  # the script is linted: python #! line
    captured = capsys.readouterr()
    assert f"{script}:4:5: JL001" in captured.out and "not a Python file" in captured.err
    assert _lint_cli(["--format", "github", str(readme)]) == 0
    assert capsys.readouterr().out.startswith("::notice title=jitlens lint::")


def test_cli_github_format_annotates_findings_and_unparsable_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "loop.py").write_text(
        "import jax\nfor i in range(3):\n    jax.jit(lambda x: x + i)(1.0)\n"
    )
    (tmp_path / "broken.py").write_text("x = (\n")
    assert _lint_cli(["--format", "github", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    loop = str(tmp_path / "loop.py").replace(":", "%3A").replace(",", "%2C")
    broken = str(tmp_path / "broken.py").replace(":", "%3A").replace(",", "%2C")
    assert lines[0].startswith(f"::error file={loop},line=3,col=5,title=jitlens JL001::JL001 ")
    message, fix = lines[0].split("%0A")  # the fix on its own line of the annotation
    assert fix.startswith("fix: ") and not message.endswith(" fix:")
    assert lines[1].startswith(
        f"::error file={broken},line=1,col=5,title=jitlens lint::cannot parse"
    )
    assert len(lines) == 2 and all("\n" not in line for line in lines)


def test_cli_help_lists_the_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert _lint_cli(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: jitlens lint")
    assert all(code in out for code in CODES)


def test_linting_from_threads_survives_cpythons_ast_race() -> None:
    """Four threads lint at once while garbage with finalizers is collected mid-parse.

    CPython 3.11/3.12 keep the AST converter's recursion depth per interpreter: a
    thread switch inside ``ast.parse`` (here forced by ``__del__`` running during a
    collection) made another thread's parse fail with ``SystemError: AST
    constructor recursion depth mismatch`` (python/cpython#106905; it broke our CI
    once, through the grader's thread pool). jitlens' parses take turns.
    """
    import threading
    import time

    source = (Path(__file__).parent.parent / "src" / "jitlens" / "_render" / "html.py").read_text()
    expected = lint_source(source)
    errors: list[BaseException] = []
    mismatched: list[int] = []

    class Garbage:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            time.sleep(0)  # lets another thread run while this one is inside a parse

    def work() -> None:
        for _ in range(15):
            for _ in range(300):
                Garbage()
            try:
                found = lint_source(source)
            except BaseException as exc:
                errors.append(exc)
                return
            if found != expected:
                mismatched.append(len(found))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert mismatched == []


_CONFIG_SWEEP = """\
import dataclasses
from functools import partial

import jax
import jax.numpy as jnp

TRACES = [0]


@dataclasses.dataclass(frozen=True)
class Config:
    lr: float = 0.1
    hidden: int = 4


@partial(jax.jit, static_argnames="cfg")
def step(w, cfg):
    TRACES[0] += 1
    return w - cfg.lr * w * cfg.hidden


w = jnp.ones(3)
for i in range(3):
    w = step(w, Config(lr=0.1 / (i + 1)))
"""


def test_a_changing_dataclass_static_gets_a_fix_that_makes_its_field_data() -> None:
    """JL005 on a static dataclass config built with a changing field: "make it a traced
    argument" alone fails (TypeError: Config is not a valid JAX type); the printed
    register_dataclass line, applied with the static dropped, traces once, same numbers."""
    (finding,) = [f for f in lint_source(_CONFIG_SWEEP, "sweep.py") if f.code == "JL005"]
    code = re.search(r"`(jax\.tree_util\.register_dataclass\(.*?\))`", finding.fix)
    assert code and "remove `cfg` from `static_argnames`" in finding.fix, finding.fix
    assert code.group(1) == (
        "jax.tree_util.register_dataclass(Config, data_fields=['lr'], meta_fields=['hidden'])"
    )
    before: dict = {}
    exec(compile(_CONFIG_SWEEP, "sweep.py", "exec"), before)
    fixed = _CONFIG_SWEEP.replace(
        "    hidden: int = 4\n", f"    hidden: int = 4\n\n\n{code.group(1)}\n"
    ).replace('@partial(jax.jit, static_argnames="cfg")', "@jax.jit")
    after: dict = {}
    exec(compile(fixed, "sweep_fixed.py", "exec"), after)
    assert (before["TRACES"][0], after["TRACES"][0]) == (3, 1)
    assert before["w"].tolist() == pytest.approx(after["w"].tolist())
    assert [f.code for f in lint_source(fixed, "sweep_fixed.py")] == []


def test_a_changing_static_of_a_pytree_class_keeps_the_traced_fix() -> None:
    """A NamedTuple is a pytree already: dropping it from the statics is the whole fix."""
    source = _CONFIG_SWEEP.replace("@dataclasses.dataclass(frozen=True)\nclass Config:", (
        "class Config(typing.NamedTuple):"
    )).replace("import dataclasses", "import typing")  # fmt: skip
    (finding,) = [f for f in lint_source(source, "sweep.py") if f.code == "JL005"]
    assert finding.fix.startswith("make `cfg` a traced argument"), finding.fix


def test_a_jit_of_a_method_built_per_call_gets_a_fix_with_self_that_works() -> None:
    # `jax.jit(jax.grad(self.loss))` in a method was told to define the function once at
    # module level, where there is no `self`; the fix, applied as printed, traces once
    import jax.numpy as jnp

    source = HEADER + textwrap.dedent(
        """
        TRACES = [0]

        class Trainer:
            def __init__(self, lr, fixed=False):
                self.lr = lr
                if fixed:
                    FIX

            def loss(self, w, x):
                TRACES[0] += 1
                return jnp.sum((x @ w) ** 2) * self.lr

            def step(self, w, x):
                g = jax.jit(jax.grad(self.loss))(w, x)
                return w - g
        """
    )
    (hit,) = jitlens.lint_source(source.replace("FIX", "pass"), "trainer.py")
    assert hit.code == "JL001" and "module level" not in hit.fix, hit.fix
    code = re.search(r"`(self\.\w+ = [^`]+)`", hit.fix)[1]
    assert code == "self.loss_jit = jax.jit(jax.grad(self.loss))", hit.fix
    call = re.search(r"call `(self\.\w+)\(\.\.\.\)` in `step`", hit.fix)[1]
    fixed = source.replace("FIX", code).replace(
        "jax.jit(jax.grad(self.loss))(w, x)", f"{call}(w, x)"
    )
    results = []
    for program in (source.replace("FIX", "pass"), fixed):
        scope: dict = {}
        exec(compile(program, "trainer.py", "exec"), scope)
        trainer, w = scope["Trainer"](0.1, fixed=True), jnp.ones((3, 2))
        for _ in range(3):
            w = trainer.step(w, jnp.ones((4, 3)))
        results.append((scope["TRACES"][0], w))
    (bad_traces, bad_w), (fixed_traces, fixed_w) = results
    assert (bad_traces, fixed_traces) == (3, 1)
    assert jnp.allclose(bad_w, fixed_w)
