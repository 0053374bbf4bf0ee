"""The claim toolkit: every test passes where its claim holds and fails where it does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lbrepro.core.claims import (
    CONSISTENCY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    claim_status,
    close,
    consistency,
    make_claim,
)
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    EmptyComparisonError,
    better,
    estimate,
    fit_slope,
    slope_in,
    trend,
    within,
)


def est(mean: float, half: float, batches: int = 20) -> Estimate:
    return Estimate(mean, mean - half, mean + half, half, batches)


def test_estimate_from_rows():
    sim = estimate({"value": 1.0, "ci_low": 0.9, "ci_high": 1.1, "N": 100, "batches": 20})
    assert sim.half_width == pytest.approx(0.1) and sim.N == 100 and sim.batches == 20
    exact = estimate({"value": 2.0, "ci_low": None, "ci_high": None})
    assert exact.half_width == 0 and exact.low == exact.high == 2.0
    assert Estimate.exact(3.0).half_width == 0


def test_within_holds_and_fails():
    e = [est(1.0, 0.1), est(2.0, 0.1)]
    assert within(e, [1.05, 1.97]).passed
    assert not within(e, [1.3, 2.0]).passed
    # Bonferroni: 1.1 is just outside one 95% CI but inside the widened pair.
    assert within(e, [1.105, 2.0]).passed
    assert not within([est(1.0, 0.1)], [1.105]).passed
    # The allowance is added to the tolerance, not multiplied.
    assert within([est(1.0, 0.1)], [1.25], allowance=0.2).passed
    assert not within([est(1.0, 0.1)], [1.25], allowance=0.1).passed


def test_within_exact_estimate_needs_equality():
    assert within([Estimate.exact(1.0)], [1.0]).passed
    assert not within([Estimate.exact(1.0)], [1.0 + 1e-12]).passed


def test_empty_comparisons_fail_loudly():
    with pytest.raises(EmptyComparisonError):
        within([], [])
    with pytest.raises(EmptyComparisonError):
        better([], [])
    with pytest.raises(EmptyComparisonError):
        trend([1], [est(1, 0.1)], "increasing")
    with pytest.raises(EmptyComparisonError):
        fit_slope([1, 1, 1], [1, 2, 3])


def test_better_strict_and_quantifiers():
    a = [est(1.0, 0.05), est(1.0, 0.05)]
    b = [est(1.5, 0.05), est(1.02, 0.05)]
    assert better(a[:1], b[:1]).passed
    assert not better(a, b).passed  # the second pair is not significant
    assert better(a, b, quantifier="any").passed
    assert better(a, b, strict=False).passed  # A is nowhere significantly worse
    assert not better(b, a, strict=False).passed  # B is significantly worse at the first


def test_trend_increasing_decreasing():
    x = [10, 20, 40, 80]
    up = [est(v, 0.05) for v in (1.0, 1.2, 1.5, 2.0)]
    assert trend(x, up, "increasing").passed
    assert not trend(x, up, "decreasing").passed
    flat = [est(1.0, 0.05) for _ in x]
    assert not trend(x, flat, "increasing").passed
    # A significant reversal in the middle breaks "increasing".
    zig = [est(v, 0.05) for v in (1.0, 2.0, 1.2, 2.5)]
    assert not trend(x, zig, "increasing").passed
    # Order of x, not of the list, decides.
    assert trend(x[::-1], up[::-1], "increasing").passed


def test_trend_to_zero_needs_a_real_decline():
    x = [1, 2, 3, 4]
    falling = [est(v, 0.01) for v in (0.4, 0.2, 0.1, 0.05)]
    assert trend(x, falling, "to_zero").passed
    plateau = [est(v, 0.01) for v in (0.4, 0.35, 0.33, 0.32)]
    assert trend(x, plateau, "decreasing").passed
    assert not trend(x, plateau, "to_zero").passed


def test_fit_slope_recovers_a_line_and_its_error():
    rng = np.random.default_rng(1)
    x = np.linspace(0, 10, 50)
    y = 0.5 + 2.0 * x + rng.normal(0, 0.3, x.size)
    fit = fit_slope(x, y)
    assert abs(fit.slope - 2.0) < 4 * fit.se
    assert 0.005 < fit.se < 0.05
    weighted = fit_slope(x, y, sigma=np.full(x.size, 0.3))
    assert weighted.slope == pytest.approx(fit.slope)
    assert weighted.se == pytest.approx(0.3 / math.sqrt(((x - x.mean()) ** 2).sum()))


def test_slope_in():
    fit = fit_slope([0, 1, 2, 3], [0.0, 1.0, 2.1, 2.9])
    assert slope_in(fit, low=0.9, high=1.1).passed
    assert not slope_in(fit, low=1.5).passed
    assert slope_in(fit, low=0.5, significant=True).passed
    assert not slope_in(fit, low=0.99, significant=True).passed


def test_claim_status_and_controls():
    ok, bad = close(1.0, 1.01, 0.05), close(1.0, 1.2, 0.05)
    c = make_claim("x is 1", ok, control=("x at another load", bad))
    assert c.status == REPRODUCED and c.to_dict()["control"]["passed"] is False
    assert make_claim("x is 1", bad, control=("ctl", bad)).status == NOT_REPRODUCED
    assert make_claim("x is 1", ok, control=("ctl", ok)).status == INCONCLUSIVE
    assert consistency("sum is 1", ok).status == CONSISTENCY
    with pytest.raises(ValueError, match="control"):
        make_claim("no control", ok, control=None)
    assert claim_status({"passed": True}) == REPRODUCED  # old entries without a control


def test_close_relative():
    assert close(100.0, 104.0, 0.05, relative=True).passed
    assert not close(100.0, 106.0, 0.05, relative=True).passed


def test_slope_interval_with_known_errors_uses_normal_quantiles():
    fit = fit_slope([0, 1], [0.0, 1.0], sigma=[0.1, 0.1])
    lo, hi = fit.interval()
    assert fit.known_errors
    assert (hi - lo) / 2 == pytest.approx(1.959964 * fit.se, rel=1e-6)


def test_unconverged_estimates_are_named_in_the_details():
    row = {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1, "batches": 20, "converged": False}
    e = estimate(row)
    assert not e.converged and estimate({**row, "converged": True}).converged
    assert "converged = False" in within([e], [1.0]).details
    assert "converged" not in within([est(1.0, 0.1)], [1.0]).details
