"""The claim toolkit: every decision rule holds, fails and straddles on synthetic data, and a
true claim is decided "not reproduced" at most at the stated error rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lbrepro.core.claims import (
    CONSISTENCY,
    DIAGNOSTIC,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    claim_status,
    close,
    consistency,
    diagnostic,
    gate,
    make_claim,
)
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    Component,
    EmptyComparisonError,
    Verdict,
    agreement_margin,
    agrees,
    better,
    decide,
    estimate,
    exact,
    fit_slope,
    slope_in,
    trend,
)


def est(mean: float, half: float, batches: int = 20, converged: bool = True) -> Estimate:
    return Estimate(mean, mean - half, mean + half, half, batches, converged=converged)


def test_estimate_from_rows():
    sim = estimate(
        {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1, "N": 100, "batches": 20, "converged": True}
    )
    assert sim.half_width == pytest.approx(0.1) and sim.N == 100 and sim.batches == 20
    exact_row = estimate({"value": 2.0, "ci_low": None, "ci_high": None})
    assert exact_row.half_width == 0 and exact_row.low == exact_row.high == 2.0
    assert Estimate.exact(3.0).half_width == 0


@pytest.mark.parametrize("missing", ["batches", "converged"])
def test_a_simulated_row_must_carry_batches_and_converged(missing):
    row = {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1, "batches": 20, "converged": True}
    del row[missing]
    with pytest.raises(ValueError, match=missing):
        estimate(row)


def test_agrees_holds_fails_and_straddles():
    # Inside the margin with room: reproduced.
    assert agrees([est(1.0, 0.01)], [1.005], margin=0.02).outcome == REPRODUCED
    # Wholly outside the margin: not reproduced.
    assert agrees([est(1.0, 0.01)], [1.05], margin=0.02).outcome == NOT_REPRODUCED
    # The interval straddles the margin: undecided, and it says what would decide it.
    v = agrees([est(1.0, 0.01)], [1.02], margin=0.02)
    assert v.outcome == UNDECIDED and "half-width <" in v.needs
    # A wide interval is never read as agreement (equivalence is tested, not inferred).
    assert agrees([est(1.0, 0.5)], [1.0], margin=0.02).outcome == UNDECIDED


def test_agrees_worst_component_decides_and_bonferroni_widens():
    e = [est(1.0, 0.01), est(2.0, 0.01)]
    assert agrees(e, [1.0, 2.0], margin=0.02).outcome == REPRODUCED
    assert agrees(e, [1.0, 2.1], margin=0.02).outcome == NOT_REPRODUCED
    # 0.0115 + 0.01 < 0.022 alone, but not after widening over two comparisons.
    assert agrees([est(1.0, 0.01)], [1.0115], margin=0.022).outcome == REPRODUCED
    assert agrees(e, [1.0115, 2.0], margin=0.022).outcome == UNDECIDED


def test_agrees_needs_a_positive_margin_and_never_decides_an_unresolved_value():
    with pytest.raises(ValueError, match="positive"):
        agrees([est(1.0, 0.1)], [1.0], margin=0.0)
    # A simulated fraction never observed: [0, 0] from 20 batches is not an interval.
    never = Estimate(0.0, 0.0, 0.0, 0.0, 20)
    v = agrees([never], [1.7e-6], margin=1e-3)
    assert v.outcome == UNDECIDED and "unresolved" in v.needs
    assert math.isfinite(v.measured)
    # Exact values are decided outright.
    assert agrees([Estimate.exact(1.0)], [1.0], margin=1e-9).outcome == REPRODUCED


def test_agreement_margin():
    assert agreement_margin(0.5) == pytest.approx(0.01)
    assert agreement_margin(1e-6, floor=1e-4) == 1e-4


def test_unconverged_estimates_invalidate_the_verdict():
    v = agrees([est(1.0, 0.001, converged=False)], [1.0], margin=0.02)
    assert v.outcome == UNDECIDED and "converged = False" in v.invalid
    c = make_claim("x", v, control=("y", v), distance="d")
    assert c.status == UNDECIDED and c.to_dict()["reason"].startswith("invalid run")


def test_empty_comparisons_fail_loudly():
    with pytest.raises(EmptyComparisonError):
        agrees([], [], margin=1.0)
    with pytest.raises(EmptyComparisonError):
        better([], [], min_effect=0.0)
    with pytest.raises(EmptyComparisonError):
        trend([1.0], [est(1.0, 0.1)], "increasing", min_effect=0.1)
    with pytest.raises(EmptyComparisonError):
        fit_slope([1.0, 1.0], [2.0, 3.0])


def test_better_superiority_with_a_minimum_effect():
    a, b = [est(1.0, 0.01)], [est(1.2, 0.01)]
    assert better(a, b, min_effect=0.1).outcome == REPRODUCED
    assert better(a, b, min_effect=0.3).outcome == NOT_REPRODUCED
    assert better(a, b, min_effect=0.2).outcome == UNDECIDED
    # Reversed: A is worse.
    assert better(b, a, min_effect=0.0).outcome == NOT_REPRODUCED


def test_better_noninferiority_is_not_a_knife_edge():
    # A difference of 1e-5 against a margin of 1%: decided, whatever its sign.
    a, b = [est(1.00001, 1e-4)], [est(1.0, 1e-4)]
    assert better(a, b, min_effect=0.01, strict=False).outcome == REPRODUCED
    assert better([est(1.05, 1e-3)], b, min_effect=0.01, strict=False).outcome == NOT_REPRODUCED


def test_better_quantifiers():
    a = [est(1.0, 0.01), est(1.0, 0.01)]
    b = [est(1.2, 0.01), est(0.9, 0.01)]
    assert better(a, b, min_effect=0.05, quantifier="all").outcome == NOT_REPRODUCED
    assert better(a, b, min_effect=0.05, quantifier="any").outcome == REPRODUCED
    worse = [est(0.8, 0.01), est(0.9, 0.01)]
    assert better(a, worse, min_effect=0.05, quantifier="any").outcome == NOT_REPRODUCED


def test_trend_holds_fails_and_straddles():
    x = [1, 2, 3]
    up = [est(1.0, 0.01), est(1.5, 0.01), est(2.0, 0.01)]
    assert trend(x, up, "increasing", min_effect=0.1).outcome == REPRODUCED
    assert trend(x, up, "decreasing", min_effect=0.1).outcome == NOT_REPRODUCED
    # A step that reverses by more than the minimum effect vetoes the claim.
    bump = [est(1.0, 0.01), est(2.0, 0.01), est(1.5, 0.01)]
    assert trend(x, bump, "increasing", min_effect=0.1).outcome == NOT_REPRODUCED
    # First → last resolved by less than the interval: undecided.
    flat = [est(1.0, 0.1), est(1.05, 0.1), est(1.1, 0.1)]
    assert trend(x, flat, "increasing", min_effect=0.1).outcome == UNDECIDED


def test_trend_to_zero_needs_a_stated_decline():
    x = [10, 100, 1000]
    falls = [est(1.0, 0.01), est(0.5, 0.01), est(0.1, 0.01)]
    assert trend(x, falls, "to_zero", min_effect=0.05, ratio=0.5).outcome == REPRODUCED
    slow = [est(1.0, 0.01), est(0.9, 0.01), est(0.8, 0.01)]
    assert trend(x, slow, "to_zero", min_effect=0.05, ratio=0.5).outcome == NOT_REPRODUCED


def test_fit_slope_recovers_a_line_and_its_error():
    rng = np.random.default_rng(1)
    x = np.arange(20.0)
    y = 0.5 + 2.0 * x + rng.normal(0, 0.1, x.size)
    fit = fit_slope(x, y)
    assert fit.slope == pytest.approx(2.0, abs=0.02)
    lo, hi = fit.interval()
    assert lo < 2.0 < hi


def test_slope_in_three_outcomes():
    fit = fit_slope([1, 2, 3], [1, 2, 3], sigma=[0.01, 0.01, 0.01])
    assert slope_in(fit, low=0.5).outcome == REPRODUCED
    assert slope_in(fit, low=2.0).outcome == NOT_REPRODUCED
    assert slope_in(fit, low=1.0).outcome == UNDECIDED
    two = fit_slope([1, 2], [1, 2])
    assert slope_in(two, low=0.5).outcome == UNDECIDED  # no standard error: unresolved


def test_slope_interval_with_known_errors_uses_normal_quantiles():
    fit = fit_slope([0, 1], [0, 1], sigma=[1.0, 1.0])
    lo, hi = fit.interval()
    assert (hi - lo) / 2 == pytest.approx(1.959964 * fit.se, rel=1e-6)


def test_decide_any_and_veto_components():
    c_hold = Component("a", 1.0, 0.1, 0.0)
    c_fail = Component("b", -1.0, 0.1, 0.0)
    v = decide([c_hold, c_fail], quantifier="any", expected="e", tolerance="t")
    assert v.outcome == REPRODUCED
    veto = Component("v", -1.0, 0.1, 0.0, veto=True)
    assert decide([c_hold, veto], expected="e", tolerance="t").outcome == NOT_REPRODUCED


def test_verdict_refuses_a_bool_outcome_and_a_null_statistic():
    with pytest.raises(TypeError):
        Verdict(True, 1.0, "e", "t")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Verdict(REPRODUCED, math.inf, "e", "t")
    with pytest.raises(ValueError):
        Verdict(REPRODUCED, None, "e", "t")  # type: ignore[arg-type]


def test_claim_status_controls_and_kinds():
    ok = exact(True, 1.0, "1")
    bad = exact(False, 2.0, "1")
    assert make_claim("x", ok, control=("near", bad), distance="d").status == REPRODUCED
    # A near miss that is reproduced too: the run cannot tell them apart.
    indistinct = make_claim("x", ok, control=("near", ok), distance="d")
    assert indistinct.status == UNDECIDED
    assert indistinct.to_dict()["reason"].startswith("the control")
    assert make_claim("x", bad, control=("near", bad), distance="d").status == NOT_REPRODUCED
    assert consistency("c", ok).status == CONSISTENCY
    assert claim_status({"kind": "verdict", "outcome": "???"}) == UNDECIDED
    with pytest.raises(ValueError, match="control"):
        make_claim("x", ok, control=None)
    with pytest.raises(ValueError, match="distance"):
        make_claim("x", ok, control=("near", bad))


def test_a_failed_diagnostic_invalidates_the_verdicts_on_its_run():
    ok = exact(True, 1.0, "1")
    bad = exact(False, 2.0, "1")
    diag = diagnostic("work conservation", bad, runs=["lomax1.5"])
    on_run = make_claim("tail", ok, control=("near", bad), distance="d", runs=["lomax1.5"])
    other = make_claim("tail", ok, control=("near", bad), distance="d", runs=["erlang2"])
    gated = gate([diag, on_run, other])
    assert gated[0].status == DIAGNOSTIC
    assert gated[1].status == UNDECIDED and "work conservation" in gated[1].invalid
    assert gated[2].status == REPRODUCED
    passing = diagnostic("work conservation", ok, runs=["lomax1.5"])
    assert gate([passing, on_run])[1].status == REPRODUCED


def test_a_diagnostic_fails_on_its_statistic_never_on_a_flag_alone():
    """Only a diagnostic whose interval lies on the failing side gates its run's verdicts:
    one that straddles its margin, or rests on a run with no honest interval (its own
    verdicts are invalid already), shows the run wrong in nothing."""
    ok = exact(True, 1.0, "1")
    near = exact(False, 2.0, "1")
    on_run = make_claim("tail", ok, control=("near", near), distance="d", runs=["r"])
    # Work conservation on an estimate with no honest interval: undecided, by the flag.
    flagged = agrees([est(0.7, 0.001, converged=False)], [0.7], margin=0.01)
    assert flagged.outcome == UNDECIDED and flagged.invalid
    straddles = agrees([est(0.7, 0.02)], [0.7], margin=0.01)
    assert straddles.outcome == UNDECIDED and not straddles.invalid
    for undecided in (flagged, straddles):
        diag = diagnostic("work conservation", undecided, runs=["r"])
        assert gate([diag, on_run])[1].status == REPRODUCED
    # On its statistic: the interval wholly beyond the margin fails it.
    failing = agrees([est(0.75, 0.001)], [0.7], margin=0.01)
    assert failing.outcome == NOT_REPRODUCED
    gated = gate([diagnostic("work conservation", failing, runs=["r"]), on_run])
    assert gated[1].status == UNDECIDED and "work conservation" in gated[1].invalid


def test_close_relative():
    assert close(100.0, 101.0, 0.02, relative=True).outcome == REPRODUCED
    assert close(100.0, 103.0, 0.02, relative=True).outcome == NOT_REPRODUCED


def test_true_claims_are_rejected_at_most_at_the_stated_error_rate():
    """Over many synthetic replications, a true claim is "not reproduced" at most 2.5% (the far
    side of a family-wise 95% interval), and its near miss is rejected when the data resolve it."""
    rng = np.random.default_rng(20261202)
    reps, m, batches = 4000, 4, 20
    truth = np.array([0.5, 0.25, 0.06, 0.004])
    margins = np.array([agreement_margin(t, floor=1e-3) for t in truth])
    # The truth sits right at 0.9 margins from the reference: a true, hard claim.
    references = truth - 0.9 * margins
    tq = 2.093024054408263  # t quantile 0.975, 19 dof
    rejected = {"agrees": 0, "better": 0, "trend": 0}
    for _ in range(reps):
        sd = 0.2 * margins
        batch = truth + sd * rng.standard_normal((batches, m))
        mean, s = batch.mean(axis=0), batch.std(axis=0, ddof=1) / math.sqrt(batches)
        es = [est(float(mu), float(tq * si), batches) for mu, si in zip(mean, s, strict=True)]
        if agrees(es, references, margin=margins).outcome == NOT_REPRODUCED:
            rejected["agrees"] += 1
        # "A better than B by more than 0.01": true gap 0.012.
        a = est(float(rng.normal(1.0, 0.002)), 0.002 * tq / 1.0)
        b = est(float(rng.normal(1.012, 0.002)), 0.002 * tq / 1.0)
        if better([a], [b], min_effect=0.01).outcome == NOT_REPRODUCED:
            rejected["better"] += 1
        # An increasing sweep whose total change exceeds the minimum effect by little.
        xs = [1.0, 2.0, 3.0]
        ys = [1.0, 1.03, 1.06]
        sweep = [est(float(rng.normal(y, 0.005)), 0.005 * tq) for y in ys]
        if trend(xs, sweep, "increasing", min_effect=0.05).outcome == NOT_REPRODUCED:
            rejected["trend"] += 1
    for test, count in rejected.items():
        rate = count / reps
        # 2.5% nominal; binomial sd at 4000 reps is 0.25%: allow 3 sd.
        assert rate <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / reps), (test, rate)


def test_an_unresolved_component_is_never_the_statistic_shown():
    """A component the run did not resolve decides nothing, so it is not the number shown:
    the statistic is a resolved component's; with none measurable it is said in words."""
    from lbrepro.core.verdicts import Component, decide

    seen = Component("u_2", 0.50, 0.01, 0.45)  # holds
    unseen = Component("u_9", 0.0, 0.0, 0.45, resolved=False)  # never observed
    v = decide([seen, unseen], expected="u_k > 0.45", tolerance="t")
    assert v.outcome == UNDECIDED and v.measured == 0.5, v
    assert "u_9 unresolved" in v.needs
    ratio = Component("x(2,1) ratio", math.inf, math.inf, 1.0, side="below")
    v = decide([ratio], expected="ratio < 1", tolerance="t")
    assert v.outcome == UNDECIDED and v.measured == "x(2,1) ratio: not measured", v
    assert v.interval is None


