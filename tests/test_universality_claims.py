"""Claim checks of the universality artifacts on synthetic tables: each passes where its claim
holds (with its control failing) and fails where the claim is false. No simulation."""

from __future__ import annotations

import math

import pytest

from lbrepro.artifacts.universality import fluid, overhead
from lbrepro.artifacts.universality.families import control_family, d_of, label, with_control
from lbrepro.core.claims import DIAGNOSTIC, NOT_REPRODUCED, REPRODUCED, UNDECIDED, gate
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
        "converged": True,
        "seed": 1,
    } | extra


def assert_holds(claims):
    """Every claim passes; every verdict's near-miss control exists, states its distance and
    fails; every verdict names its runs."""
    assert claims
    for c in claims:
        assert c.passed, c
        if c.kind == DIAGNOSTIC:
            assert c.control is None and c.runs
            continue
        assert c.control is not None, c.claim
        assert c.control["distance"], c.claim
        assert c.control["outcome"] == NOT_REPRODUCED, (c.claim, c.control)
        assert c.status == REPRODUCED and c.runs


def failing(claims, words):
    """The failing claims among those whose text contains ``words`` (which must exist)."""
    hit = [c for c in claims if words in c.claim]
    assert hit, words
    return [c for c in hit if not c.passed]


# --------------------------------------------------------------------------- fluid
FLUID_CFG = {
    "lam": LAM,
    "N": [100, 1000, 10000],
    "d": [2, "sqrtN"],
    "batches": 20,
    "server_time": 1e6,
    "warmup": 10,
}


def fluid_exact(cfg=FLUID_CFG):
    """The exact rows every point of the sweep writes (d(N), fluid q₂ values), as compute."""
    return [r for p in fluid.points(cfg).values() for r in fluid.exact_rows(p)]


def fluid_rows(q2_of, q1=LAM):
    """The exact rows and sim q1, q2 rows of the sweep's families, q2_of(family, N) →
    (value, half)."""
    rows = fluid_exact()
    for family in fluid._fluid_families(FLUID_CFG):
        for N in FLUID_CFG["N"]:
            value, half = q2_of(family, N)
            rows.append(sim(family, N, "q2", value, half))
            rows.append(sim(family, N, "q1", q1, 0.002))
    return rows


def fluid_truth(family, N):
    """q2 near the fluid value at d(N), a 1/N excess for fixed d (as simulated)."""
    d = model.d_of_N(family, N)
    return LAM ** (d + 1) * (1 + 3 / N), 0.002


def by(claims, words):
    """The one claim whose text contains ``words``."""
    hit = [c for c in claims if words in c.claim]
    assert len(hit) == 1, (words, [c.claim for c in claims])
    return hit[0]


def test_fluid_control_family_is_the_largest_log_n():
    assert fluid._control_d(FLUID_CFG["N"]) == math.ceil(math.log(10000)) == 10
    assert fluid._fluid_families(FLUID_CFG) == ["2", "sqrtN", "10"]
    assert fluid._fluid_families(FLUID_CFG | {"d": [10, "logN"]}) == ["10", "logN"]
    assert fluid._control_d([100, 1000, 10000, 100000]) == 12
    points = fluid.points(FLUID_CFG)
    assert {"d10-N100", "d10-N10000", "dsqrtN-N1000"} <= set(points)
    # the control's points write its role: the check finds the control family in the table
    assert {k for k, p in points.items() if p.get("control")} == {
        "d10-N100",
        "d10-N1000",
        "d10-N10000",
    }
    assert control_family(fluid_exact()) == "10"
    assert with_control(fluid_exact(), [10, "logN"]) == (["10", "logN"], "10")


def test_fluid_judged_step_is_the_last_one_the_remainder_cannot_hide():
    full = [100, 1000, 10000, 100000]
    cfg = FLUID_CFG | {"N": full, "d": ["logN", "sqrtN", "sqrtNlogN"]}
    rows = fluid_exact(cfg)
    # ⌈log N⌉ = 5, 7, 10, 12: judged at 10⁵, where capped d = 10 predicts 0.314, d = 12 0.254
    assert fluid.judged_step(rows, "logN", full) == 3
    # ⌈√N⌉ = 10, 32, 100, 317: λ^101 − λ^318 = 2.4e-5 < 10/10⁵, so judged at 10⁴
    assert fluid.judged_step(rows, "sqrtN", full) == 2
    # ⌈√N log N⌉ = 47, 219, …: every fluid drop is below the finite-N remainder
    assert fluid.judged_step(rows, "sqrtNlogN", full) is None


