"""Claim checks of the universality artifacts on synthetic tables: each passes where its claim
holds (with its control failing) and fails where the claim is false. No simulation."""

from __future__ import annotations

import math

import pytest

from lbrepro.artifacts.universality import diffusion, fluid, overhead
from lbrepro.core.claims import CONSISTENCY, REPRODUCED
from lbrepro.core.errors import ConfigError
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import universality as model

LAM = 0.9


def sim(family, N, quantity, value, half, **extra):
    return {
        "method": "sim",
        "family": family,
        "N": N,
        "d": model.d_of_N(family, N),
        "quantity": quantity,
        "value": value,
        "ci_low": value - half,
        "ci_high": value + half,
        "batches": 20,
        "seed": 1,
    } | extra


def assert_holds(claims):
    """Every claim passes; every verdict's control exists and fails."""
    assert claims
    for c in claims:
        assert c.passed, c
        if c.kind == CONSISTENCY:
            assert c.control is None
            continue
        assert c.control is not None, c.claim
        assert not c.control["passed"], (c.claim, c.control)
        assert c.status == REPRODUCED


def failing(claims, words):
    """The failing claims among those whose text contains ``words`` (which must exist)."""
    hit = [c for c in claims if words in c.claim]
    assert hit, words
    return [c for c in hit if not c.passed]


# --------------------------------------------------------------------------- fluid
FLUID_CFG = {"lam": LAM, "N": [100, 1000, 10000], "d": [2, "sqrtN"], "batches": 20}


def fluid_rows(q2_of):
    """Sim and mean-field q2 rows of the sweep's families, q2_of(family, N) → (value, half)."""
    rows = []
    for family in fluid._fluid_families(FLUID_CFG):
        for N in FLUID_CFG["N"]:
            value, half = q2_of(family, N)
            rows.append(sim(family, N, "q2", value, half))
            d = model.d_of_N(family, N)
            rows.append(
                {"method": "mf", "family": family, "N": N, "d": d, "quantity": "q2"}
                | {"value": model.q2_fluid(LAM, d)}
            )
    return rows


def fluid_truth(family, N):
    """q2 near the fluid value at d(N), a 1/N excess for fixed d (as simulated)."""
    d = model.d_of_N(family, N)
    return LAM ** (d + 1) * (1 + 3 / N), 0.002


def test_fluid_control_family_is_the_largest_log_n():
    assert fluid._control_d(FLUID_CFG["N"]) == math.ceil(math.log(10000)) == 10
    assert fluid._fluid_families(FLUID_CFG) == ["2", "sqrtN", "10"]
    assert fluid._fluid_families(FLUID_CFG | {"d": [10, "logN"]}) == ["10", "logN"]
    assert fluid._control_d([100, 1000, 10000, 100000]) == 12
    points = fluid.points(FLUID_CFG | {"server_time": 1e6, "warmup": 10})
    assert {"d10-N100", "d10-N10000", "dsqrtN-N1000"} <= set(points)


def test_fluid_validation_needs_a_growing_family_and_a_samplable_control():
    good = FLUID_CFG | {"server_time": 1e6, "warmup": 10}
    fluid.validate(good)
    with pytest.raises(ConfigError, match="growing"):
        fluid.validate(good | {"d": [2, 5]})
    with pytest.raises(ConfigError, match="control"):
        fluid.validate(good | {"N": [5, 100000]})


def test_fluid_claims_hold_on_the_fluid_limits():
    claims = fluid.check(fluid_rows(fluid_truth), FLUID_CFG)
    texts = [c.claim for c in claims]
    # The "if" for the growing family, the "only if" and the plateau for both fixed d.
    assert sum("→ ∞: q₂ → 0" in t for t in texts) == 1
    assert sum("bounded away from 0" in t for t in texts) == 2
    assert sum("supermarket fluid value" in t for t in texts) == 2
    assert_holds(claims)
    if_claim = next(c for c in claims if "q₂ → 0" in c.claim)
    assert "fixed d = 10" in if_claim.control["claim"]
    only_if = next(c for c in claims if "bounded away" in c.claim)
    assert "⌈√N⌉" in only_if.control["claim"]


def test_fluid_if_fails_when_growing_d_does_not_drive_q2_to_zero():
    def flat(family, N):
        if family == "sqrtN":  # counterfactual: q2 stuck at its N = 100 value
            return LAM**11, 0.002
        return fluid_truth(family, N)

    claims = fluid.check(fluid_rows(flat), FLUID_CFG)
    assert failing(claims, "→ ∞: q₂ → 0")
    # The fixed-d claims are untouched, but the "only if" control now passes: inconclusive.
    only_if = [c for c in claims if "bounded away" in c.claim]
    assert all(c.passed and c.control["passed"] for c in only_if)
    assert all(c.status == "inconclusive" for c in only_if)


