"""Simulation of every policy: a thin call into the occupancy kernel (``lbrepro.sim``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lbrepro.core.args import run_length
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.models.hetero.meanfield import fixed_point
from lbrepro.models.hetero.stability import check_stable
from lbrepro.models.hetero.system import (
    System,
    check_lam,
    check_policy,
    check_system,
    resolve_policy,
)
from lbrepro.sim.occupancy import (
    OccupancySimResult,
    sample_from_tail,
    simulate_occupancy,
    start_rng,
)


def simulate(
    system: System,
    lam: float,
    policy: str = "scheme1",
    *,
    N: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    split: Any = None,
    d_pool: int | None = None,
    batches: int = 20,
    start: str = "fixed_point",
    chaos: bool = False,
    beyond_stability: bool = False,
    progress: bool = False,
    needed: Callable[[OccupancySimResult], float] | None = None,
) -> OccupancySimResult:
    """Simulate one policy with N servers in total (thin call into the occupancy kernel).

    The kernel implements every policy of this module with the same tie rules (Schemes 1/2:
    ties to the higher capacity; whole-system SQ(d): uniform). ``start="fixed_point"``
    rounds the policy's mean-field equilibrium to the γ_jN servers of each type (shorter
    transient), ``"empty"`` starts empty; the warm-up is discarded either way. Loads outside
    the policy's stability region are refused unless ``beyond_stability`` (used to *show*
    instability: the run is then finite, started empty, and the kernel's level cap stops a
    runaway queue with UnstableError); λ ≥ μΣγC is always refused. ``needed``: the run
    doubles until the claims it serves are decided (``simulate_occupancy``).
    """
    system = check_system(system)
    lam = check_lam(lam)
    policy = check_policy(policy)
    horizon, warmup, batches = run_length(horizon, warmup, batches)
    p, dp = resolve_policy(system, policy, split, d_pool)
    if start not in ("fixed_point", "empty"):
        raise ConfigError("start", f"must be 'fixed_point' or 'empty', got {start!r}")
    if beyond_stability:
        if lam >= system.total_capacity:
            raise UnstableError(
                f"lam={lam:g} >= total capacity {system.total_capacity:g}: no policy is stable"
            )
        start = "empty"
    else:
        check_stable(system, lam, policy, p, dp)
    initial = None
    if start == "fixed_point":
        mf = fixed_point(system, lam, policy, split=p if policy == "typed" else None, d_pool=dp)
        sizes = [round(g * N) for g in system.gamma]
        rng = start_rng(seed)  # sampled, not rounded: rounding drops the tail near ρ = 1
        initial = np.stack([sample_from_tail(u, n, rng) for u, n in zip(mf.u, sizes, strict=True)])
    return simulate_occupancy(
        lam=lam,
        mu=system.mu,
        N=N,
        d=dp if policy == "sqd" else system.d if policy != "random" else 1,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        gamma=system.gamma,
        capacity=system.capacity,
        batches=batches,
        initial=initial,
        policy=policy,
        split=p if policy == "typed" else None,
        chaos=chaos,
        needed=needed,
        progress=progress,
    )
