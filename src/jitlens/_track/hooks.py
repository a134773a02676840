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

from .. import _compat
from .._compat.probe import tested_range
from .._errors import JitlensError
from . import fastpath, flows, frontends, listeners, patches, selfcheck
from .records import MAX_CALL_TIMES
from .registry import REGISTRY
from .state import (
    DEPTH_KNOWN,
    LEAN_WINDOW,
    STATE,
    TRACING,
    WINDOW,
    internal_failure,
    note_event,
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


_LISTENERS = (listeners.on_scalar, listeners.on_duration, listeners.on_event)


def _keep_listening(clear: Any) -> Any:
    """``jax.monitoring.clear_event_listeners`` as the program calls it (a test fixture, a
    metrics library resetting JAX's listeners): it clears, then jitlens' own listeners are
    registered again, or the compiles and cache hits after it would go uncounted."""

    def clear_event_listeners(*args: Any, **kwargs: Any) -> Any:
        out = clear(*args, **kwargs)
        try:
            _compat.listen_again(*_LISTENERS)
        except Exception as exc:
            internal_failure("registering jitlens' listeners after the program cleared them", exc)
        return out

    clear_event_listeners.__wrapped__ = clear  # type: ignore[attr-defined]
    return clear_event_listeners


def _install() -> None:
    if not _LISTENING[0]:
        MISSING_LISTENERS[:] = _compat.register_listeners(*_LISTENERS)
        DEPTH_KNOWN[0] = "register_event_duration_secs_listener" not in MISSING_LISTENERS
        LEAN_WINDOW[0] = not MISSING_LISTENERS
        _LISTENING[0] = True
    else:  # cleared by the program while no tracker was open?
        _compat.listen_again(*_LISTENERS)
    for owner, name in _compat.listener_clearers():
        _set(owner, name, _keep_listening(getattr(owner, name)))
    _compat.hide_from_tracebacks(_compat.PACKAGE_DIR)
    fastpath.install(_set)  # issue 24: count cache hits that miss JAX's C++ fast path
    if _compat.trace_to_jaxpr_patchable():
        pe = _compat.partial_eval()
        _set(pe, "trace_to_jaxpr", patches.make_trace_to_jaxpr(pe.trace_to_jaxpr))
    checker = _compat.nondiff_checker()
    if checker is not None:  # which statics reach a custom_vjp's nondiff_argnums
        owner, name, check = checker
        _set(owner, name, flows.watch_nondiff(check))
    # Front-ends (jax.jit, nnx.jit, eqx.filter_jit, ...): now if the program
    # imported the library, else the moment it does (jitlens imports none).
    frontends.install()


def _uninstall() -> None:
    frontends.uninstall()
    for owner, attr, original in reversed(_ORIGINALS):
        try:
            setattr(owner, attr, original)
        except Exception as exc:  # pragma: no cover - a read-only attribute now
            internal_failure("restoring a patched function", exc)
    _ORIGINALS.clear()


def _set_window() -> None:
    # a new serial: what the window's lean path knew may have changed while
    # jitlens was not listening (a compile between two trackers)
    note_event()
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
    if selfcheck.result() is None:  # a file read, or the canary's child started
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
    problem = selfcheck.counting_problem() if installed else "jitlens' hooks could not be installed"
    if problem is not None:
        if installed:
            deactivate()
        raise _cannot_count(source, problem)
    with REGISTRY.lock:
        selfcheck.BUDGETS_OPEN[0] += 1


def confirm_counting(source: str) -> None:
    """Before a budget says "passed": the self-check's verdict, and the program's own events.

    A problem seen in the program's events while the budget was open (a trace
    jitlens could not attribute) means the budget may have missed a trace, so
    it must not pass.

    Raises:
      JitlensError: the self-check found that traces cannot be counted.
    """
    if tls.depth > 0:
        return
    done = selfcheck.result()
    if done is not None and done.traces_known and not selfcheck.pending():
        return  # the common case, on every guarded call: no lock, no wait
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
