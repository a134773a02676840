"""The timeline window's lean path: past the advisor's first calls, a cache hit of a
``jax.jit`` whose cache holds the one executable jitlens saw compiled keeps only its
start time. Everything that could make that wrong must leave the lean path: a miss, a
call that raises, a compile jitlens did not see. Ground truth: the shapes the jitted
body saw (a list appended to inside it), and the program's own exception.
"""

from __future__ import annotations

import traceback
import warnings

import jax
import jax.numpy as jnp
import pytest

import jitlens


def _row(report: jitlens.Report, name: str) -> jitlens.FunctionReport:
    (row,) = [f for f in report.functions if f.name == name]
    return row


def _body(traced: list[object]):
    def double(x):
        traced.append(getattr(x, "shape", [None])[0])
        return x * 2  # None * 2 raises

    return double


def test_a_miss_and_a_failure_on_the_lean_path_are_filed_as_without_it() -> None:
    traced: list[object] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", jitlens.JitlensInternalWarning)
        with jitlens.track(timeline=True) as t:
            f = jax.jit(_body(traced))
            outs = [f(jnp.ones(3)) for _ in range(40)]
            assert f._record.window_seq != -1  # the lean path is armed: the test exercises it
            with pytest.raises(TypeError, match="NoneType") as info:
                f(None)
            outs += [f(jnp.ones(3)), f(jnp.ones(4)), f(jnp.ones(3))]
    # the program's own exception, raised from its own body
    assert info.value.__traceback__ is not None
    assert any(fr.name == "double" for fr in __import__("traceback").extract_tb(info.tb))
    row = _row(t.report(), "double")
    assert traced == [3, None, 4]
    assert (row.calls, row.traces, row.cache_hits) == (44, 3, 41)
    assert len(row.call_times) == len(row.call_entries) == row.calls
    assert list(row.call_entries) == [0] * 40 + [-1, 0, 1, 0]
    assert list(row.call_times) == sorted(row.call_times)
    assert [float(o[0]) for o in outs] == [2.0] * 43


def test_a_compile_between_two_trackers_is_not_filed_under_the_entry_jitlens_saw() -> None:
    """While nothing tracks, a new shape compiles unseen: its later hits are unknown (-1),
    never the entry of the shape jitlens saw compiled."""
    traced: list[object] = []
    with jitlens.track(timeline=True):
        f = jax.jit(_body(traced))
        for _ in range(40):
            f(jnp.ones(3))
        assert f._record.window_seq != -1
    f(jnp.ones(5))  # compiled while jitlens does not listen
    with jitlens.track(timeline=True) as t:
        for _ in range(3):
            f(jnp.ones(5))
            f(jnp.ones(3))
    row = _row(t.report(), "double")
    assert traced == [3, 5]
    assert (row.calls, row.traces) == (6, 0)
    assert list(row.call_entries) == [-1, 0] * 3


def test_hits_of_a_function_compiled_before_tracking_stay_unknown_until_its_miss() -> None:
    """A wrapper made while tracking, of a function JAX compiled before (a shared cache):
    jitlens saw no compile, so its hits go to no known entry (-1), on the lean path too;
    the first new shape is a miss jitlens sees, and its entry is known from then on."""
    traced: list[object] = []
    double = _body(traced)
    jax.jit(double)(jnp.ones(3))  # compiled while nothing tracks
    with jitlens.track(timeline=True) as t:
        f = jax.jit(double)
        for _ in range(40):
            f(jnp.ones(3))
        assert f._record.window_seq != -1
        f(jnp.ones(4))
        f(jnp.ones(4))
        f(jnp.ones(3))
    row = _row(t.report(), "double")
    assert traced == [3, 4]  # the wrapper made while tracking reused the first compile
    assert (row.calls, row.traces) == (43, 1)
    assert list(row.call_entries) == [-1] * 40 + [0, 0, -1]


def test_the_advisors_first_calls_keep_only_their_time_and_still_note_eager_calls() -> None:
    """Among a function's first 32 calls (which the advisor reads) a hit of the one entry
    keeps only its start time too, but a call run under ``jax.disable_jit`` is still no
    cache hit, and a miss or a failure is filed as without the shortcut."""
    traced: list[object] = []
    with jitlens.track(timeline=True) as t:
        f = jax.jit(_body(traced))
        for _ in range(5):
            f(jnp.ones(3))
        assert f._record.early_seq != -1  # armed: the test exercises the shortcut
        assert f._record.window_seq == -1  # ... and not the lean path, which skips the advisor
        with jax.disable_jit():
            f(jnp.ones(3))
            f(jnp.ones(3))
        f(jnp.ones(4))
        with pytest.raises(TypeError, match="NoneType"):
            f(None)
        f(jnp.ones(3))
    row = _row(t.report(), "double")
    assert traced == [3, 3, 3, 4, None]  # the two eager calls ran the body
    assert (row.calls, row.traces, row.cache_hits) == (10, 3, 5)
    assert list(row.call_entries) == [0] * 7 + [1, -1, 0]
    assert len(row.call_times) == row.calls and list(row.call_times) == sorted(row.call_times)
    assert [a.kind for a in row.advice] == ["disable_jit"]


def test_a_settled_function_is_timed_no_more_and_every_figure_stays_exact() -> None:
    """Once a function's hits settle on one executable its window closes early
    (256 more calls): later calls are counted, not timed. Whatever happens
    after — a retrace, a call that raises, a guard that stops a retrace, tracking stopped
    and restarted — counts stay equal to the body's own and the exceptions are the
    program's, raised from its own frames."""
    traced: list[object] = []
    with jitlens.track(timeline=True) as t:
        f = jax.jit(_body(traced))
        steady = 400  # past the advisor's 32 calls and the 256 a settled function is timed for
        for _ in range(steady):
            f(jnp.ones(3))
        assert type(f).__name__ == type(jax.jit(abs)).__name__  # looks like JAX's still
        assert f._record.timed_until < steady  # closed: the test exercises the settled path
        f(jnp.ones(4))  # a retrace after the close: still found, counted, explained
        with pytest.raises(TypeError, match="NoneType") as info:
            f(None)
        with jitlens.no_retrace():
            f(jnp.ones(3))  # a hit
            with pytest.raises(jitlens.RecompileError):
                f(jnp.ones(5))
    frames = traceback.extract_tb(info.tb)
    assert "double" in [fr.name for fr in frames]
    assert not any("/jitlens/_track/" in fr.filename for fr in frames)
    f(jnp.ones(3))  # untracked: passes through, counted by nobody
    with jitlens.track(timeline=True) as t2:
        f(jnp.ones(3))
        f(jnp.ones(4))
    row = _row(t.report(), "double")
    assert traced == [3, 4, None]  # the guard stopped the shape-5 retrace before its body
    assert row.calls == steady + 4
    # hits: the steady calls but the first (its compile), and the one under no_retrace
    assert row.traces == len(traced) and row.cache_hits == steady
    assert [e.kind for e in row.events if e.kind == "retrace"] and row.events[-1].reasons
    timed = len(row.call_times)
    assert timed == f._record.timed_until < steady  # a prefix of the calls
    assert list(row.call_entries) == [0] * timed
    assert list(row.call_times) == sorted(row.call_times)
    again = _row(t2.report(), "double")
    assert (again.calls, again.traces, again.cache_hits) == (2, 0, 2)
    assert again.call_times == ()  # the record's window closed for good