def _sequential(offset: float, wrong: str, seed: int) -> tuple[float, float, float, float]:
    """Synthetic runs doubled until their claim (|x − 0.5| < 0.02) is decided, at most twice
    (the default extend), the truth ``offset`` margins from the reference: the rate of the
    ``wrong`` outcome, its union bound 2.5% × looks, and the undecided fraction at the first
    look and at the end."""
    rng = np.random.default_rng(seed)
    reps, extend, margin, sd0 = 4000, 2, 0.02, 0.004
    tq = 2.093024054408263  # t quantile 0.975, 19 dof
    wrong_count = looks_total = undecided_first = undecided_last = 0
    for _ in range(reps):
        blocks = 0.5 + offset * margin + sd0 * rng.standard_normal(2**extend)
        length, looks, doublings = 1, 0, 0
        while True:
            looks += 1
            mean = float(blocks[:length].mean())
            v = agrees([est(mean, tq * sd0 / math.sqrt(length), 20)], [0.5], margin=margin)
            undecided_first += looks == 1 and v.outcome == UNDECIDED
            if v.outcome != UNDECIDED or not 1.0 < v.length_needed <= 2.0 ** (extend - doublings):
                break
            length, doublings = 2 * length, doublings + 1
        undecided_last += v.outcome == UNDECIDED
        wrong_count += v.outcome == wrong
        looks_total += looks
    return (
        wrong_count / reps,
        0.025 * looks_total / reps,
        undecided_first / reps,
        undecided_last / reps,
    )


