"""The heterogeneous-cluster claim checks on synthetic tables: each passes where its claim holds
(with its control failing) and fails where the claim is false. No simulation is run."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from lbrepro.artifacts.hetero import accuracy, chaos, configuration, sojourn, stability, tail
from lbrepro.core.claims import CONSISTENCY, Claim
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import hetero as model

H2 = {"name": "S", "gamma": [0.5, 0.5], "C": [1, 2], "d": [2, 2]}


def sim(value: float, half: float, **kw) -> dict:
    return {
        "method": "sim",
        "value": value,
        "ci_low": value - half,
        "ci_high": value + half,
        "batches": 20,
        "seed": 1,
    } | kw


def assert_holds(claims: list[Claim]) -> None:
    assert claims
    for c in claims:
        assert c.passed, (c.claim, c.measured, c.details)
        if c.kind != CONSISTENCY:
            assert c.control is not None, c.claim
            assert not c.control["passed"], (c.claim, c.control)
            assert c.status == "reproduced"


def failing(claims: list[Claim], words: str) -> list[Claim]:
    found = [c for c in claims if words in c.claim]
    assert found, words
    return [c for c in found if not c.passed]


# ------------------------------------------------------------------------- hetero-sojourn
SOJOURN_CFG = {
    "systems": [H2],
    "policies": ["scheme1", "scheme2", "typed", "typed-tuned", "random"],
    "rho_grid": [0.1, 0.5, 0.9],
    "rho_sim": [0.9],
    "lam_hat": 0.5,
    "N": 100,
}


def sojourn_rows(
    tuned_wrong: tuple[float | None, float | None] = (2.0, None),
    random_sim: float = 3.0,
    rmf_offset: float = 0.0,
) -> list[dict]:
    mf = {
        "scheme1": {0.1: 0.5, 0.5: 0.7, 0.9: 1.0},
        "scheme2": {0.1: 0.5, 0.5: 0.7, 0.9: 1.05},
        "typed": {0.1: 0.7, 0.5: 1.0, 0.9: 1.5},
        "typed-tuned": {0.1: tuned_wrong[0], 0.5: 0.8, 0.9: tuned_wrong[1]},
        "random": {0.1: 0.8, 0.5: 1.3, 0.9: 3.0},
    }
    rows = [
        {"system": "S", "policy": p, "rho": rho, "method": "mf", "quantity": "mean_sojourn"}
        | {"value": v}
        for p, by in mf.items()
        for rho, v in by.items()
    ]
    sims = {"scheme1": 1.02, "scheme2": 1.07, "typed": 1.52, "random": random_sim}
    for p, v in sims.items():
        key = {"system": "S", "policy": p, "rho": 0.9, "quantity": "mean_sojourn", "N": 100}
        rows.append(key | sim(v, 0.01))
        rows.append(key | {"method": "rmf", "value": v + rmf_offset})
    return rows


def test_sojourn_holds():
    assert_holds(sojourn.check(sojourn_rows(), SOJOURN_CFG))


def test_sojourn_claims_fail_where_false():
    # The mis-tuned split beats the schemes at every wrong load: both scheme claims fail.
    claims = sojourn.check(sojourn_rows(tuned_wrong=(0.3, 0.6)), SOJOURN_CFG)
    assert failing(claims, "can give a lower mean response time")
    assert failing(claims, "at every load")
    # Only at one wrong load: the paper's "can" holds, the stricter "every" does not.
    claims = sojourn.check(sojourn_rows(tuned_wrong=(0.3, None)), SOJOURN_CFG)
    assert not failing(claims, "can give a lower mean response time")
    assert failing(claims, "at every load")
    # Random routing beats the schemes in simulation.
    claims = sojourn.check(sojourn_rows(random_sim=0.9), SOJOURN_CFG)
    assert failing(claims, "every simulated baseline")
    # The refined mean field far outside the simulation's CI.
    claims = sojourn.check(sojourn_rows(rmf_offset=0.1), SOJOURN_CFG)
    assert failing(claims, "refined mean field")


def test_sojourn_mentions_the_reconstruction():
    claims = sojourn.check(sojourn_rows(), SOJOURN_CFG)
    tuned = [c for c in claims if "tuned" in c.claim]
    assert tuned and all("[reconstruction]" in c.details for c in tuned)


def test_sojourn_without_simulation_fails_loudly():
    rows = [r for r in sojourn_rows() if r["method"] == "mf"]
    with pytest.raises(EmptyComparisonError):
        sojourn.check(rows, SOJOURN_CFG)


# ----------------------------------------------------------------------- hetero-stability
H2X = {"name": "H2x", "gamma": [0.8, 0.2], "C": [1, 10], "d": [2, 2]}
STABILITY_CFG = {"systems": [H2X], "sim_sides": [0.9, 1.1], "N": 200}
HORIZONS = [250, 500, 750, 1000]


def stability_rows(
    schemes: float = 1.0,
    sqd_shift: float = 0.0,
    drift_below: float = 0.0,
    drift_above: float = 0.08,
    diverged_above: bool = False,
) -> list[dict]:
    system = stability._two_type(10, 0.8, 2)
    cf = model.sqd_stability_closed_form(system, 2) / system.total_capacity
    rows = [
        {"ratio": 10, "gamma_slow": 0.8, "d": 2, "quantity": "lambda_star_normalised"}
        | {"method": "mf", "policy": p, "value": v}
        for p, v in (("scheme1", schemes), ("scheme2", schemes), ("sqd", cf + sqd_shift))
    ]
    lam_star = model.sqd_stability_closed_form(configuration.system_from_spec(H2X), 2)
    noise = [0.01, -0.012, 0.008, -0.006]
    for side, drift in ((0.9, drift_below), (1.1, drift_above)):
        for H, e in zip(HORIZONS, noise, strict=True):
            value = 2.0 + e + drift * (50 + H) / 2
            diverged = side > 1 and diverged_above and HORIZONS[-1] == H
            row = {
                "system": "H2x",
                "side": side,
                "horizon": H,
                "warmup": 50,
                "lam": side * lam_star,
                "quantity": "mean_jobs",
                "N": 200,
                "diverged": diverged,
            }
            if side < 1:
                rows.append(row | sim(value, 0.02))
            else:
                rows.append(row | {"method": "path", "value": None if diverged else value})
    return rows


def test_stability_holds():
    assert_holds(stability.check(stability_rows(), STABILITY_CFG))
    # A run that diverged above λ* is instability; the below statistic rejects it.
    assert_holds(stability.check(stability_rows(diverged_above=True), STABILITY_CFG))


def test_stability_claims_fail_where_false():
    claims = stability.check(stability_rows(schemes=0.9), STABILITY_CFG)
    assert failing(claims, "maximum stability region")
    claims = stability.check(stability_rows(sqd_shift=0.05), STABILITY_CFG)
    assert failing(claims, "closed form")
    # No drift above λ*, a growing path below it: both simulation claims fail.
    claims = stability.check(stability_rows(drift_below=0.05, drift_above=0.0), STABILITY_CFG)
    assert failing(claims, "at 0.9·λ* is stable")
    assert failing(claims, "at 1.1·λ* is unstable")


def test_stability_rejects_a_config_without_both_sides():
    cfg = {"systems": [H2X], "sim_sides": [0.9], "horizons": HORIZONS}
    with pytest.raises(Exception, match="sim_sides"):
        stability.validate(cfg)
    cfg = {"systems": [H2X], "sim_sides": [0.9, 1.1], "horizons": [500, 1000]}
    with pytest.raises(Exception, match="horizons"):
        stability.validate(cfg)


# --------------------------------------------------------------------------- hetero-tail
TAIL_CFG = {"systems": [H2], "rho": 0.9, "N": 1000, "deep_levels": 12}


def doubly(rho: float, k: int) -> float:
    return rho ** (2**k - 1)


def tail_rows(
    scheme_tail=doubly, rmf_offset: float = 0.0, mf_gap: float = 0.0, deep_geometric=False
) -> list[dict]:
    """Two types, three policies; u exact in the mean field, simulated with CI ±2% + 1e-4."""
    rho, rows = 0.9, []
    for policy in ("scheme1", "scheme2", "random"):
        shape = (lambda r, k: r**k) if policy == "random" else scheme_tail
        for j, cap in enumerate((1, 2)):
            base = {"system": "S", "policy": policy, "rho": rho, "type": j, "capacity": cap}
            for k in range(13):
                u, near = shape(rho, k), shape(rho - configuration.NEIGHBOUR_DRHO, k)
                half = 0.02 * u + 1e-4
                rows.append(base | sim(u, half, k=k, quantity="u", N=1000))
                rows.append(base | {"method": "mf", "quantity": "u", "k": k, "value": u - mf_gap})
                rows.append(
                    base | {"method": "rmf", "quantity": "u", "k": k, "value": u + rmf_offset}
                )
                for method in ("mf", "rmf"):
                    rows.append(
                        base | {"method": method, "quantity": "u_neighbour", "k": k, "value": near}
                    )
            if policy != "random":
                for n in range(40):
                    log_u = n * math.log(rho) if deep_geometric else (2**n - 1) * math.log(rho)
                    rows.append(
                        base | {"method": "mf", "quantity": "log_u", "k": n, "value": log_u}
                    )
    return rows


def test_tail_holds():
    assert_holds(tail.check(tail_rows(), TAIL_CFG))


def test_tail_claims_fail_where_false():
    claims = tail.check(tail_rows(scheme_tail=lambda r, k: r**k), TAIL_CFG)
    assert len(failing(claims, "decays doubly exponentially")) == 2
    claims = tail.check(tail_rows(deep_geometric=True), TAIL_CFG)
    assert len(failing(claims, "mean-field equilibrium we solve")) == 2
    claims = tail.check(tail_rows(rmf_offset=0.05), TAIL_CFG)
    assert len(failing(claims, "converge to the mean field")) == 2
    # A finite-N offset of the limit alone fails only the labelled finite-N finding.
    claims = tail.check(tail_rows(mf_gap=0.03), TAIL_CFG)
    assert len(failing(claims, "finite-N")) == 2
    assert not failing(claims, "converge to the mean field")


def test_tail_unresolved_fails_loudly():
    # No level held by enough servers: nothing to judge is an error, never a pass.
    rows = tail_rows(scheme_tail=lambda r, k: 1.0 if k == 0 else 1e-6)
    with pytest.raises(EmptyComparisonError):
        tail.check(rows, TAIL_CFG)


# ----------------------------------------------------------------------- hetero-accuracy
ACC_CFG = {"systems": [H2], "rho": [0.9], "N": [10, 100, 1000]}


def accuracy_rows(limit: float = 1.0, rmf_coef: float = 0.5) -> list[dict]:
    rows = []
    for policy in ("scheme1", "scheme2"):
        for N in ACC_CFG["N"]:
            base = {"system": "S", "policy": policy, "rho": 0.9, "N": N}
            rows += [
                base | {"method": "mf", "quantity": "mean_sojourn", "value": 1.0},
                base | {"method": "rmf", "quantity": "mean_sojourn", "value": 1 + rmf_coef / N},
                base | {"method": "mf", "quantity": "mean_sojourn_neighbour", "value": 0.8},
                base | sim(limit + 0.5 / N, 0.005, quantity="mean_sojourn"),
            ]
    return rows


def test_accuracy_holds():
    assert_holds(accuracy.check(accuracy_rows(), ACC_CFG))


def test_accuracy_claims_fail_where_false():
    claims = accuracy.check(accuracy_rows(limit=1.1), ACC_CFG)
    assert len(failing(claims, "becomes exact as N → ∞")) == 2
    claims = accuracy.check(accuracy_rows(rmf_coef=-0.5), ACC_CFG)
    assert len(failing(claims, "finite-N")) == 2


def test_accuracy_summary_reads_the_right_rows():
    out = accuracy.summary(accuracy_rows())
    assert len(out) == 6 and out[0]["MF rel. error"] == "-4.76%"


# -------------------------------------------------------------------------- hetero-chaos
CHAOS_CFG = {"systems": [H2], "N": [10, 20, 50, 100]}


def chaos_rows(cov=lambda N: -0.5 / N, var=lambda N: 5.0) -> list[dict]:
    rows = []
    for N in CHAOS_CFG["N"]:
        for j in (0, 1):
            rows.append(
                {"system": "S", "quantity": "var_tagged", "type_a": j, "type_b": j, "N": N}
                | sim(var(N), 0.1)
            )
        for q, a, b in (("cov_same", 0, 0), ("cov_same", 1, 1), ("cov_cross", 0, 1)):
            rows.append(
                {"system": "S", "quantity": q, "type_a": a, "type_b": b, "N": N}
                | sim(cov(N), 0.002)
            )
    return rows


def test_chaos_holds():
    # Negative covariances are judged with their sign at the smallest N.
    assert_holds(chaos.check(chaos_rows(), CHAOS_CFG))
    assert_holds(chaos.check(chaos_rows(lambda N: 0.5 / N), CHAOS_CFG))


def test_chaos_fails_where_false():
    claims = chaos.check(chaos_rows(lambda N: 0.05), CHAOS_CFG)
    assert len(failing(claims, "vanishes")) == 3
    # Falling by far more than half, but towards a positive limit: N·Cov rises, the claim fails.
    claims = chaos.check(chaos_rows(lambda N: 0.02 + 1 / N), CHAOS_CFG)
    assert len(failing(claims, "vanishes")) == 3


def test_chaos_control_variance_from_the_tail():
    run = SimpleNamespace(
        u=[[1.0, 0.5, 0.25]], u_ci_low=[[1.0, 0.49, 0.24]], u_ci_high=[[1.0, 0.51, 0.26]]
    )
    out = chaos._variance(run, 0)
    # P(q = 0, 1, 2) = 0.5, 0.25, 0.25: E q = 0.75, E q² = 1.25.
    assert out["value"] == pytest.approx(1.25 - 0.75**2)
    assert out["ci_low"] < out["value"] < out["ci_high"]
    # A variance that vanished like the covariance would make the control pass: inconclusive.
    claims = chaos.check(chaos_rows(var=lambda N: 50 / N), CHAOS_CFG)
    assert all(c.status == "inconclusive" for c in claims)


# ------------------------------------------------------------------------- every artifact
def test_every_artifact_notes_its_reconstruction():
    from lbrepro.artifacts import registry

    for aid in ("hetero-sojourn", "hetero-stability", "hetero-tail", "hetero-accuracy"):
        assert registry.get(aid).reconstructions, aid
    assert any("[reconstruction]" in n for n in registry.get("hetero-chaos").reconstructions)
    assert "growing linearly" not in registry.get("hetero-stability").caption
    assert "decays doubly exponentially" not in registry.get("hetero-tail").caption


def test_control_loads_must_stay_positive():
    with pytest.raises(Exception, match="positive load"):
        tail.validate({"systems": [H2], "rho": 0.05})
    with pytest.raises(Exception, match="positive load"):
        accuracy.validate({"systems": [H2], "rho": [0.5, 0.04]})
