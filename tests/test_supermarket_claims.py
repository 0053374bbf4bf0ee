"""The supermarket claim checks on synthetic tables: each passes where its claim holds (with its
control failing) and fails where the claim is false. No simulation."""

from __future__ import annotations

import pytest

from lbrepro.artifacts.supermarket import accuracy, tail
from lbrepro.core.claims import CONSISTENCY, Claim
from lbrepro.core.stats import Estimate
from lbrepro.core.tail_verdicts import resolution, tail_shape
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import supermarket as model

N, T, KMAX = 1000, 50_000.0, 12


def closed(rho: float, d: int, k: int) -> float:
    u = model.fixed_point_closed_form(rho, d)
    return float(u[k]) if k < len(u) else 0.0


def tail_rows(rho: float, d: int, sim_u, V=None, rel: float = 0.002) -> list[dict]:
    """cf/mf/rmf rows of (ρ, d) and sim rows with values ``sim_u(k)`` and relative CI ``rel``."""
    V = V or (lambda k: 0.0)
    rows = []
    for k in range(KMAX + 1):
        cf = closed(rho, d, k)
        base = {"rho": rho, "d": d, "quantity": "u", "k": k}
        rows += [
            base | {"method": "cf", "value": cf},
            base | {"method": "mf", "value": cf},
            base | {"method": "rmf", "value": cf + V(k) / N, "N": N},
        ]
        v = sim_u(k)
        h = rel * v + 1e-7
        rows.append(
            base
            | {
                "method": "sim",
                "value": v,
                "ci_low": v - h,
                "ci_high": v + h,
                "N": N,
                "seed": 1,
                "batches": 20,
                "measured_time": T,
            }
        )
    return rows


def v2(k: int) -> float:
    """A synthetic 1/N coefficient, large enough to be resolved at N = 1000 (V_1 = 0)."""
    return 0.0 if k == 0 or k == 1 else 10.0 * closed(0.9, 2, k)


def check(rows, cfg) -> dict[str, Claim]:
    return {c.claim: c for c in tail.check(rows, cfg)}


def assert_controls_fail(claims) -> None:
    for c in claims:
        if c.kind != CONSISTENCY:
            assert c.control is not None, c.claim
            assert not c.control["passed"], (c.claim, c.control)


CFG = {"rho": [0.9], "d": [1, 2], "N": N}


def holds_table() -> list[dict]:
    return tail_rows(0.9, 1, lambda k: 0.9**k) + tail_rows(
        0.9, 2, lambda k: closed(0.9, 2, k) + v2(k) / N, V=v2
    )


def test_tail_claims_hold_with_failing_controls() -> None:
    claims = tail.check(holds_table(), CFG)
    limit = [c for c in claims if "N → ∞ limit" in c.claim]
    finite = [c for c in claims if "finite-N finding" in c.claim]
    shape = [c for c in claims if "doubly exponentially" in c.claim]
    assert len(limit) == 2 and len(finite) == 2 and len(shape) == 1
    assert all(c.passed for c in limit + shape)
    assert_controls_fail(claims)
    # The O(1/N) offset is resolved at d = 2, so the fixed-N comparison with the plain closed
    # form fails — a finite-N finding, labelled lbrepro — while the limit claim holds.
    f2 = next(c for c in finite if "d = 2" in c.claim)
    assert not f2.passed and f2.source == "lbrepro"
    f1 = next(c for c in finite if "d = 1" in c.claim)
    assert f1.passed  # d = 1: V = 0, the closed form is exact at every N


def test_tail_limit_claim_fails_when_simulation_is_off() -> None:
    # The simulation sits at the closed form of load 0.88: the limit claim must fail.
    rows = tail_rows(0.9, 1, lambda k: 0.9**k) + tail_rows(
        0.9, 2, lambda k: closed(0.88, 2, k), V=v2
    )
    c = next(c for c in tail.check(rows, CFG) if "d = 2" in c.claim and "limit" in c.claim)
    assert not c.passed


def test_doubly_exponential_claim_fails_on_a_geometric_tail() -> None:
    rows = tail_rows(0.9, 1, lambda k: 0.9**k) + tail_rows(0.9, 2, lambda k: 0.9**k, V=v2)
    c = next(c for c in tail.check(rows, CFG) if "doubly exponentially" in c.claim)
    assert not c.passed


