"""affinity-waiting: Fig. 7, mean waiting time by job type."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU2, service_rates
from lbrepro.artifacts.affinity.judging import QUARTER, band_verdict
from lbrepro.artifacts.affinity.performance import (
    compute,
    cost,
    formula_values,
    loads_above_mu2,
    plot_panels,
    points,
    simulation_claims,
    summary_of,
    validate,
)
from lbrepro.artifacts.affinity.reconstructions import (
    ASSIGNMENT_NOTE,
    EXTRAPOLATION_NOTE,
    PERF_NOTE,
    WORDS_NOTE,
)
from lbrepro.artifacts.affinity.rows import SLUG
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, close, consistency, make_claim

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Type-II waits long but below RA, type-I well below JSQ(d1); simulation vs formulas.

    "Type-II ... lower than under RA" is an identity of the fixed point (W_II = W_RA − 1/μ1):
    a consistency check. The substantive halves are judged as stated bands of the ratio to
    W_JSQ (judging.QUARTER): "fairly high" = W_II/W_JSQ > 1.25, "significantly smaller" =
    W_I/W_JSQ ≤ 0.75; each control is the adjacent, "slight", band.
    """
    wi, wii = formula_values(rows, "cm", "wait_time_I"), formula_values(rows, "cm", "wait_time_II")
    wj, wr = formula_values(rows, "jsq", "wait_time"), formula_values(rows, "ra", "wait_time")
    lams = loads_above_mu2(rows, cfg)
    mu1, _ = service_rates(cfg)
    d = cfg["d1"]
    ratio_i = {lam: wi[lam] / wj[lam] for lam in lams}
    ratio_ii = {lam: wii[lam] / wj[lam] for lam in lams}
    gap = max(abs(wii[lam] - (wr[lam] - 1 / mu1)) for lam in lams)
    lo, hi = 1 - QUARTER, 1 + QUARTER
    claims = [
        consistency(
            "Type-II jobs wait less than under RA at every λ ∈ (μ2, 1): at the fixed point "
            "W_II = W_RA − 1/μ1 exactly (an identity of the reconstruction, not evidence)",
            close(0.0, gap, 1e-9),
            source="paper",
            details=f"max |W_II − (W_RA − 1/μ1)| = {gap:.2g} over {len(lams)} λ",
        ),
        make_claim(
            f"Type-II jobs wait fairly long: W_II/W_JSQ({d}) > {hi:g} (more than a quarter "
            "longer) at every λ ∈ (μ2, 1) of the grid",
            band_verdict(ratio_ii, hi, math.inf, "W_II / W_JSQ", "fairly long"),
            control=(
                f"only slightly longer than JSQ({d}): W_II/W_JSQ in (1, {hi:g}]",
                band_verdict(ratio_ii, 1.0, hi, "W_II / W_JSQ", "slightly longer"),
            ),
            distance=f"the adjacent quarter of the same ratio, below the boundary {hi:g}",
        ),
        make_claim(
            f"Type-I jobs wait significantly less than under JSQ({d}): W_I/W_JSQ ≤ {lo:g} "
            "(at least a quarter less) at every λ ∈ (μ2, 1) of the grid",
            band_verdict(ratio_i, -math.inf, lo, "W_I / W_JSQ", "significantly smaller"),
            control=(
                f"only slightly less than JSQ({d}): W_I/W_JSQ in ({lo:g}, 1]",
                band_verdict(ratio_i, lo, 1.0, "W_I / W_JSQ", "slightly smaller"),
            ),
            distance=f"the adjacent quarter of the same ratio, above the boundary {lo:g}",
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
        "Mean waiting time of type-I, type-II and all jobs under CM(d1) (Little's law at the "
        "fixed point: type I arrive at λ − μ2 x01, type II at μ2 x01) against JSQ(d1) and RA, "
        f"at the section's d1 (in the legend; μ2 = {MU2:g} unless the section sets it); "
        "markers: simulation with the section's N servers (95% CI)."
    ),
    methods=("CF", "SIM"),
    points=points,
    cost=cost,
    compute=compute,
    memory=estimates.performance_memory,
    check=check,
    plot=plot,
    summary=summary_of(("wait_time_I", "wait_time_II", "wait_time")),
    validate=validate,
    reconstructions=(ASSIGNMENT_NOTE, PERF_NOTE, EXTRAPOLATION_NOTE, WORDS_NOTE),
)
