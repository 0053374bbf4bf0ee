"""Estimates assembled from a run's per-batch counts and integrals, with 95% intervals.

Shared by the occupancy and per-server simulators: arrival fractions (the waiting
probability, the routing fractions) from per-batch counts, and the covariances of two tagged
servers' occupancies from the chaos integrals of :mod:`lbrepro.sim.occupancy_kernel`.

And what every simulation result offers (:class:`EstimatesMixin`): each of its estimates as an
:class:`~lbrepro.core.stats.Estimate`. A result holds a scalar estimate ``q`` with its
interval ``q_ci = (low, high)``, or an array ``q`` with ``q_ci_low`` / ``q_ci_high`` of the
same nesting; ``result.estimate("q", ...)`` returns one of them with the run's facts (N,
seed, batches, converged), which :func:`lbrepro.core.rows.estimate_row` writes as a row.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lbrepro.core.stats import Estimate, batch_means_ci

__all__ = ["EstimatesMixin", "arrival_fraction", "batch_covariances"]


def arrival_fraction(
    counts: np.ndarray, arrivals: np.ndarray, groups: int = 0
) -> tuple[float, tuple[float, float]]:
    """Arrival-average fraction of arrivals counted in ``counts``, with its 95% interval.

    Serves the waiting probability (``counts``: arrivals that join a busy server) and the
    routing fractions (arrivals sent to one type). The estimate is Σ counts / Σ arrivals
    (every arrival weighs the same); the interval is centred on it with the half-width of the
    batch means of the per-batch fractions. Batches without arrivals have no fraction, so the
    interval is then NaN (batches too short). ``groups``: the run's fallback regrouping
    (:attr:`lbrepro.core.stats.Batching.groups`).

    ``counts`` and ``arrivals`` may be batch *means* of micro-batch counts (what
    :meth:`~lbrepro.core.stats.Batching.merge` gives), fractional: they are summed as reals.
    Truncating the sums to integers made a run of 182 arrivals at N = 1 report
    p_wait = int(0.7) / int(1.4) = 0 with a confident interval (the true value 0.5).
    """
    total = float(np.sum(arrivals))
    p = float(np.sum(counts)) / total if total > 0 else math.nan
    if np.any(arrivals == 0):
        return p, (math.nan, math.nan)
    half = float(batch_means_ci(counts / arrivals, ar1=True, groups=groups).half_width)
    return p, (max(p - half, 0.0), min(p + half, 1.0))


def batch_covariances(
    sum_area: np.ndarray,
    n_types: np.ndarray,
    duration: float,
    center: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One batch's covariances of two distinct tagged servers from the chaos integrals.

    With time averages ⟨·⟩ over the batch, for two servers of type j
    E[x_a x_b] = ⟨S_j² − Σx²⟩ / (N_j (N_j − 1)) and E[x_a] = ⟨S_j⟩ / N_j; for types i ≠ j
    E[x_a x_b] = ⟨S_i S_j⟩ / (N_i N_j). The covariance is E[x_a x_b] − E[x_a] E[x_b] with the
    product of the batch's time-averaged means: the stationary covariance, up to a bias of
    order (relaxation time / batch length) · Var(x)/N that long batches make negligible.
    Returns (cov_same per type, NaN where N_j = 1; cov_cross J × J, diagonal = cov_same).

    With ``center`` (the run's mean occupancy per type, m̄) the batch's value is linearised
    about it instead: E[x_a x_b] − m̄_a E[x_b] − E[x_a] m̄_b + m̄_a m̄_b, whose batch means
    average exactly to the run's E[x_a x_b] − m̄_a m̄_b. Its bias is that of the run, not of
    a batch, so data-chosen (shorter) batches do not bias the covariance.
    """
    J = n_types.size
    n = n_types.astype(np.float64)
    mean_s = sum_area[0] / duration
    mean_x2 = sum_area[1] / duration
    upper = sum_area[2:] / duration
    mean_ss = np.triu(upper) + np.triu(upper, 1).T
    mean_x = mean_s / n
    with np.errstate(invalid="ignore", divide="ignore"):
        pair = (np.diag(mean_ss) - mean_x2) / (n * (n - 1.0))
    m = mean_x if center is None else center
    same = np.where(n_types > 1, pair - 2.0 * m * mean_x + m * m, math.nan)
    cross = mean_ss / np.outer(n, n) - np.outer(m, mean_x) - np.outer(mean_x, m) + np.outer(m, m)
    cross[np.diag_indices(J)] = same
    return same, cross


class EstimatesMixin:
    """``result.estimate("mean_jobs")``, ``result.estimate("u", k)`` (``u`` at j, k for a
    result with several server types): the estimate with its interval and run facts."""

    N: int
    seed: Any
    batches: int
    converged: bool
    #: Looks at a claim's decision while the run doubled (1: none, or one at the end).
    looks: int = 1

    def estimate(self, quantity: str, *index: int) -> Estimate:
        """One estimate of this run; the half-width is that of the unclipped side (an
        interval clipped to a fraction's range is asymmetric)."""
        mean = getattr(self, quantity)
        if hasattr(self, f"{quantity}_ci"):
            if index:
                raise TypeError(f"{quantity} is a scalar estimate: no index")
            low, high = getattr(self, f"{quantity}_ci")
        else:
            low, high = getattr(self, f"{quantity}_ci_low"), getattr(self, f"{quantity}_ci_high")
            for i in index:
                mean, low, high = mean[i], low[i], high[i]
        return self.derived(mean, low, high)

    def derived(self, value: float, low: float, high: float) -> Estimate:
        """A value computed from this run's estimates (an affine map, a weighted sum, a
        propagated variance) with the interval it maps to, and the run's facts."""
        return Estimate.from_interval(
            value, low, high, batches=self.batches, N=self.N, seed=self.seed,
            converged=self.converged, looks=self.looks,
        )  # fmt: skip

    def unreached(self) -> Estimate:
        """A level above every level the run reached: 0 observed, and no spread to speak of
        (a zero-width interval; the verdicts treat such a level as unresolved)."""
        return self.derived(0.0, 0.0, 0.0)
