"""Random routing to N M/M/1 servers: the smallest model, the worked example of
docs/adding-a-paper.md (copied to ``src/lbrepro/models/random_routing.py`` by the test).

Each job goes to a server chosen uniformly at random, so every server is an M/M/1 queue at
load ρ = λ/μ: E[jobs per server] = ρ/(1 − ρ) and E[sojourn] = 1/(μ − λ) (docs/models.md would
state this under the paper's section).
"""

from __future__ import annotations

from lbrepro.core.args import float_arg
from lbrepro.core.errors import UnstableError
from lbrepro.models.spec import RUN_PARAMS, Model, Param, Summary
from lbrepro.sim.occupancy import OccupancySimResult, simulate_occupancy


def mean_jobs(lam: float, mu: float = 1.0) -> float:
    """E[jobs per server] = ρ/(1 − ρ) of an M/M/1 queue at load ρ = λ/μ (the closed form)."""
    rho = float_arg("lam", lam) / float_arg("mu", mu)
    if not 0 < rho < 1:
        raise UnstableError(f"lam: load lam/mu = {rho:g} must be in (0, 1): unstable")
    return rho / (1 - rho)


def solve(lam: float, mu: float = 1.0) -> Summary:
    """The closed forms, JSON-ready (``lbrepro solve random_routing``)."""
    jobs = mean_jobs(lam, mu)
    return Summary({"method": "cf", "mean_jobs": jobs, "mean_sojourn": jobs / lam})


def simulate(
    *,
    lam: float,
    N: int,
    horizon: float,
    warmup: float | None = None,
    seed: int = 1,
    batches: int = 20,
    mu: float = 1.0,
    progress: bool = False,
) -> OccupancySimResult:
    """Simulate N servers fed by random routing: the occupancy kernel with d = 1."""
    mean_jobs(lam, mu)  # refuses an unstable load before simulating
    if warmup is None:
        warmup = 0.1 * float_arg("horizon", horizon)
    return simulate_occupancy(
        lam=lam, mu=mu, N=N, d=1, horizon=horizon, warmup=warmup, seed=seed, batches=batches,
        progress=progress,
    )  # fmt: skip


MODEL = Model(
    name="random_routing",
    help="random routing to N M/M/1 servers (the worked example)",
    params=(
        Param("lam", "real", "arrival rate per server (< mu)", minimum=0, exclusive_minimum=True),
        Param("mu", "real", "service rate", minimum=0, exclusive_minimum=True),
        *RUN_PARAMS,
    ),
    solve=solve,
    simulate=simulate,
)