@pytest.mark.parametrize(
    "offset, wrong",
    [(0.9, NOT_REPRODUCED), (1.0, REPRODUCED), (1.1, REPRODUCED), (0.5, NOT_REPRODUCED)],
)
def test_sequential_doubling_errs_at_most_once_per_look(offset: float, wrong: str) -> None:
    """A run doubled until its claim is decided looks at the decision up to 1 + extend times.
    A true claim at 0.9 margins, a false one on the margin (the worst case: it is wrongly
    reproduced more often than 2.5%, so the per-look bound is needed) or at 1.1: the wrong
    decision's rate stays within the union bound the report states, 2.5% per look."""
    rate, bound, _, _ = _sequential(offset, wrong, seed=20261203)
    assert rate <= bound + 3 * math.sqrt(bound * (1 - bound) / 4000), (rate, bound)


def test_sequential_doubling_decides_what_more_data_can_decide() -> None:
    """Doubling must decide claims, or it costs runs for nothing: a true claim at half a
    margin, undecided at the first look in about a third of the runs, is undecided in under
    a tenth at the end."""
    _, _, first, last = _sequential(0.5, NOT_REPRODUCED, seed=20261204)
    assert first > 0.2 and last < 0.1, (first, last)


def test_a_run_asks_for_the_nearest_length_that_decides_one_of_its_claims():
    """length_to_decide: the smallest factor among the undecided verdicts (1 when all are
    decided), so a claim one doubling decides is not left undecided beside a claim that needs
    more than the doublings left."""
    from lbrepro.core.verdicts import length_to_decide

    def verdict(outcome: str, factor: float) -> Verdict:
        return Verdict(outcome, 0.0, "", "", length_needed=factor)

    decided = verdict(REPRODUCED, 1.0)
    near, far = verdict(UNDECIDED, 1.3), verdict(UNDECIDED, 18.0)
    assert length_to_decide([decided, near, far]) == 1.3
    assert length_to_decide([decided, far]) == 18.0
    assert length_to_decide([decided]) == 1.0
    assert length_to_decide([]) == 1.0
    assert length_to_decide([verdict(UNDECIDED, math.inf), near]) == 1.3


