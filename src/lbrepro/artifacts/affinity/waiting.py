"""affinity-waiting: Fig. 7, mean waiting time by job type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _between_verdict(w: dict, lo: dict, hi: dict, lams: list[float]) -> Verdict:
    """lo < w < hi at every λ."""
    ok = [lam for lam in lams if lo[lam] < w[lam] < hi[lam]]
    return Verdict(
        passed=len(ok) == len(lams),
        measured=f"{len(ok)}/{len(lams)} λ",
        expected="W_JSQ < W < W_RA at every λ",
        tolerance="strict (formulas)",
        details="; ".join(
            f"λ={lam:g}: W {w[lam]:.3f}, JSQ {lo[lam]:.3f}, RA {hi[lam]:.3f}"
            for lam in lams[:: max(1, len(lams) // 5)]
        ),
    )


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Type-II waits between JSQ(d1) and RA, type-I far below JSQ(d1); simulation vs formulas."""
    wi, wii = formula_values(rows, "cm", "wait_time_I"), formula_values(rows, "cm", "wait_time_II")
    w_all = formula_values(rows, "cm", "wait_time")
    wj, wr = formula_values(rows, "jsq", "wait_time"), formula_values(rows, "ra", "wait_time")
    lams = loads_above_mu2(rows, cfg)
    d = cfg["d1"]
    ratio = {lam: wi[lam] / wj[lam] for lam in lams}
    ratio_all = {lam: w_all[lam] / wj[lam] for lam in lams}
    claims = [
        make_claim(
            f"Type-II jobs wait fairly long (longer than under JSQ({d})) but less than under RA, "
            "at every λ ∈ (μ2, 1) of the grid",
            _between_verdict(wii, wj, wr, lams),
            control=(
                "the same test on the type-I waiting time must fail",
                _between_verdict(wi, wj, wr, lams),
            ),
        ),
        make_claim(
            f"Type-I jobs wait significantly less than under JSQ({d}) at every λ ∈ (μ2, 1) of "
            "the grid (our yardstick for 'significantly': at most half, W_I / W_JSQ ≤ 0.5)",
            ratio_verdict(ratio, 0.0, 0.5, "W_I / W_JSQ"),
            control=(
                "the same yardstick on CM's all-jobs waiting time must fail",
                ratio_verdict(ratio_all, 0.0, 0.5, "W_CM / W_JSQ"),
            ),
            details=f"at most half at {sum(v <= 0.5 for v in ratio.values())}/{len(lams)} λ",
        ),
    ]
    return claims + simulation_claims(rows, cfg, ("wait_time_I", "wait_time_II", "wait_time"))


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """Waiting times by job type against λ: formulas as lines, simulation as markers."""
    return plot_panels(
        rows,
        cfg,
        (
            (
                "Waiting time by job type",
                "mean waiting time (mean type-I service times)",
                (
                    ("cm", "wait_time_I", "CM({d}) type I"),
                    ("cm", "wait_time_II", "CM({d}) type II"),
                    ("cm", "wait_time", "CM({d}) all jobs"),
                    ("jsq", "wait_time", "JSQ({d})"),
                    ("ra", "wait_time", "RA"),
                ),
            ),
        ),
        10.0,
    )


ARTIFACT = Artifact(
    id="affinity-waiting",
    slug=SLUG,
    kind="figure",
    title="Fig. 7: mean waiting time by job type",
    caption=(
        "Mean waiting time of type-I, type-II and all jobs under CM(3) (Little's law at the "
        "fixed point: type I arrive at λ − μ2 x01, type II at μ2 x01) against JSQ(3) and RA, "
        "μ2 = 0.5; markers: simulation with N = 1000 (95% CI)."
    ),
    methods=("CF", "SIM"),
    points=points,
    cost=cost,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary_of(("wait_time_I", "wait_time_II", "wait_time")),
    validate=validator_for_load_grids("affinity-waiting"),
    reconstructions=(ASSIGNMENT_NOTE, PERF_NOTE, EXTRAPOLATION_NOTE),
)
