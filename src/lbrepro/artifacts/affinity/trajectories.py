"""affinity-trajectories: Fig. 4, fluid trajectories for d1 = 3 (a unique, queueing fixed
point)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU1, MU2, validate_with_hysteresis
from lbrepro.artifacts.affinity.fluid_trajectories import (
    FIG4_CELLS,
    check_trajectories,
    plot_trajectories,
    trajectory_points,
    trajectory_rows,
)
from lbrepro.artifacts.affinity.reconstructions import FLUID_NOTE, RANDOM_STATES_NOTE
from lbrepro.artifacts.affinity.rows import SLUG
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The trajectories from random initial states (Dirichlet over x[i, j], i ≤ 4)."""
    return trajectory_rows(p, seed, levels=FIG4_CELLS)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The trajectories converge to the queueing fixed point, the unique attractor."""
    return check_trajectories(rows, cfg, want_unique=True)


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """The trajectories in two panels (servers without and with a type-II job)."""
    return plot_trajectories(rows, cfg, f"d1 = {cfg['d1']}")


ARTIFACT = Artifact(
    id="affinity-trajectories",
    slug=SLUG,
    kind="figure",
    title="Fig. 4: fluid trajectories for d1 = 3",
    caption=(
        "Fluid limit from n_traj random initial states (Dirichlet over x[i, j], "
        f"i ≤ {(FIG4_CELLS - 1) // 2}) at the section's λ and d1 (d1 in the panel titles), d1 "
        f"below d1* (a unique, queueing, fixed point); μ1 = {MU1:g}, μ2 = {MU2:g} unless the "
        "section sets them. Dotted lines: the queueing fixed point. Left: servers without a "
        "type-II job; right: with one."
    ),
    methods=("MF",),
    points=trajectory_points,
    compute=compute,
    cost=estimates.trajectory_cost,
    memory=estimates.trajectory_memory,
    check=check,
    plot=plot,
    validate=validate_with_hysteresis,
    reconstructions=(FLUID_NOTE, RANDOM_STATES_NOTE),
)
