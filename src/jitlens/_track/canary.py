"""The canary: tiny jitted functions whose figures jitlens must get right, run in a child.

``python -m jitlens._track.canary`` tracks a ``jax.jit`` function, an
``nnx.jit`` function (if flax is installed) and an ``eqx.filter_jit``
function (if equinox is installed), each called with two shapes, and checks
against counters inside their bodies that calls, traces and the shape reason
come out right, and that an ``eqx.filter_jit`` function finds the row its
traces went to (what its budgets count). It prints one JSON line:
``{"problems": [...], "versions": {...}}``.

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

from .._core.kinds import ReasonKind

#: The names the canary's functions carry (and that rows of them are found by).
NAMES = ("jitlens_canary", "jitlens_nnx_canary", "jitlens_eqx_canary")


def _compare(what: str, rec: Any, truth: int, calls: int | None) -> list[str]:
    if rec is None:
        return [f"{what} traces are not seen ({truth} traces ran, jitlens saw none)"]
    out = []
    if rec.traces != truth:
        out.append(f"{what} traces miscounted ({truth} ran, jitlens counted {rec.traces})")
    if calls is not None and rec.counts_calls and rec.calls != calls:
        out.append(f"{what} calls miscounted ({calls} made, jitlens counted {rec.calls})")
    kinds = [str(r.kind) for e in rec.events for r in e.reasons]
    if truth == 2 and rec.traces == 2 and ReasonKind.SHAPE not in kinds:
        out.append(f"{what} retrace not explained (expected a shape change, got {kinds or 'none'})")
    return out


def _row(name: str) -> Any:
    from .registry import REGISTRY

    recs = [r for r in REGISTRY.records if r.name == name]
    return recs[-1] if recs else None


def _jax_canary(np: Any) -> list[str]:
    import jax

    counter = [0]

    def jitlens_canary(x: Any) -> Any:
        counter[0] += 1
        return x + 1

    f = jax.jit(jitlens_canary)
    wrapped = getattr(f, "_record", None) is not None
    for n in (1, 2, 2):
        f(np.zeros((n,), np.float32))
    problems = [] if wrapped else ["jax.jit could not be wrapped (calls and cache hits unknown)"]
    return problems + _compare(
        "jax.jit", _row("jitlens_canary"), counter[0], 3 if wrapped else None
    )


def _nnx_canary(np: Any) -> list[str]:
    from flax import nnx

    counter = [0]

    class JitlensCanary(nnx.Module):  # noqa: JL004 - built once per canary process
        def __init__(self) -> None:
            self.w = nnx.Param(np.ones((1,), np.float32))

    def jitlens_nnx_canary(m: Any, x: Any) -> Any:
        counter[0] += 1
        return m.w * x

    g = nnx.jit(jitlens_nnx_canary)
    m = JitlensCanary()
    for n in (1, 2, 2):
        g(m, np.zeros((n,), np.float32))
    return _compare("nnx.jit", _row("jitlens_nnx_canary"), counter[0], calls=3)


def _eqx_canary(np: Any) -> list[str]:
    import equinox as eqx

    from .registry import REGISTRY

    counter = [0]

    def jitlens_eqx_canary(x: Any) -> Any:
        counter[0] += 1
        return x + 1

    f = eqx.filter_jit(jitlens_eqx_canary)
    for n in (1, 2, 2):
        f(np.zeros((n,), np.float32))
    rec = _row("jitlens_eqx_canary")
    problems = _compare("eqx.filter_jit", rec, counter[0], calls=3)
    if rec is not None and (rec.frontend is None or REGISTRY.frontend_record_of(f) is not rec):
        problems.append(
            "eqx.filter_jit traces are not matched to their functions (rows, calls and "
            "compile budgets of eqx.filter_jit functions unknown)"
        )
    return problems


def installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False


def run() -> list[str]:
    """Run every canary this environment can run, with jitlens tracking; the problems."""
    import numpy as np

    from .hooks import activate, deactivate
    from .registry import REGISTRY

    REGISTRY.include_internal_keys = True  # the canary lives in jitlens' files
    if not activate():
        return ["jitlens' hooks could not be installed"]
    problems: list[str] = []
    try:
        for name, body in (("jax", _jax_canary), ("flax", _nnx_canary), ("equinox", _eqx_canary)):
            if name != "jax" and not installed(name):
                continue
            try:
                problems += body(np)
            except Exception as exc:
                problems.append(f"the {name} canary failed ({type(exc).__name__}: {exc})")
    finally:
        deactivate()
    return problems


def check_now() -> tuple[str, ...]:
    """Run the canary in this process and keep its verdict (``jitlens selfcheck``)."""
    from .selfcheck import write_verdict

    try:
        problems = tuple(run())
    except Exception as exc:
        problems = (f"the canary failed ({type(exc).__name__}: {exc})",)
    write_verdict(problems)
    return problems


def main() -> int:
    """``python -m jitlens._track.canary``: the same as ``jitlens selfcheck``."""
    from .._compat.probe import installed_versions
    from .selfcheck import verdict_file

    problems = check_now()
    kept = str(verdict_file())
    print(json.dumps({"problems": list(problems), "versions": installed_versions(), "path": kept}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