# --- attribution, statements and the tally -------------------------------------------------


def _exact_claim(value: float, lo: float, text: str = "x above lo", **kw: object) -> object:
    """A verdict "value > lo" with a near-miss control "value > lo + 1" (exact numbers)."""
    from lbrepro.core.claims import make_claim as mk

    return mk(
        text,
        exact(value > lo, value, f"> {lo}", "exact"),
        control=("one more", exact(value > lo + 1, value, f"> {lo + 1}", "exact")),
        distance="one unit above",
        **kw,
    )


def test_attribute_says_which_reading_holds() -> None:
    from lbrepro.core.claims import DEPENDS, FAILS_EVERY, HOLDS_EVERY, Reading, attribute

    def att(a: float, b: float) -> object:
        return attribute(
            "the measure",
            [
                Reading("A", "waiting jobs", _exact_claim(a, 0)),
                Reading("B", "jobs in system", _exact_claim(b, 0)),
            ],
            finding="defect",
        )

    both = att(0.5, 0.5)
    assert both.attribution["verdict"] == HOLDS_EVERY and both.finding is None
    none = att(-1, -2)
    assert none.attribution["verdict"] == FAILS_EVERY and none.finding == "defect"
    mixed = att(-1, 0.5)  # the first reading fails, the other holds: ours, not the paper's
    assert mixed.attribution["verdict"] == DEPENDS and mixed.finding is None
    entry = mixed.to_dict()
    assert [r["status"] for r in entry["attribution"]["readings"]] == [NOT_REPRODUCED, REPRODUCED]
    assert entry["attribution"]["readings"][1]["measured"] == 0.5
    with pytest.raises(ValueError, match="two readings"):
        attribute("x", [Reading("A", "a", _exact_claim(1, 0))])


