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

import ast
import dataclasses
import difflib
import inspect
import os
import shlex
import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import _pyast as pyast
from .._render.color import add_color_option, want_color
from . import sandbox as _sandbox
from .cases import BAD_INPUTS as BAD_INPUTS
from .cases import BadInput as BadInput
from .cases import CheckCase as CheckCase
from .cases import ItemKind
from .cases import default_cases as default_cases
from .criteria import CRITERIA as CRITERIA
from .criteria import judge
from .result import CheckError as CheckError
from .result import CheckResult as CheckResult

DEFAULT_MEMORY = 4 * _sandbox.GIB
BAD_INPUT_TIMEOUT = 10.0
#: References already computed in this process, by ``CheckCase.reference_key``.
_REFERENCES: dict[tuple[int, ...], dict[str, Any]] = {}

MISSING_FILE = "no such file; pass the path of a Python file that defines jit_forward"
NOT_A_FILE = "it is a directory; pass the path of a Python file that defines jit_forward"
SYNTAX = "it does not compile: {msg} (line {line}); fix the syntax and check again"
UNREADABLE = "cannot read it: {error}"
NOT_ISOLATABLE = (
    "cannot run {fn!r} in a child process: a {what} cannot be imported there; "
    "define jit_forward at the top level of a module, or pass the path of its file"
)
BAD_TIMEOUT = "timeout must be a positive number of seconds; got {value!r}"
BAD_SEED = "seed must be an int in [0, 2**31); got {value!r}"
CANNOT_WRITE = "jitlens check: error: cannot write {path}: {error}"
NO_ENTRY = (
    "it has no callable jit_forward (found nothing{near}); "
    "define `def jit_forward(seed, x, features, num_calls):` at the top level of the file. "
    "`jitlens check` grades solutions of the nnx.jit exercise; to see why your own program "
    "compiles again, run it: `jitlens run {path}`"
)
NEAR = "; did you mean `{name}`?"
WRONG_SIGNATURE = (
    "`def jit_forward({params})` (line {line}) cannot be called as "
    "jit_forward(seed, x, features, num_calls); give it exactly those four parameters"
)


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


def _precheck(path: str, shown: str) -> str | None:
    """Why the file cannot be loaded, found without running it (or None); ``shown`` is the
    path as the user wrote it."""
    if not os.path.exists(path):
        return MISSING_FILE
    if os.path.isdir(path):
        return NOT_A_FILE
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        compile(source, path, "exec", dont_inherit=True)
        tree = pyast.parse(source, path)
    except SyntaxError as exc:
        return SYNTAX.format(msg=exc.msg, line=exc.lineno)
    except (OSError, ValueError) as exc:
        return UNREADABLE.format(error=exc)
    return _entry_point_problem(tree, shown)


def _entry_point_problem(tree: ast.Module, shown: str) -> str | None:
    """What is wrong with the file's ``jit_forward``, seen in its source (None: nothing seen).

    Only the plain cases are decided here, before a child spends seconds
    importing JAX: no top-level statement binds the name at all, or it is a
    ``def`` whose parameters cannot take the four positional arguments.
    Anything dynamic (``import *``, ``globals()``, a module ``__getattr__``)
    is left to the child.
    """
    bound: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        for name, target in _bindings(node):
            bound[name] = target
    if "__getattr__" in bound or any(
        isinstance(n, ast.Name) and n.id in ("globals", "setattr", "exec") for n in ast.walk(tree)
    ):
        return None
    entry = bound.get("jit_forward")
    if entry is None:
        near = difflib.get_close_matches("jit_forward", list(bound), n=1)
        return NO_ENTRY.format(
            near=NEAR.format(name=near[0]) if near else "", path=shlex.quote(shown)
        )
    if isinstance(entry, ast.FunctionDef | ast.AsyncFunctionDef) and not _takes_four(entry.args):
        params = ast.unparse(entry.args)
        return WRONG_SIGNATURE.format(params=params, line=entry.lineno)
    return None


def _bindings(node: ast.stmt) -> list[tuple[str, ast.AST]]:
    """Names a top-level statement binds (descending into if/try/with blocks), with the binder."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [(node.name, node)]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [((a.asname or a.name).split(".")[0], node) for a in node.names]
    out: list[tuple[str, ast.AST]] = []
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        out += [(n.id, node) for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.With | ast.AsyncWith):
        out += [
            (n.id, node)
            for item in node.items
            if item.optional_vars is not None
            for n in ast.walk(item.optional_vars)
            if isinstance(n, ast.Name)
        ]
    for block in ("body", "orelse", "finalbody"):
        for child in getattr(node, block, ()) or ():
            if isinstance(child, ast.stmt) and not isinstance(node, ast.ClassDef):
                out += _bindings(child)
    for handler in getattr(node, "handlers", ()) or ():
        for child in handler.body:
            out += _bindings(child)
    walrus = (n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
    out += [(t.id, node) for t in walrus if isinstance(t, ast.Name)]
    return out


def _takes_four(args: ast.arguments) -> bool:
    """Whether ``f(a, b, c, d)`` fits these parameters (four positional arguments, nothing else)."""
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    required_keywords = [
        k for k, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None
    ]
    return (
        (len(positional) >= 4 or args.vararg is not None)
        and required <= 4
        and not required_keywords
    )


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
        error = _precheck(solution["path"], name)
        if error is not None:
            return dataclasses.replace(empty, load_error=error)
    probe_timeout = min(timeout, BAD_INPUT_TIMEOUT)
    items = [
        {"kind": ItemKind.CASE, "index": i, "timeout": timeout, **dataclasses.asdict(c)}
        for i, c in enumerate(cases)
    ]
    items += [
        {"kind": ItemKind.PROBE, "index": len(cases) + i, "timeout": probe_timeout}
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
    import sys

    from .._core.files import write_atomic
    from .._render.text import terminal_width
    from .render import render_check

    parser = argparse.ArgumentParser(
        prog="jitlens check",
        description="Grade a jit_forward(seed, x, features, num_calls) solution of the "
        "'Flax NNX step 61: nnx.jit' exercise on its numbers and on its method (nnx.jit used, "
        "num_calls calls, cache hits). Exit 0: all required criteria pass; 1: one fails; "
        "2: the file cannot be loaded (or a usage error). Your own program: `jitlens run "
        "PROGRAM.py` says why it compiles again.",
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
    add_color_option(parser)
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="every criterion's table, also on a pass"
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from .._render.outputs import output_problem

    problem = output_problem(args.json, [(args.solution, f"the solution {args.solution}")])
    if problem is not None:
        print(f"jitlens check: error: {problem}", file=sys.stderr)
        return 2
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
    color = want_color(args.color)
    width = terminal_width()  # the terminal's, COLUMNS when piped, else 100: as every command
    sys.stdout.write(render_check(result, color=color, width=width, verbose=args.verbose))
    sys.stdout.flush()
    if args.json:
        try:
            write_atomic(args.json, result.to_json() + "\n")
        except OSError as exc:
            print(CANNOT_WRITE.format(path=args.json, error=exc), file=sys.stderr)
            return 2
    return result.exit_code
