"""The general-service claim checks on synthetic tables: each passes where its claim holds (with
its control failing) and fails where the claim is false. No simulation."""

from __future__ import annotations

import pytest

from lbrepro.artifacts.general import (
    PAPER,
    audit,
    comparisons,
    sojourn,
    tail,
    theta_examples,
    theta_exp,
    theta_table,
)
from lbrepro.artifacts.general.comparisons import CLOSED_FORM
from lbrepro.artifacts.general.point_runs import LIMIT_RATIO, neighbour_rows
from lbrepro.core.claims import (
    CONSISTENCY,
    DEPENDS,
    DIAGNOSTIC,
    FAILS_EVERY,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    VERDICT,
    Claim,
    gate,
)
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.judging.neighbours import (
    MAX_STEPS,
    nearest_distinct_load,
    nearest_distinct_steps,
    neighbour_load,
)
from lbrepro.models import general as model
from lbrepro.models import service

N, T, D = 1000, 10_000.0, 2


def assert_controls_fail(claims: list[Claim]) -> None:
    """Every reproduced verdict's near miss is not reproduced, at a stated distance."""
    for c in claims:
        if c.kind == VERDICT and c.outcome == REPRODUCED:
            assert c.control is not None and c.control["distance"], c.claim
            assert c.control["outcome"] == NOT_REPRODUCED, (c.claim, c.control)


def sim_row(base: dict, quantity: str, value: float, n: int, k=None, rel=1e-3, limit=False):
    h = rel * value + 1e-9
    row = base | {
        "method": "sim",
        "quantity": quantity,
        "value": value,
        "ci_low": value - h,
        "ci_high": value + h,
        "N": n,
        "seed": 1,
        "batches": 20,
        "converged": True,
        "measured_time": T,
    }
    if k is not None:
        row["k"] = k
    if limit:
        row["role"] = "limit"
    return row


def truth(spec: str, rho: float, which: str, kmax: int = 12):
    """(u_0..u_kmax, E[T]) of the published form (cf) or the exact mean field (mf)."""
    dist = service.parse(spec)
    lam = rho / dist.mean
    if which == "cf":
        u = model.published_tail(dist, lam, D, kmax=kmax, tol=0.0)
        return [float(u[k]) if k < len(u) else 0.0 for k in range(kmax + 1)], float(
            model.published_sojourn(dist, lam, D)
        )
    mf = model.cavity_fixed_point(dist, lam, D)
    return [float(mf.u[k]) if k < mf.u.size else 0.0 for k in range(kmax + 1)], float(
        mf.mean_sojourn(lam)
    )


