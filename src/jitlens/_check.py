"""``jitlens check``: grade a ``jit_forward`` solution on its numbers and on its method.

The exercise page says its numerical tests "cannot prove that you used JIT,
repeated the calls, or obtained cache hits"; this grader can, because it runs
the solution under :func:`jitlens.track`. Each solution runs in a child
process with limits (see ``_sandbox``); the verdict is built here, in the
parent, from facts the child reports: outputs, exceptions and the tracker's
counts (judged in ``_check_criteria``; rendered by ``_render_check``).

See also: chex's ``assert_max_traces`` and equinox's ``filter_jit``
tests count traces of one function you can decorate; ``check`` grades a whole
submitted file you did not write.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _sandbox
from ._check_criteria import CRITERIA, CheckFinding, CriterionResult, judge
from ._errors import JitlensError

DEFAULT_MEMORY = 4 * _sandbox.GIB
BAD_INPUT_TIMEOUT = 10.0
#: References already computed in this process, by ``CheckCase.reference_key``.
_REFERENCES: dict[tuple[int, ...], dict[str, Any]] = {}

VERDICT_PASS = "PASS: {name} meets all {n} criteria on {cases} cases; bad input: {bad}."
VERDICT_FAIL = "FAIL: {name} fails {failed}; passes {passed}; bad input: {bad}."
VERDICT_ERROR = "ERROR: cannot load {name}: {error}"
MISSING_FILE = "no such file; pass the path of a Python file that defines jit_forward"
NOT_A_FILE = "it is a directory; pass the path of a Python file that defines jit_forward"
SYNTAX = "it does not compile: {msg} (line {line}); fix the syntax and check again"
UNREADABLE = "cannot read it: {error}"
NOT_ISOLATABLE = (
    "cannot run {fn!r} in a child process: a {what} cannot be imported there; "
    "define jit_forward at the top level of a module, or pass the path of its file"
)
NOT_A_RESULT = "not the JSON of a jitlens check result ({error}); write one with --json PATH"
BAD_TIMEOUT = "timeout must be a positive number of seconds; got {value!r}"
BAD_SEED = "seed must be an int in [0, 2**31); got {value!r}"
CANNOT_WRITE = "jitlens check: error: cannot write {path}: {error}"


class CheckError(JitlensError, ValueError):
    """``check_jit_forward`` was called with something it cannot grade."""


@dataclasses.dataclass(frozen=True)
class CheckCase:
    """One graded call: ``jit_forward(float(seed), x, float(features), float(num_calls))``.

    ``x`` is standard normal float32 of shape ``(n, d_in)`` drawn with ``x_seed``.
    """

    n: int
    d_in: int
    features: int
    seed: int
    num_calls: int
    x_seed: int
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.n}x{self.d_in}->{self.features}"

    @property
    def reference_key(self) -> tuple[int, ...]:
        """What the expected output depends on (not ``num_calls``)."""
        return (self.n, self.d_in, self.features, self.seed, self.x_seed)


@dataclasses.dataclass(frozen=True)
class BadInput:
    """One bad input: the valid base call with ``argument`` replaced by ``value``."""

    argument: str
    value: str

    @property
    def label(self) -> str:
        return f"{self.argument}={self.value}" if self.argument != "x" else f"x {self.value}"


#: ``(n, d_in, features, num_calls, note)`` of the default cases; seeds vary with ``--seed``.
CASE_SHAPES: tuple[tuple[int, int, int, int, str], ...] = (
    (1, 3, 4, 5, "N = 1"),
    (4, 1, 3, 2, "D_in = 1"),
    (3, 5, 1, 5, "features = 1"),
    (4, 256, 1024, 2, "wide layer"),
    (8, 16, 8, 1, ""),
    (5, 7, 6, 5, ""),
)

BAD_INPUTS: tuple[BadInput, ...] = tuple(
    BadInput(arg, value)
    for arg in ("seed", "features", "num_calls")
    for value in ("1.5", "-1.0", "nan", "inf", "True", "'2'")
) + tuple(BadInput("x", value) for value in ("1-D", "3-D", "empty", "NaN"))


def default_cases(seed: int = 0) -> tuple[CheckCase, ...]:
    """The graded cases for ``--seed seed``: fixed shapes, seeds drawn from ``seed``."""
    import random

    rng = random.Random(seed)
    cases = []
    for i, (n, d_in, features, num_calls, note) in enumerate(CASE_SHAPES):
        model_seed = seed if i == 0 else rng.randrange(1, 1 << 16)
        cases.append(
            CheckCase(n, d_in, features, model_seed, num_calls, rng.randrange(1 << 31), note)
        )
    return tuple(cases)


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The grade of one solution: per-criterion results with evidence, and the verdict."""

    solution: str
    seed: int
    cases: tuple[CheckCase, ...]
    bad_inputs: tuple[BadInput, ...]
    criteria: tuple[CriterionResult, ...]
    load_error: str | None = None
    seconds: float = 0.0
    processes: int = 0

    @property
    def passed(self) -> bool:
        """True when the file loaded and every required criterion passed on every case."""
        return self.load_error is None and all(c.passed for c in self.criteria if c.required)

    @property
    def exit_code(self) -> int:
        return 2 if self.load_error is not None else 0 if self.passed else 1

    def criterion(self, key: str) -> CriterionResult:
        for c in self.criteria:
            if c.key == key:
                return c
        raise KeyError(f"no criterion {key!r}; known: {[k for k, *_ in CRITERIA]}")

    @property
    def verdict(self) -> str:
        name = os.path.basename(self.solution) or self.solution
        if self.load_error is not None:
            return VERDICT_ERROR.format(name=name, error=self.load_error.splitlines()[0])
        required = [c for c in self.criteria if c.required]
        bad = next((c for c in self.criteria if not c.required), None)
        bad_text = "not run" if bad is None else bad.summary
        if bad is not None and bad.status == "warn":
            bad_text += " (a warning)"
        if self.passed:
            return VERDICT_PASS.format(
                name=name, n=len(required), cases=len(self.cases), bad=bad_text
            )
        failed = [f"{c.title} ({c.summary})" for c in required if not c.passed]
        passed = [c.title for c in required if c.passed] or ["nothing"]
        return VERDICT_FAIL.format(
            name=name, failed=", ".join(failed), passed=", ".join(passed), bad=bad_text
        )

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.update(passed=self.passed, exit_code=self.exit_code, verdict=self.verdict)
        return data

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        """Rebuild a result from :meth:`to_dict` (e.g. a ``--json`` file), to render it again."""
        try:
            criteria = tuple(
                CriterionResult(
                    **{**c, "findings": tuple(CheckFinding(**f) for f in c["findings"])}
                )
                for c in data["criteria"]
            )
            return cls(
                solution=data["solution"],
                seed=data["seed"],
                cases=tuple(CheckCase(**c) for c in data["cases"]),
                bad_inputs=tuple(BadInput(**p) for p in data["bad_inputs"]),
                criteria=criteria,
                load_error=data.get("load_error"),
                seconds=data.get("seconds", 0.0),
                processes=data.get("processes", 0),
            )
        except (KeyError, TypeError) as exc:
            raise CheckError(NOT_A_RESULT.format(error=f"{type(exc).__name__}: {exc}")) from None

    def __str__(self) -> str:
        from ._render_check import render_check

        return render_check(self, color=False)


