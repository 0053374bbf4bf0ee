"""The mean of right-censored durations (core.stats.kaplan_meier_mean): by hand, without
censoring, and its interval's coverage where a path's last stay is cut off (affinity-tunneling)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lbrepro.core.stats import kaplan_meier_mean, t_quantile


def test_kaplan_meier_mean_by_hand_and_uncensored() -> None:
    """[1, 2+, 3, 4] (2 censored): S = 1, .75, .75, .375, 0 → area 2.875; no censoring gives the
    sample mean; the largest duration censored leaves the mean open above."""

    mean, se, open_above = kaplan_meier_mean([1.0, 2.0, 3.0, 4.0], [True, False, True, True])
    assert mean == pytest.approx(2.875) and se > 0 and not open_above
    x = np.random.default_rng(3).exponential(2.0, 40)
    mean, se, open_above = kaplan_meier_mean(x, np.ones(40, bool))
    assert mean == pytest.approx(x.mean()) and not open_above
    assert se == pytest.approx(x.std(ddof=1) / math.sqrt(40))
    assert kaplan_meier_mean([1.0, 2.0, 3.0], [True, True, False])[2]
    with pytest.raises(ValueError):
        kaplan_meier_mean([], [])


def test_kaplan_meier_interval_covers_with_a_cut_off_last_stay() -> None:
    """The tunneling case: exponential stays (mean 1) of one path observed for 25 time units,
    the last stay cut off. The interval as affinity-tunneling uses it — mean ± t(n − 1)·se over
    the n complete stays, open above when the cut-off stay is the longest — covers the true
    mean in ≥ 93% of 2,000 paths (measured: 93.8% at 3,000)."""
    rng = np.random.default_rng(11)
    covered, paths = 0, 2000
    for _ in range(paths):
        ends = np.cumsum(rng.exponential(1.0, 200))
        inside = ends[ends < 25.0]
        complete = np.diff(np.concatenate([[0.0], inside]))
        cut = 25.0 - (inside[-1] if inside.size else 0.0)
        mean, se, open_above = kaplan_meier_mean(
            np.concatenate([complete, [cut]]), [True] * len(complete) + [False]
        )
        half = t_quantile(0.975, len(complete) - 1) * se
        covered += mean - half <= 1.0 <= (math.inf if open_above else mean + half)
    assert covered / paths >= 0.93
