"""The canary: tiny jitted functions whose figures jitlens must get right, run in a child.

``python -m jitlens._track.canary`` tracks a ``jax.jit`` function and each
installed library front-end's piece (``Frontend.canary``: its own jitted
function, e.g. an ``nnx.jit`` one if flax is installed), each called with two
shapes, and checks against counters inside their bodies that calls, traces and
the shape reason come out right (:func:`compare`), and whatever else the
front-end needs (a library's jit finds the row its traces went to: what its
budgets count). It prints one JSON line: ``{"problems": [...], "versions": {...}}``.

It runs in ``jitlens selfcheck`` (a process of its own, started by the user
or CI, never by a tracked program), which keeps the verdict for the installed
versions; nothing of it is observable by the programs jitlens watches: not
their ``jax.monitoring`` listeners, compile logs, profiler traces, ``jax.jit``
patches, ``sys.modules``, children or files.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

from .._core.kinds import RowKind
from .frontend import canary_compare as compare
from .frontend import canary_row as row


def _jax_canary(np: Any) -> list[str]:
    import jax

    from .registry import REGISTRY

    counter = [0]

    def jitlens_canary(x: Any) -> Any:
        counter[0] += 1
        return x + 1

    f = jax.jit(jitlens_canary)
    wrapped = getattr(f, "_record", None) is not None
    for n in (1, 2, 2):
        f(np.zeros((n,), np.float32))
    problems = [] if wrapped else ["jax.jit could not be wrapped (calls and cache hits unknown)"]
    return problems + compare(
        RowKind.JAX_JIT,
        row(REGISTRY.records, jitlens_canary.__name__),
        counter[0],
        3 if wrapped else None,
    )


def installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False


def run() -> list[str]:
    """Run every canary this environment can run, with jitlens tracking; the problems."""
    import numpy as np

    from .frontend import registered
    from .hooks import activate, deactivate
    from .registry import REGISTRY

    REGISTRY.include_internal_keys = True  # the canary lives in jitlens' files
    if not activate():
        return ["jitlens' hooks could not be installed"]
    problems: list[str] = []
    try:
        pieces = [("jax", _jax_canary)] + [
            (fe.canary_requires, fe.canary)
            for fe in registered()
            if fe.canary_requires is not None and installed(fe.canary_requires)
        ]
        for name, body in pieces:
            try:
                problems += body(np)
            except Exception as exc:
                problems.append(f"the {name} canary failed ({type(exc).__name__}: {exc})")
    finally:
        deactivate()
    return problems


def check_now() -> tuple[tuple[str, ...], str | None]:
    """Run the canary in this process and keep its verdict (``jitlens selfcheck``): the
    problems found, and why the verdict could not be kept (``None``: kept)."""
    from .selfcheck import write_verdict

    try:
        problems = tuple(run())
    except Exception as exc:
        problems = (f"the canary failed ({type(exc).__name__}: {exc})",)
    return problems, write_verdict(problems)


def main() -> int:
    """``python -m jitlens._track.canary``: the same as ``jitlens selfcheck``."""
    from .._compat.probe import installed_versions
    from .selfcheck import verdict_file

    problems, not_kept = check_now()
    kept = str(verdict_file()) if not_kept is None else None
    out = {"problems": list(problems), "versions": installed_versions(), "path": kept}
    print(json.dumps({**out, "not_kept": not_kept}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