def _locate(fn_or_path: str | os.PathLike[str] | Callable[..., Any]) -> tuple[dict[str, str], str]:
    """Where the child finds the solution, and its display name; CheckError if it cannot."""
    if isinstance(fn_or_path, (str, os.PathLike)):
        path = os.fspath(fn_or_path)
        return {"path": os.path.abspath(path)}, path
    if not callable(fn_or_path):
        raise CheckError(f"expected a path or a callable jit_forward, got {fn_or_path!r}")
    module, qualname = getattr(fn_or_path, "__module__", None), fn_or_path.__qualname__
    if "<" in qualname:
        what = "lambda" if "<lambda>" in qualname else "function defined inside another function"
        raise CheckError(NOT_ISOLATABLE.format(fn=fn_or_path, what=what))
    if module and module != "__main__":
        return {"module": module, "qualname": qualname}, f"{module}.{qualname}"
    path = inspect.getsourcefile(fn_or_path)
    if path is None:
        raise CheckError(NOT_ISOLATABLE.format(fn=fn_or_path, what="function without a file"))
    return {"path": path, "qualname": qualname}, os.path.relpath(path)


def _precheck(path: str) -> str | None:
    """Why the file cannot be loaded, found without running it (or None)."""
    if not os.path.exists(path):
        return MISSING_FILE
    if os.path.isdir(path):
        return NOT_A_FILE
    try:
        with open(path, "rb") as fh:
            compile(fh.read(), path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return SYNTAX.format(msg=exc.msg, line=exc.lineno)
    except (OSError, ValueError) as exc:
        return UNREADABLE.format(error=exc)
    return None


def check_jit_forward(
    fn_or_path: str | os.PathLike[str] | Callable[..., Any],
    *,
    seed: int = 0,
    timeout: float = 60.0,
    cpu_seconds: float | None = None,
    memory_bytes: int | None = DEFAULT_MEMORY,
    cases: Sequence[CheckCase] | None = None,
    bad_inputs: Sequence[BadInput] | None = None,
) -> CheckResult:
    """Grade a ``jit_forward(seed, x, features, num_calls)`` on numbers and method.

    The solution runs in one child process (a fresh one after a case hangs or
    kills it) under ``jitlens.track()``. Four criteria are required on every
    case: **numbers** (shape ``(N * features,)``, float32, equal to jitlens'
    own ``jit_forward`` within rtol 1e-5 / atol 1e-6), **JIT used** (an
    ``nnx.jit`` function was called), **calls repeated** (it was called
    ``num_calls`` times) and **cache hits** (traced at most once, so the other
    calls hit the cache). **Bad input** (rejecting ``nan``, ``1.5``, a 1-D
    ``x``...) is advisory: a warning, never a failure.

    Args:
      fn_or_path: a path to a ``.py`` file defining ``jit_forward``, or the
        function itself if it is defined at the top level of a module.
      seed: varies the model seeds and inputs of the cases.
      timeout: wall seconds per case (and for importing the solution);
        bad-input probes get ``min(timeout, 10)``.
      cpu_seconds: CPU seconds per case; default ``2 * timeout``.
      memory_bytes: address-space limit of the child (``None``: unlimited).
      cases, bad_inputs: replace the default cases / bad inputs
        (``bad_inputs=()`` skips the bad-input criterion).

    Returns:
      A :class:`CheckResult`; ``result.passed``, ``result.exit_code`` and
      ``str(result)`` give the verdict. A file that cannot be loaded is a
      result with ``load_error`` set, not an exception.

    Raises:
      CheckError: ``fn_or_path`` is a lambda or a nested function (the child
        cannot import it), ``timeout`` is not positive or ``seed`` is negative.

    Example:
      >>> import jitlens
      >>> result = jitlens.check_jit_forward("examples/exercise/solution.py")  # doctest: +SKIP
      >>> result.passed, result.criterion("cache_hits").summary  # doctest: +SKIP
      (True, '6/6 cases pass')
    """
    if not isinstance(timeout, (int, float)) or not timeout > 0:
        raise CheckError(BAD_TIMEOUT.format(value=timeout))
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 31:
        raise CheckError(BAD_SEED.format(value=seed))
    start = time.monotonic()
    solution, name = _locate(fn_or_path)
    cases = tuple(default_cases(seed) if cases is None else cases)
    probes = tuple(BAD_INPUTS if bad_inputs is None else bad_inputs)
    empty = CheckResult(name, seed, cases, probes, ())
    if "path" in solution and "qualname" not in solution:
        error = _precheck(solution["path"])
        if error is not None:
            return dataclasses.replace(empty, load_error=error)
    probe_timeout = min(timeout, BAD_INPUT_TIMEOUT)
    items = [
        {"kind": "case", "index": i, "timeout": timeout, **dataclasses.asdict(c)}
        for i, c in enumerate(cases)
    ]
    items += [
        {"kind": "probe", "index": len(cases) + i, "timeout": probe_timeout}
        | {"argument": p.argument, "value": p.value}
        for i, p in enumerate(probes)
    ]
    limits = _sandbox.Limits(timeout, timeout, cpu_seconds, memory_bytes)
    known = {
        i: _REFERENCES[c.reference_key]
        for i, c in enumerate(cases)
        if c.reference_key in _REFERENCES
    }
    run = _sandbox.run(solution, items, limits, known)
    for i, c in enumerate(cases):
        if "reference" in run.references.get(i, {}):
            _REFERENCES.setdefault(c.reference_key, run.references[i])
    seconds = time.monotonic() - start
    if run.load_error is not None:
        return dataclasses.replace(
            empty, load_error=run.load_error, seconds=seconds, processes=run.processes
        )
    criteria = judge(cases, probes, run)
    return CheckResult(name, seed, cases, probes, criteria, None, seconds, run.processes)


def cli_main(argv: list[str]) -> int:
    """``jitlens check SOLUTION.py [--json PATH] [--seed N] [--timeout S]``; the exit code."""
    import argparse
    import shutil
    import sys

    from ._render_check import render_check
    from ._report import write_atomic

    parser = argparse.ArgumentParser(
        prog="jitlens check",
        description="Grade a jit_forward(seed, x, features, num_calls) solution of the "
        "'Flax NNX step 61: nnx.jit' exercise on its numbers and on its method (nnx.jit used, "
        "num_calls calls, cache hits). Exit 0: all required criteria pass; 1: one fails; "
        "2: the file cannot be loaded (or a usage error).",
    )
    parser.add_argument("solution", metavar="SOLUTION.py", help="file defining jit_forward")
    parser.add_argument("--json", metavar="PATH", help="also write the result as JSON to PATH")
    parser.add_argument("--seed", type=int, default=0, help="varies model seeds and inputs")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="wall seconds per case (default 60)"
    )
    parser.add_argument(
        "--memory",
        type=float,
        default=4.0,
        metavar="GIB",
        help="address-space limit of the child in GiB (default 4; 0: none)",
    )
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        result = check_jit_forward(
            args.solution,
            seed=args.seed,
            timeout=args.timeout,
            memory_bytes=int(args.memory * _sandbox.GIB) if args.memory > 0 else None,
        )
    except CheckError as exc:
        print(f"jitlens check: error: {exc}", file=sys.stderr)
        return 2
    tty = sys.stdout.isatty()
    color = args.color == "always" or (args.color == "auto" and tty)
    width = shutil.get_terminal_size((100, 24)).columns if tty else 100
    sys.stdout.write(render_check(result, color=color, width=width))
    sys.stdout.flush()
    if args.json:
        try:
            write_atomic(args.json, result.to_json() + "\n")
        except OSError as exc:
            print(CANNOT_WRITE.format(path=args.json, error=exc), file=sys.stderr)
            return 2
    return result.exit_code
