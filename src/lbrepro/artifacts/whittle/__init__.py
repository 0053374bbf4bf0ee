"""Artifacts of Ayesta, Gupta & Verloop (seed 001, docs/models.md §B): LPS-d servers, Whittle.

``whittle-index-linear`` / ``whittle-index-meanvar``: W(n) against n over a (p, q, d) grid.
``whittle-fcfs``: the d = 1 closed form against the numerical index.
``whittle-indexability``: subsidy-RVI indexability verdicts over (p, q, d, cost).
``whittle-compare``: gap to the optimal policy (%) against p for Whittle, JSQ, JSEW, RSA,
exact on the truncated joint chain and cross-checked by simulating the slotted system.
``whittle-gaps``: mean and max gap of each policy per scenario and cost (exact only).

Code shared by several artifacts: ``grid`` (the single-server grids), ``index_curves`` (the two
index artifacts), ``policy_comparison`` (compare and gaps), ``reconstructions``.
"""

from __future__ import annotations

from lbrepro.artifacts.registry import Paper
from lbrepro.artifacts.whittle import (
    compare,
    fcfs,
    gaps,
    index_linear,
    index_meanvar,
    indexability,
)

PAPER = Paper(
    slug="whittle",
    title="Load balancing with heterogeneous schedulers",
    authors="U. Ayesta, M. Gupta & I. M. Verloop",
    citation=(
        "Ayesta, Gupta & Verloop, Load balancing with heterogeneous schedulers (seed text 001)."
    ),
    summary=(
        "A dispatcher sends each arriving job (probability p per slot) to one of K servers, "
        "each serving up to d jobs at a time (limited processor sharing, capacity q). "
        "Treating every server as a restless bandit gives Whittle's index, in closed form "
        "for FCFS (d = 1). The paper claims: with a linear cost q is the key parameter and "
        "d matters little, with a mean–variance cost the index depends strongly on d; the "
        "problem is indexable; the Whittle policy is close to optimal and beats JSQ, JSEW "
        "and random routing (RSA)."
    ),
    artifacts=(
        index_linear.ARTIFACT,
        index_meanvar.ARTIFACT,
        fcfs.ARTIFACT,
        indexability.ARTIFACT,
        compare.ARTIFACT,
        gaps.ARTIFACT,
    ),
    order=30,
    name="Ayesta, Gupta & Verloop (2018)",
    url="https://arxiv.org/abs/1810.07782",
)