def test_fluid_only_if_fails_when_fixed_d_vanishes():
    def vanishing(family, N):
        if family == "2":  # counterfactual: a fixed d whose q2 goes to 0
            return {100: 0.7, 1000: 0.2, 10000: 0.01}[N], 0.002
        return fluid_truth(family, N)

    claims = fluid.check(fluid_rows(vanishing), FLUID_CFG)
    assert failing(claims, "fixed d = 2: q₂ stays bounded away")
    assert failing(claims, "fixed d = 2: at the largest N")


def test_fluid_plateau_fails_away_from_the_supermarket_value():
    def off(family, N):
        if family == "10":
            return LAM**12, 0.002  # the value of d = 11, not of d = 10
        return fluid_truth(family, N)

    claims = fluid.check(fluid_rows(off), FLUID_CFG)
    assert failing(claims, "fixed d = 10: at the largest N")


def test_fluid_empty_table_fails_loudly():
    with pytest.raises(EmptyComparisonError):
        fluid.check([], FLUID_CFG)


# ----------------------------------------------------------------------- diffusion
DIFF_CFG = {
    "beta": 1.0,
    "N": [100, 1000, 10000],
    "d": ["sqrtN", "sqrtNlog2N", "N"],
    "largest_N_for": ["sqrtNlog2N", "N"],
    "batches": 20,
}
SDE_Q2 = 0.82


def diffusion_rows(q2_of, idle=1.0):
    rows = [
        {"method": "sde", "dt": 0.0, "quantity": "idle", "value": 1.0, "beta": 1.0}
        | {"ci_low": 0.98, "ci_high": 1.02, "batches": 20},
        {"method": "sde", "dt": 0.0, "quantity": "q2", "value": SDE_Q2, "beta": 1.0}
        | {"ci_low": SDE_Q2 - 0.02, "ci_high": SDE_Q2 + 0.02, "batches": 20},
    ]
    for family in DIFF_CFG["d"]:
        for N in diffusion._diffusion_Ns(DIFF_CFG, family):
            rows.append(sim(family, N, "idle", idle, 0.05))
            rows.append(sim(family, N, "q2", *q2_of(family, N)))
    return rows


def diffusion_truth(family, N):
    """JSQ-like families close in on E[X2] from below; ⌈√N⌉ grows like √N."""
    if family == "sqrtN":
        return 0.36 * math.sqrt(N), 0.01 * math.sqrt(N)
    return SDE_Q2 - 1.5 / math.sqrt(N), 0.03


def test_sqrt_n_log2_n_family():
    assert model.d_of_N("sqrtNlog2N", 1000) == 1000  # capped at N
    assert model.d_of_N("sqrtNlog2N", 10**4) == 8484
    assert model.d_of_N("sqrtNlog2N", 10**5) == 41916
    assert model.family_label("sqrtNlog2N") == "d = ⌈√N (log N)²⌉ ∧ N"
    assert "sqrtNlog2N" in model.D_FAMILIES


def test_diffusion_points_run_the_largest_n_only_where_needed():
    cfg = DIFF_CFG | {"horizon": 100, "warmup": 10}
    cfg["sde"] = {"dt": [0.02, 0.01], "horizon": 100, "warmup": 10, "scheme": "bridge"}
    points = diffusion.points(cfg)
    assert "dsqrtNlog2N-N10000" in points and "dN-N10000" in points
    assert "dsqrtN-N10000" not in points and "dsqrtN-N1000" in points
    no_top = {k: v for k, v in cfg.items() if k != "largest_N_for"}
    assert "dsqrtN-N10000" in diffusion.points(no_top)


def test_diffusion_validation_needs_a_family_above_and_one_below():
    cfg = DIFF_CFG | {"horizon": 100, "warmup": 10}
    diffusion.validate(cfg)
    with pytest.raises(ConfigError, match=r"^universality-diffusion\.d:"):
        diffusion.validate(cfg | {"d": ["sqrtN", "sqrtNlogN"], "largest_N_for": ["sqrtN"]})
    with pytest.raises(ConfigError, match=r"^universality-diffusion\.d:"):
        diffusion.validate(cfg | {"d": ["sqrtNlog2N", "N"]})
    with pytest.raises(ConfigError, match="largest_N_for"):
        diffusion.validate(cfg | {"largest_N_for": ["sqrtN"]})
    with pytest.raises(ConfigError, match=r"largest_N_for\[0\]"):
        diffusion.validate(cfg | {"largest_N_for": ["logN"]})


