"""Haiku, as far as jitlens reads it: a model library whose modules a traced loop may run.

jitlens has no front-end for Haiku: its programs are ``hk.transform``-ed functions under
``jax.jit``, counted as such. What Haiku's declaration adds is where its files are, so
that a Python loop over ``hk.Module`` blocks that the trace unrolled is named at the
user's line and fixed in Haiku's terms (``hk.layer_stack``, ``hk.scan``, ``hk.vmap``:
``_core/kinds.LOOP_FIXES``). Nothing private is read.
"""

from __future__ import annotations

import sys

from .libraries import Library


def loaded() -> bool:
    return "haiku" in sys.modules


LIBRARY = Library(
    distribution="dm-haiku",
    packages=("haiku",),
    loaded=loaded,
    builds_models=True,
    layer_prefix="hk.",
    model_apis=(("haiku", "haiku"),),
)
