"""The words of the jits libraries make around the user's code, and of control-flow primitives
run outside jit: how they say a reason of another kind (``kinds.REWORDED``).

A body ``lax.map``/``scan``/``cond`` traces again outside jit (markean/aimz#275), a function a
library builds anew per call (blackjax's ``hmc(...).step``), numpyro's sequential chains, keras'
two methods handing one step different containers. The front-ends that find them
(``_track/eager.py``, ``_track/frontends/{library_rows,numpyro,keras}.py``) fill these
templates' parameters; the words are made when printed.
"""

from __future__ import annotations

from ..template_kinds import FixKind as K
from ..template_kinds import MessageKind as M
from .base import Template

EAGER_CLOSURE_MSG = Template(
    M.EAGER_CLOSURE,
    "`{name}` is a new function each time {made}, and {outer} outside jit traces and compiles "
    "its body again for each new function ({count} earlier one(s) of the same code, defined at "
    "{defined_at}).",
)


EAGER_REWRAPPED_MSG = Template(
    M.EAGER_REWRAPPED,
    "{outer} outside jit wraps `{name}` in a new function of its own on every call: JAX traced "
    "and compiled it again though `{name}` is the same function.",
)


EAGER_PRIMITIVE_FIX = Template(
    K.EAGER_PRIMITIVE,
    "Put `@jax.jit` on {target}: under jit {outer} is traced once per input shape and reused "
    "(arguments that set shapes or branches: `static_argnames`).",
)


EAGER_PRIMITIVE_STATIC_FIX = Template(
    K.EAGER_PRIMITIVE_STATIC,
    "Put `@functools.partial(jax.jit, static_argnames={names})` on {target}: {outer} is then "
    "traced once per input shape and reused ({listed}: values jit cannot trace, static).",
)


LIBRARY_EAGER_MSG = Template(
    M.LIBRARY_EAGER,
    "{library}'s `{entry}` runs {outer} outside jit over a function it builds on every call "
    "around your `{name}`: JAX traced `{name}` and compiled {outer} again.",
)


LIBRARY_EAGER_FIX = Template(
    K.LIBRARY_EAGER,
    "Jit the call once, before the loop: `{v}_jit = jax.jit({v})`, then call `{v}_jit(...)` "
    "instead of `{v}(...)`: {outer} is traced once per input shape and reused.",
)


LIBRARY_CLOSURE_MSG = Template(
    M.LIBRARY_CLOSURE,
    "`{spelled}` is a function {library} builds anew around the values passed to it{here}: each build is a new function to jax.jit, which compiled it again though "
    "{count} earlier build(s) of the same code (defined at {defined_at}) had compiled.",
)


LIBRARY_KERNEL_FIX = Template(
    K.LIBRARY_KERNEL,
    "Build `{part} = {factory}` once and jit one function of your own that takes {params} as "
    "argument(s) and does what `{spelled}` does ({defined_at}) with them; pass {params} on "
    "every call.",
)


LIBRARY_STATIC_MSG = Template(
    M.LIBRARY_STATIC,
    "`{arg}` is `{spelled}`, a function {library} builds anew around the values passed to "
    "it{here}: a static function compares by identity, so each build is a new key.",
)


LIBRARY_STATIC_FIX = Template(
    K.LIBRARY_STATIC,
    "Pass {params} to `{fn}` as argument(s) instead, and build `{spelled}` inside it from them "
    "(the {library} call that made it, run under jit): one compile for every value.",
)


LIBRARY_CALL_MSG = Template(
    M.LIBRARY_CALL,
    "{library}'s `{entry}` jits a new function on every call: each is new to jax.jit, which "
    "compiled it again ({count} earlier one(s) of the same code).",
)


LIBRARY_CALL_FIX = Template(
    K.LIBRARY_CALL,
    "Jit your call once, before the loop, over objects built once: `{short}_jit = "
    "jax.jit({callee}{static})`, then call `{short}_jit(...)`: {library}'s jit inside is "
    "traced with it, once per input shape.",
)


LIBRARY_BUILD_FIX = Template(
    K.LIBRARY_BUILD,
    "Jit one function of your own that takes {params} as argument(s) and builds `{spelled}` "
    "inside it with them, instead of jitting each build; pass {params} on every call.",
)