def test_statement_aggregates_its_points_and_counts_once() -> None:
    from lbrepro.core.tally import aggregate, tally

    assert aggregate([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert aggregate([REPRODUCED, UNDECIDED]) == UNDECIDED
    assert aggregate([UNDECIDED, NOT_REPRODUCED, REPRODUCED]) == NOT_REPRODUCED
    with pytest.raises(ValueError):
        aggregate([])
    pts = [_exact_claim(v, 0, f"x > 0 at point {i}", statement="s1").to_dict()
           for i, v in enumerate([0.5, 0.7, -1])]  # fmt: skip
    pts[2]["finding"] = "defect"
    other = _exact_claim(0.5, 0, "another statement").to_dict()
    t = tally({"p": [("art", e) for e in [*pts, other]]})
    sec = t["papers"]["p"]
    # three points of one statement are one verdict; it fails because one point does
    assert sec["statements"] == {REPRODUCED: 1, NOT_REPRODUCED: 1, UNDECIDED: 0}
    assert sec["findings"][0]["id"] == "defect" and sec["findings"][0]["claims"] == 1
    assert sec["findings"][0]["statements"] == [("art", "s1")]


def test_tally_sets_baseline_reconstructions_and_lbrepro_apart() -> None:
    from lbrepro.core.claims import Finding, Reading, attribute
    from lbrepro.core.tally import tally

    dep = attribute(
        "the split",
        [Reading("A", "a", _exact_claim(-1, 0, "beats")), Reading("B", "b", _exact_claim(1, 0))],
    ).to_dict()
    own = _exact_claim(-1, 0, "our stricter check", source="lbrepro", finding="rem").to_dict()
    base = _exact_claim(1, 0, "supermarket agrees").to_dict()
    found = {"p": {"rem": Finding("remainder", "an O(1/N) term", {"art": "0.007"}, "lbrepro")}}
    t = tally({"p": [("art", dep), ("art", own)], "supermarket": [("sm", base)]}, found)
    sec = t["papers"]["p"]
    assert sec["statements"] == {REPRODUCED: 0, NOT_REPRODUCED: 0, UNDECIDED: 0}
    assert [s["statement"] for s in sec["reconstruction"]] == ["beats"]
    assert sec["reconstruction"][0]["points"][0]["readings"][1]["status"] == REPRODUCED
    assert sec["findings"] == [] and sec["lbrepro"][NOT_REPRODUCED] == 1
    assert sec["lbrepro_findings"][0]["source"] == "lbrepro"
    assert "supermarket" in t["baseline"] and "supermarket" not in t["papers"]
    assert t["total"][REPRODUCED] == 0 and t["total"]["reconstruction"] == 1


def test_finding_text_names_cause_and_evidence() -> None:
    from lbrepro.core.claims import Finding

    f = Finding("θ", "θ = μ^(d−1)/d", {"general-sojourn": "T_d with θ = 1 is 2.614"})
    assert "θ = μ^(d−1)/d" in str(f) and "2.614" in str(f)
    with pytest.raises(ValueError):
        Finding("x", "y", source="someone")


def test_a_margin_is_relative_where_the_quantity_is_small() -> None:
    from lbrepro.core.verdicts import SMALL_QUANTITY, bounded_margin

    # a fraction of 10⁻³ measured as 4·10⁻³: an absolute 0.01 margin lets it pass
    est = [Estimate(0.004, 0.0039, 0.0041, 0.0001, 20)]
    assert agrees(est, [0.001], margin=0.01).outcome == REPRODUCED
    # capped at half the quantity, the same table fails: the run measured something else
    m = bounded_margin(0.001, 0.01)
    assert m == pytest.approx(SMALL_QUANTITY * 0.001)
    assert agrees(est, [0.001], margin=m).outcome == NOT_REPRODUCED
    # a large quantity keeps its absolute margin; the run's resolution is a floor
    assert bounded_margin(0.5, 0.01) == 0.01
    assert bounded_margin(1e-9, 0.01, floor=1e-6) == 1e-6


def test_close_is_exact_within_a_tolerance_and_claims_close_is_the_same_function():
    """One rule for exact comparisons: ``close`` decides by ``exact`` (claims re-exports it)."""
    from lbrepro.core import claims, verdicts

    assert claims.close is verdicts.close
    for args, kw in [
        ((1.0, 1.005, 0.01), {}),
        ((1.0, 1.02, 0.01), {}),
        ((2.0, 2.01, 0.01), {"relative": True}),
    ]:
        v = verdicts.close(*args, **kw)
        err = abs(args[1] - args[0])
        holds = err <= args[2] * (abs(args[0]) if kw else 1.0)
        assert v.outcome == exact(holds, args[1], "x").outcome
    assert verdicts.close(0.0, 1e-12, 1e-9).outcome == REPRODUCED
    assert verdicts.close(0.0, 1e-6, 1e-9).outcome == NOT_REPRODUCED
