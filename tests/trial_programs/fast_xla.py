"""Imported by the trial drivers before JAX starts its backend: XLA compiles these toys without
LLVM's optimisation passes, a third less CPU per compile (issue 48). Traces, cache keys,
culprits and fixes are decided before XLA's backend runs. Only with the jaxlib versions it was
tried on: XLA refuses a flag it does not know."""

import importlib.metadata
import os

FLAG = "--xla_backend_optimization_level"
if FLAG not in os.environ.get("XLA_FLAGS", "") and importlib.metadata.version("jaxlib").startswith(
    ("0.9.", "0.10.")
):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {FLAG}=0").strip()
