"""Jit front-ends that live in libraries: which user function a library's ``jax.jit`` serves.

Some libraries jit the user's function through a callable of their own:
``eqx.filter_jit`` hands ``jax.jit`` a closure defined in equinox's files and
partitions the user's arguments into its own key. Seen from JAX that is a
library-internal jit with a meaningless key. A :class:`Frontend` is the small
adapter that undoes this: it recognises the library's callable, gives back the
user's function and arguments, and names the library's per-call entry point
(so calls and cache hits can be counted). Everything else (records, keys,
explanations, guards) is jitlens' one core. A new front-end is one more
:class:`Frontend` in :data:`FRONTENDS`.

nnx.jit is not one of these: flax exposes its wrapper objects, which
``flax_api`` handles directly.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from . import equinox_api


@dataclasses.dataclass(frozen=True)
class Frontend:
    """How one library's jit maps back to the user's function and arguments."""

    #: The row kind (``eqx.filter_jit``).
    kind: str
    #: A module that is loaded whenever the library can be in use.
    module: str
    #: Is this (what JAX traces) the library's jitted callable?
    detect: Callable[[Any], bool]
    #: JAX's positional arguments -> the user's callable.
    user_function: Callable[[tuple[Any, ...]], Any]
    #: JAX's ``(args, kwargs)`` -> the user's ``(args, kwargs)``, or None.
    user_args: Callable[
        [tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]] | None
    ]
    #: JAX's positional arguments -> a hashable key, equal for callables jitted alike.
    cache_key: Callable[[tuple[Any, ...]], Any]
    #: The same key from the library's wrapper object a call goes through.
    wrapper_key: Callable[[Any], Any]
    #: The library's wrapper object -> the user's callable.
    wrapper_user_function: Callable[[Any], Any]
    #: ``(owner, name)`` of the per-call function, called ``(wrapper, is_lower, args, kwargs)``.
    call_entry: Callable[[], tuple[Any, str] | None]
    #: Non-array leaves (Python numbers too) are static, as in ``eqx.filter_jit``.
    static_leaves: bool = False
    #: JAX's positional arguments -> the library's options that are part of the
    #: compiled key but not of the user's arguments (``donate=``), as ``(name, value)``.
    jit_options: Callable[[tuple[Any, ...]], tuple[tuple[str, Any], ...]] = lambda _args: ()
    #: The library's own callables that only a user jits (``eqx.filter_jit(eqx.nn.Linear(...))``):
    #: a row of the user's, though the code lives in the library's files.
    users_only: Callable[[Any], bool] = lambda _fn: False

    def loaded(self) -> bool:
        return self.module in sys.modules


EQUINOX = Frontend(
    kind=equinox_api.KIND,
    module=equinox_api.JIT_MODULE,
    detect=equinox_api.is_inner,
    user_function=equinox_api.user_function,
    user_args=equinox_api.user_args,
    cache_key=equinox_api.cache_key,
    wrapper_key=equinox_api.wrapper_key,
    wrapper_user_function=equinox_api.wrapper_user_function,
    call_entry=equinox_api.call_entry,
    static_leaves=True,
    jit_options=equinox_api.jit_options,
    users_only=equinox_api.is_equinox_callable,
)

#: Every front-end jitlens knows.
FRONTENDS: tuple[Frontend, ...] = (EQUINOX,)


def frontend_of(fun: Any) -> Frontend | None:
    """The front-end whose jitted callable ``fun`` is (None for a plain ``jax.jit``)."""
    if fun is None:
        return None
    for fe in FRONTENDS:
        try:
            if fe.loaded() and fe.detect(fun):
                return fe
        except Exception:
            continue
    return None