def point_rows(spec: str, rho: float, sim_from: str, bias: float = 0.0, kmax: int = 6):
    """cf, mf (PH) and sim rows: the simulation follows ``sim_from`` plus bias·value/N; and
    the controls' predictions at the neighbouring loads, as compute writes them.

    The small run (N/4, role = limit) carries four times the bias, so the extrapolation to
    N → ∞ removes it exactly.
    """
    dist = service.parse(spec)
    base = {"dist": spec, "label": dist.label, "rho": rho, "d": D}
    rows = []
    cf_u, cf_t = truth(spec, rho, "cf", kmax)
    rows += [
        base | {"method": "cf", "quantity": "u", "k": k, "value": cf_u[k]} for k in range(kmax + 1)
    ]
    rows.append(base | {"method": "cf", "quantity": "mean_sojourn", "value": cf_t})
    if dist.is_phase_type:
        mf_u, mf_t = truth(spec, rho, "mf", kmax)
        rows += [
            base | {"method": "mf", "quantity": "u", "k": k, "value": mf_u[k]}
            for k in range(kmax + 1)
        ]
        rows.append(base | {"method": "mf", "quantity": "mean_sojourn", "value": mf_t})
    src_u, src_t = truth(spec, rho, sim_from, kmax)
    for n, limit in ((N, False), (N // LIMIT_RATIO, True)):
        f = 1 + bias / n
        # u_1 = ρ at every N (work conservation); deeper levels carry the bias
        rows += [
            sim_row(base, "u", src_u[k] * (f if k >= 2 else 1), n, k, limit=limit)
            for k in range(kmax + 1)
        ]
        rows.append(sim_row(base, "mean_sojourn", src_t * f, n, limit=limit))
    rows += neighbour_rows({"dist": spec, "rho": rho, "d": D}, audit.ITEMS)
    return rows  # fmt: skip


RHOS = [0.5, 0.8]


def sojourn_cfg(spec: str) -> dict:
    return {"dists": [spec], "rho": RHOS, "d": D, "N": N}


def by(claims: list[Claim], text: str) -> Claim:
    hits = [c for c in claims if text in c.claim]
    assert len(hits) == 1, [c.claim for c in claims]
    return hits[0]


# ---------------------------------------------------------------------------------------
# general-sojourn


def test_sojourn_mean_field_claims_hold_and_published_fails() -> None:
    rows = [r for rho in RHOS for r in point_rows("erlang:2", rho, "mf", bias=0.0)]
    claims = gate(sojourn.check(rows, sojourn_cfg("erlang:2")))
    assert [c.kind for c in claims] == [DIAGNOSTIC, VERDICT, VERDICT]
    assert claims[0].passed and claims[0].runs
    assert by(claims, "exact PH mean-field E[T] is the N → ∞").status == REPRODUCED
    pub = by(claims, "published sojourn time")
    assert pub.status == NOT_REPRODUCED and pub.finding == CLOSED_FORM
    assert not any("finite-N" in c.claim for c in claims)
    assert_controls_fail(claims)


def test_sojourn_limit_holds_with_a_1_over_n_bias() -> None:
    rows = [r for rho in RHOS for r in point_rows("erlang:2", rho, "mf", bias=20.0)]
    claims = sojourn.check(rows, sojourn_cfg("erlang:2"))
    assert by(claims, "exact PH mean-field E[T] is the N → ∞").status == REPRODUCED


def test_sojourn_published_claim_holds_when_simulation_follows_it() -> None:
    rows = [r for rho in RHOS for r in point_rows("erlang:2", rho, "cf")]
    claims = sojourn.check(rows, sojourn_cfg("erlang:2"))
    pub = by(claims, "published sojourn time")
    assert pub.status == REPRODUCED and pub.control["outcome"] == NOT_REPRODUCED
    assert by(claims, "exact PH mean-field E[T] is the N → ∞").status == NOT_REPRODUCED


def test_sojourn_straddles_when_the_interval_is_wide() -> None:
    rows = [
        r | ({"value": r["value"] * 1.01, "ci_low": r["value"] * 0.9, "ci_high": r["value"] * 1.1}
             if r["method"] == "sim" else {})
        for rho in RHOS
        for r in point_rows("erlang:2", rho, "mf")
    ]  # fmt: skip
    claims = sojourn.check(rows, sojourn_cfg("erlang:2"))
    assert by(claims, "exact PH mean-field E[T]").status == UNDECIDED


def test_sojourn_discloses_the_mitzenmacher_conflict() -> None:
    rows = [r for rho in RHOS for r in point_rows("exp", rho, "mf")]
    at = {"mitzenmacher_rho": sojourn.MITZENMACHER_RHO, "rho": RHOS[0], "d": D}
    claims = sojourn.check(rows + sojourn.mitzenmacher_rows(at), sojourn_cfg("exp"))
    c = by(claims, "Corollary 3.8")
    assert "2.6141" in c.claim and "1.9464" in c.claim  # both numbers, ρ = 0.9, d = 2
    assert c.status == NOT_REPRODUCED and c.finding == sojourn.TD_CONFLICT
    assert sojourn.mitzenmacher_sojourn(0.9, 2) == pytest.approx(2.614057, abs=1e-6)
    assert c.finding in PAPER.findings and CLOSED_FORM in PAPER.findings
    # one defect, one finding: T_d with θ = 1 is Mitzenmacher's T, so the conflict is θ's
    assert c.finding == CLOSED_FORM and "2.61406" in c.details
    assert sojourn.sojourn_with_theta(0.9, 2, 1.0) == pytest.approx(2.614057377, abs=1e-9)
    assert sojourn.sojourn_with_theta(0.9, 2, 0.5) == pytest.approx(
        sojourn.reconstructed_sojourn(0.9, 2), rel=1e-12
    )
    assert "2.61406" in str(PAPER.findings[CLOSED_FORM])


def test_a_failed_work_conservation_invalidates_the_distribution() -> None:
    rows = [
        r | {k: r[k] * 0.95 for k in ("value", "ci_low", "ci_high")}
        if r["method"] == "sim" and r.get("k") == 1
        else r
        for rho in RHOS
        for r in point_rows("erlang:2", rho, "mf")
    ]
    claims = gate(sojourn.check(rows, sojourn_cfg("erlang:2")))
    assert not claims[0].passed
    assert all(c.status == UNDECIDED and c.invalid for c in claims[1:])


def test_sojourn_without_the_limit_run_fails_loudly() -> None:
    rows = [
        r for rho in RHOS for r in point_rows("erlang:2", rho, "mf") if r.get("role") != "limit"
    ]
    with pytest.raises(EmptyComparisonError):
        sojourn.check(rows, sojourn_cfg("erlang:2"))


def test_sojourn_without_the_controls_predictions_fails_loudly() -> None:
    """The controls' predictions are rows of the table (compute writes them): a table without
    them is refused, never completed by a model call in the check."""
    rows = [
        r
        for rho in RHOS
        for r in point_rows("erlang:2", rho, "mf")
        if not r["quantity"].endswith("_neighbour")
    ]
    with pytest.raises(EmptyComparisonError):
        sojourn.check(rows, sojourn_cfg("erlang:2"))
    with pytest.raises(EmptyComparisonError):
        sojourn.check(point_rows("exp", 0.5, "mf"), {"dists": ["exp"], "rho": [0.5], "d": D})


def test_the_control_moves_out_step_by_step_until_distinct() -> None:
    """The sweep's control takes the fewest steps below ρ that put it more than AT_LEAST
    margins away (judging.neighbours), and the farthest step otherwise."""
    far = {1: 0.5, 2: 1.9, 3: 2.4, 4: 9.0, 5: 9.0}
    assert nearest_distinct_steps(far.__getitem__, comparisons.AT_LEAST) == (3, 2.4)
    assert nearest_distinct_steps(lambda s: 1.0, comparisons.AT_LEAST) == (MAX_STEPS, 1.0)
    # the load search is the same search, counted in loads
    loads = {neighbour_load(0.5, s): v for s, v in far.items()}
    assert nearest_distinct_load(0.5, loads.__getitem__) == (neighbour_load(0.5, 3), 2.4)
    rows = point_rows("erlang:2", 0.5, "mf")
    steps = {r["steps"] for r in rows if r["quantity"] == "mean_sojourn_neighbour"}
    assert steps == set(range(1, MAX_STEPS + 1))
    loads = {r["steps"]: r["rho_neighbour"] for r in rows if r["quantity"] == "u_neighbour"}
    assert loads == {s: neighbour_load(0.5, s) for s in steps}


# ---------------------------------------------------------------------------------------
# general-audit


def audit_cfg(dists: list[str]) -> dict:
    return {"dists": dists, "rho": RHOS, "d": D, "N": N}


def test_audit_claims_hold_with_failing_controls() -> None:
    rows = [r for rho in RHOS for r in point_rows("exp", rho, "mf", bias=5.0)]
    rows += [r for rho in RHOS for r in point_rows("det", rho, "cf")]
    claims = gate(audit.check(rows, audit_cfg(["exp", "det"])))
    verdicts = [c for c in claims if c.kind == VERDICT]
    assert [c.source for c in verdicts] == ["paper", "lbrepro", "paper"]
    assert by(claims, "Exp(rate 1): the exact PH mean field gives the N → ∞").passed
    assert verdicts[2].status == REPRODUCED  # det: the simulation follows the published form
    assert_controls_fail(claims)
    # exponential service: the published u_2 = ρ^(d+1)/d is half the truth
    assert verdicts[0].status == NOT_REPRODUCED and verdicts[0].finding == CLOSED_FORM
    summary = audit.summary(rows)
    assert summary and "N → ∞ (extrapolated) ± CI" in summary[0]


def test_audit_mean_field_claim_fails_when_the_simulation_disagrees() -> None:
    rows = [r for rho in RHOS for r in point_rows("exp", rho, "cf")]
    claims = audit.check(rows, audit_cfg(["exp"]))
    assert by(claims, "exact PH mean field gives the N → ∞").status == NOT_REPRODUCED
    assert by(claims, "published closed form").status == REPRODUCED


# ---------------------------------------------------------------------------------------
# general-tail


def tail_rows(spec: str, rho: float, u_of_k, kmax: int = 12, rel: float = 1e-3) -> list[dict]:
    dist = service.parse(spec)
    base = {"dist": spec, "label": dist.label, "rho": rho, "d": D}
    cf_u, _ = truth(spec, rho, "cf", kmax)
    rows = [
        base | {"method": "cf", "quantity": "u", "k": k, "value": cf_u[k]} for k in range(kmax + 1)
    ]
    rows += [sim_row(base, "u", u_of_k(k), N, k, rel=rel) for k in range(kmax + 1)]
    rows.append(base | {"method": "path", "quantity": "max_queue", "value": 9, "N": N})
    rows += tail.claim_rows({"dist": spec, "rho": rho, "d": D, "kmax": kmax})
    return rows  # fmt: skip


TAIL = {"dists": ["exp"], "rho": 0.7, "d": D, "N": N}


def test_tail_claims_hold_on_the_published_tail() -> None:
    cf_u, _ = truth("exp", 0.7, "cf", 12)
    claims = gate(tail.check(tail_rows("exp", 0.7, lambda k: cf_u[k]), TAIL))
    assert [c.kind for c in claims] == [DIAGNOSTIC, VERDICT, VERDICT, VERDICT]
    assert all(c.passed for c in claims)
    assert_controls_fail(claims)
    assert all(c.runs == ("exp",) for c in claims)


def test_tail_claims_on_the_true_exponential_tail() -> None:
    # JSQ(2) with exponential service: u_k = ρ^(2^k − 1), doubly exponential with base 2,
    # but not the published Π_k (θ = 1/2): the formula defect, one finding.
    claims = tail.check(tail_rows("exp", 0.7, lambda k: 0.7 ** (2**k - 1)), TAIL)
    assert by(claims, "Doubly exponential").status == REPRODUCED
    pi = by(claims, "published Π_2, Π_3")
    assert pi.status == NOT_REPRODUCED and pi.finding == CLOSED_FORM and pi.source == "paper"
    assert by(claims, "published Π_k's rate").status == NOT_REPRODUCED


def test_tail_claims_fail_on_a_geometric_tail() -> None:
    claims = tail.check(tail_rows("exp", 0.7, lambda k: 0.7**k), TAIL)
    de = by(claims, "Doubly exponential")
    assert de.status == NOT_REPRODUCED and de.control["outcome"] == REPRODUCED
    assert by(claims, "published Π_2, Π_3").status == NOT_REPRODUCED
    assert by(claims, "published Π_k's rate").status == NOT_REPRODUCED


def test_tail_failures_name_their_root_cause() -> None:
    # light-tailed service: a failed rate re-tests the Π formula, the θ finding
    claims = tail.check(tail_rows("exp", 0.7, lambda k: 0.7 ** (2**k - 1)), TAIL)
    assert by(claims, "published Π_k's rate").finding == CLOSED_FORM
    # a power-law service tail (Lomax α = 3): its own finding (Bramson, Lu & Prabhakar)
    rows = tail_rows("lomax:3", 0.7, lambda k: 0.7**k)
    claims = tail.check(rows, TAIL | {"dists": ["lomax:3"]})
    for text in ("Doubly exponential", "published Π_k's rate"):
        c = by(claims, text)
        assert c.status == NOT_REPRODUCED and c.finding == comparisons.POWER_TAIL
    assert PAPER.findings[comparisons.POWER_TAIL].source == "paper"
    # each law is a point of one statement
    assert by(claims, "Doubly exponential").statement == "doubly-exponential-every-law"


def test_tail_rate_claim_straddles_with_a_wide_interval() -> None:
    cf_u, _ = truth("exp", 0.7, "cf", 12)
    claims = tail.check(tail_rows("exp", 0.7, lambda k: cf_u[k], rel=0.3), TAIL)
    assert by(claims, "published Π_k's rate").status == UNDECIDED


def test_tail_equilibrium_diagnostic_fails_off_rho_and_voids_the_run() -> None:
    cf_u, _ = truth("exp", 0.7, "cf", 12)
    # the issue's Lomax α = 1.5 run: u_1 = 0.6934 against ρ = 0.7, a 0.1% CI
    rows = tail_rows("exp", 0.7, lambda k: 0.6934 if k == 1 else cf_u[k])
    claims = gate(tail.check(rows, TAIL))
    eq = by(claims, "equilibrium")
    assert eq.kind == DIAGNOSTIC and not eq.passed
    assert all(c.status == UNDECIDED and "equilibrium" in c.invalid for c in claims[1:])


# ---------------------------------------------------------------------------------------
# θ artifacts (exact values: the tables are computed, no simulation)

THETA = {"m": [1, 2, 3], "d": [1, 2, 3]}


def test_theta_table_claim_depends_on_the_reading_of_the_erlang_example() -> None:
    rows = theta_table.compute({"m": THETA["m"], "d": THETA["d"]}, None)
    claims = theta_table.check(rows, THETA)
    assert [c.kind for c in claims] == ["verdict", CONSISTENCY, CONSISTENCY]
    assert all(c.passed for c in claims)
    assert_controls_fail(claims)
    # tried both ways: A holds, B fails, so the verdict is ours and charges no finding
    att = claims[0].attribution
    assert att["verdict"] == DEPENDS and claims[0].finding is None
    assert [r["status"] for r in att["readings"]] == [REPRODUCED, NOT_REPRODUCED]
    # each reading's control (θ at d = 1, which the paper sets apart) is not reproduced
    assert all(r["control"]["outcome"] == NOT_REPRODUCED for r in att["readings"])
    a, b = theta_table.theta_grid(rows, "A"), theta_table.theta_grid(rows, "B")
    assert a[3, 2] < a[1, 2] and b[3, 2] > b[1, 2]  # the two readings disagree on m
    assert a[1, 2] == pytest.approx(0.5)  # exponential: μ^(d−1)/d
    summary = theta_table.summary(rows)
    assert {r["reading"][0] for r in summary} == {"A", "B"}


def test_theta_table_claim_fails_when_theta_grows_in_m() -> None:
    rows = theta_table.compute({"m": THETA["m"], "d": THETA["d"]}, None)
    # swap the readings: reading A now holds B's numbers (θ increasing in m)
    swapped = [r | {"reading": {"A": "B", "B": "A"}[r["reading"]]} for r in rows]
    claims = theta_table.check(swapped, THETA)
    assert not claims[0].passed and claims[0].attribution["verdict"] == DEPENDS
    # B's numbers under both labels: the claim fails under every reading
    both_b = [r | {"reading": "A"} for r in rows if r["reading"] == "B"]
    both_b += [r for r in rows if r["reading"] == "B"]
    assert theta_table.check(both_b, THETA)[0].attribution["verdict"] == FAILS_EVERY
    bad = [r | {"value": r["value"] * (1.01 if r["how"] == "quadrature" else 1)} for r in rows]
    assert not theta_table.check(bad, THETA)[2].passed


def test_theta_exp_consistency_passes_and_fails() -> None:
    rows = theta_exp.compute({"mu": [0.5, 1.0, 2.0], "d": [2, 3]}, None)
    cfg = {"mu": [0.5, 1.0, 2.0], "d": [2, 3]}
    (c,) = theta_exp.check(rows, cfg)
    assert c.passed and c.kind == CONSISTENCY
    wrong = [r | {"value": r["value"] * 1.001} if r["method"] == "published" else r for r in rows]
    assert not theta_exp.check(wrong, cfg)[0].passed


def test_theta_examples_consistency_passes_and_fails() -> None:
    cfg = {"dists": ["exp", "lomax:3", "weibull:0.5"], "d": [2, 3]}
    rows = theta_examples.compute(cfg, None)
    claims = theta_examples.check(rows, cfg)
    assert len(claims) == 3 and all(c.passed and c.kind == CONSISTENCY for c in claims)
    wrong = [
        r | {"value": r["value"] * 1.01} if r["method"] == "published" and r["dist"] == "lomax:3"
        else r
        for r in rows
    ]  # fmt: skip
    assert [c.passed for c in theta_examples.check(wrong, cfg)] == [True, False, True]
    with pytest.raises(EmptyComparisonError):
        theta_examples.check([], cfg)
