"""Artifacts of the heterogeneous-cluster paper (seed 000; docs/models.md §A), one module each.

``hetero-sojourn`` (:mod:`.sojourn`): E[T] against load for six policies on H2, H2x, H3.
``hetero-stability`` (:mod:`.stability`): the largest stable load of whole-system SQ(d) against
the capacity ratio (closed form λ* [reconstruction] and mean-field bisection), with Schemes 1/2
at full capacity, and simulation on both sides of λ* for H2x.
``hetero-tail`` (:mod:`.tail`): per-type tails, Scheme 1 against Scheme 2 (mean field and
simulation); its claim statistics are in :mod:`.tail_claims`.
``hetero-accuracy`` (:mod:`.accuracy`): relative error of the mean field (and refined mean field)
against N.
``hetero-chaos`` (:mod:`.chaos`): covariance of two tagged servers' occupancies against N.

Shared by several artifacts: the config's systems and load checks (:mod:`.configuration`), the
policies' labels, styles and model arguments (:mod:`.policies`) and simulated estimates as rows
(:mod:`.estimates`).
"""

from __future__ import annotations

from lbrepro.artifacts.hetero import accuracy, chaos, sojourn, stability, tail
from lbrepro.artifacts.registry import Paper

__all__ = ["PAPER"]

PAPER = Paper(
    slug="hetero",
    title=(
        "Randomized Assignment of Jobs to Servers in Heterogeneous Clusters of Shared Servers "
        "for Low Delay"
    ),
    authors="A. Mukhopadhyay, A. Karthik & R. R. Mazumdar",
    citation=(
        "Mukhopadhyay, Karthik & Mazumdar, Randomized Assignment of Jobs to Servers in "
        "Heterogeneous Clusters of Shared Servers for Low Delay (seed text 000)."
    ),
    summary=(
        "Processor-sharing servers of several types (fractions γ_j, capacities C_j). "
        "Schemes 1 and 2 sample d_j servers of every type and send the job to the least "
        "occupied one (Scheme 1) or the one offering the largest rate per job C_j/q "
        "(Scheme 2). The paper claims: both schemes are stable up to the full capacity "
        "μΣγ_jC_j, whereas SQ(d) over the whole system is not; the mean-field equilibrium "
        "is unique and every type's tail decays doubly exponentially; the schemes need no "
        "estimate of the arrival rate and can beat a type-based split tuned for the wrong "
        "load; the mean field becomes exact as N → ∞ (propagation of chaos)."
    ),
    artifacts=(
        sojourn.ARTIFACT,
        stability.ARTIFACT,
        tail.ARTIFACT,
        accuracy.ARTIFACT,
        chaos.ARTIFACT,
    ),
    findings={
        sojourn.FINDING_STABLE_SPLIT: (
            "Where the split tuned for λ̂ = 0.5·capacity is mis-tuned and still stable, it can "
            "beat the schemes: on H2x (γ 0.8/0.2, C 1/10, our reconstruction) at ρ ≤ 0.25 "
            "(mean field E[T] 0.108 vs 0.161 at ρ = 0.2, 0.112 vs 0.189 at ρ = 0.25): at a "
            "light load it sends the jobs to the fast servers, while the schemes also sample "
            "slow ones. The schemes beat it on H2x only where it is unstable (ρ ≥ 0.75), "
            "which any stable policy does and so decides nothing."
        ),
    },
    order=20,
    name="Mukhopadhyay, Karthik & Mazumdar (2016)",
    url="https://doi.org/10.1287/15-SSY179",
)
