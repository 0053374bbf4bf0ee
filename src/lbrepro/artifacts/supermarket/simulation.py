"""The simulation of a supermarket point, shared by the tail and accuracy artifacts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from lbrepro.core import footprint
from lbrepro.core.args import check_stable_load, run_options
from lbrepro.core.packing import queue_simulation_seconds
from lbrepro.core.rows import estimate_row
from lbrepro.models import supermarket as model
from lbrepro.sim.occupancy import EVENTS_PER_SECOND, OccupancySimResult

# At d = 1 the servers are independent M/M/1 queues, whose relaxation time 1/(1 − √ρ)²
# outlasts the horizon at high load: the run doubles twice (4× a d = 2 run in the full run's
# benchmark files).
SINGLE_CHOICE_SLOWDOWN = 4.0

__all__ = [
    "SERVICE_RATE",
    "arrival_rate",
    "check_stable",
    "mean_jobs_row",
    "simulate_point",
    "simulation_cost",
    "simulation_memory",
]


#: The service rate of every server in this paper's artifacts. The config gives loads ρ; the
#: model takes the arrival rate per server λ = ρμ — converted here, in one place.
SERVICE_RATE = 1.0


def arrival_rate(rho: float) -> float:
    """The arrival rate per server λ = ρμ of a load ρ (μ = :data:`SERVICE_RATE`)."""
    return rho * SERVICE_RATE


def check_stable(key: str, rho: float) -> None:
    """Refuse a load ρ ≥ 1 under ``key``: the supermarket model has no stationary regime there."""
    check_stable_load(key, rho)


def mean_jobs_row(sim: OccupancySimResult, seed: np.random.SeedSequence) -> dict[str, Any]:
    """The tidy row of a simulation's mean jobs per server, with its CI and run facts.

    Wall-clock speed is left out on purpose: tables hold only what the seed determines (the
    same config gives byte-identical tables); runtimes live in benchmarks/.
    """
    return {
        "method": "sim",
        "quantity": "mean_jobs",
        **estimate_row(sim.estimate("mean_jobs"), seed=seed.entropy),
        "horizon": sim.horizon,
        "warmup_used": sim.warmup_used,
        "events": sim.events,
    }


def simulate_point(
    p: Mapping[str, Any],
    seed: np.random.SeedSequence,
    needed: Callable[[OccupancySimResult], float] | None = None,
) -> OccupancySimResult:
    """Simulate one point's (ρ, d, N) with its horizon, warm-up, batches and sampling rule;
    ``needed``: doubled until the claims it serves are decided (simulation.extend)."""
    return model.simulate(
        lam=arrival_rate(p["rho"]),
        d=p["d"],
        **run_options(p, seed),
        replace=p["replace"],
        needed=needed,
    )


def simulation_cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a point: arrivals and departures, 2ρN per unit time."""
    slowdown = SINGLE_CHOICE_SLOWDOWN if p["d"] == 1 else 1.0
    return queue_simulation_seconds(
        arrival_rate(p["rho"]), p["N"], p["horizon"], EVENTS_PER_SECOND, slowdown
    )


#: Bytes per server of a run's start state (N occupancies drawn from the fixed point, and
#: their counts).
START_BYTES_PER_SERVER = 16


def simulation_memory(load_key: str) -> Callable[[Mapping[str, Any]], footprint.Footprint]:
    """The memory estimate of a point (its load under ``load_key``): the mean-field tail to
    1e-16 (levels grow as log(1e-16)/log ρ at d = 1), the start state's N draws, the rows."""

    def memory(p: Mapping[str, Any]) -> footprint.Footprint:
        return {
            load_key: model.mean_field_bytes(p["rho"], p["d"]),
            "N": START_BYTES_PER_SERVER * p["N"],
            "kmax": footprint.rows(p.get("kmax", 0) + 4),
        }

    return memory
