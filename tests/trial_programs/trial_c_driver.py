"""Runs the ``c_*`` trial programs under ``jitlens.track()``, all as written (``before``) or
all with jitlens' fix applied (``after``): one scenario per process, so that the fixed
program is measured as a user runs it, with no wrapper of the broken one in the process.
Prints one ``TRUTH`` JSON line: per program, its own counts and outputs beside jitlens' rows
and reasons. A program with ``NO_FIX = True`` (a negative control, or a compile the program
needs) runs in ``before`` only (not even imported in ``after``).
"""

import ast
import importlib.util
import json
import pathlib
import sys

import fast_xla  # noqa: F401 (sets XLA_FLAGS before JAX starts its backend)

import jitlens

HERE = pathlib.Path(__file__).parent


def _rows(report, name: str) -> list:
    """jitlens' rows of the user's function ``name`` (one per wrapper when jitted anew)."""

    def short(n: str) -> str:
        while "(" in n and n.endswith(")"):
            n = n.partition("(")[2][:-1]
        return n.rsplit(".", 1)[-1]

    return [f for f in report.functions if not f.internal and short(f.name) == name]


def _scenario(module, fixed: bool) -> dict:
    with jitlens.track() as t:
        got = module.run(fixed)
    report = t.report()
    names = got["functions"] if "functions" in got else [got["function"]]
    truth = got["truth"] if isinstance(got["truth"], dict) else {names[0]: got["truth"]}
    rows = {}
    for name in names:
        found = _rows(report, name)
        reasons = [r for f in found for e in f.events for r in e.reasons]
        rows[name] = {
            "traces": sum(f.traces for f in found),
            "compiles": sum(f.compiles for f in found),
            "calls": sum(f.calls or 0 for f in found),
            "hits": sum(f.cache_hits or 0 for f in found),
            "lost": sum(f.seconds_lost for f in found),
            "reasons": [
                {
                    "kind": str(r.kind),
                    "path": r.path,
                    "before": r.before,
                    "after": r.after,
                    "message": r.message,
                    "fix": r.fix,
                    "expected": r.expected,
                    "fix_kind": str(r.fix_kind) if r.fix_kind is not None else None,
                }
                for r in reasons
            ],
        }
    same = got.get("same_out", True)
    return {
        "truth": truth,
        "out": got["out"],
        "same_out": same,
        "rows": rows,
        "text": str(report),
        "extra": got.get("extra"),  # what else a program measured (a compile count)
        "functions": [f.name for f in report.functions if not f.internal],
        "user_traces": sum(f.traces for f in report.functions if not f.internal),
    }


def _no_fix(path: pathlib.Path) -> bool:
    """The program sets ``NO_FIX = True``: read from its source, since importing it would load
    its libraries and run its module's JAX code in a scenario that does not run it."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["NO_FIX"]:
            return ast.literal_eval(node.value) is True
    return False


def main(scenario: str, programs: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    # tracking starts before the programs import jax's names (`from jax import jit`), as
    # under `jitlens run`; each scenario below is a view of its own
    jitlens.track().start()
    result = {}
    for program in programs:
        if scenario == "after" and _no_fix(HERE / f"{program}.py"):
            continue  # nothing to apply: its "after" is its "before" (``trial_runs``)
        spec = importlib.util.spec_from_file_location(program, HERE / f"{program}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result[program] = _scenario(module, scenario == "after")
    print("TRUTH " + json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
