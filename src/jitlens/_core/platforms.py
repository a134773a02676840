"""What the advice assumes of the platform a program runs on, as measured there: plain data.

A prediction of the advisor is a measured figure of the run (compile seconds, a sampled
call) turned into a saving by a few rates that depend on the machine: what a program with
a rolled loop still costs to compile, what a captured constant costs per MiB, how long a
finished program takes to report its outputs ready. Each :class:`Calibration` holds those
rates as ``benchmarks/run_all.py`` measured them on one platform (``jax.default_backend()``:
``cpu``, ``tpu``); a platform not measured takes the CPU's, which the report says
(``Environment.platform``). ``benchmarks/run_all.py --platform`` prints each prediction
next to the saving measured by applying the advice, on the platform it runs on.

Measured (jax 0.10.2, ``benchmarks/run_all.py --platform``; ``docs/develop/performance.md``):

* cpu, a shared 2-core VM: rolled programs compiled in 0.3-1.9 s; captured tables cost
  0.04-0.09 s/MiB; a tiny program's outputs are ready 2-3 us after its call returns.
* tpu, one v5e chip: a 16-layer ``lax.scan`` compiled in 0.21 s (rolled programs:
  0.1-0.3 s); a captured table cost 0.013 s/MiB over the same table passed as an
  argument, the large ones (3000x3000, 34 MiB: 0.37-0.42 s; 3500x3500: 0.2-0.6 s) and
  none of the smaller (1500x1500: +0.04/-0.09 s; 2500x2500, the issue's: 0.33 s and 0.8 s
  *faster* captured): below 32 MiB no constant is advised there; a tiny program's outputs were ready
  252 us after its call returned, which a loop of calls never waits for (the next call is
  dispatched meanwhile): 544 -> 392 us per call with ``nnx.cached_partial`` where the
  sampled "device" part was 390 us.
"""

from __future__ import annotations

from .._record import record


@record
class Calibration:
    """The rates the advice's predictions use on one platform (see the module doc)."""

    platform: str
    #: What a program whose loop was rolled (``lax.scan``, ``fori_loop``) still costs to
    #: trace and compile, at least (``advice_cost.loop_saving``).
    scan_floor_seconds: float
    #: What a captured constant costs to lower and compile, per MiB, and at most this
    #: multiple of it (``advice_cost.constant_saving``).
    const_seconds_per_mib: float
    const_max_factor: float
    #: What a program without its constants costs at least.
    const_floor_seconds: float
    #: A captured array smaller than this many MiB is not advised on: passing it saved
    #: nothing measurable here (0 where every size saved its share).
    const_min_mib: float
    #: Return -> outputs ready of a program that does nearly nothing: the part of a sampled
    #: call's "device" time that is the platform reporting back, not work a loop waits for.
    ready_latency_seconds: float


CALIBRATIONS: dict[str, Calibration] = {
    "cpu": Calibration("cpu", 0.4, 0.06, 2.0, 0.3, 0.0, 0.0),
    "tpu": Calibration("tpu", 0.2, 0.012, 1.0, 0.3, 32.0, 250e-6),
}
#: The calibration of a platform nobody measured: the CPU's.
DEFAULT = "cpu"


def calibration(platform: str | None) -> Calibration:
    """The calibration measured on ``platform``, else the CPU's."""
    return CALIBRATIONS.get(platform or DEFAULT, CALIBRATIONS[DEFAULT])


def measured(platform: str | None) -> bool:
    """Were the advice's rates measured on ``platform``?"""
    return (platform or "") in CALIBRATIONS
