"""Issue 44, costs that grow with the work: each measured as work done, never as time.

Keys are described from NumPy arrays (``signature.describe_call``, what a trace describes),
reports and merged views are built as data: no JAX compile here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import merge_samples as s
from jitlens._core import explain, nearest
from jitlens._core.key import Key
from jitlens._core.signature import describe_call
from jitlens._merge import page
from jitlens._merge.merge import merge_reports


def _fn(d: Any, s: Any = None) -> None:
    """The function whose keys are described (its parameter names name the paths)."""


def _key(d: Any, s: Any = None) -> Key:
    return describe_call(_fn, (d, s), {}, static_argnums=(1,))


def _leaves(n: int, size: int, first: int | None = None) -> dict[str, np.ndarray]:
    d = {f"k{i}": np.ones((size,), np.float32) for i in range(n)}
    if first is not None:
        d["k0"] = np.ones((first,), np.float32)
    return d


def _old_rule(new: Key, previous: Sequence[Key]) -> Key | None:
    """The choice before issue 44, the oracle: every key's full diff, the fewest weighted
    reasons (a signature 3, a static changed in place since its compile 0), ties the newest."""
    weight = {"signature": 3, "mutated_static": 0}
    best: tuple[int, int] | None = None
    chosen = None
    for i, k in enumerate(previous):
        score = (sum(weight.get(r.kind, 1) for r in explain.diff_keys(k, new)), -i)
        if best is None or score < best:
            best, chosen = score, k
    return chosen


def test_a_retrace_builds_reasons_for_the_closest_key_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: every live key's full diff (64 x 500 reasons for a 500-leaf dict whose every
    shape changed, 1.7 s). Now: one diff, the closest key's, and the others only walked."""
    keys = [_key(_leaves(300, r + 1)) for r in range(64)]
    new = _key(_leaves(300, 65))
    diffs: list[Key] = []
    reasons: list[int] = []
    real_diff, real_entry = explain.diff_keys, explain._entry_reasons

    def diff(old: Key, n: Key) -> Any:
        diffs.append(old)
        return real_diff(old, n)

    def entry(*args: Any) -> Any:
        reasons.append(1)
        return real_entry(*args)

    monkeypatch.setattr(explain, "diff_keys", diff)
    monkeypatch.setattr(explain, "_entry_reasons", entry)
    found = explain.explain(new, keys)
    assert diffs == [keys[-1]]  # the newest of 64 equally far keys, as before
    assert len(reasons) == 300 and len(found) == 300
    assert {r.kind for r in found} == {"shape"}


def test_finding_the_closest_key_walks_only_what_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3,000-leaf dict with one leaf's shape changing per key: each key's walk compares that
    leaf alone (the others' hashes agree), and each key's digest is made once."""
    keys = [_key(_leaves(3_000, 2, first=r + 1)) for r in range(16)]
    compared: list[int] = []
    digests: list[int] = []
    real_weight, real_digest = nearest._aval_weight, nearest.Digest.__init__

    def weight(a: Any, b: Any) -> int:
        compared.append(1)
        return real_weight(a, b)

    def made(self: nearest.Digest, entries: Any) -> None:
        digests.append(len(entries))
        real_digest(self, entries)

    monkeypatch.setattr(nearest, "_aval_weight", weight)
    monkeypatch.setattr(nearest.Digest, "__init__", made)
    for r in (16, 17):
        new = _key(_leaves(3_000, 2, first=r + 1))
        assert explain.closest(new, keys)[0] is keys[-1]
        keys.append(new)
    assert len(compared) == 16 + 17  # one leaf per key walked
    assert len(digests) == 16 + 2  # each key's digest once, however often it is compared


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.25:
        return {f"a{i}": _random_value(rng, depth + 1) for i in rng.sample(range(5), 3)}
    if depth < 2 and roll < 0.4:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(1, 3))]
    if roll < 0.5:
        return None
    if roll < 0.6:
        return rng.choice((1.0, 2.0))  # a weak-typed scalar
    dtype = rng.choice((np.float32, np.int32, np.float16))
    return np.ones(rng.choice(((2,), (3,), (2, 2))), dtype)


def _random_static(rng: random.Random) -> Any:
    return rng.choice((1, 2, True, 1.0, "a", ("a", 1), None, float("nan"), np.float32))


def test_the_closest_key_is_the_one_the_full_diffs_chose() -> None:
    """The digests' distance picks the key every full diff picked (fewest weighted reasons,
    ties the newest) on random keys: nested dicts and lists, None, weak scalars, dtypes,
    shapes, statics of every plain kind and a NaN."""
    rng = random.Random(44)
    for _ in range(60):
        pool = [(_random_value(rng), _random_static(rng)) for _ in range(4)]
        keys = [_key(*rng.choice(pool)) for _ in range(rng.randint(1, 6))]
        new = _key(*rng.choice(pool))
        assert nearest.nearest(new, keys) is _old_rule(new, keys)


def test_the_merged_page_is_bounded_and_keeps_what_differs() -> None:
    """``jitlens merge --html`` wrote every process's report (~25 KB each: 25 MB for 1,000
    processes). Now: the processes grouped by what they ran, the reports of one process per
    group and of the processes a divergence singles out; 40x the processes, the same size.
    The odd processes, their hosts and the missing peer stay on the page."""
    sizes = {}
    for n in (100, 1_000, 4_000):
        merged = merge_reports(s.job(n, missing=(n // 3,), odd=(7, n // 2)))
        html = merged.to_html()
        sizes[n] = len(html.encode())
        assert f"no report from process {n // 3}" in html
        assert f"processes 7, {n // 2}  retrace at call 1: batch: f32[12,3]" in html
        assert f"host-7, host-{n // 2}" in html  # the hosts that compiled differently
        assert html.count("<iframe") == 3  # one of the 997, and the two odd ones
        assert len(merged.to_text(width=100)) < 2_000
    assert sizes[1_000] <= 5_000_000
    assert sizes[4_000] <= sizes[100] * 1.05
    small = merge_reports(s.job(page.DETAILED, odd=(3,))).to_html()
    assert small.count("<iframe") == page.DETAILED  # a small job: every process, as before


def test_a_process_list_is_bounded_however_the_processes_alternate() -> None:
    """Every other process retracing names 2,000 runs of processes: the page names the first
    ``RUNS`` and how many processes the rest hold, in every list it shows."""
    merged = merge_reports(s.job(4_000, odd=range(0, 4_000, 2)))
    html = merged.to_html()
    assert "and 1,968 more" in html  # 32 of the 2,000 odd processes named
    assert len(html.encode()) < 1_000_000  # DETAILED reports of ~27 KB, and the rest
    assert html.count("<iframe") == page.DETAILED