def test_fluid_validate_refuses_a_family_its_sweep_cannot_decide():
    """A growing family with no judgeable step could only be undecided: refused before any
    run, naming the key; the same family is accepted where the sweep resolves it."""
    cfg = FLUID_CFG | {"lam": LAM, "N": [100, 1000, 10000, 100000]}
    with pytest.raises(ConfigError, match="sqrtNlogN") as err:
        fluid.validate(cfg | {"d": [2, "logN", "sqrtNlogN"]})
    assert err.value.key == "d"
    fluid.validate(cfg | {"d": [2, "logN", "sqrtN", "N"]})


def test_fluid_exact_rows_are_the_fluid_values_the_claims_compare():
    rows = fluid.exact_rows({"lam": LAM, "family": "logN", "N": 1000})
    assert d_of(rows, "logN", 1000) == 7 and label(rows, "logN") == "d = ⌈log N⌉"
    assert [r["quantity"] for r in rows if r["method"] == "cf"] == ["d", "q2"]
    fixed = fluid.exact_rows({"lam": LAM, "family": "7", "N": 1000, "control": True})
    cf = {r["quantity"]: r for r in fixed if r["method"] == "cf"}
    assert cf["q2"]["value"] == model.q2_fluid(LAM, 7)
    assert cf["q2_neighbour"]["value"] == model.q2_fluid(LAM, 8)
    assert cf["d"]["role"] == "control" and "role" not in rows[1]


def test_fluid_validation_needs_a_growing_family_and_a_samplable_control():
    good = FLUID_CFG
    fluid.validate(good)
    # the validator names the key inside its section (the pipeline prefixes the artifact id)
    with pytest.raises(ConfigError, match=r"^d: needs a growing"):
        fluid.validate(good | {"d": [2, 5]})
    with pytest.raises(ConfigError, match=r"^N: the control"):
        fluid.validate(good | {"N": [5, 100000]})


def test_fluid_claims_hold_on_the_fluid_limits():
    claims = fluid.check(fluid_rows(fluid_truth), FLUID_CFG)
    texts = [c.claim for c in claims]
    # q₁ = λ per family, the "if" for the growing family, "only if" and plateau per fixed d
    assert sum(c.kind == DIAGNOSTIC for c in claims) == 3
    assert sum("→ ∞: q₂ → 0" in t for t in texts) == 1
    assert sum("bounded away from 0" in t for t in texts) == 2
    assert sum("supermarket fluid value" in t for t in texts) == 2
    assert_holds(claims)
    if_claim = by(claims, "q₂ → 0")
    assert "capped" in if_claim.control["claim"] and "N = 10000" in if_claim.details
    assert "⌈√N⌉" in by(claims, "fixed d = 2: q₂ stays").control["claim"]


def test_fluid_if_fails_for_a_d_that_stopped_growing():
    def capped(family, N):
        if family == "sqrtN" and N == 10000:  # counterfactual: d stuck at ⌈√1000⌉ = 32
            return LAM**33, 0.002
        return fluid_truth(family, N)

    c = by(fluid.check(fluid_rows(capped), FLUID_CFG), "→ ∞: q₂ → 0")
    assert c.outcome == NOT_REPRODUCED and c.control["outcome"] == REPRODUCED


def test_fluid_if_straddles_its_margin():
    # q₂ at N = 10⁴ one margin (half of λ^33 − λ^101) above λ^101: the interval straddles
    margin = (LAM**33 - LAM**101) / 2

    def edge(family, N):
        if family == "sqrtN" and N == 10000:
            return LAM**101 + margin, 0.002
        return fluid_truth(family, N)

    c = by(fluid.check(fluid_rows(edge), FLUID_CFG), "→ ∞: q₂ → 0")
    assert c.status == UNDECIDED and c.needs


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


def test_fluid_failed_diagnostic_invalidates_the_verdicts_on_its_runs():
    claims = gate(fluid.check(fluid_rows(fluid_truth, q1=0.95), FLUID_CFG))
    assert all(not c.passed for c in claims if c.kind == DIAGNOSTIC)
    verdicts = [c for c in claims if c.kind == "verdict"]
    assert verdicts and all(c.status == UNDECIDED and c.invalid for c in verdicts)


def test_fluid_unconverged_run_makes_its_verdict_undecided():
    rows = fluid_rows(fluid_truth)
    for r in rows:
        if r["family"] == "sqrtN" and r.get("N") == 10000:
            r["converged"] = False
    c = by(fluid.check(rows, FLUID_CFG), "→ ∞: q₂ → 0")
    assert c.status == UNDECIDED and c.invalid


def test_fluid_empty_table_fails_loudly():
    with pytest.raises(EmptyComparisonError):
        fluid.check([], FLUID_CFG)


