"""Ground truth for the library programs: JAX's own trace events, counted by function name."""

import collections
import json

import jax.monitoring

TRACES: collections.Counter[str] = collections.Counter()


def _on(event: str, secs: float, **kw: object) -> None:
    if event == "/jax/core/compile/jaxpr_trace_duration":
        TRACES[str(kw.get("fun_name", "?"))] += 1


jax.monitoring.register_event_duration_secs_listener(_on)


def report(**counters: object) -> None:
    """Print the truth on one line the test reads: JAX's events and the program's own counters."""
    print("TRUTH " + json.dumps({"jax": dict(TRACES), **counters}, sort_keys=True))
