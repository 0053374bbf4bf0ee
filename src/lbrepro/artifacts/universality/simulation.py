"""One N-server simulation of a point and its tidy rows, shared by the three universality
artifacts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Rows
from lbrepro.core import footprint
from lbrepro.core.args import run_options
from lbrepro.core.packing import queue_simulation_seconds
from lbrepro.core.rows import estimate_row
from lbrepro.models import universality as model
from lbrepro.sim.occupancy import EVENTS_PER_SECOND, OccupancySimResult

__all__ = ["sim_rows", "simulate_point"]


# Systems of 10⁴ servers and more ran at about half the kernel's typical rate in the full
# run's benchmark files (level counts and sampling tables beyond the processor's cache).
LARGE_N, LARGE_N_SLOWDOWN = 10_000, 2.0


def simulation_cost(lam: float, p: Mapping[str, Any]) -> float:
    """Estimated seconds of a point simulating ``p["horizon"]`` on ``p["N"]`` servers at the
    arrival rate per server ``lam``."""
    slowdown = LARGE_N_SLOWDOWN if p["N"] >= LARGE_N else 1.0
    return queue_simulation_seconds(lam, p["N"], p["horizon"], EVENTS_PER_SECOND, slowdown)


def load_cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a point at its configured load ``p["lam"]``."""
    return simulation_cost(p["lam"], p)


#: Bytes per server of the kernels (queue lengths, the without-replacement sampling's
#: permutation and positions, int64 each, and the start state).
BYTES_PER_SERVER = 40


def point_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of a point: the kernel's per-server arrays and its rows."""
    return {"N": BYTES_PER_SERVER * p["N"], "d": footprint.rows(64)}


def unobserved_bound(sim: Any) -> float:
    """A covering upper bound of a tail fraction the run never observed (its interval [0, 0]).

    From its effective count: no episode of a server holding ≥ k jobs began in the measured
    N·T server-time, so (rule of three) episodes begin at rate < 3/(N·T) per server, and each
    lasts less than a busy period of mean 1/(1 − λ) on average: the fraction is below
    3 / ((1 − λ) N T). A degenerate [0, 0] would be "unresolved" and decide nothing.
    """
    measured = float(sim.horizon) - float(sim.warmup_used)
    if not math.isfinite(measured) or measured <= 0:
        measured = float(sim.horizon)
    return 3.0 / ((1.0 - min(float(sim.lam), 1 - 1e-9)) * sim.N * measured)


def simulate_point(
    p: Mapping[str, Any], lam: float, d: int, seed: np.random.SeedSequence, **options: Any
) -> OccupancySimResult:
    """One run of JSQ(d), d sampled without replacement, on the point's ``N`` servers at load
    ``lam`` per server, for its horizon, warm-up and batches (``options``: the start)."""
    return model.simulate(
        lam=lam,
        d=d,
        **run_options(p, seed),
        **options,
    )


def sim_rows(sim: Any, seed: np.random.SeedSequence, scale: float = 1.0, **extra: Any) -> Rows:
    """Tidy rows of q_1, q_2 (×scale), mean jobs and P(wait) of one simulation.

    Every row carries ``batches`` and ``converged``; a tail fraction never observed gets the
    covering interval [0, :func:`unobserved_bound`] instead of [0, 0].
    """

    def at(a: np.ndarray, k: int) -> float:
        """Level k of a tail array, 0 beyond its end (trailing zero levels are trimmed)."""
        return float(a[k]) if k < len(a) else 0.0

    common = {"method": "sim"} | extra

    def tail(k: int) -> dict[str, Any]:
        value, low, high = at(sim.u_all, k), at(sim.u_all_ci_low, k), at(sim.u_all_ci_high, k)
        if high <= 0.0:
            high = unobserved_bound(sim)
        est = sim.derived(scale * value, scale * low, scale * high)
        return {"quantity": f"q{k}", **estimate_row(est, seed=seed.entropy)}

    rows = [common | tail(k) for k in (1, 2)]
    rows.append(
        common
        | {
            "quantity": "mean_sojourn",
            **estimate_row(sim.estimate("mean_sojourn"), seed=seed.entropy),
        }
    )
    rows.append(
        common
        | {
            "quantity": "p_wait",
            **estimate_row(sim.estimate("p_wait"), seed=seed.entropy),
        }
    )
    return rows