#: ``chain_method="sequential"``: numpyro runs ``fori_collect`` (a new jit) once per chain.
NUMPYRO_SEQUENTIAL_MSG = Template(
    M.NUMPYRO_SEQUENTIAL,
    '`MCMC.run` with `chain_method="sequential"` builds its sample loop anew for each of its '
    "{chains} chains: numpyro compiles it once per chain, and again per `run`.",
)


NUMPYRO_SEQUENTIAL_FIX = Template(
    K.NUMPYRO_SEQUENTIAL,
    'Pass `chain_method="vectorized"` to `MCMC`: all {chains} chains run in one sample loop, '
    'compiled once per `run` (or `"parallel"`, with one device per chain); and draw what you '
    "need in one `run`.",
)


#: ``MCMC.run`` with a progress bar steps a jitted ``_body_fn`` in Python; without
#: ``jit_model_args=True`` it closes over the model's arguments, so each ``run`` builds a new one.
NUMPYRO_MODEL_ARGS_MSG = Template(
    M.NUMPYRO_MODEL_ARGS,
    "`MCMC.run` built its sample step anew around this run's model arguments ({before} -> "
    "{after}): without `jit_model_args=True` numpyro closes the step over them, so each `run` "
    "compiles it again, even on data of the same shape.",
)


NUMPYRO_MODEL_ARGS_FIX = Template(
    K.NUMPYRO_MODEL_ARGS,
    "Pass `jit_model_args=True` to `MCMC(...)`: the sample step then takes the model's "
    "arguments as inputs, and each later `run` on data of the same shapes reuses its compile.",
)


#: ``MCMC.run`` again on other data (a second data set, the same model): the sample loop's
#: compile is one the program needs; "draw what you need in one `run`" cannot apply.
NUMPYRO_NEW_DATA_MSG = Template(
    M.NUMPYRO_NEW_DATA,
    "`MCMC.run` ran on new data ({change}): numpyro compiles its sample loop once per `run`, "
    "so a run on another data set compiles it again.",
)


NUMPYRO_NEW_DATA_FIX = Template(
    K.NUMPYRO_NEW_DATA,
    "Expected once per data set: nothing to fix. (Only more samples from the same data avoid "
    "it: ask for them in one `run`, a larger `num_samples` or `num_chains`.)",
)


#: The stepped sample step's own state (``val``, numpyro's loop carry) changed weak type
#: between steps: HMC with a fixed ``num_steps`` returns it as a Python number.
NUMPYRO_STATE_TYPE_MSG = Template(
    M.NUMPYRO_STATE_TYPE,
    "`{path}` is numpyro's own sample state, not an argument of yours: numpyro's kernel gives "
    "it one type at the start and another after a step ({before} -> {after}; `{{weak}}` is a "
    "Python number's weak type), so numpyro's sample step compiles once for each.",
)


NUMPYRO_STATE_TYPE_FIX = Template(
    K.NUMPYRO_STATE_TYPE,
    "Nothing in your model causes it. Pass `progress_bar=False` to `MCMC(...)`: numpyro then "
    "compiles its whole sample loop once instead of stepping it in Python; or accept the one "
    "extra compile.",
)


#: One step run by a whole-set method and its ``*_on_batch`` twin, which hand it the batch
#: in different containers (``predict``: the array, ``predict_on_batch``: a tuple).
KERAS_MIXED_MSG = Template(
    M.KERAS_MIXED,
    "`{now}` hands keras' {role} step the batch as {after}, `{then}` as {before}: one step, "
    "two input structures, so it compiles once for each.",
)


KERAS_MIXED_FIX = Template(
    K.KERAS_MIXED,
    "Call one of them on this model: `{whole}(x, batch_size=B)` on every set, or `{batch}(x)` "
    "on every batch (padded to one size B).",
)


#: ``model.compile`` run again on a model that already ran a step: keras drops the model's
#: jitted steps (``train_function = None``), so the next ``fit`` jits a new one.
KERAS_RECOMPILE_MSG = Template(
    M.KERAS_RECOMPILE,
    "`{model}.compile` ran again since this model's last {role} step: compiling drops keras' "
    "jitted steps, so `{entry}` jitted a new {role} step and compiled it again ({count} "
    "earlier one(s) of the same code).",
)


