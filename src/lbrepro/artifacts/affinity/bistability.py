"""affinity-bistability: Fig. 9, fluid trajectories for d1 = 25 (two locally stable fixed
points)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU1, MU2, validate_with_hysteresis
from lbrepro.artifacts.affinity.fluid_trajectories import (
    FIG9_CELLS,
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
    """The trajectories from random initial states (Dirichlet over x00, x10, x01, x11)."""
    return trajectory_rows(p, seed, levels=FIG9_CELLS)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The trajectories converge to one of the two stable fixed points, most to the queueing one."""
    return check_trajectories(rows, cfg, want_unique=False)


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """The trajectories in two panels (servers without and with a type-II job)."""
    return plot_trajectories(rows, cfg, f"d1 = {cfg['d1']}")


ARTIFACT = Artifact(
    id="affinity-bistability",
    slug=SLUG,
    kind="figure",
    title="Fig. 9: bistability for d1 = 25",
    caption=(
        "n_traj fluid trajectories from random initial states with x00 + x01 + x10 + x11 = 1 "
        "at the section's λ and d1 (d1 in the panel titles), d1 at or above d1* (two locally "
        f"stable fixed points); μ1 = {MU1:g}, μ2 = {MU2:g} unless the section sets them. Dotted "
        "lines: the two stable fixed points (queueing: a type-II job everywhere; no-queueing: "
        "at most one job per server)."
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
