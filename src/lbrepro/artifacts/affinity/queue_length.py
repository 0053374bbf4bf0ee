"""affinity-queue-length: Fig. 6, waiting jobs per server, CM(3) vs JSQ(3) vs RA."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity.config_checks import service_rates
from lbrepro.artifacts.affinity.performance import (
    compute,
    cost,
    formula_values,
    loads_above_mu2,
    plot_panels,
    points,
    ratio_verdict,
    simulation_claims,
    summary_of,
    validator_for_load_grids,
)
from lbrepro.artifacts.affinity.reconstructions import (
    ASSIGNMENT_NOTE,
    EXTRAPOLATION_NOTE,
    PERF_NOTE,
)
from lbrepro.artifacts.affinity.rows import SLUG
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.verdicts import Verdict
from lbrepro.meanfield.closed_forms import doubly_exponential_tail
from lbrepro.models import affinity as model

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _slightly_above_verdict(a: dict, b: dict, ra: dict, lams: list[float], bound: float) -> Verdict:
    """A above B at every λ, by at most ``bound`` of RA's excess over B: (A − B)/(RA − B)."""
    above = [lam for lam in lams if a[lam] > b[lam]]
    rel = {lam: (a[lam] - b[lam]) / (ra[lam] - b[lam]) for lam in lams}
    return Verdict(
        passed=len(above) == len(lams) and max(rel.values()) <= bound,
        measured=f"{len(above)}/{len(lams)} above; relative excess "
        f"{min(rel.values()):.3f}–{max(rel.values()):.3f}",
        expected=f"above at every λ, (A − B)/(RA − B) ≤ {bound:g}",
        tolerance=bound,
        details="; ".join(
            f"λ={lam:g}: {a[lam]:.3f} vs {b[lam]:.3f} (RA {ra[lam]:.3f})"
            for lam in lams[:: max(1, len(lams) // 5)]
        ),
    )


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """CM slightly above JSQ(d1), JSQ's variance almost twice CM's; simulation vs formulas."""
    cm, jsq, ra = (formula_values(rows, p, "wait_jobs") for p in ("cm", "jsq", "ra"))
    cmv, jsqv = formula_values(rows, "cm", "wait_var"), formula_values(rows, "jsq", "wait_var")
    lams = loads_above_mu2(rows, cfg)
    d = cfg["d1"]
    var_ratio = {lam: jsqv[lam] / cmv[lam] for lam in lams}
    mean_ratio = {lam: jsq[lam] / cm[lam] for lam in lams}
    in_band = [lam for lam, v in var_ratio.items() if 1.7 <= v <= 2.3]
    total = {lam: _total_jobs_var_ratio(lam, cfg) for lam in lams}
    total_band = [lam for lam, v in total.items() if 1.7 <= v <= 2.3]
    claims = [
        make_claim(
            f"CM({d}) has slightly more waiting jobs per server than JSQ({d}) (fixed-point "
            "formulas, every λ ∈ (μ2, 1) of the grid; our yardstick for 'slightly': the excess "
            "is at most a fifth of RA's excess over JSQ)",
            _slightly_above_verdict(cm, jsq, ra, lams, 0.2),
            control=(
                f"the same test with CM and JSQ({d}) swapped must fail",
                _slightly_above_verdict(jsq, cm, ra, lams, 0.2),
            ),
        ),
        make_claim(
            f"The variance of the waiting jobs per server under JSQ({d}) is almost twice that "
            f"under CM({d}) (every λ ∈ (μ2, 1) of the grid; our yardstick for 'almost twice': "
            "a ratio in [1.7, 2.3])",
            ratio_verdict(var_ratio, 1.7, 2.3, "Var_JSQ / Var_CM"),
            control=(
                "the same yardstick on the ratio of the means JSQ/CM (the paper: close) must fail",
                ratio_verdict(mean_ratio, 1.7, 2.3, "mean_JSQ / mean_CM"),
            ),
            details=f"ratio in the band at {len(in_band)}/{len(lams)} λ; counting the job in "
            f"service too (total jobs per server) it is {min(total.values()):.3f}–"
            f"{max(total.values()):.3f}, in the band at {len(total_band)}/{len(lams)} λ "
            f"({[round(v, 3) for v in total_band]})",
        ),
    ]
    return claims + simulation_claims(rows, cfg, ("wait_jobs", "wait_var"))


def _total_jobs_var_ratio(lam: float, cfg: Mapping[str, Any]) -> float:
    """Var(total jobs per server) under JSQ(d1) over CM(d1), at the fixed points.

    CM (λ > μ2): a type-II job everywhere plus i type-I jobs, so Var(total) = Var(i) = the
    waiting-jobs variance. JSQ: n with P(n ≥ k) = ρ^{(d^k−1)/(d−1)}.
    """
    mu1, mu2 = service_rates(cfg)
    d = cfg["d1"]
    rho = lam / mu1
    k = np.arange(1, 200)
    tail = doubly_exponential_tail(rho, d, 199)[1:]  # P(n ≥ k), k ≥ 1
    mean = tail.sum()
    var_jsq = float(((2 * k - 1) * tail).sum() - mean**2)
    return var_jsq / model.performance(lam, mu2, mu1, d)["cm_wait_var"]


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """Mean and variance of the waiting jobs against λ: formulas as lines, simulation as markers."""
    return plot_panels(
        rows,
        cfg,
        (
            (
                "Mean waiting jobs",
                "mean waiting jobs per server",
                (
                    ("cm", "wait_jobs", "CM({d})"),
                    ("jsq", "wait_jobs", "JSQ({d})"),
                    ("ra", "wait_jobs", "RA"),
                ),
            ),
            (
                "Variance of waiting jobs",
                "variance of waiting jobs per server",
                (
                    ("cm", "wait_var", "CM({d})"),
                    ("jsq", "wait_var", "JSQ({d})"),
                    ("ra", "wait_var", "RA"),
                ),
            ),
        ),
        3.0,
    )


ARTIFACT = Artifact(
    id="affinity-queue-length",
    slug=SLUG,
    kind="figure",
    title="Fig. 6: waiting jobs per server, CM(3) vs JSQ(3) vs RA",
    caption=(
        "Mean number of waiting jobs per server (excluding the job in service) against λ, "
        "μ2 = 0.5, d1 = 3: CM(3) at its fixed point, JSQ(3) (supermarket) and RA (M/M/1); "
        "markers: simulation with N = 1000 servers (95% CI)."
    ),
    methods=("CF", "SIM"),
    points=points,
    cost=cost,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary_of(("wait_jobs", "wait_var")),
    validate=validator_for_load_grids("affinity-queue-length"),
    reconstructions=(ASSIGNMENT_NOTE, PERF_NOTE, EXTRAPOLATION_NOTE),
)