KERAS_RECOMPILE_FIX = Template(
    K.KERAS_RECOMPILE,
    "Call `{model}.compile(...)` once, before the loop. To change the learning rate between "
    "calls, set `{model}.optimizer.learning_rate = lr` (a variable the step reads: no "
    "compile); compile again only when what it compiles changes (a layer's `trainable`, the "
    "loss, the metrics).",
)


#: ``fit(x, ...)`` with ``x`` a dict of arrays (a model with named inputs): ``len(x)`` and
#: ``x[:n]`` of the array fix would count and slice its keys.
KERAS_RAGGED_DICT_FIX = Template(
    K.KERAS_RAGGED_DICT,
    "Give `{entry}` a number of samples that is a multiple of `batch_size`{bs}; `x` is a dict, "
    "so cut each of its arrays: `n = len(y) // {b} * {b}`, then "
    "`x = {{k: v[:n] for k, v in x.items()}}`, `y = y[:n]` (or pad them up to a multiple, with "
    "`sample_weight` 0 on the padding){validation}.",
)


KERAS_RAGGED_PREDICT_DICT_FIX = Template(
    K.KERAS_RAGGED_PREDICT_DICT,
    "Pad each array of `x` (a dict) up to a multiple of `batch_size`{bs} before `{entry}`: "
    "`n = -len(next(iter(x.values()))) % {b}`, then "
    "`x = {{k: np.pad(v, [(0, n)] + [(0, 0)] * (v.ndim - 1)) for k, v in x.items()}}`, and "
    "drop the last `n` rows of the output.",
)


#: A jitted function whose code is a library's (``jax.jit(f.apply)``, ``f = hk.transform(...)``
#: built per call): the user cannot redefine it; their line that builds it moves, with the jit.
LIBRARY_OWNED_JIT_FIX = Template(
    K.LIBRARY_OWNED_JIT,
    "`{spelled}` is {library} code (defined at {defined_at}), not yours to edit: {built}. "
    "Build it once, at module level, and jit it once there: {hoist}; then call `{jit}(...)` "
    "instead of jitting it on every call.",
)


#: An object of a library's class that compares by identity (a ``diffrax.Event`` holding a
#: new ``cond_fn``), built per call: the user's line that builds it moves to module level.
LIBRARY_OWNED_OBJECT_FIX = Template(
    K.LIBRARY_OWNED_OBJECT,
    "`{root}` is a `{cls}`, {library} class, not yours to edit: {built}. Build it once, at "
    "module level, and pass that same object on every call: {hoist}{closure}.",
)


#: Where the user's line that builds a library's object was found (``LIBRARY_OWNED_*_FIX``).
BUILT_AT = Template(M.BUILT_AT, "your line {site} builds it anew on every call{of}: `{statement}`")
BUILT_SOMEWHERE = Template(M.BUILT_SOMEWHERE, "your code builds it anew on every call")
JITTED_ANEW = Template(M.JITTED_ANEW, "your code jits it anew on every call")


#: A function of the user's, jitted anew per call, that calls a kernel a library rebuilt around
#: new values (blackjax's ``nuts.step`` closed over an adapted ``step_size``): hoisting the jit
#: as it is would freeze the first kernel; the library's own builder takes them as arguments.
LIBRARY_REBUILT_MSG = Template(
    M.LIBRARY_REBUILT,
    "`{name}` calls `{var}`, which is `{spelled}`: a function {library} builds anew around the "
    "values passed to it (here {params}), so each build makes `{name}` a new function, "
    "compiled again ({count} earlier wrapper(s) of the same code, defined at {defined_at}).",
)


LIBRARY_REBUILT_FIX = Template(
    K.LIBRARY_REBUILT,
    "Build `{part} = {factory}` once at module level and pass {params} as arguments instead "
    "of building `{spelled}` with them: {jit_once}; in `{name}`, call `{call}` in place of "
    "`{var}(...)`. One compile then serves every value.",
)
