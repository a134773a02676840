"""Installing and removing jitlens' hooks: reference-counted, all or nothing.

Every tracker and guard calls :func:`activate` when it opens and
:func:`deactivate` when it closes; the hooks are in place while at least one
is open. The monitoring listeners are registered once per process and never
removed (``jax.monitoring`` cannot tell what is registered; an idle listener
costs one list read per trace or compile, never per call). If installing
fails half-way, everything installed so far is undone and jitlens reports the
failure once: the program runs as if jitlens were not there.
"""

from __future__ import annotations

from typing import Any

import jax

from .. import _compat
from .._compat.probe import tested_range
from .._errors import JitlensError
from . import fe_pmap, frontends, listeners, patches, selfcheck
from .calls import make_nnx_call
from .records import MAX_CALL_TIMES
from .registry import REGISTRY
from .state import (
    DEPTH_KNOWN,
    STATE,
    TRACING,
    WINDOW,
    internal_failure,
    tls,
    update_threshold,
)

_ORIGINALS: list[tuple[Any, str, Any]] = []
_LISTENING = [False]
#: Monitoring registration functions this JAX lacks (trace counting needs the scalar one).
MISSING_LISTENERS: list[str] = []


def _set(owner: Any, attr: str, value: Any) -> None:
    _ORIGINALS.append((owner, attr, getattr(owner, attr)))
    setattr(owner, attr, value)


def _install() -> None:
    if not _LISTENING[0]:
        MISSING_LISTENERS[:] = _compat.register_listeners(
            listeners.on_scalar, listeners.on_duration, listeners.on_event
        )
        DEPTH_KNOWN[0] = "register_event_duration_secs_listener" not in MISSING_LISTENERS
        _LISTENING[0] = True
    _compat.hide_from_tracebacks(_compat.PACKAGE_DIR)
    for cls, _kind in _compat.NNX_WRAPPERS:
        _set(cls, "__call__", make_nnx_call(cls.__call__))
    _set(jax, "jit", patches.make_tracked_jit(jax.jit))
    frontends.install()  # eqx.filter_jit calls, if the program imported equinox
    fe_pmap.install(_set)  # jitlens-frontends: jax.pmap / nnx.pmap counted
    owners = _compat.cached_partial_owners()
    if owners:
        patched = patches.make_cached_partial(getattr(*owners[0]))
        for owner, attr in owners:
            _set(owner, attr, patched)
    _set(jax, "eval_shape", patches.make_eval_shape(jax.eval_shape))
    if _compat.trace_to_jaxpr_patchable():
        pe = _compat.partial_eval()
        _set(pe, "trace_to_jaxpr", patches.make_trace_to_jaxpr(pe.trace_to_jaxpr))


def _uninstall() -> None:
    frontends.uninstall()
    for owner, attr, original in reversed(_ORIGINALS):
        try:
            setattr(owner, attr, original)
        except Exception as exc:  # pragma: no cover - a read-only attribute now
            internal_failure("restoring a patched function", exc)
    _ORIGINALS.clear()


def _set_window() -> None:
    WINDOW[0] = MAX_CALL_TIMES if REGISTRY.timelines else 0
    update_threshold()


def activate(timeline: bool = False) -> bool:
    """Install the hooks (reference-counted); ``timeline`` also times each call.

    Returns False when the hooks could not be installed (jitlens stepped aside).
    """
    with REGISTRY.lock:
        if REGISTRY.depth > 0:
            REGISTRY.depth += 1
            REGISTRY.timelines += bool(timeline)
            _set_window()
            return REGISTRY.active
        try:
            _install()
        except Exception as exc:
            _uninstall()
            internal_failure("installing jitlens' hooks", exc)
            return False
        REGISTRY.depth = 1
        REGISTRY.timelines = int(bool(timeline))
        _set_window()
        TRACING[0] = 0
        update_threshold()
        REGISTRY.active = True
        STATE[0] = True
    if selfcheck.result() is None:  # outside the lock: the canary runs in a thread of its own
        try:
            selfcheck.run()
        except Exception as exc:
            internal_failure("jitlens' self-check", exc)
    return True


def activate_counting(source: str) -> None:
    """:func:`activate` for a compile budget, which must not pass when jitlens cannot count.

    Raises:
      JitlensError: the hooks could not be installed, or the self-check found
        that traces cannot be counted on the installed JAX/Flax.
    """
    installed = activate()
    if installed:
        selfcheck.check_late_frontends()
    problem = selfcheck.counting_problem() if installed else "jitlens' hooks could not be installed"
    if problem is not None:
        if installed:
            deactivate()
        raise _cannot_count(source, problem)
    with REGISTRY.lock:
        selfcheck.BUDGETS_OPEN[0] += 1


def confirm_counting(source: str) -> None:
    """Before a budget says "passed": a self-check still pending runs now.

    A budget opened before the program's first JAX operation cannot run the
    canary then (it waits for the backends); if no tracked call ran it since
    (a jitted function made before jitlens was active is not tracked), it
    runs here, outside any trace, so that the budget cannot pass on counts
    that were never right.

    Raises:
      JitlensError: the self-check found that traces cannot be counted.
    """
    if tls.depth > 0 or tls.busy:
        return
    selfcheck.check_late_frontends()
    done = selfcheck.result()
    if done is not None and done.traces_known and not selfcheck.CANARY_PENDING[0]:
        return  # the common case, on every guarded call: no lock, no canary
    problem = selfcheck.counting_problem()
    if problem is not None:
        raise _cannot_count(source, problem)


def _cannot_count(source: str, why: str) -> JitlensError:
    return JitlensError(
        selfcheck.CANNOT_COUNT.format(
            source=source,
            jax=_compat.jax_version(),
            flax=_compat.flax_version(),
            why=why,
            tested=tested_range(),
        )
    )


def deactivate_counting(_unused: Any = None) -> None:
    """Undo one :func:`activate_counting`."""
    with REGISTRY.lock:
        selfcheck.BUDGETS_OPEN[0] = max(0, selfcheck.BUDGETS_OPEN[0] - 1)
    deactivate()


def deactivate(timeline: bool = False) -> None:
    """Undo one :func:`activate`; the last one removes the hooks."""
    with REGISTRY.lock:
        if REGISTRY.depth <= 0:
            return
        REGISTRY.depth -= 1
        REGISTRY.timelines = max(0, REGISTRY.timelines - bool(timeline))
        _set_window()
        if REGISTRY.depth > 0:
            return
        REGISTRY.active = False
        STATE[0] = False
        _uninstall()
