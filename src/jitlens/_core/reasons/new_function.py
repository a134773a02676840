"""The ``new_function`` reason: the jitted callable is a new object whose code compiled before.

A wrapper made per call (``jax.jit`` in a loop, a lambda or ``functools.partial`` rebuilt), in
its plain form and as the transformations and libraries that make one say it: a pmap of a
function rebuilt per epoch, linen's ``nn.jit`` applied inside a parent's ``__call__``, a jit
made anew inside ``lax.scan`` / ``jax.vmap``, numpyro's step rebuilt per ``run``, and two
wrappers of one code over different functions (expected).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..code import callable_expr, identifier
from ..kinds import Fact, ReasonKind, SubjectKind
from ..reason import Reason
from ..template_kinds import FixKind
from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import (
    Template,
    _equal,
    _free,
    _reason,
    _with_fix,
    with_fix,
)
from .spec import KindSpec

if TYPE_CHECKING:
    from ..._compat.library_jits import LibraryJit

NEW_FUNCTION_MSG = Template(
    M.NEW_FUNCTION,
    "{name} is a new {kind} object: its first call compiled again, though {count} earlier "
    "wrapper(s) of the same code (defined at {defined_at}) already compiled{equal}.",
)


NEW_FUNCTION_FIX = Template(
    K.NEW_FUNCTION,
    "Create the jitted function once, outside the loop or the function called repeatedly "
    "(e.g. `{name}_jit = {kind}({expr})` at module level), and reuse it.",
)


#: A jit of a bound method made per call (``jax.jit(jax.grad(self.loss))`` in a method): at
#: module level there is no ``self``; once per object there is, and ``self`` is then read as
#: it was at the first call (it is closed over, not an argument).
METHOD_FIX = Template(
    K.METHOD,
    "Create it once per object, in `{cls}.__init__`: `self.{name}_jit = {kind}({expr})`, and "
    "call that; it reads `self` as at its first call, so pass what changes (a step, a rate) as "
    "arguments.",
)


CLOSURE_FIX = Template(
    K.CLOSURE,
    "Define `{name}` once at module level with {free} as parameters, jit it once, and pass "
    "{free} on every call; jitting the inner function once as it is would freeze their first values.",
)


NEW_LAMBDA_FIX = Template(
    K.NEW_LAMBDA,
    "Define the function once (`def {name}(...)` at module level, or `{name}_jit = jax.jit(...)` "
    "before the loop) and jit it once; a lambda, a partial or a nested def built per call is a "
    "new function each time.",
)


def _def_name(name: str) -> str:
    """The name the fix's ``def`` takes: the user's own (``update``; ``predict`` for JAX's
    ``vmap(predict)``), or ``step_fn`` for a lambda."""
    while "(" in name and name.endswith(")"):  # a transformation of the user's function
        name = name.partition("(")[2][:-1]
    name = name.rsplit(".", 1)[-1]
    return name if name.isidentifier() else "step_fn"


def new_function(
    name: str,
    kind: str,
    defined_at: str,
    count: int,
    equal: bool,
    is_lambda: bool,
    free: tuple[str, ...] = (),
    *,
    method: tuple[str, str] | None = None,
    options: str = "",
) -> Reason:
    """``options``: the jit's static options as code (``", static_argnums=1"``), kept in the
    fix's jit: a static shape or flag passed traced would fail."""
    msg = NEW_FUNCTION_MSG.words(
        name=f"`{name}`",
        kind=kind,
        count=count,
        defined_at=defined_at,
        equal=" this very key" if equal else "",
    )
    if method is not None:  # a bound method jitted anew (jax#9672): once per object; what
        # its function reads from an enclosing scope is the same for every object of a class
        cls, meth = method
        expr = re.sub(
            rf"(?<![\w.]){re.escape(meth)}\b", f"self.{meth}", callable_expr(name), count=1
        )
        fk = K.METHOD
        fix = METHOD_FIX.words(cls=cls, name=identifier(name), kind=kind, expr=expr + options)
    elif free:  # it reads values of the function that builds it: they become arguments
        fk, fix = (
            K.CLOSURE,
            CLOSURE_FIX.words(
                name=name if name != "<lambda>" else "step_fn",
                free=", ".join(f"`{v}`" for v in free[:4]),
            ),
        )
    elif is_lambda:  # a lambda has no name of its own; a nested def keeps the user's
        fk, fix = K.NEW_LAMBDA, NEW_LAMBDA_FIX.words(name=_def_name(name))
    else:
        fk = K.NEW_FUNCTION
        expr = callable_expr(name) + options
        fix = NEW_FUNCTION_FIX.words(name=identifier(name), expr=expr, kind=kind)
    subject = SubjectKind.LAMBDA if is_lambda else SubjectKind.WRAPPER
    return _reason(
        ReasonKind.NEW_FUNCTION, "", name, f"{count} earlier wrapper(s)", "new wrapper", msg, fix,
        fix_kind=fk, subject=subject,
    )  # fmt: skip