def test_doubly_exponential_control_without_d1_uses_the_geometric_tail() -> None:
    rows = tail_rows(0.9, 2, lambda k: closed(0.9, 2, k) + v2(k) / N, V=v2)
    claims = tail.check(rows, {"rho": [0.9], "d": [2], "N": N})
    shape = next(c for c in claims if "doubly exponentially" in c.claim)
    assert shape.passed and not shape.control["passed"]
    assert "geometric tail" in shape.control["claim"]


def test_tail_shape_rejects_power_law_and_needs_two_levels() -> None:
    power = {k: Estimate(v, v * 0.99, v * 1.01, v * 0.01, 20) for k in range(1, 40)
             for v in [min(0.9, 2.0 * k**-1.5)]}  # fmt: skip
    assert not tail_shape(power, 2, 1000).passed
    with pytest.raises(EmptyComparisonError):
        tail_shape({1: Estimate(0.5, 0.49, 0.51, 0.01, 20)}, 2, 1000)


def test_resolution_is_one_server_for_one_time_unit() -> None:
    assert resolution(1000, 50_000) == pytest.approx(2e-8)


# ---------------------------------------------------------------------------------------
# supermarket-accuracy

NS = [10, 20, 50, 100, 200]
M, C = 2.5, 4.0


def accuracy_rows(sim_of_n, rmf_coef: float = C, half: float = 2e-4) -> list[dict]:
    rows = []
    for n in NS:
        p = {"rho": 0.9, "d": 2, "N": n}
        rows.append(p | {"method": "mf", "quantity": "mean_jobs", "value": M})
        rows.append(
            p
            | {
                "method": "rmf",
                "quantity": "mean_jobs",
                "value": M + rmf_coef / n,
                "rmf_coefficient": rmf_coef,
            }
        )
        v = sim_of_n(n)
        rows.append(
            p
            | {
                "method": "sim",
                "quantity": "mean_jobs",
                "value": v,
                "ci_low": v - half,
                "ci_high": v + half,
                "seed": 1,
                "batches": 20,
            }
        )
    return rows


ACC = {"cases": [[0.9, 2]], "N": NS}


def test_accuracy_claims_hold_with_failing_controls() -> None:
    rows = accuracy_rows(lambda n: M + C / n + 8.0 / n**2)
    claims = accuracy.check(rows, ACC)
    assert len(claims) == 3
    assert all(c.passed for c in claims), [(c.claim, c.measured, c.tolerance) for c in claims]
    assert_controls_fail(claims)
    mf = next(c for c in claims if "mean field error" in c.claim and "refined" not in c.claim)
    assert mf.source == "paper" and abs(mf.measured - 1) < 0.1


def test_accuracy_claims_fail_when_orders_are_wrong() -> None:
    # The mean-field error is O(1/N²) and the "refined" correction overshoots by C/N.
    rows = accuracy_rows(lambda n: M + C / n**2, rmf_coef=C)
    claims = {("refined" in c.claim, "at least as accurate" in c.claim): c for c in
              accuracy.check(rows, ACC)}  # fmt: skip
    assert not claims[False, False].passed  # MF error is not 1/N
    assert not claims[True, False].passed  # RMF error is not 1/N²
    assert not claims[True, True].passed  # RMF is worse than MF


def test_order_verdict_rule() -> None:
    assert accuracy.order_verdict(1.05, 0.1, 1).passed
    assert not accuracy.order_verdict(1.05, 0.1, 2).passed
    assert not accuracy.order_verdict(1.4, 0.35, 1).passed  # CI reaches the neighbouring order 2
    assert not accuracy.order_verdict(1.6, 0.01, 1).passed  # nearer 2 than 1
    assert accuracy.at_least_order_verdict(2.7, 0.3, 2).passed  # faster than 1/N² is O(1/N²)
    assert not accuracy.at_least_order_verdict(1.1, 0.05, 2).passed  # a 1/N error is not
    assert not accuracy.at_least_order_verdict(2.7, 2.0, 2).passed  # not shown faster than 1/N


def test_accuracy_needs_three_values_of_n() -> None:
    rows = [r for r in accuracy_rows(lambda n: M + C / n) if r["N"] in (10, 20)]
    with pytest.raises(EmptyComparisonError):
        accuracy.check(rows, {"cases": [[0.9, 2]], "N": [10, 20]})


def test_accuracy_reconstruction_note_describes_the_fit() -> None:
    note = " ".join(accuracy.ARTIFACT.reconstructions)
    assert "every N" in note and "two CI half-widths" not in note
