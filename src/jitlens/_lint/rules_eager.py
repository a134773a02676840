"""Lint rule about control flow run outside jit over a new body function each time (JL008).

``lax.map(one, xs)`` outside any jit is compiled by JAX as one small program per body
function; a body defined anew on every call (a closure of the caller's arguments, a
lambda, a partial) is a new function each time, so every call traces and compiles it
again (markean/aimz#275). Inside a jitted function the same call is compiled once with
the function around it, which is the fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .index import PARTIALS, FileIndex
from .nodes import FunctionNode, Hit, callee, short
from .rule import Rule
from .rules_jit import fresh_function, repetition

#: Control flow JAX compiles on its own when run outside jit -> the body arguments' positions.
EAGER_CONTROL_FLOW = {
    "jax.lax.map": (0,),
    "jax.lax.scan": (0,),
    "jax.lax.fori_loop": (2,),
    "jax.lax.while_loop": (0, 1),
}

JL008_MESSAGE = (
    "`{call}` runs outside jit {where} over {fresh}, a new function object each time; JAX "
    "compiles an eager `{primitive}` per body function, so every run traces and compiles "
    "it again"
)
JL008_FIX_JIT = (
    "jit the function around it (`@jax.jit` on `def {name}`; only parameters that set a "
    "shape or a Python branch go in `static_argnames`): the loop is then traced and compiled "
    "with it once per shape, and the values the body closes over are traced arguments"
)
JL008_FIX = (
    "define the body once at module level and pass the values it closes over through the "
    "carry or `xs`, or run the loop inside a jitted function"
)


def _under_transformation(index: FileIndex, node: ast.AST) -> bool:
    """Whether ``node`` runs inside a function a JAX/Equinox/Flax decorator transforms."""
    if index.inside_traced(node):
        return True
    scope = index.frame(node)[0]
    while isinstance(scope, FunctionNode | ast.Lambda):
        if isinstance(scope, FunctionNode) and any(
            _transforms(index, d) for d in scope.decorator_list
        ):
            return True
        scope = index.frame(scope)[0]
    return False


def _transforms(index: FileIndex, decorator: ast.expr) -> bool:
    """``@eqx.filter_jit``, ``@jax.vmap(...)``, ``@partial(nnx.scan, ...)``: a tracing decorator."""
    qualname = index.qualname(callee(decorator)) or ""
    if qualname in PARTIALS and isinstance(decorator, ast.Call) and decorator.args:
        qualname = index.qualname(decorator.args[0]) or ""
    return qualname.startswith(index.vocabulary.tracing)


def check_eager_control_flow(index: FileIndex) -> Iterator[Hit]:
    """JL008: ``lax.map`` / ``scan`` / loops outside jit over a body made on every run."""
    for call in index.calls:
        qualname = index.qualname(call.func) or ""
        positions = EAGER_CONTROL_FLOW.get(qualname)
        if positions is None or _under_transformation(index, call):
            continue
        scope, loops = index.frame(call)
        repeated = repetition(index, scope, loops)
        if repeated is None:
            continue
        where, _place, unit = repeated
        for position in positions:
            if position >= len(call.args):
                continue
            fresh = fresh_function(index, call.args[position], scope, unit)
            if fresh is None:
                continue
            primitive = "lax." + qualname.rsplit(".", 1)[1]
            body = call.args[position]
            inside = "lambda ..." if isinstance(body, ast.Lambda) else short(body, 30)
            message = JL008_MESSAGE.format(
                call=f"{primitive}({inside}, ...)", where=where, fresh=fresh, primitive=primitive
            )
            if isinstance(scope, ast.FunctionDef) and not loops:
                fix = JL008_FIX_JIT.format(name=scope.name)
            else:
                fix = JL008_FIX
            yield Hit("JL008", call, message, fix)
            break


RULES = (
    Rule(
        "JL008",
        "lax.map / scan / loop run outside jit over a body made on every run",
        check_eager_control_flow,
    ),
)
