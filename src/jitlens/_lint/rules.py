"""The table of lint rules: code, one-line summary, and the check that finds it."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterator

from .index import FileIndex
from .nodes import Hit
from .rules_eager import check_eager_control_flow
from .rules_eqx import (
    check_filter_jit_in_loop,
    check_module_callable_fields,
    check_numbers_to_filter_jit,
)
from .rules_jit import check_jit_in_loop, check_static_arguments
from .rules_nnx import (
    check_callable_attributes,
    check_local_module_class,
    check_metadata_in_loop,
    check_number_attributes,
    check_optimizer_in_loop,
)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One lint rule: its ``JL###`` code, what it finds, and the check that finds it."""

    code: str
    summary: str
    check: Callable[[FileIndex], Iterator[Hit]]


RULES: tuple[Rule, ...] = (
    Rule("JL001", "jit wrapper built in a loop or a repeatedly called function", check_jit_in_loop),
    Rule("JL002", "partial, lambda or function stored on an NNX Module", check_callable_attributes),
    Rule(
        "JL003", "plain int/float Module attribute changed after __init__", check_number_attributes
    ),
    Rule("JL004", "NNX Module class defined inside a function or loop", check_local_module_class),
    Rule(
        "JL005",
        "static argument given a changing or identity-compared value",
        check_static_arguments,
    ),
    Rule("JL006", "Variable metadata rewritten on every loop iteration", check_metadata_in_loop),
    Rule(
        "JL007",
        "optax optimizer built on every loop iteration for an nnx.Optimizer",
        check_optimizer_in_loop,
    ),
    Rule(
        "JL008",
        "lax.map / scan / loop run outside jit over a body made on every run",
        check_eager_control_flow,
    ),
    # Equinox (JL1xx): eqx.filter_jit keys functions, Python numbers and Module fields its own way.
    Rule(
        "JL101",
        "eqx.filter_jit of a lambda, closure or partial built in a loop or per call",
        check_filter_jit_in_loop,
    ),
    Rule(
        "JL102",
        "changing Python number passed to an eqx.filter_jit function in a loop",
        check_numbers_to_filter_jit,
    ),
    Rule(
        "JL103",
        "lambda, nested function or partial stored in an eqx.Module field",
        check_module_callable_fields,
    ),
)


def run_rules(tree: ast.Module) -> list[Hit]:
    """Every finding of every rule in one parsed file, unsorted."""
    index = FileIndex(tree)
    return [hit for rule in RULES for hit in rule.check(index)]