NEW_PARTIAL_MSG = Template(
    M.NEW_PARTIAL,
    "`{name}` is jitted through a new functools.partial each time; each new partial is a new "
    "function to jax.jit, so it compiles again ({count} earlier wrapper(s) of `{name}`, defined at {defined_at}).",
)


NEW_PARTIAL_FIX = Template(
    K.NEW_PARTIAL,
    "Jit `{name}` once and pass {bound} as arguments instead of binding them in a partial "
    "(list them in static_argnames if they must stay static).",
)


def _bound_parameters(partial: Any) -> list[str] | None:
    """The parameter names the positional values of ``partial`` fill (``partial(gram, kernel)``
    -> ``kernel``), or None where the signature does not say."""
    import inspect

    try:
        params = list(inspect.signature(partial.func).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < len(partial.args):
        return None
    return [p.name for p in positional[: len(partial.args)]]


#: ``NEW_PARTIAL_FIX`` where the partial binds a function (``partial(gram, kernel)``): a
#: function cannot be a traced argument, so it is passed as a static one.
NEW_PARTIAL_STATIC_FIX = Template(
    K.NEW_PARTIAL_STATIC,
    "Jit `{name}` once with {static} static (a function cannot be traced): "
    "`{name}_jit = jax.jit({name}, static_argnames={names})`, called as `{name}_jit({call})`"
    "{data}; or jit the partial once, outside the loop.",
)


def new_partial(name: str, defined_at: str, count: int, partial: Any) -> Reason:
    keywords = dict(getattr(partial, "keywords", None) or {})
    names = [f"`{k}`" for k in keywords]
    bound: list[str] | None = []
    if getattr(partial, "args", ()):
        bound = _bound_parameters(partial)
        if bound is None:
            names.append(f"{len(partial.args)} positional value(s)")
        else:
            names = [f"`{n}`" for n in bound] + names
    names = names or ["the bound values"]
    fk, fix = K.NEW_PARTIAL, NEW_PARTIAL_FIX.words(name=name, bound=", ".join(names))
    if bound is not None and name.isidentifier():
        values = dict(zip(bound, partial.args, strict=True)) | keywords
        static = [k for k, v in values.items() if _a_function(v)]
        if static:
            data = [k for k in values if k not in static]
            call = [*(bound or ()), *(f"{k}={k}" for k in keywords), "..."]
            fk, fix = (
                K.NEW_PARTIAL_STATIC,
                NEW_PARTIAL_STATIC_FIX.words(
                    name=name,
                    static=_listed(static),
                    names=repr(static[0]) if len(static) == 1 else repr(tuple(static)),
                    call=", ".join(call),
                    data=f" with {_listed(data)} passed as arguments" if data else "",
                ),
            )
    return _reason(
        ReasonKind.NEW_FUNCTION, "", name, f"{count} earlier wrapper(s)", "new partial",
        NEW_PARTIAL_MSG.words(name=name, count=count, defined_at=defined_at), fix,
        fix_kind=fk, subject=SubjectKind.PARTIAL,
    )  # fmt: skip


def _a_function(value: Any) -> bool:
    """A function, method or class bound in a partial: hashable code, never an array."""
    import functools
    import inspect

    return inspect.isroutine(value) or isinstance(value, (type, functools.partial))


def _listed(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


NESTED_NEW_FUNCTION_MSG = Template(
    M.NESTED_NEW_FUNCTION,
    "`{name}` is a new {kind} object traced inside {outer}: {outer} caches what it traced per "
    "function object, so it traced again though {count} earlier wrapper(s) of the same code "
    "(defined at {defined_at}) already traced{equal}.",
)


NESTED_NEW_FUNCTION_FIX = Template(
    K.NESTED_NEW_FUNCTION,
    "Create `{name}` once, outside the function that runs {outer} (at module level: "
    "`{name} = {kind}(...)`), and pass what it reads from there{free} as arguments.",
)


def nested_new_function(
    r: Reason,
    name: str,
    kind: str,
    outer: str,
    count: int,
    defined_at: str,
    equal: bool,
    free: tuple[str, ...],
) -> Reason:
    """A jit made anew per call and traced inside ``lax.scan`` / ``jax.vmap`` / ``jax.grad``."""
    msg = NESTED_NEW_FUNCTION_MSG.words(
        name=name, kind=kind, outer=outer, count=count, defined_at=defined_at, equal=_equal(equal)
    )
    fix = NESTED_NEW_FUNCTION_FIX.words(name=name, kind=kind, outer=outer, free=_free(free))
    nested = with_fix(r, K.NESTED_NEW_FUNCTION, fix, path=name, message=msg)
    return nested.with_facts(Fact.NESTED)


#: numpyro's ``MCMC.run`` compiled its sample loop again around a sample step built anew.
NUMPYRO_REBUILT_MSG = Template(
    M.NUMPYRO_REBUILT,
    "`{entry}` built its sample step anew for this run ({before} -> {after}): numpyro compiles "
    "its sample loop once per `run`, even on data of the same shape (also with "
    "`jit_model_args=True`).",
)


NUMPYRO_REBUILT_FIX = Template(
    K.NUMPYRO_REBUILT,
    "Draw what you need in one `run` (a larger `num_samples`, or `num_chains`) instead of "
    "calling `run` again; each `run` costs one compile of the sample loop.",
)


#: ``SVI.run`` jitted a new step: numpyro builds one per ``run``.
NUMPYRO_SVI_RUN_MSG = Template(
    M.NUMPYRO_SVI_RUN,
    "`SVI.run` jitted a new step for this run: numpyro builds one per `run`, with the model's "
    "arguments closed into it, so every `run` compiles again, even on data of the same shape.",
)


NUMPYRO_SVI_RUN_FIX = Template(
    K.NUMPYRO_SVI_RUN,
    "Call `svi.run` once with all the steps (`num_steps`), or step yourself: "
    "`update = jax.jit(svi.update)` once, then `state, loss = update(state, *args, **kwargs)` "
    "per step, with data of one shape.",
)


def numpyro_reasons(step: LibraryJit, reasons: list[Reason]) -> list[Reason]:
    """A numpyro row's reasons: a step rebuilt per ``run`` in numpyro's terms.

    numpyro makes a new ``jax.jit`` wrapper per ``run``: that the wrapper is new is
    numpyro's business, said in its terms only when nothing else changed.
    """
    if step.role == "svi":
        return [
            _with_fix(r, FixKind.NUMPYRO_SVI_RUN, NUMPYRO_SVI_RUN_FIX, message=NUMPYRO_SVI_RUN_MSG)
            if r.kind == ReasonKind.NEW_FUNCTION
            else r
            for r in reasons
        ]
    if step.role != "sample":
        return reasons
    out = []
    for r in reasons:
        if r.kind == ReasonKind.IDENTITY_STATIC and r.argument == "_body_fn":
            before, after = r.before.split(" at ")[0], r.after.split(" at ")[0]
            message = NUMPYRO_REBUILT_MSG.words(entry=step.entry, before=before, after=after)
            out.append(_with_fix(r, FixKind.NUMPYRO_REBUILT, NUMPYRO_REBUILT_FIX, message=message))
        elif r.kind != ReasonKind.NEW_FUNCTION:
            out.append(r)
        elif len(reasons) == 1:
            message = NUMPYRO_REBUILT_MSG.words(entry=step.entry, before=r.before, after=r.after)
            out.append(_with_fix(r, FixKind.NUMPYRO_REBUILT, NUMPYRO_REBUILT_FIX, message=message))
    return out


DIFFERENT_FUNCTION_MSG = Template(
    M.DIFFERENT_FUNCTION,
    "`{name}` calls a different function through `{free}` than its {count} earlier "
    "wrapper(s) ({before} -> {after}): a different function, compiled once on purpose.",
)


DIFFERENT_FUNCTION_FIX = Template(
    K.DIFFERENT_FUNCTION,
    "Expected once per function: nothing to fix. To run the same one again, keep this "
    "`{name}` and call it again rather than building a new one.",
)


def different_function(name: str, count: int, free: str, before: str, after: str) -> Reason:
    """A new wrapper of the same code over different functions (three samplers' kernels)."""
    msg = DIFFERENT_FUNCTION_MSG.words(
        name=name, free=free, count=count, before=f"`{before}`", after=f"`{after}`"
    )
    r = _reason(
        ReasonKind.NEW_FUNCTION, "", name, before, after, msg,
        DIFFERENT_FUNCTION_FIX.words(name=name), fix_kind=FixKind.DIFFERENT_FUNCTION,
    )  # fmt: skip
    return r.replace(expected=True)


SPEC = KindSpec(
    ReasonKind.NEW_FUNCTION,
    what="the jitted callable is a new object whose code already compiled this key through "
    "another wrapper, or whose earlier wrappers were each used once (jit in a loop, "
    "lambda rebuilt)",
    example="2 earlier wrapper(s) -> new wrapper",
    fixes={
        K.NEW_FUNCTION: NEW_FUNCTION_FIX,
        K.METHOD: METHOD_FIX,
        K.CLOSURE: CLOSURE_FIX,
        K.NEW_LAMBDA: NEW_LAMBDA_FIX,
        K.NEW_PARTIAL: NEW_PARTIAL_FIX,
        K.NEW_PARTIAL_STATIC: NEW_PARTIAL_STATIC_FIX,
        K.NESTED_NEW_FUNCTION: NESTED_NEW_FUNCTION_FIX,
        K.NUMPYRO_REBUILT: NUMPYRO_REBUILT_FIX,
        K.NUMPYRO_SVI_RUN: NUMPYRO_SVI_RUN_FIX,
        K.DIFFERENT_FUNCTION: DIFFERENT_FUNCTION_FIX,
    },
    messages=(
        NEW_FUNCTION_MSG,
        NEW_PARTIAL_MSG,
        NESTED_NEW_FUNCTION_MSG,
        NUMPYRO_REBUILT_MSG,
        NUMPYRO_SVI_RUN_MSG,
        DIFFERENT_FUNCTION_MSG,
    ),
)
