"""Runs the ``h_*`` compile-cost programs (issue 45: loops under ``jax.grad``, the fix by
what a loop walks over, shapes that change) under ``jitlens.track()`` in one process:
each as written (``main``) and as jitlens' advice says to write it (``main_fixed``).
Prints one ``TRUTH`` JSON line: per program and version, jitlens' report
(``Report.to_dict``) and the program's outputs.

Sizes are shrunk to 4 iterations, the advice's threshold lowered to them, and every
compile is read and advised on (``COST_MIN_SECONDS`` and ``COST_MIN_SAVING_SECONDS`` = 0), so what
the test reads (lines, trip counts, walks, fixes) does not depend on how fast this machine
compiles; ``benchmarks/compile_cost.py`` times the full-size programs.
"""

import importlib
import json
import pathlib
import sys

import fast_xla  # noqa: F401 (sets XLA_FLAGS before JAX starts its backend)
import numpy as np

import jitlens
from jitlens._core import advice_cost

HERE = pathlib.Path(__file__).parent
#: Iterations each loop makes here (the advice's threshold is lowered to it).
ITERATIONS = 4
SMALL = {
    "h_maml_inner_steps": {"STEPS": ITERATIONS, "WIDTH": 8},
    "h_nnx_lstm_over_time": {"T": ITERATIONS, "HID": 8, "IN": 4},
    "h_attention_per_head": {"HEADS": ITERATIONS, "DH": 2, "T": 4},
    "h_eqx_leapfrog": {"STEPS": ITERATIONS, "BODIES": 4},
    "h_linen_blocks_loop": {"LAYERS": ITERATIONS, "D": 8},
    # Haiku's first block reads its parameters apart from the others: at 4 blocks that
    # is more than the share an iteration may differ by (``cost.PERIOD_MISMATCH``)
    "h_haiku_blocks_loop": {"LAYERS": 8, "D": 8},
    "h_neg_image_pyramid": {"SIZE": 128},
    "h_library_jit_nested": {"STEPS": ITERATIONS},
}


def _tracked(fn) -> tuple[dict, list]:
    with jitlens.track() as t:
        out = np.asarray(fn(), dtype=np.float64)
    return t.report().to_dict(), out.ravel().tolist()


def main(names: list[str]) -> None:
    advice_cost.COST_MIN_SECONDS = 0.0
    advice_cost.COST_MIN_SAVING_SECONDS = 0.0
    advice_cost.LOOP_MIN_ITERATIONS = ITERATIONS
    sys.path.insert(0, str(HERE))
    truth = {}
    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # haiku, diffrax: optional
            truth[name] = {"skipped": str(exc)}
            continue
        for k, v in SMALL.get(name, {}).items():
            setattr(module, k, v)
        got = {"before": _tracked(module.main)}
        if hasattr(module, "main_fixed"):
            got["after"] = _tracked(module.main_fixed)
        truth[name] = got
    print("TRUTH " + json.dumps(truth))


if __name__ == "__main__":
    main(sys.argv[1:])
