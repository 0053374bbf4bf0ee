"""The result of :func:`lbrepro.sim.occupancy.simulate_occupancy`: estimates and run facts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lbrepro.sim.estimates import EstimatesMixin

__all__ = ["OccupancySimResult"]


@dataclass(frozen=True)
class OccupancySimResult(EstimatesMixin):
    """Time averages of one occupancy simulation, with 95% batch-means intervals.

    ``u[j][k]`` is the time-averaged fraction of type-j servers with at least k jobs,
    k = 0..K (``u[j][0] = 1``); every array has the same length K + 1, where K is the highest
    level with a non-zero average in any type (trailing all-zero levels are trimmed, so a
    type may still end with zeros). ``u_all = Σ_j γ_j u_j``. ``mean_jobs`` is per server
    over all types, ``mean_jobs_per_type[j] = Σ_k u[j][k]`` per type-j server,
    ``mean_sojourn = mean_jobs / lam`` (Little's law). ``p_wait`` is the fraction of
    post-warm-up arrivals that join a server already holding ≥ 1 job (for SQ(d): whose
    sampled minimum occupancy is ≥ 1; they wait under FCFS); by PASTA it is also the
    time-stationary probability that an arrival would. Its interval is centred on it with
    the half-width of the batch means of the per-batch fractions (NaN if a batch saw no
    arrival). ``route[j]`` is the fraction of post-warm-up arrivals sent to type j, with
    intervals built the same way. ``arrivals`` counts post-warm-up arrivals.
    ``cov_same[j]`` (chaos runs only, else None) is the stationary covariance of the
    occupancies of two distinct tagged type-j servers (NaN if N_j = 1), ``cov_cross[i, j]``
    that of a type-i and a type-j server (J × J, symmetric, diagonal = ``cov_same``); they
    are computed per batch and averaged, with batch-means intervals.
    ``policy`` is the policy name, ``d`` the whole-pool sample size (int) for ``"sqd"`` and
    the per-type sizes (tuple) otherwise, ``split`` the static routing probabilities of
    ``"typed"`` and ``"random"`` (None otherwise).
    ``horizon`` is the time actually simulated (the requested horizon, doubled by any
    extension), ``warmup`` the configured minimum warm-up and ``warmup_used`` the time
    discarded (MSER-5), ``batches`` the number of batch means of every interval and
    ``batch_length`` their duration; ``converged`` is False when the run failed the
    relaxation check (``lbrepro.sim.runlength.slow_run_problem``: no interval is honest); a
    run whose batch means stayed correlated but passed it keeps its conservative interval.
    Intervals are clipped to the range of the quantity (fractions to [0, 1]).
    ``events`` counts events after the warm-up used, ``events_total`` includes it;
    ``elapsed`` is the wall time of the simulation proper (numba compilation excluded) and
    ``events_per_second = events_total / elapsed``. ``seed`` is the SeedSequence's entropy
    and ``spawn_key`` its spawn key: together they reproduce the run bit for bit.
    """

    u: list[np.ndarray]
    u_ci_low: list[np.ndarray]
    u_ci_high: list[np.ndarray]
    u_all: np.ndarray
    u_all_ci_low: np.ndarray
    u_all_ci_high: np.ndarray
    mean_jobs: float
    mean_jobs_ci: tuple[float, float]
    mean_jobs_per_type: np.ndarray
    mean_jobs_per_type_ci_low: np.ndarray
    mean_jobs_per_type_ci_high: np.ndarray
    mean_sojourn: float
    mean_sojourn_ci: tuple[float, float]
    p_wait: float
    p_wait_ci: tuple[float, float]
    route: np.ndarray
    route_ci_low: np.ndarray
    route_ci_high: np.ndarray
    cov_same: np.ndarray | None
    cov_same_ci_low: np.ndarray | None
    cov_same_ci_high: np.ndarray | None
    cov_cross: np.ndarray | None
    cov_cross_ci_low: np.ndarray | None
    cov_cross_ci_high: np.ndarray | None
    arrivals: int
    events: int
    events_total: int
    elapsed: float
    events_per_second: float
    N: int
    d: int | tuple[int, ...]
    replace: bool
    lam: float
    mu: float
    gamma: tuple[float, ...]
    capacity: tuple[float, ...]
    policy: str
    split: tuple[float, ...] | None
    horizon: float
    warmup: float
    batches: int
    seed: int | list[int]
    spawn_key: tuple[int, ...]
    warmup_used: float = math.nan
    converged: bool = True
    batch_length: float = math.nan
    looks: int = 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (plain lists, floats and ints; NaN stays a float).

        Keys: ``u`` (list per type of lists over k), ``u_all``, ``mean_jobs``,
        ``mean_jobs_per_type``, ``mean_sojourn``, ``p_wait``, ``route``, ``cov_same``, ``cov_cross``
        (None unless a chaos run), ``ci``, ``N``, ``d`` (int, or list per type), ``replace``,
        ``lam``, ``mu``, ``gamma``, ``capacity``, ``policy``, ``split``, ``horizon``, ``warmup``,
        ``batches``, ``seed``, ``spawn_key``, ``arrivals``, ``events``, ``events_total``,
        ``elapsed``, ``events_per_second``. ``ci[q] = [low, high]`` for q in ``u``, ``u_all``,
        ``mean_jobs``, ``mean_jobs_per_type``, ``mean_sojourn``, ``p_wait``, ``route``,
        ``cov_same``, ``cov_cross`` (the last two None unless a chaos run), where ``low`` and
        ``high`` have the same nesting as the value of q (for ``u``: ``ci["u"][0][j][k]`` is the
        lower bound of ``u[j][k]``) — parallel arrays, not pairs.
        """

        def opt(a: np.ndarray | None) -> list[Any] | None:
            """A chaos-only array as a list, None when the run had no chaos estimates."""
            return None if a is None else a.tolist()

        chaos = self.cov_same is not None
        return {
            "u": [a.tolist() for a in self.u],
            "u_all": self.u_all.tolist(),
            "mean_jobs": self.mean_jobs,
            "mean_jobs_per_type": self.mean_jobs_per_type.tolist(),
            "mean_sojourn": self.mean_sojourn,
            "p_wait": self.p_wait,
            "route": self.route.tolist(),
            "cov_same": opt(self.cov_same),
            "cov_cross": opt(self.cov_cross),
            "ci": {
                "u": [[a.tolist() for a in self.u_ci_low], [a.tolist() for a in self.u_ci_high]],
                "u_all": [self.u_all_ci_low.tolist(), self.u_all_ci_high.tolist()],
                "mean_jobs": list(self.mean_jobs_ci),
                "mean_jobs_per_type": [
                    self.mean_jobs_per_type_ci_low.tolist(),
                    self.mean_jobs_per_type_ci_high.tolist(),
                ],
                "mean_sojourn": list(self.mean_sojourn_ci),
                "p_wait": list(self.p_wait_ci),
                "route": [self.route_ci_low.tolist(), self.route_ci_high.tolist()],
                "cov_same": [opt(self.cov_same_ci_low), opt(self.cov_same_ci_high)]
                if chaos
                else None,
                "cov_cross": [opt(self.cov_cross_ci_low), opt(self.cov_cross_ci_high)]
                if chaos
                else None,
            },
            "N": self.N,
            "d": self.d if isinstance(self.d, int) else list(self.d),
            "replace": self.replace,
            "lam": self.lam,
            "mu": self.mu,
            "gamma": list(self.gamma),
            "capacity": list(self.capacity),
            "policy": self.policy,
            "split": None if self.split is None else list(self.split),
            "horizon": self.horizon,
            "warmup": self.warmup,
            "batches": self.batches,
            "warmup_used": self.warmup_used,
            "batch_length": self.batch_length,
            "converged": self.converged,
            "seed": self.seed,
            "spawn_key": list(self.spawn_key),
            "arrivals": self.arrivals,
            "events": self.events,
            "events_total": self.events_total,
            "elapsed": self.elapsed,
            "events_per_second": self.events_per_second,
        }
