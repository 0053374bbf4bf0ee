"""affinity-queue-length: Fig. 6, waiting jobs per server, CM(3) vs JSQ(3) vs RA."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU2
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
from lbrepro.core.claims import Claim, Reading, attribute, make_claim

if TYPE_CHECKING:
    from matplotlib.figure import Figure


#: The finding when Fig. 6's words fail under every reading of the measure: the fixed-point
#: formulas do not bear out "slightly larger" and "almost twice" (Paper.findings).
FINDING_FIG6 = "affinity-fig6-words"


def _variance_claim(ratio: Mapping[float, float], d: int, what: str, twice: float) -> Claim:
    """ "Var under JSQ(d) almost twice that under CM(d)" on one measure (``what``): the ratio
    in (twice, 2] at every λ; the control is the adjacent band (1, twice]."""
    return make_claim(
        f"The variance of the {what} per server under JSQ({d}) is almost twice that under "
        f"CM({d}) (every λ ∈ (μ2, 1) of the grid; 'almost twice': a ratio in ({twice:g}, 2], "
        "short of 2 by at most a quarter)",
        band_verdict(ratio, twice, 2.0, "Var_JSQ / Var_CM", "almost twice"),
        control=(
            f"about one and a half times: the adjacent band (1, {twice:g}]",
            band_verdict(ratio, 1.0, twice, "Var_JSQ / Var_CM", "one and a half"),
        ),
        distance=f"the next quarter of the same ratio, below the boundary {twice:g}",
    )


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """CM slightly above JSQ(d1), JSQ's variance almost twice CM's; simulation vs formulas.

    The paper's words become stated bands of the ratio (judging.QUARTER): "slightly larger"
    = CM/JSQ in (1, 1.25]; "almost twice" = Var_JSQ/Var_CM in (1.5, 2] (short of 2 by at
    most a quarter). Each control is the adjacent band of the same ratio.
    """
    cm, jsq = (formula_values(rows, p, "wait_jobs") for p in ("cm", "jsq"))
    cmv, jsqv = formula_values(rows, "cm", "wait_var"), formula_values(rows, "jsq", "wait_var")
    lams = loads_above_mu2(rows, cfg)
    d = cfg["d1"]
    var_ratio = {lam: jsqv[lam] / cmv[lam] for lam in lams}
    mean_ratio = {lam: cm[lam] / jsq[lam] for lam in lams}
    # Counting the job in service too: under CM (λ > μ2) a type-II job sits at every server
    # beside its i type-I jobs, so Var(total) = Var(i) = the waiting-jobs variance.
    jobs_var = formula_values(rows, "jsq", "jobs_var")
    total = {lam: jobs_var[lam] / cmv[lam] for lam in lams}
    hi, twice = 1 + QUARTER, 2 * (1 - QUARTER)
    claims = [
        make_claim(
            f"CM({d}) has slightly more waiting jobs per server than JSQ({d}) (fixed-point "
            "formulas, every λ ∈ (μ2, 1) of the grid; 'slightly': CM/JSQ in "
            f"(1, {hi:g}], at most a quarter more)",
            band_verdict(mean_ratio, 1.0, hi, "mean_CM / mean_JSQ", "slightly larger"),
            control=(
                f"CM({d}) moderately above JSQ({d}): the adjacent band ({hi:g}, {hi + QUARTER:g}]",
                band_verdict(mean_ratio, hi, hi + QUARTER, "mean_CM / mean_JSQ", "moderately"),
            ),
            distance=f"the next quarter of the same ratio, beyond the boundary {hi:g}",
            finding=FINDING_FIG6 if not band_verdict(mean_ratio, 1.0, hi, "", "").passed else None,
        ),
        attribute(
            "which queue length 'the variance of the queue length' means: Fig. 6 plots the "
            "waiting jobs, the sentence says queue length (jobs in system, the one in "
            "service too)",
            [
                Reading(
                    "waiting jobs",
                    "the quantity Fig. 6 plots (excluding the job in service)",
                    _variance_claim(var_ratio, d, "waiting jobs", twice),
                ),
                Reading(
                    "jobs in system",
                    "the sentence's 'queue length': every job at the server, the one in "
                    "service too",
                    _variance_claim(total, d, "jobs in system", twice),
                ),
            ],
            finding=FINDING_FIG6,
        ),
    ]
    return claims + simulation_claims(rows, cfg, ("wait_jobs", "wait_var"))


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
        "Mean and variance of the number of waiting jobs per server (excluding the job in "
        "service) against λ: CM(d1) at its fixed point, JSQ(d1) (supermarket) and RA (M/M/1), "
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
    summary=summary_of(("wait_jobs", "wait_var")),
    validate=validate,
    reconstructions=(ASSIGNMENT_NOTE, PERF_NOTE, EXTRAPOLATION_NOTE, WORDS_NOTE),
)
