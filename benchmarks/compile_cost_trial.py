"""Compile-cost advice on the trial programs (``tests/trial_programs/g_*.py``), full size.

Each program runs as written (``main``) and, where it has one, as jitlens' advice says
to write it (``main_fixed``), both under ``jitlens.track()`` in this process. Printed per
program: the trace + lower + compile seconds before and after, the line jitlens names,
the top advice kind, its predicted saving next to the measured one, and whether the
results are equal. The negative controls must get no compile-cost advice.

    python benchmarks/compile_cost_trial.py [NAME ...]

Absolute seconds vary 2-3x with the machine's load; the ratio is the figure to read.
"""

from __future__ import annotations

import importlib
import pathlib
import sys

import numpy as np

import jitlens

PROGRAMS = pathlib.Path(__file__).parent.parent / "tests" / "trial_programs"
KINDS = ("unrolled_loop", "captured_constant", "compile_bound")


def _run(fn):
    with jitlens.track() as t:
        out = np.asarray(fn())
    fns = [f for f in t.report().functions if not f.internal]
    return fns, out


def _seconds(fns) -> float:
    return sum(e.seconds for f in fns for e in f.events if e.compiled)


def main(names: list[str]) -> None:
    sys.path.insert(0, str(PROGRAMS))
    names = names or sorted(p.stem for p in PROGRAMS.glob("g_*.py"))
    print(
        f"{'program':28} {'written':>8} {'fixed':>7} {'predicted':>9} {'measured':>8} "
        f"{'ratio':>5}  same  advice / line named"
    )
    for name in names:
        module = importlib.import_module(name)
        fns, out = _run(module.main)
        before = _seconds(fns)
        advice = [a for f in fns for a in f.advice if a.kind in KINDS]
        named = ""
        for f in fns:
            for e in f.events:
                if e.cost is not None and e.cost.loops:
                    loop = e.cost.loops[0]
                    named = f"loop {loop.file}:{loop.line} x{loop.iterations}"
                elif e.cost is not None and e.cost.lines and not named:
                    named = f"line {e.cost.lines[0].file}:{e.cost.lines[0].line}"
        top = advice[0] if advice else None
        predicted = top.estimated_saving_seconds if top else None
        after = measured = same = None
        if hasattr(module, "main_fixed"):
            fixed_fns, fixed_out = _run(module.main_fixed)
            after = _seconds(fixed_fns)
            measured = before - after
            scale = max(1e-30, float(np.abs(out).max()))
            same = bool(np.allclose(out, fixed_out, rtol=1e-5, atol=1e-6 * scale))
            left = [a.kind for f in fixed_fns for a in f.advice if a.kind in KINDS[:2]]
            if left:
                named += f"  (fixed still advised: {left})"
        ratio = f"{predicted / measured:5.2f}" if predicted and measured else "    -"
        print(
            f"{name:28} {before:7.2f}s {after if after is not None else float('nan'):6.2f}s "
            f"{predicted if predicted is not None else float('nan'):8.2f}s "
            f"{measured if measured is not None else float('nan'):7.2f}s {ratio}  "
            f"{'yes ' if same else ' -  ' if same is None else 'NO  '}  "
            f"{top.kind if top else 'none'} / {named or '-'}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