def test_diffusion_claims_hold_when_the_jsq_limit_is_approached():
    claims = diffusion.check(diffusion_rows(diffusion_truth), DIFF_CFG)
    assert [c.kind for c in claims].count(CONSISTENCY) == 2
    assert sum("tends to the JSQ diffusion limit" in c.claim for c in claims) == 2
    assert sum("shrinks" in c.claim for c in claims) == 2
    assert_holds(claims)
    gap = next(c for c in claims if "(log N)²" in c.claim and "tends to" in c.claim)
    assert "N = 10000" in gap.claim and "⌈√N⌉" in gap.control["claim"]
    assert "N = 1000 " in gap.control["claim"]  # the control's own largest N


def test_diffusion_claims_fail_when_the_family_stays_away():
    def away(family, N):
        if family == "sqrtNlog2N":  # counterfactual: a fixed offset from the limit
            return SDE_Q2 - 0.3, 0.03
        return diffusion_truth(family, N)

    claims = diffusion.check(diffusion_rows(away), DIFF_CFG)
    assert failing(claims, "(log N)²⌉ ∧ N, d(N)/(√N log N) → ∞: E[Q₂/√N] tends")
    assert failing(claims, "(log N)²⌉ ∧ N: the distance")
    # JSQ's claims are untouched.
    assert all(c.passed for c in claims if c.claim.startswith("d = N"))


def test_diffusion_consistency_fails_when_work_is_not_conserved():
    claims = diffusion.check(diffusion_rows(diffusion_truth, idle=1.3), DIFF_CFG)
    bad = [c for c in claims if not c.passed]
    assert bad and all(c.kind == CONSISTENCY and "work conservation" in c.claim for c in bad)


def test_claims_on_replications_equal_claims_on_their_pooled_rows():
    """The check pools replications first: splitting a point changes no claim of equal data."""
    rows = diffusion_rows(diffusion_truth)
    split = []
    for r in rows:
        if r["method"] == "sim" and r["N"] == 10000:
            half = (r["ci_high"] - r["ci_low"]) / 2
            # Two replications with the same mean and √2 the half-width pool back to r
            # (up to the t quantiles' degrees of freedom).
            for i in (1, 2):
                split.append(
                    r
                    | {"replication": i, "batches": 200}
                    | {"ci_low": r["value"] - math.sqrt(2) * half}
                    | {"ci_high": r["value"] + math.sqrt(2) * half}
                )
        else:
            split.append(r)

    def outcomes(table: list[dict]) -> list[tuple]:
        """Each claim's text, verdict and control verdict."""
        claims = diffusion.check(table, DIFF_CFG)
        return [(c.claim, c.passed, c.control and c.control["passed"]) for c in claims]

    assert outcomes(split) == outcomes(rows)
    assert any("replication" in r for r in split)


def test_diffusion_empty_table_fails_loudly():
    with pytest.raises(EmptyComparisonError):
        diffusion.check([], DIFF_CFG)


# ------------------------------------------------------------------------ overhead
OVER_CFG = {"lam": LAM, "N": 1000, "d": [1, 2, "sqrtN", "N"], "batches": 20}


def overhead_rows(sojourn, p_wait):
    rows = []
    for family in map(str, OVER_CFG["d"]):
        rows.append(sim(family, 1000, "mean_sojourn", *sojourn[family]))
        rows.append(sim(family, 1000, "p_wait", *p_wait[family]))
    return rows


SOJOURN = {"1": (10.0, 0.5), "2": (2.2, 0.02), "sqrtN": (1.03, 0.005), "N": (1.0, 0.002)}
P_WAIT = {"1": (0.9, 0.01), "2": (0.8, 0.01), "sqrtN": (0.03, 0.002), "N": (0.001, 0.0005)}


def test_overhead_validation_needs_the_compared_families():
    cfg = OVER_CFG | {"horizon": 100, "warmup": 10}
    overhead.validate(cfg)
    with pytest.raises(ConfigError, match="sqrtN"):
        overhead.validate(cfg | {"d": [1, 2, "N"]})


def test_overhead_claims_hold():
    claims = overhead.check(overhead_rows(SOJOURN, P_WAIT), OVER_CFG)
    assert len(claims) == 3
    assert_holds(claims)
    assert "d = 2" in claims[0].control["claim"]


def test_overhead_claims_fail_when_sqrt_n_is_far_from_jsq_and_sampling_hurts():
    sojourn = SOJOURN | {"sqrtN": (2.5, 0.02)}  # worse than d = 2 and far from JSQ
    claims = overhead.check(overhead_rows(sojourn, P_WAIT), OVER_CFG)
    assert failing(claims, "JSQ's fluid-level delay is kept")
    assert failing(claims, "E[T] decreases in d")
    assert all(c.passed for c in claims if "P(wait > 0) decreases" in c.claim)


def test_overhead_empty_table_fails_loudly():
    with pytest.raises(EmptyComparisonError):
        overhead.check([], OVER_CFG)