def test_unobserved_tail_gets_a_covering_interval():
    from types import SimpleNamespace

    import numpy as np

    from lbrepro.artifacts.universality.simulation import sim_rows, unobserved_bound
    from lbrepro.sim.estimates import EstimatesMixin

    class Run(EstimatesMixin, SimpleNamespace):
        """A simulation result's fields, and the estimates every result gives."""

    run = Run(
        seed=1,
        N=1000,
        lam=0.9,
        horizon=1100.0,
        warmup_used=100.0,
        batches=20,
        converged=True,
        u_all=np.array([1.0, 0.9]),
        u_all_ci_low=np.array([1.0, 0.89]),
        u_all_ci_high=np.array([1.0, 0.91]),
        mean_sojourn=1.0,
        mean_sojourn_ci=(0.99, 1.01),
        p_wait=0.0,
        p_wait_ci=(0.0, 0.0),
    )
    rows = sim_rows(run, np.random.SeedSequence(1))
    q2 = next(r for r in rows if r["quantity"] == "q2")
    assert q2["value"] == 0.0 and q2["ci_high"] == unobserved_bound(run) > 0
    assert q2["ci_high"] == pytest.approx(3 / (0.1 * 1000 * 1000))
    assert all(r["converged"] is True and r["batches"] == 20 for r in rows)


# ----------------------------------------------------------------------- d(N) families
def test_sqrt_n_log2_n_family():
    assert model.d_of_N("sqrtNlog2N", 1000) == 1000  # capped at N
    assert model.d_of_N("sqrtNlog2N", 10**4) == 8484
    assert model.d_of_N("sqrtNlog2N", 10**5) == 41916
    assert model.family_label("sqrtNlog2N") == "d = ⌈√N (log N)²⌉ ∧ N"
    assert "sqrtNlog2N" in model.D_FAMILIES


# ------------------------------------------------------------------------ overhead
OVER_CFG = {
    "lam": LAM,
    "N": 1000,
    "d": [2, "sqrtN", "N"],
    "batches": 20,
    "horizon": 100,
    "warmup": 10,
}


def overhead_rows(sojourn):
    rows = [r for p in overhead.points(OVER_CFG).values() for r in overhead.exact_rows(p)]
    for family in overhead._families(OVER_CFG):
        rows.append(sim(family, 1000, "mean_sojourn", *sojourn[family]))
        rows.append(sim(family, 1000, "q1", LAM, 0.002))
    return rows


SOJOURN = {"2": (2.2, 0.02), "21": (1.12, 0.005), "sqrtN": (1.03, 0.005), "N": (1.0, 0.002)}


def test_overhead_near_miss_is_ten_per_cent_above_jsq():
    assert overhead.near_miss_d(LAM) == 21
    assert overhead._fluid_sojourn(LAM, 21) >= 1.10 > overhead._fluid_sojourn(LAM, 22)
    assert overhead._families(OVER_CFG) == ["2", "sqrtN", "N", "21"]
    points = overhead.points(OVER_CFG)
    assert "d21" in points and [k for k, p in points.items() if p.get("control")] == ["d21"]
    # the check reads the near miss and its fluid E[T] from the points' exact rows
    rows = [r for p in points.values() for r in overhead.exact_rows(p)]
    assert control_family(rows) == "21"
    fluid_t = {str(r["family"]): r["value"] for r in rows if r["quantity"] == "mean_sojourn"}
    assert fluid_t["21"] == overhead._fluid_sojourn(LAM, 21)


def test_overhead_validation_needs_the_compared_families():
    cfg = OVER_CFG
    overhead.validate(cfg)
    # the validator names the key inside its section (the pipeline prefixes the artifact id)
    with pytest.raises(ConfigError, match=r"^d: must include sqrtN"):
        overhead.validate(cfg | {"d": [1, 2, "N"]})
    with pytest.raises(ConfigError, match=r"^warmup:"):
        overhead.validate(cfg | {"warmup": 100})


def test_overhead_claims_hold():
    claims = overhead.check(overhead_rows(SOJOURN), OVER_CFG)
    assert [c.kind for c in claims].count(DIAGNOSTIC) == 4
    assert_holds(claims)
    assert "d = 21" in claims[-1].control["claim"]


def test_overhead_claim_fails_when_sqrt_n_is_far_from_jsq():
    sojourn = SOJOURN | {"sqrtN": (1.2, 0.02)}
    assert failing(overhead.check(overhead_rows(sojourn), OVER_CFG), "JSQ's fluid-level delay")


def test_overhead_claim_at_the_yardstick_is_undecided():
    sojourn = SOJOURN | {"sqrtN": (1.049, 0.005)}
    c = by(overhead.check(overhead_rows(sojourn), OVER_CFG), "JSQ's fluid-level delay")
    assert c.status == UNDECIDED


def test_overhead_empty_table_fails_loudly():
    with pytest.raises(EmptyComparisonError):
        overhead.check([], OVER_CFG)
