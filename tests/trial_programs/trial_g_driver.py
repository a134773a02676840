"""Runs the ``g_*`` compile-cost trial programs under ``jitlens.track()`` in one process:
each program as written (``main``) and, where it has one, as jitlens' advice says to
write it (``main_fixed``), each tracked on its own. Prints one ``TRUTH`` JSON line: per
program and version, jitlens' report (``Report.to_dict``) and the program's outputs.

Sizes are shrunk to just above the advice's structural thresholds (8 iterations, 1 MiB)
and every compile is read (``COST_MIN_SECONDS`` = 0), so what the test reads (lines,
loops, trip counts, constants) does not depend on how fast this machine compiles; the
full-size programs are what ``jitlens run g_*.py`` and ``benchmarks/compile_cost_trial.py``
time.
"""

import importlib
import json
import pathlib
import sys

import numpy as np

import jitlens
from jitlens._core import advice_cost

HERE = pathlib.Path(__file__).parent
#: Module constants set before a program runs (read when its functions are traced).
SMALL = {
    "g_transformer_layers_loop": {"LAYERS": 8},
    "g_ode_rk4_unrolled": {"STEPS": 10},
    "g_stack_small_ops": {"K": 12},
    "g_cond_ladder": {"REGIMES": 10},
    "g_vmap_newton_inner_loop": {"ITERS": 10},
    "g_pytree_many_leaves": {"LEAVES": 100},
    "g_numpy_table_closure": {"GRID": 1024, "MODES": 1024},
    "g_literal_table_in_body": {"N": 1024},
    "g_params_closed_over": {"SIZES": [512] * 5},
    "g_big_static_table": {"ROWS": 600_000},
}


def _tracked(fn) -> tuple[dict, list]:
    with jitlens.track() as t:
        out = np.asarray(fn(), dtype=np.float64)
    return t.report().to_dict(), out.ravel().tolist()


def main(names: list[str]) -> None:
    advice_cost.COST_MIN_SECONDS = 0.0
    sys.path.insert(0, str(HERE))
    truth = {}
    for name in names:
        module = importlib.import_module(name)
        for k, v in SMALL.get(name, {}).items():
            setattr(module, k, v)
        if hasattr(module, "load_weights"):  # weights loaded at import, at the size set
            module.weights = module.load_weights()
        got = {"before": _tracked(module.main)}
        if hasattr(module, "main_fixed"):
            got["after"] = _tracked(module.main_fixed)
        truth[name] = got
    print("TRUTH " + json.dumps(truth))


if __name__ == "__main__":
    main(sys.argv[1:])
